"""Smoke tests of the Atari presets on the real emulator: build, train, save, load, evaluate."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

pytest.importorskip("ale_py")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from looprl.agents import Actor, OnPolicyAgent  # noqa: E402
from looprl.agents.dqn import DQN  # noqa: E402
from looprl.core import ParallelPreset, Preset  # noqa: E402
from looprl.environments import GymEnvironment  # noqa: E402
from looprl.environments.atari import AtariEnvironment  # noqa: E402
from looprl.environments.bodies import EpisodicLife, RewardClipping  # noqa: E402
from looprl.experiments.experiment import (  # noqa: E402
    ParallelEnvExperiment,
    SingleEnvExperiment,
)
from looprl.memory.atari_replay import AtariReplayBuffer  # noqa: E402
from looprl.memory.replay import transitions  # noqa: E402
from looprl.presets import load_preset  # noqa: E402
from looprl.presets.atari import a2c, dqn, ppo  # noqa: E402


def _env() -> AtariEnvironment:
    # 800 emulator frames (200 agent steps) bound every episode, evaluation included
    return AtariEnvironment("Breakout", seed=0, max_episode_frames=800)


def _inner(agent):
    assert isinstance(agent, EpisodicLife) and isinstance(agent.agent, RewardClipping)
    return agent.agent.agent


def _weights(model: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in model.parameters()]).clone()


def _evaluate(agent, env: AtariEnvironment) -> tuple[int, float, object]:
    """Steps and score of one evaluation episode from a seeded reset, and its last state.

    The test agents' small epsilon draws from Python's ``random``: it is seeded too, and the
    actor-critic ones' samples (``Actor.seed``)."""
    random.seed(0)
    agent.seed(0)
    state, steps, score = env.reset(seed=1), 0, 0.0
    while not state.done:
        state = env.step(agent.act(state))
        steps, score = steps + 1, score + state.reward
    return steps, score, state


def _load_and_evaluate(preset, tmp_path: Path, env: AtariEnvironment) -> None:
    path = tmp_path / "preset.pt"
    preset.save(str(path))
    loaded = load_preset(str(path))
    assert type(loaded) is type(preset) and loaded.hyperparameters == preset.hyperparameters
    assert torch.equal(_weights(loaded.model), _weights(preset.model))
    steps, score, state = _evaluate(loaded.test_agent(), env)
    # the episode ends at game over or is truncated after 800 frames: 200 agent steps
    assert (state.mask == 0.0 and state["lives"] == 0) or (steps == 200 and state.mask == 1.0)
    # the loaded preset plays the original's episode (the same seeded game), step for step
    assert (steps, score) == _evaluate(preset.test_agent(), env)[:2]


def test_dqn_preset_trains_saves_loads_and_evaluates(tmp_path: Path) -> None:
    env = _env()
    torch.manual_seed(0)
    preset = (
        dqn.env(env).device("cpu")
        .hyperparameters(replay_start_size=50, replay_buffer_size=1000, minibatch_size=8,
                         final_exploration_step=200, target_update_frequency=20)
        .build()
    )
    assert isinstance(preset, Preset) and not isinstance(preset, ParallelPreset)
    assert isinstance(preset.test_agent(), Actor)
    before = _weights(preset.model)
    experiment = SingleEnvExperiment(preset, env, quiet=True, logdir=str(tmp_path), seed=0)
    experiment.train(episodes=1)  # up to 200 steps
    agent = _inner(experiment.agent)
    assert isinstance(agent, DQN) and isinstance(agent.replay_buffer, AtariReplayBuffer)
    steps = experiment.frame
    buffer = agent.replay_buffer  # a lost life (Breakout has 5) is terminal for learning
    ends = int((transitions(buffer.gather(buffer.ready.nonzero().squeeze(1)))[3].mask == 0).sum())
    assert ends >= 4 and steps >= 100 and len(buffer) >= steps - 5 - ends
    observed = agent.learner.observed  # transitions: one per step, but where a life ended
    assert steps - 5 <= observed <= steps
    assert agent.policy.version == observed // 4 - 50 // 4  # every 4 transitions after 50
    assert not torch.equal(_weights(preset.model), before)  # the agent trains the preset's model
    _load_and_evaluate(preset, tmp_path, env)


def test_ppo_preset_trains_saves_loads_and_evaluates(tmp_path: Path) -> None:
    env = _env()
    torch.manual_seed(0)
    preset = (
        ppo.env(env).device("cpu")
        .hyperparameters(n_envs=2, n_steps=32, minibatch_size=32, epochs=2)
        .build()
    )
    assert isinstance(preset, ParallelPreset) and preset.n_envs == 2
    before = _weights(preset.model)
    experiment = ParallelEnvExperiment(
        preset, env, quiet=True, logdir=str(tmp_path), seed=0, train_steps=320
    )
    experiment.train(frames=320)
    agent = _inner(experiment.agent)
    assert isinstance(agent, OnPolicyAgent) and agent.trainer.updates >= 4
    assert not torch.equal(_weights(preset.model), before)
    assert isinstance(preset.parallel_test_agent(), Actor)
    assert len(experiment.test(episodes=2)) == 2  # in the vector environment
    _load_and_evaluate(preset, tmp_path, env)


def test_an_actor_critic_agent_whose_mode_never_fires_ends_its_test_games() -> None:
    """ALL's test agents sample: an a2c whose mode is NOOP (Breakout waits for FIRE after a
    lost life) plays its test game to game over, not to the frame cap (27,000 steps, 43 s)."""
    env = AtariEnvironment("Breakout", seed=0, max_episode_frames=12_000)
    torch.manual_seed(0)
    preset = a2c.env(env).device("cpu").hyperparameters(n_envs=1).build()
    head = [m for m in preset.model.modules() if getattr(m, "out_features", 0) == 4][-1]
    with torch.no_grad():
        head.bias[0] += 2.0  # (NOOP: the mode everywhere; FIRE's share about 1/10)
    steps, _, state = _evaluate(preset.test_agent(), env)
    assert state.mask == 0.0 and state["lives"] == 0 and steps < 3_000


def test_dqn_defaults_behave_like_the_deepmind_setup() -> None:
    # the default hyperparameters, but a small replay buffer (1M frames would be 7 GB)
    env = AtariEnvironment("SpaceInvaders", seed=0)  # rewards above 1, three lives
    torch.manual_seed(0)
    preset = dqn.env(env).device("cpu").hyperparameters(replay_buffer_size=10_000).build()
    agent = preset.agent()
    inner = _inner(agent)
    random.seed(0)
    state, previous, acts, best = env.reset(), None, 0, 0.0
    expected_rewards, expected_masks, life_lost = [], [], None
    while life_lost is None or acts < life_lost + 20:
        previous, state = state, env.step(agent.act(state))
        acts, best = acts + 1, max(best, state.reward)
        if previous["life_lost"]:  # done for the agent: the step out of it is not learned
            continue
        expected_rewards.append(float(state.reward > 0) - float(state.reward < 0))
        expected_masks.append(0.0 if state["life_lost"] or state.mask == 0.0 else 1.0)
        if state["life_lost"] and life_lost is None:
            life_lost = acts
            assert not state.done and state.mask == 1.0  # the game itself goes on
        assert acts < 2000
    agent.act(state)  # stores the last transition
    acts += 1
    # the agent learned from clipped rewards, and a lost life was terminal for it
    buffer = inner.replay_buffer
    ready = buffer.gather(buffer.ready.nonzero().squeeze(1))
    states, _, rewards, next_states, _ = transitions(ready)
    assert best > 1.0 and 0.0 in expected_masks  # the env reported true scores
    n = len(rewards)  # (the replay takes segments of 4 transitions: the last few wait)
    assert len(expected_rewards) - n < inner.adder.segment_length
    assert rewards.tolist() == expected_rewards[:n]
    assert next_states.mask.tolist() == expected_masks[:n]
    assert states.observation.shape[1:] == (4, 84, 84) and states.observation.dtype == torch.uint8
    # no training before 80,000 agent steps, and epsilon stays 1 until then (ALL's), then
    # anneals to 0.01 at 250,000
    assert inner.policy.greedy.epsilon == 1.0
    assert inner.policy.greedy.epsilon_schedule.at(165_000) == pytest.approx(0.505)
    assert inner.policy.q.updates == 0
    # the target network is copied from the online one every 1,000 gradient steps
    q, x = inner.policy.q, states[:2]
    target = q.target(x)
    with torch.no_grad():
        for parameter in preset.model.parameters():
            parameter.add_(0.01)
    online = q.no_grad(x)
    assert not torch.equal(online, target)
    for _ in range(999):
        q.step()
    assert torch.equal(q.target(x), target)
    q.step()
    assert torch.equal(q.target(x), online)
    # one agent step is 4 emulator frames
    frames = env.env.step(np.zeros(1, dtype=np.int64))[4]["episode_frame_number"]
    for _ in range(5):
        env.step(0)
    after = env.env.step(np.zeros(1, dtype=np.int64))[4]["episode_frame_number"]
    assert int(after[0] - frames[0]) == 4 * 6


def test_ppo_defaults_collect_8_by_128_steps_per_update_in_16_minibatches(monkeypatch) -> None:
    env = AtariEnvironment("Breakout", seed=0)
    torch.manual_seed(0)
    preset = ppo.env(env).device("cpu").build()
    agent = preset.agent(train_steps=10 * 8 * 128)
    trainer = _inner(agent).trainer
    minibatches = []

    def record(minibatch, advantage=None) -> dict:  # in place of a gradient step
        minibatches.append((minibatch.advantage.shape[0], trainer._clip_now))
        return {}

    monkeypatch.setattr(trainer, "_minibatch_step", record)
    vector = env.duplicate(preset.n_envs)
    state, leaving_done = vector.reset(), 0
    assert state.observation.shape == (8, 4, 84, 84)
    for _ in range(128):  # 128 steps of the 8 environments fill the rollout
        leaving_done += int((state.done | state["life_lost"]).sum())  # (a lost life is done)
        state = vector.step(agent.act(state))
    assert minibatches == []
    agent.act(state)  # the 129th act records the last outcome and trains
    # 4 epochs over the rollout's transitions (less those leaving a done state) in minibatches
    # of 256, clipped at 0.1 (annealed from there)
    n = 8 * 128 - leaving_done
    assert 768 < n <= 1024 and trainer.updates == 1
    sizes = [256] * (n // 256) + ([n % 256] if n % 256 else [])
    assert minibatches == [(size, pytest.approx(0.1)) for size in sizes] * 4
    vector.close()


@pytest.mark.parametrize("builder", [dqn, ppo])
def test_non_image_environments_are_rejected(builder) -> None:
    with pytest.raises(ValueError, match="uint8 frames") as info:
        builder.env(GymEnvironment("CartPole-v1")).build()
    assert "CartPole-v1" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ValueError, match="lr"):
        builder.env(_env()).hyperparameters(lr=-1.0).build()


@pytest.mark.parametrize("builder", [dqn, ppo])
def test_frames_of_another_size_than_84x84_are_rejected_in_one_line(builder) -> None:
    """Was: a ``(3, 64, 64)`` image environment (or ``AtariEnvironment(screen_size=64)``) built
    the Nature networks for 84x84 frames and failed on the first step ("cannot act on an
    observation of shape (3, 64, 64) ... give it the states of the environment it was built
    for"); channels-last ``(84, 84, 3)`` frames failed in torch's conv2d with a traceback."""
    import gymnasium as gym

    for shape in ((3, 64, 64), (84, 84, 3)):
        env = GymEnvironment(gym.make("CartPole-v1"), name="Images")
        env.env.observation_space = gym.spaces.Box(0, 255, shape, np.uint8)
        with pytest.raises(ValueError, match=r"needs stacked 84x84 frames \(frames, 84, 84\), "
                                             r"but Images has Box\(0, 255, "):
            builder.env(env).build()


def test_an_atari_preset_given_a_gymnasium_id_names_the_preset_of_its_family() -> None:
    """Was: ``looprl train atari.dqn CartPole-v1`` said "Unknown Atari game 'CartPole-v1'" (and
    with ``env_wrappers``, that CartPole-v1 "is an Atari game")."""
    from looprl.presets.catalog import make_env

    fix = r"train it with a classic_control or continuous preset \(not atari.dqn\)"
    for wrappers in ((), ("gymnasium.wrappers.FlattenObservation",)):
        with pytest.raises(ValueError, match=f"^CartPole-v1 is a Gymnasium environment, not an "
                                             f"Atari game: {fix}"):
            make_env("atari.dqn", "CartPole-v1", env_wrappers=wrappers)
    assert make_env("atari.dqn", "ALE/Pong-v5").name == "Pong"  # (Atari ids are Gymnasium's too)
    with pytest.raises(ValueError, match="^Unknown Atari game 'Pongg'"):
        make_env("atari.dqn", "Pongg")
