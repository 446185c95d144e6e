"""The presets' one learning-rate annealer (``ProgressLR``): the rate of every optimizer step."""

from __future__ import annotations

import pytest
import torch

from looprl.approximation import Approximation, ProgressLR
from looprl.core import StateArray
from looprl.environments import GymEnvironment
from looprl.experiments import make_experiment
from looprl.experiments.experiment import seed_everything
from looprl.presets.classic_control import dqn, vac, vqn, vsarsa
from looprl.presets.continuous import sac, td3


@pytest.mark.parametrize("builder", [vqn, vsarsa], ids=["vqn", "vsarsa"])
def test_vqn_anneals_linearly_over_its_updates_at_every_optimizer_step(builder, monkeypatch):
    """``lr_schedule="linear"``: ``lr * (1 - k / updates)`` at the ``k``-th optimizer step (one
    per update, ``train_steps / n_envs`` of them), then 0: the rates of the ``LambdaLR`` VQN had."""
    recorded = _rates_of_each_step(monkeypatch)
    preset = builder.env(GymEnvironment("CartPole-v1")).hyperparameters(
        n_envs=4, lr=1e-3, lr_schedule="linear").device("cpu").build()
    agent = preset.agent(train_steps=400)  # 100 updates
    assert isinstance(agent.policy.q.lr_scheduler, ProgressLR)
    states = StateArray({"observation": torch.zeros(4, 4), "reward": torch.zeros(4),
                         "done": torch.zeros(4, dtype=torch.bool)}, (4,))
    for _ in range(121):  # the first call only acts; the next 120 each take one update
        agent.act(states)
    rates = [groups[0] for groups in recorded["q"]]
    assert rates == [1e-3 * (1.0 - min(k / 100, 1.0)) for k in range(120)]
    assert rates[50] == pytest.approx(5e-4) and rates[100:] == [0.0] * 20


@pytest.mark.parametrize("builder", [vqn, vsarsa], ids=["vqn", "vsarsa"])
def test_vqn_epsilon_reaches_its_end_after_final_exploration_step_frames(builder):
    """``final_exploration_step`` counts frames, as ALL's (its ``LinearScheduler`` ends at
    ``final_exploration_step / n_envs`` batched steps); was batched steps, so ALL's 250,000
    ended after ``n_envs`` times as many frames (16M with the Atari preset's 64 copies)."""
    preset = builder.env(GymEnvironment("CartPole-v1")).hyperparameters(
        n_envs=4, initial_exploration=1.0, final_exploration=0.1,
        final_exploration_step=40).device("cpu").build()
    agent = preset.agent(train_steps=400)
    states = StateArray({"observation": torch.zeros(4, 4), "reward": torch.zeros(4),
                         "done": torch.zeros(4, dtype=torch.bool)}, (4,))
    epsilons = []
    for _ in range(12):  # 48 frames
        epsilons.append(float(agent.policy.exploration.epsilon))
        agent.act(states)
    assert epsilons[0] == 1.0 and epsilons[5] == pytest.approx(0.55)  # 20 of 40 frames
    assert epsilons[10:] == [pytest.approx(0.1)] * 2  # at 40 frames and after


def _rates_of_each_step(monkeypatch) -> dict[str, list[list[float]]]:
    """Name -> the rates of each parameter group at each optimizer step (recorded)."""
    rates: dict[str, list[list[float]]] = {}
    optimizer_step = Approximation._optimizer_step

    def recording(approximation: Approximation, functional: bool) -> None:
        groups = approximation.optimizer.param_groups
        rates.setdefault(approximation.name, []).append([group["lr"] for group in groups])
        optimizer_step(approximation, functional)

    monkeypatch.setattr(Approximation, "_optimizer_step", recording)
    return rates


def _cosine_reference(lr: float, updates: int) -> list[float]:
    """The rates of ALL's ``CosineAnnealingLR(optimizer, n_updates)`` at its first steps."""
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=lr)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, updates)
    rates = []
    for _ in range(updates):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    return rates


def test_a_cosine_lr_schedule_is_alls_cosine_annealing_over_the_replay_updates(monkeypatch,
                                                                                tmp_path):
    """``lr_schedule="cosine"``: a replay preset's rate at its ``k``-th optimizer step is
    ``CosineAnnealingLR(optimizer, n_updates)``'s, ``n_updates`` those of the budget after
    ``replay_start_size`` (ALL's Atari presets), then 0 (the steps an episode's last act
    adds; ALL's rate rises again there); the default keeps it constant."""
    rates = _rates_of_each_step(monkeypatch)
    env = GymEnvironment("CartPole-v1")
    small = {"replay_start_size": 16, "update_frequency": 2, "gradient_steps": 1,
             "minibatch_size": 8, "hidden": 8, "lr": 1e-3}
    budget = 16 + 2 * 30  # 30 updates
    for schedule in ("cosine", "constant"):
        seed_everything(0)
        preset = dqn.env(env).hyperparameters(**small, lr_schedule=schedule).device("cpu").build()
        make_experiment(preset, env, train_steps=budget, logdir=str(tmp_path), quiet=True,
                        seed=0).train(frames=budget)
        used = [group[0] for group in rates.pop("q")]
        assert len(used) >= 30
        expected = (_cosine_reference(1e-3, 30) + [0.0] * (len(used) - 30)
                    if schedule == "cosine" else [1e-3] * len(used))
        assert used == pytest.approx(expected, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("builder", [vac, td3, sac], ids=["vac", "td3", "sac"])
def test_each_network_anneals_to_zero_over_the_budget_in_proportion(builder, monkeypatch,
                                                                    tmp_path):
    """VAC's actor and critic rates (two groups) keep their ratio as they anneal; TD3's actor,
    stepping every ``policy_delay`` updates, ends the budget at 0 with its critics; SAC's
    temperature keeps its rate (ALL anneals the networks')."""
    rates = _rates_of_each_step(monkeypatch)
    continuous = builder is not vac
    env = GymEnvironment("Pendulum-v1" if continuous else "CartPole-v1")
    sizes = ({"replay_start_size": 8, "minibatch_size": 8, "hidden": 8} if continuous else
             {"n_envs": 1, "hidden": 8, "lr_pi": 5e-4, "lr_v": 1e-2})
    budget = 8 + 40 if continuous else 40
    seed_everything(0)
    preset = builder.env(env).hyperparameters(**sizes, lr_schedule="cosine").device("cpu").build()
    make_experiment(preset, env, train_steps=budget, logdir=str(tmp_path), quiet=True,
                        seed=0).train(frames=budget)
    if not continuous:
        (steps,) = rates.values()
        assert [second / first for first, second in steps] == pytest.approx([20.0] * 40)
        assert steps[0][0] == 5e-4 and steps[-1][0] == pytest.approx(_cosine_reference(
            5e-4, 40)[-1])
        return
    for name in ("actor", "critic"):
        first, last = rates[name][0][0], rates[name][-1][0]
        assert first == 1e-3 and 0 < last < 1e-3 * 0.01, (name, last)
    if builder is sac:
        assert {group[0] for group in rates["temperature"]} == {1e-3}


def test_an_unknown_lr_schedule_is_one_line_naming_the_choices() -> None:
    with pytest.raises(ValueError, match=r"^Unknown lr_schedule 'cosin' of dqn\. Did you mean "
                                         r"'cosine'\? It takes: constant, linear, cosine$"):
        dqn.env(GymEnvironment("CartPole-v1")).hyperparameters(lr_schedule="cosin").build()


def test_the_atari_presets_anneal_as_alls_do() -> None:
    """ALL's Atari presets each give their optimizers ``CosineAnnealingLR`` over the budget."""
    from looprl.presets import atari

    for name in ("a2c", "c51", "ddqn", "dqn", "ppo", "ppg", "rainbow", "vac", "vpg", "vqn",
                 "vsarsa"):
        assert getattr(atari, name).default_hyperparameters["lr_schedule"] == "cosine", name
