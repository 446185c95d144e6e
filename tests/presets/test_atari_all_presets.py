"""All eleven Atari presets on the real emulator: build, train, save, load, evaluate; and seed
003's Atari ``run_experiment`` example with tiny budgets."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

pytest.importorskip("ale_py")

import torch  # noqa: E402
from tests.helpers import saved_and_loaded  # noqa: E402

import looprl.presets.atari as atari  # noqa: E402
from looprl.agents.dqn import DQN  # noqa: E402
from looprl.agents.on_policy import OnPolicyAgent  # noqa: E402
from looprl.agents.vpg import VPG  # noqa: E402
from looprl.core import ParallelPreset  # noqa: E402
from looprl.environments import GymEnvironment  # noqa: E402
from looprl.environments.atari import AtariEnvironment  # noqa: E402
from looprl.environments.bodies import EpisodicLife, RewardClipping  # noqa: E402
from looprl.experiments import run_experiment  # noqa: E402
from looprl.experiments.run import make_experiment  # noqa: E402
from looprl.memory.atari_replay import (  # noqa: E402
    AtariReplayBuffer,
    PrioritizedAtariReplayBuffer,
)
from looprl.nn.cnn import nature_c51, nature_dqn, nature_rainbow  # noqa: E402

NAMES = ["a2c", "c51", "ddqn", "dqn", "ppg", "ppo", "rainbow", "vac", "vpg", "vqn", "vsarsa"]
STEPS = 100  # agent steps per episode (400 emulator frames) and training budget per preset

REPLAY = {"replay_start_size": 40, "replay_buffer_size": 1000, "minibatch_size": 8,
          "target_update_frequency": 10}
SMALL: dict[str, dict] = {
    "dqn": {**REPLAY, "final_exploration_step": 100},
    "ddqn": {**REPLAY, "final_exploration_step": 100},
    "c51": {**REPLAY, "final_exploration_step": 100},
    "rainbow": {**REPLAY, "hidden": 64},
    "a2c": {"n_envs": 2, "n_steps": 5},
    "vac": {"n_envs": 2},
    "vpg": {"min_batch_size": 40},
    "vqn": {"n_envs": 2, "final_exploration_step": 50, "target_update_frequency": 10},
    "vsarsa": {"n_envs": 2, "final_exploration_step": 50},
    "ppo": {"n_envs": 2, "n_steps": 16, "minibatch_size": 16, "epochs": 1},
    "ppg": {"n_envs": 2, "n_steps": 16, "minibatch_size": 16, "epochs": 1, "n_policy": 2,
            "aux_epochs": 1, "aux_minibatch_size": 32},
}
AGENTS = {"dqn": DQN, "ddqn": DQN, "c51": DQN, "rainbow": DQN, "vpg": VPG,
          **dict.fromkeys(("a2c", "vac", "vqn", "vsarsa", "ppo", "ppg"), OnPolicyAgent)}
PARALLEL = {"a2c", "vac", "vqn", "vsarsa", "ppo", "ppg"}


def _env(game: str = "Breakout") -> AtariEnvironment:
    return AtariEnvironment(game, device="cpu", seed=0, max_episode_frames=4 * STEPS)


def _weights(model: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in model.parameters()]).clone()


def _inner(agent):
    assert isinstance(agent, EpisodicLife) and isinstance(agent.agent, RewardClipping)
    return agent.agent.agent


def _evaluate(preset, env: AtariEnvironment) -> int:
    agent = preset.test_agent()
    state, steps = env.reset(), 0
    while not state.done:
        state = env.step(agent.act(state))
        steps += 1
    return steps


def test_all_eleven_presets_are_exported_in_order() -> None:
    assert atari.__all__ == NAMES == sorted(NAMES)
    assert all(getattr(atari, name).default_name == name for name in NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_preset_trains_saves_loads_and_evaluates(name: str, tmp_path: Path) -> None:
    env = _env()
    preset = getattr(atari, name).env(env).device("cpu").hyperparameters(**SMALL[name]).build()
    assert isinstance(preset, ParallelPreset) == (name in PARALLEL)
    before = _weights(preset.model)
    experiment = make_experiment(
        preset, env, train_steps=STEPS, logdir=str(tmp_path), quiet=True, seed=0
    )
    experiment.train(frames=STEPS)
    agent = _inner(experiment.agent)
    assert type(agent) is AGENTS[name]
    assert experiment.frame >= STEPS
    assert not torch.equal(_weights(preset.model), before)  # it trained the preset's networks
    if name in {"dqn", "ddqn", "c51"}:
        assert isinstance(agent.replay_buffer, AtariReplayBuffer) and len(agent.replay_buffer)
    if name == "rainbow":
        assert type(agent.replay_buffer) is PrioritizedAtariReplayBuffer
        assert agent.replay_buffer.n_step == 3 and len(agent.replay_buffer)
    if name == "ppg":
        assert agent.trainer.aux_phases >= 1

    loaded = saved_and_loaded(preset, tmp_path)
    assert torch.equal(_weights(loaded.model), _weights(preset.model))
    assert 0 < _evaluate(loaded, env) <= STEPS


@pytest.mark.parametrize(
    ("name", "switches", "buffer_type", "n_steps"),
    [
        ("ddqn", {}, PrioritizedAtariReplayBuffer, 1),  # (ALL's Atari DDQN: prioritized)
        ("ddqn", {"prioritized": False, "n_steps": 3}, AtariReplayBuffer, 3),
        ("rainbow", {"n_steps": 1, "prioritized": False}, AtariReplayBuffer, 1),
        ("rainbow", {"prioritized": False, "distributional": False, "noisy": False,
                     "dueling": False}, AtariReplayBuffer, 3),
    ],
)
def test_replay_switches(
    name: str, switches: dict, buffer_type: type, n_steps: int, tmp_path: Path
) -> None:
    env = _env()
    hp = {**SMALL[name], **switches}
    preset = getattr(atari, name).env(env).device("cpu").hyperparameters(**hp).build()
    before = _weights(preset.model)
    experiment = make_experiment(preset, env, train_steps=80, logdir=str(tmp_path), quiet=True)
    experiment.train(frames=80)
    buffer = _inner(experiment.agent).replay_buffer
    assert type(buffer) is buffer_type and buffer.n_step == n_steps
    assert len(buffer) > 0 and not torch.equal(_weights(preset.model), before)


@pytest.mark.parametrize("distributional", [True, False])
@pytest.mark.parametrize("dueling", [True, False])
def test_atari_model_shapes(distributional: bool, dueling: bool) -> None:
    frames = torch.randint(0, 256, (3, 4, 84, 84), dtype=torch.uint8)
    out = nature_rainbow(6, 11, hidden=16, dueling=dueling, distributional=distributional)(frames)
    assert out.shape == ((3, 6, 11) if distributional else (3, 6))
    if distributional:
        assert torch.allclose(out.sum(-1), torch.ones(3, 6))
    probs = nature_c51(6, 11)(frames)
    assert probs.shape == (3, 6, 11) and torch.allclose(probs.sum(-1), torch.ones(3, 6))
    assert nature_dqn(1)(frames).shape == (3, 1)


def test_published_hyperparameters() -> None:
    """ALL's Atari settings (where they differ from the papers': Rainbow's lr is ALL's 1e-4, the
    paper's 6.25e-5; VQN and VSarsa learn by ALL's squared error)."""
    c51, rainbow = atari.c51.hyperparameter_defaults, atari.rainbow.hyperparameter_defaults
    assert (c51["atoms"], c51["v_min"], c51["v_max"], c51["lr"]) == (51, -10.0, 10.0, 1e-4)
    assert (rainbow["atoms"], rainbow["v_min"], rainbow["v_max"]) == (51, -10.0, 10.0)
    assert (rainbow["lr"], rainbow["n_steps"], rainbow["alpha"], rainbow["sigma"]) == (
        1e-4, 3, 0.5, 0.5
    )
    a2c = atari.a2c.hyperparameter_defaults
    assert (a2c["n_envs"], a2c["n_steps"], a2c["lr"], a2c["entropy_coef"]) == (16, 5, 7e-4, 0.01)
    assert (a2c["eps"], a2c["clip_grad"]) == (1e-3, 0.5)
    assert atari.ddqn.hyperparameter_defaults["prioritized"]
    assert not atari.vqn.hyperparameter_defaults["huber"]
    assert not atari.vsarsa.hyperparameter_defaults["huber"]
    for name in ("ddqn", "c51", "rainbow"):
        d = getattr(atari, name).hyperparameter_defaults
        assert (d["replay_start_size"], d["update_frequency"], d["target_update_frequency"]) == (
            80_000, 4, 1000
        )
    for name in ("vac", "vpg"):
        d = getattr(atari, name).hyperparameter_defaults
        assert (d["lr_pi"], d["lr_v"], d["value_coef"]) == (1e-4, 5e-4, 0.25)
    assert atari.vqn.hyperparameter_defaults["n_envs"] == 64
    assert atari.ppg.hyperparameter_defaults["n_steps"] == atari.ppo.hyperparameter_defaults[
        "n_steps"
    ]


@pytest.mark.parametrize("name", [n for n in NAMES if n not in ("dqn", "ppo")])
def test_non_image_environments_are_rejected(name: str) -> None:
    with pytest.raises(ValueError, match="uint8 frames") as info:
        getattr(atari, name).env(GymEnvironment("CartPole-v1")).device("cpu").build()
    assert "CartPole-v1" in str(info.value) and "\n" not in str(info.value)


def _seed_example(agents: list, tmp_path: Path, frames: int, steps: int,
                  caplog: pytest.LogCaptureFixture, games: tuple[str, ...] = ("Breakout", "Pong")
                  ) -> list[str]:
    """Seed 003's example: every agent on each of ``games``, ``frames`` each, one test
    episode; episodes are cut after ``steps`` agent steps. The runs that never trained, as
    their warnings name them (``agent on game``)."""
    envs = [
        AtariEnvironment(env, device="cpu", max_episode_frames=4 * steps)
        for env in games
    ]
    caplog.set_level(logging.WARNING)
    results = run_experiment(
        agents, envs, frames, logdir=str(tmp_path), quiet=True, test_episodes=1, seed=0
    )
    expected = [(game, a.default_name) for game in games for a in agents]
    assert [(r.env, r.agent) for r in results] == expected
    for result in results:
        assert result.frames >= frames and len(result.test_returns) == 1
    return [m.partition(":")[0] for m in caplog.messages if "the agent never trained" in m]


def test_seed_example_with_small_settings(tmp_path: Path, caplog: pytest.LogCaptureFixture
                                          ) -> None:
    """Agents that train within the budget, on two games: the results in the example's order
    (games outer). Two agents, a replay one and an on-policy one: each of the six presets runs
    through ``run_experiment`` in ``test_seed_example_with_plain_builders`` and trains in
    ``test_preset_trains_saves_loads_and_evaluates``."""
    replay = {"replay_start_size": 20, "replay_buffer_size": 500, "minibatch_size": 4}
    agents = [
        atari.rainbow.hyperparameters(**replay, hidden=32),
        atari.ppo.hyperparameters(n_envs=2, n_steps=16, minibatch_size=16, epochs=1),
    ]
    assert _seed_example(agents, tmp_path, frames=32, steps=32, caplog=caplog) == []  # each trained


def test_seed_example_with_plain_builders(tmp_path: Path, caplog: pytest.LogCaptureFixture
                                          ) -> None:
    """The defaults (80,000 steps before the first update, 1M-transition replay) must not
    fail when training never starts. One game: the two-game order of the results is
    ``test_seed_example_with_small_settings``'s check (and a default A2C's 16 emulators cost
    seconds per game)."""
    agents = [atari.dqn, atari.ddqn, atari.c51, atari.rainbow, atari.a2c, atari.ppo]
    untrained = _seed_example(agents, tmp_path, frames=32, steps=50, caplog=caplog,
                              games=("Pong",))
    assert untrained == [f"{a.default_name} on Pong" for a in agents]  # (and said so)
