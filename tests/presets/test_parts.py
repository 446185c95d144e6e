"""Swappable parts chosen by name: exploration policies, buffers and updates."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
import torch

from looprl.agents.dqn import DQNTrainer
from looprl.approximation import QNetwork
from looprl.core import State, StateArray
from looprl.environments import GymEnvironment
from looprl.experiments import make_experiment
from looprl.experiments.experiment import seed_everything
from looprl.memory import ExperienceReplayBuffer, PrioritizedReplayBuffer
from looprl.meta import MetaComponent
from looprl.policies import BoltzmannPolicy, EZGreedyPolicy, GreedyPolicy, apex_epsilons
from looprl.presets.classic_control import dqn, ppo
from looprl.presets.continuous import sac

SMALL = {"replay_start_size": 50, "update_frequency": 8, "gradient_steps": 2,
         "minibatch_size": 16, "hidden": 16}


class ConstantQ(torch.nn.Module):
    """Q-values ``values`` for every observation (action 0 is the greedy one)."""

    def __init__(self, values: list[float]):
        super().__init__()
        self.values = torch.tensor(values)

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        return self.values.expand(*observation.shape[:-1], len(self.values))


def _q(values: list[float]) -> QNetwork:
    return QNetwork(ConstantQ(values))


def _batch(n: int, done: bool = False) -> StateArray:
    return StateArray({"observation": torch.zeros(n, 1),
                       "done": torch.full((n,), done)}, (n,))


def _agent(cartpole: GymEnvironment, **hp: Any) -> Any:
    return dqn.env(cartpole).hyperparameters(**SMALL, **hp).device("cpu").build().agent()


@pytest.fixture
def cartpole():
    env = GymEnvironment("CartPole-v1")
    yield env
    env.close()


@pytest.mark.parametrize("name, kind", [
    ("decaying_epsilon_greedy", GreedyPolicy), ("epsilon_greedy", GreedyPolicy),
    ("ez_greedy", EZGreedyPolicy), ("stochastic", BoltzmannPolicy),
])
def test_exploration_by_name(cartpole, name: str, kind: type) -> None:
    policy = _agent(cartpole, exploration=name, epsilon=0.2).policy
    assert type(policy.greedy) is kind
    if name == "epsilon_greedy":
        assert policy.greedy.epsilon == 0.2
    if name == "decaying_epsilon_greedy":
        assert policy.greedy.epsilon == 1.0  # dqn's initial_exploration


@pytest.mark.parametrize("name, kind, n_step", [
    ("uniform", ExperienceReplayBuffer, 1), ("prioritized", PrioritizedReplayBuffer, 1),
    ("nstep", ExperienceReplayBuffer, 4),
])
def test_buffer_by_name(cartpole, name: str, kind: type, n_step: int) -> None:
    agent = _agent(cartpole, buffer=name, n_steps=4)
    assert type(agent.replay_buffer) is kind
    assert agent.replay_buffer.n_step == agent.trainer.n_step == n_step


@pytest.mark.parametrize("name", ["q_learning", "double_q", "clipped_double_q"])
def test_update_by_name(cartpole, name: str) -> None:
    trainer = _agent(cartpole, update=name).trainer
    assert type(trainer) is DQNTrainer and trainer.update == name


@pytest.mark.parametrize("builder, hp, message", [
    (dqn, {"exploration": "ez-greedy"}, "Unknown exploration 'ez-greedy'. Did you mean "
     "'ez_greedy'"),
    (dqn, {"buffer": "rollout"}, "dqn cannot use the buffer 'rollout'; it takes: uniform, "
     "prioritized, nstep"),
    (dqn, {"update": "ppo"}, "dqn cannot use the update 'ppo'; it takes: q_learning"),
    (ppo, {"update": "double_q"}, "ppo cannot use the update 'double_q'; it takes: ppo"),
    (ppo, {"exploration": "ez_greedy"}, "it takes: stochastic"),
    (ppo, {"buffer": "nsteps"}, "Unknown buffer 'nsteps'. Did you mean 'nstep'"),
    # Mighty's class names, by name or import path (was: "Did you mean 'q_learning'?")
    (dqn, {"update": "DoubleQLearning"}, "Unknown update 'DoubleQLearning'. Did you mean "
     "'double_q' (Mighty's DoubleQLearning)?"),
    (dqn, {"exploration": "mighty.mighty_exploration.EZGreedy"}, "Did you mean 'ez_greedy' "
     "(Mighty's EZGreedy)? dqn takes:"),
])
def test_wrong_part_names_say_what_is_valid(cartpole, builder, hp, message) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        builder.env(cartpole).hyperparameters(**hp).device("cpu").build()


def test_settings_of_a_part_not_chosen_warn_with_the_part_to_choose(cartpole, caplog) -> None:
    # were taken silently: alpha and beta without prioritized replay, n_steps without nstep
    from looprl.presets.classic_control import c51
    caplog.set_level("WARNING", "looprl.presets")
    _agent(cartpole, alpha=0.7, beta=0.5, n_steps=5)
    c51.env(cartpole).hyperparameters(beta=0.5).device("cpu").build()
    assert [r.getMessage() for r in caplog.records] == [
        "dqn: alpha, beta take effect only with buffer='prioritized': choose it, or drop alpha "
        "and beta", "dqn: n_steps takes effect only with buffer='nstep': choose it, or drop "
        "n_steps", "c51: beta takes effect only with prioritized=True: choose it, or drop beta"]
    caplog.clear()
    _agent(cartpole, alpha=0.7, beta=0.5, n_steps=5)  # (a search's next trial: said once)
    assert not caplog.records
    _agent(cartpole, buffer="prioritized", alpha=0.7, n_steps=3)  # (defaults: no warning)
    assert not caplog.records
    from looprl.presets.classic_control import rainbow
    rainbow.env(cartpole).hyperparameters(initial_exploration=0.5).device("cpu").build()
    assert [r.getMessage() for r in caplog.records] == [  # (epsilon 0 with noisy nets)
        "rainbow: initial_exploration takes effect only with noisy=False (noisy nets explore "
        "instead): choose it, or drop initial_exploration"]


def test_settings_of_a_switch_turned_off_warn_with_the_switch(cartpole, caplog) -> None:
    # were taken silently: Rainbow's sigma without noisy nets, its atoms without a distribution,
    # SAC's tuning settings with a fixed temperature
    from looprl.presets import continuous
    from looprl.presets.classic_control import rainbow
    caplog.set_level("WARNING", "looprl.presets")
    rainbow.env(cartpole).hyperparameters(noisy=False, sigma=0.9, distributional=False, atoms=11,
                                          v_max=50.0).device("cpu").build()
    continuous.sac.env("Pendulum-v1").hyperparameters(
        entropy_tuning=False, lr_temperature=0.5, target_entropy=-2.0).device("cpu").build()
    assert [r.getMessage() for r in caplog.records] == [
        "rainbow: sigma takes effect only with noisy=True: choose it, or drop sigma",
        "rainbow: atoms, v_max take effect only with distributional=True: choose it, or drop "
        "atoms and v_max", "sac: lr_temperature, target_entropy take effect only with "
        "entropy_tuning=True: choose it, or drop lr_temperature and target_entropy"]


def test_hidden_with_a_feature_extractor_warns_that_it_is_unused(cartpole, caplog) -> None:
    # was taken silently: the extractor's own widths build the network
    from looprl.presets.classic_control import ppo
    caplog.set_level("WARNING", "looprl.presets")
    ppo.env(cartpole).hyperparameters(features="mlp", hidden=32).device("cpu").build()
    dqn.env(cartpole).hyperparameters(features="mlp").device("cpu").build()  # (no hidden: quiet)
    assert [r.getMessage() for r in caplog.records] == [
        "ppo: hidden takes effect only with features=None: choose it, or drop hidden"]


def test_settings_of_an_exploration_not_chosen_warn_with_the_exploration_to_choose(
        cartpole, caplog) -> None:
    # were taken silently: epsilon under the default decaying schedule (a Mighty config's
    # epsilon), temperature, ez_mu and the schedule's keys under epsilon_greedy
    caplog.set_level("WARNING", "looprl.presets")
    _agent(cartpole, epsilon=0.3, temperature=0.5)
    _agent(cartpole, exploration="epsilon_greedy", ez_mu=3.0, initial_exploration=0.5)
    assert [r.getMessage() for r in caplog.records] == [
        "dqn: epsilon takes effect only with exploration='epsilon_greedy' or 'ez_greedy': "
        "choose it, or drop epsilon", "dqn: temperature takes effect only with "
        "exploration='stochastic': choose it, or drop temperature", "dqn: initial_exploration "
        "takes effect only with exploration='decaying_epsilon_greedy': choose it, or drop "
        "initial_exploration", "dqn: ez_mu takes effect only with exploration='ez_greedy': "
        "choose it, or drop ez_mu"]
    caplog.clear()
    _agent(cartpole, exploration="ez_greedy", epsilon=0.3, ez_mu=3.0)  # (both read: no warning)
    from looprl.presets.catalog import make_env
    from looprl.presets.multiagent import dqn as independent_dqn
    pytest.importorskip("pettingzoo")
    game = make_env("multiagent.dqn", "tictactoe_v3")  # (its tuned schedule is no user's key)
    independent_dqn.env(game).hyperparameters(exploration="epsilon_greedy").device("cpu").build()
    assert not caplog.records


def test_ez_mu_must_exceed_1_before_anything_is_built() -> None:
    # ez_mu in (0, 1] passed the range (> 0) and failed only when the agent was made, mid-search
    from looprl.runners.space import SearchSpaceError, parse_search_space
    with pytest.raises(ValueError, match=r"'ez_mu' of dqn must be > 1 \(ez-greedy's zeta"):
        dqn.hyperparameters(exploration="ez_greedy", ez_mu=0.5)
    with pytest.raises(SearchSpaceError, match="ez_mu must be > 1"):
        parse_search_space({"ez_mu": {"low": 0.5, "high": 3.0}}, dqn.default_hyperparameters,
                           "dqn")


def test_prioritized_replay_takes_alpha_0_sac_temperature_does_not(cartpole) -> None:
    # PER alpha 0 (uniform sampling) was refused: the range was SAC temperature's (> 0)
    assert _agent(cartpole, buffer="prioritized", alpha=0).replay_buffer.alpha == 0
    with pytest.raises(ValueError, match="'alpha' of dqn must be >= 0, got -0.5"):
        dqn.hyperparameters(alpha=-0.5)
    from looprl.runners.space import SearchSpaceError, parse_search_space

    # SAC's alpha keeps its own range: given, and in a search (whose values it must all take;
    # ES's clipped draws land on the bound), 0 is refused at once, not mid-search
    with pytest.raises(ValueError, match="'alpha' of sac must be positive"):
        sac.hyperparameters(alpha=0)
    for entry in ({"low": 0.0, "high": 0.5}, {"choices": [0.0, 0.2]}):
        with pytest.raises(SearchSpaceError, match="alpha must be positive"):
            parse_search_space({"alpha": entry}, sac.default_hyperparameters, "sac")
    assert parse_search_space({"alpha": {"low": 0.0, "high": 0.5}},
                              dqn.default_hyperparameters, "dqn")[0].low == 0


def test_sac_validates_its_parts() -> None:
    env = GymEnvironment("Pendulum-v1")
    with pytest.raises(ValueError, match="sac cannot use the update 'clipped_double_q'"):
        sac.env(env).hyperparameters(update="clipped_double_q").device("cpu").build()
    env.close()


def test_one_epsilon_per_env_copy() -> None:
    torch.manual_seed(0)
    policy = GreedyPolicy(_q([1.0, 0.0, 0.0, 0.0]), 4, epsilon=[0.0, 1.0], seed=0)
    actions = torch.stack([policy.no_grad(_batch(2)) for _ in range(400)])
    assert (actions[:, 0] == 0).all()  # epsilon 0: always greedy
    # epsilon 1: uniform over 4 actions, so the greedy action about a quarter of the time
    assert 0.15 < (actions[:, 1] == 0).float().mean() < 0.35
    with pytest.raises(ValueError, match="2 epsilons .* for a batch of \\(3,\\)"):
        policy.no_grad(_batch(3))
    assert apex_epsilons(3, 0.4, 7.0) == pytest.approx([0.4, 0.4 ** 4.5, 0.4 ** 8])


def _runs(actions: list[int]) -> list[int]:
    lengths, last = [], None
    for action in actions:
        if action == last:
            lengths[-1] += 1
        else:
            lengths.append(1)
        last = action
    return lengths


def test_ez_greedy_repeats_random_actions_for_zeta_distributed_durations() -> None:
    # epsilon 1: back-to-back options; 50 actions, so two options rarely share one
    policy = EZGreedyPolicy(_q([0.0] * 50), 50, epsilon=1.0, mu=2.0, max_duration=100, seed=1)
    state = State({"observation": torch.zeros(1), "done": False})
    actions = [int(policy.no_grad(state)) for _ in range(20_000)]
    runs = _runs(actions)
    # P(n) = n^-2 / sum_{k<=100} k^-2: P(1) = 0.6145, mean = H_100 / sum k^-2 = 3.16
    norm = sum(k ** -2 for k in range(1, 101))
    assert runs.count(1) / len(runs) == pytest.approx(1 / norm, abs=0.03)
    mean = sum(1 / k for k in range(1, 101)) / norm
    assert sum(runs) / len(runs) == pytest.approx(mean, rel=0.1)
    # plain epsilon-greedy at epsilon 1 changes action 49 times in 50
    plain = GreedyPolicy(_q([0.0] * 50), 50, epsilon=1.0, seed=1)
    plain_runs = _runs([int(plain.no_grad(state)) for _ in range(2000)])
    assert sum(plain_runs) / len(plain_runs) < 1.1


def test_ez_greedy_batches_keep_one_option_per_row_and_end_it_with_the_episode() -> None:
    policy = EZGreedyPolicy(_q([1.0, 0.0, 0.0]), 3, epsilon=1.0, mu=1.01, seed=0)
    first = policy.no_grad(_batch(256))
    # mu close to 1: most options last long, so most rows repeat their random action
    assert (policy.no_grad(_batch(256)) == first).float().mean() > 0.8
    policy.epsilon = 0.0  # no new option: running ones go on, ended episodes stop theirs
    assert (policy.no_grad(_batch(256)) == first).float().mean() > 0.7
    assert (policy.no_grad(_batch(256, done=True)) == 0).all()
    assert (policy.no_grad(_batch(256)) == 0).all()


def test_stochastic_exploration_samples_the_boltzmann_distribution() -> None:
    # Q = [0, ln 3]: softmax gives [1/4, 3/4] at temperature 1, [1/2, 1/2] as T grows
    policy = BoltzmannPolicy(_q([0.0, math.log(3.0)]), 2, temperature=1.0, seed=0)
    actions = policy.no_grad(_batch(20_000))
    assert actions.float().mean() == pytest.approx(0.75, abs=0.015)
    policy.temperature = 1000.0
    assert policy.no_grad(_batch(20_000)).float().mean() == pytest.approx(0.5, abs=0.015)
    policy.temperature = 0.01
    assert (policy.no_grad(_batch(100)) == 1).all()
    assert policy.no_grad(State({"observation": torch.zeros(1)})).shape == ()


class HPRecorder(MetaComponent):
    def __init__(self, key: str):
        super().__init__()
        self.values: list = []
        self.explored: list = []
        self.post_step_methods.append(self.record)

    def record(self, metrics: dict[str, Any]) -> None:
        self.values.append(metrics.get("hp/epsilon", metrics.get("hp/temperature")))
        self.explored.append(metrics["explored"])


def _train(builder, tmp_path: Path, frames: int, meta: list) -> Any:
    seed_everything(0)
    env = GymEnvironment("CartPole-v1")
    preset = builder.env(env).device("cpu").build()
    experiment = make_experiment(preset, env, logdir=str(tmp_path), quiet=True, seed=0,
                                 train_steps=frames, meta=meta)
    experiment.train(frames=frames)
    return experiment


def test_exploration_and_learner_receive_the_metrics_and_hp_values_stay_current(
    tmp_path: Path,
) -> None:
    recorder = HPRecorder("hp/epsilon")
    builder = dqn.hyperparameters(**SMALL, final_exploration_step=100, buffer="prioritized")
    experiment = _train(builder, tmp_path, 150, [recorder])
    agent = experiment.agent
    metrics = experiment.hub.metrics
    assert not hasattr(agent.policy.greedy, "metrics")  # (given explored, not the dictionary)
    assert metrics["buffer"] is agent.replay_buffer
    assert agent.learner.hooks is experiment.hub  # the update hooks run around its steps
    # the agent's own schedule moves epsilon; hooks see its current value
    assert recorder.values[0] == pytest.approx(1.0, abs=0.02)
    assert recorder.values[120] == pytest.approx(0.04)
    # exploratory actions: nearly all at first, about epsilon's share at the end
    explored = torch.cat(recorder.explored).float()
    assert explored[:10].mean() > 0.7 and explored[110:].mean() < 0.2


def test_stochastic_exploration_publishes_its_temperature(tmp_path: Path) -> None:
    class Cool(MetaComponent):
        def __init__(self):
            super().__init__()
            self.pre_step_methods.append(lambda m: m.__setitem__("hp/temperature", 0.5))

    recorder = HPRecorder("hp/temperature")
    experiment = _train(dqn.hyperparameters(**SMALL, exploration="stochastic"), tmp_path, 20,
                        [Cool(), recorder])
    assert experiment.agent.policy.greedy.temperature == 0.5
    assert recorder.values[-1] == 0.5


def test_a_component_can_give_each_env_copy_its_own_epsilon(tmp_path: Path) -> None:
    from looprl.presets.classic_control import vqn

    class PerCopy(MetaComponent):
        def __init__(self):
            super().__init__()
            self.seen: list = []
            self.pre_step_methods.append(self.set)

        def set(self, metrics: dict[str, Any]) -> None:
            self.seen.append(metrics["hp/epsilon"])
            metrics["hp/epsilon"] = apex_epsilons(4)

    component = PerCopy()
    seed_everything(0)
    env = GymEnvironment("CartPole-v1")
    preset = vqn.env(env).hyperparameters(n_envs=4, hidden=16).device("cpu").build()
    experiment = make_experiment(preset, env, logdir=str(tmp_path), quiet=True, seed=0,
                                 train_steps=40, meta=[component])
    experiment.train(frames=40)
    greedy = experiment.agent.policy.greedy
    assert greedy.epsilon.tolist() == pytest.approx(apex_epsilons(4))
    assert isinstance(component.seen[0], float)  # the preset's schedule, before the change
    assert component.seen[-1] == pytest.approx(apex_epsilons(4))  # published back as a list


def test_exploration_settings_under_apex_warn(cartpole, caplog) -> None:
    caplog.set_level("WARNING", "looprl.presets")
    _agent(cartpole, apex=True, exploration="ez_greedy", ez_mu=3.0)  # (was: silently unused)
    assert [r.getMessage() for r in caplog.records] == [
        "dqn: exploration, ez_mu take effect only with apex=False (Ape-X's rates explore "
        "instead): choose it, or drop exploration and ez_mu"]
