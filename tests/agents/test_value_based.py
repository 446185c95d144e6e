"""Smoke tests of the value-based presets (ddqn, c51, rainbow, vqn, vsarsa) and their parts."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from looprl.agents.c51 import C51Policy, C51Trainer
from looprl.agents.ddqn import DDQNTrainer
from looprl.agents.dqn import DQNPolicy
from looprl.approximation import FixedTarget, QNetwork
from looprl.approximation.q_dist import QDist
from looprl.core import ParallelPreset, State, StateArray
from looprl.environments import GymEnvironment
from looprl.experiments import make_experiment
from looprl.nn.distributional import CategoricalQHead
from looprl.nn.noisy import NoisyFactorizedLinear
from looprl.presets import load_preset
from looprl.presets.classic_control.c51 import c51
from looprl.presets.classic_control.ddqn import ddqn
from looprl.presets.classic_control.rainbow import rainbow
from looprl.presets.classic_control.vqn import vqn
from looprl.presets.classic_control.vsarsa import vsarsa

SMALL = {"hidden": 16, "replay_start_size": 50, "update_frequency": 8, "gradient_steps": 2,
         "minibatch_size": 16}
CASES = {
    "ddqn": (ddqn, SMALL),
    "ddqn-per": (ddqn, {**SMALL, "prioritized": True}),
    "c51": (c51, SMALL),
    "rainbow": (rainbow, SMALL),
    "rainbow-no-double": (rainbow, {**SMALL, "double": False}),
    "rainbow-no-dueling": (rainbow, {**SMALL, "dueling": False}),
    "rainbow-no-noisy": (rainbow, {**SMALL, "noisy": False}),
    "rainbow-one-step": (rainbow, {**SMALL, "n_steps": 1}),
    "rainbow-no-per": (rainbow, {**SMALL, "prioritized": False}),
    "rainbow-no-distributional": (rainbow, {**SMALL, "distributional": False}),
    "vqn": (vqn, {"hidden": 16, "n_envs": 4}),
    "vsarsa": (vsarsa, {"hidden": 16, "n_envs": 4}),
}


def _states(n: int = 32) -> StateArray:
    generator = torch.Generator().manual_seed(1)
    return StateArray({"observation": torch.randn(n, 4, generator=generator)}, (n,))


@pytest.mark.parametrize("case", list(CASES))
def test_preset_trains_saves_loads_and_evaluates(case: str, tmp_path: Path) -> None:
    builder, hyperparameters = CASES[case]
    env = GymEnvironment("CartPole-v1")
    preset = builder.env(env).hyperparameters(**hyperparameters).device("cpu").build()
    before = [p.detach().clone() for p in preset.model.parameters()]
    experiment = make_experiment(preset, env, train_steps=400, logdir=str(tmp_path), quiet=True,
                                 verbose=False, seed=0)
    experiment.train(frames=400)
    assert experiment.frame >= 400
    assert any(not torch.equal(b, p) for b, p in zip(before, preset.model.parameters()))
    path = tmp_path / "preset.pt"
    preset.save(str(path))
    loaded = load_preset(str(path))
    assert type(loaded) is type(preset) and loaded.model is not preset.model
    states = _states()
    assert torch.equal(loaded.test_agent().act(states), preset.test_agent().act(states))
    single = loaded.test_agent().act(State(states.observation[0]))
    assert single.shape == () and int(single) in (0, 1)
    if isinstance(preset, ParallelPreset):
        assert loaded.parallel_test_agent().act(states).shape == (32,)
    returns = experiment.test(episodes=2)
    assert len(returns) == 2 and all(r >= 1 for r in returns)
    experiment.close()


def test_rainbow_switches_build_the_right_parts() -> None:
    env = GymEnvironment("CartPole-v1")
    agent = rainbow.env(env).device("cpu").build().agent()
    assert isinstance(agent.policy, C51Policy) and isinstance(agent.trainer, C51Trainer)
    assert agent.trainer.double and agent.policy.greedy.epsilon == 0.0
    assert type(agent.replay_buffer).__name__ == "NStepReplayBuffer"
    assert type(agent.replay_buffer.buffer).__name__ == "PrioritizedReplayBuffer"
    assert any(isinstance(m, NoisyFactorizedLinear) for m in agent.policy.module.modules())
    off = {"double": False, "noisy": False, "n_steps": 1, "prioritized": False,
           "distributional": False, "dueling": False}
    plain = rainbow.env(env).hyperparameters(**off).device("cpu").build().agent()
    assert isinstance(plain.trainer, DDQNTrainer) and not plain.trainer.double
    assert type(plain.replay_buffer).__name__ == "ExperienceReplayBuffer"
    assert not any(isinstance(m, NoisyFactorizedLinear) for m in plain.policy.module.modules())


def test_presets_reject_bad_hyperparameters() -> None:
    env = GymEnvironment("CartPole-v1")
    with pytest.raises(ValueError, match="v_min"):
        c51.env(env).hyperparameters(v_min=1.0, v_max=0.0).build()
    with pytest.raises(ValueError, match="n_steps"):
        rainbow.env(env).hyperparameters(n_steps=0).build()
    with pytest.raises(ValueError, match="discrete"):
        vqn.env(GymEnvironment("Pendulum-v1")).build()


def _lr_after_50_updates(builder, train_steps: float, **hyperparameters) -> float:
    env = GymEnvironment("CartPole-v1")
    preset = builder.env(env).hyperparameters(n_envs=4, lr=1e-3, **hyperparameters)
    agent = preset.device("cpu").build().agent(train_steps=train_steps)
    states = StateArray({"observation": torch.zeros(4, 4), "reward": torch.zeros(4),
                         "done": torch.zeros(4, dtype=torch.bool)}, (4,))
    for _ in range(51):  # the first call only acts; the next 50 each take one update
        agent.act(states)
    return agent.policy.q.optimizer.param_groups[0]["lr"]


def test_vqn_linear_lr_decays_over_the_training_budget() -> None:
    # 400 steps of 4 environments are 100 updates: after 50 the rate is halved
    assert _lr_after_50_updates(vqn, 400) == pytest.approx(5e-4)
    assert _lr_after_50_updates(vqn, 400, linear_lr=False) == 1e-3
    assert _lr_after_50_updates(vqn, float("inf")) == 1e-3  # no budget, nothing to decay over
    assert _lr_after_50_updates(vsarsa, 400) == 1e-3  # vsarsa keeps a constant rate
    assert _lr_after_50_updates(vsarsa, 400, linear_lr=True) == pytest.approx(5e-4)


def test_noisy_layer_is_noisy_in_training_and_mean_in_eval() -> None:
    torch.manual_seed(0)
    layer = NoisyFactorizedLinear(3, 2, sigma_init=0.5)
    x = torch.randn(5, 3)
    assert not torch.equal(layer(x), layer(x))
    layer.eval()
    mean = torch.nn.functional.linear(x, layer.weight_mu, layer.bias_mu)
    assert torch.equal(layer(x), mean)
    assert torch.allclose(layer.weight_sigma, torch.full((2, 3), 0.5 / 3**0.5))
    layer.train()
    layer(x).sum().backward()
    assert layer.weight_sigma.grad is not None and layer.weight_sigma.grad.abs().sum() > 0


def test_ddqn_trainer_matches_hand_target_and_returns_td_errors() -> None:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    q = QNetwork(model, torch.optim.SGD(model.parameters(), lr=0.0), target=FixedTarget(1000))
    trainer = DDQNTrainer(DQNPolicy(q, 2), discount_factor=0.9, huber=False)
    states = _states(8)
    next_states = StateArray({"observation": torch.randn(8, 4), "mask": torch.ones(8)}, (8,))
    next_states["discount"] = torch.full((8,), 0.5)
    actions, rewards = torch.zeros(8, dtype=torch.long), torch.ones(8)
    stats = trainer.step((states, actions, rewards, next_states, torch.ones(8)))
    with torch.no_grad():
        online = model(next_states.observation)
        best = online.argmax(-1, keepdim=True)
        target = 1.0 + 0.5 * model(next_states.observation).gather(-1, best).squeeze(-1)
        values = model(states.observation)[:, 0]
    assert torch.allclose(stats["td_error"], target - values, atol=1e-6)
    assert torch.isclose(stats["loss"], ((target - values) ** 2).mean())


def test_qdist_masks_terminal_states_to_zero_return() -> None:
    head = CategoricalQHead(torch.nn.Linear(4, 2 * 5), 2, 5)
    dist = QDist(head, num_actions=2, num_atoms=5, v_min=-2.0, v_max=2.0)
    states = StateArray({"observation": torch.randn(3, 4), "mask": torch.tensor([1.0, 0.0, 1.0])},
                        (3,))
    probs = dist.no_grad(states)
    assert probs.shape == (3, 2, 5)
    assert torch.allclose(probs.sum(-1), torch.ones(3, 2))
    assert torch.equal(probs[1], torch.tensor([[0.0, 0.0, 1.0, 0.0, 0.0]] * 2))
    chosen = dist.no_grad(states, torch.tensor([1, 0, 1]))
    assert torch.equal(chosen[0], probs[0, 1]) and torch.equal(chosen[2], probs[2, 1])
    expected = (probs * dist.atoms).sum(-1)
    assert torch.allclose(dist.expectation.no_grad(states), expected)
