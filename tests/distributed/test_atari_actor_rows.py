"""An Atari preset's Ray actor records what the local collector records: it steps the local
experiment's ``AtariEnvironment`` copies (``AlgorithmSpec.copies``) through the preset's
bodies (``AlgorithmSpec.process``), so a lost life is a terminal row for learning and the
rewards it learns from are clipped, while the episodes it reports are whole games with their
true scores. No Ray process: the actor's ``EnvRunner`` is built as ``ActorWorker`` builds it
(its own policy copy, the default)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from looprl.collector import EnvRunner
from looprl.collector.recovery import EnvRestarts
from looprl.core import RolloutResult
from looprl.distributed import AlgorithmSpec
from looprl.environments.bodies import body_states
from looprl.environments.duplicate import DuplicateEnvironment

pytest.importorskip("ale_py")

from looprl.environments.atari import AtariEnvironment  # noqa: E402
from looprl.presets import atari  # noqa: E402

GAME, LIVES = "SpaceInvaders", 3  # rewards of 5 to 200 points, three lives
STEPS, LENGTH, SEED = 320, 10, 1  # (a first game of random play: about 300 steps)
PRESETS = {"dqn": {"replay_buffer_size": 1000}, "ppo": {"n_envs": 2, "n_steps": LENGTH}}


def _play(runner: EnvRunner, actions: np.ndarray) -> tuple[dict[str, np.ndarray], list]:
    """Step ``runner`` with ``actions`` (one row of actions a step); its rows in time order
    (``[steps, copies]`` each of obs, reward, done, truncated) and the episodes it reported."""
    segments, episodes = [], []
    for action in actions:
        runner.request(0)
        runner.step(0, RolloutResult(action=torch.as_tensor(action)))
        segments += runner.segments()
        episodes += runner.pop_episodes()
    rows = {key: np.concatenate([getattr(s, key)[:-1] for s in segments])
            for key in ("obs", "reward", "done", "truncated")}
    return rows, [(e.env, e.ret, e.length) for e in episodes]


@pytest.mark.parametrize("name", list(PRESETS))
def test_an_atari_actor_records_the_local_rows_life_ends_included(name):
    env = AtariEnvironment(GAME, device="cpu")
    preset = getattr(atari, name).hyperparameters(**PRESETS[name]).env(env).device("cpu").build()
    spec, _ = AlgorithmSpec.of_preset(preset, frames=10_000)
    n = getattr(preset, "n_envs", 1)
    # the local experiment's collector: SingleEnvExperiment's DuplicateEnvironment([env]), or
    # ParallelEnvExperiment's env.duplicate(n_envs), through the agent's bodies
    local_env = DuplicateEnvironment([env]) if n == 1 else env.duplicate(n)
    local = EnvRunner(local_env, segment_length=LENGTH, seed=SEED,
                      process=body_states(preset.agent()))
    actor = EnvRunner(functools.partial(spec.copies, n), None, n, LENGTH, None, seed=SEED,
                      process=spec.make_process(), restarts=EnvRestarts(3, "max_restarts"))
    actions = np.random.default_rng(1).integers(0, env.action_space.n, (STEPS, n))
    rows, episodes = _play(actor, actions)
    expected, expected_episodes = _play(local, actions)
    for key, column in expected.items():  # the same rows, bit for bit
        np.testing.assert_array_equal(rows[key], column, err_msg=key)
    assert episodes == expected_episodes
    # episodic life: the first game has a terminal row at each of its lives, and its return
    # is the whole game's true score, not the clipped rewards it learned from
    (copy, score, length), *_ = episodes
    game = slice(1, length + 1)  # (row 0: the reset)
    ends = np.flatnonzero(rows["done"][game, copy]) + 1
    assert ends.tolist()[-1] == length and len(ends) == LIVES, ends  # lives, then game over
    assert set(np.unique(rows["reward"])) <= {-1.0, 0.0, 1.0}
    clipped = float(rows["reward"][game, copy].sum())
    assert score >= 5 * clipped > 0  # (each invader is 5 points or more)
    assert spec.env_args == {"game": GAME}  # (an evaluation names the game: true scores)
    local_env.close()
    env.close()
