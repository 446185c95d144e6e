"""``DuplicateEnvironment`` over ``AtariEnvironment`` s (the local loop of the Atari DQN family,
and its Ray actors' copies) keeps the ``life_lost`` and ``lives`` entries the ``EpisodicLife``
body reads."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from looprl.environments import GymEnvironment
from looprl.environments.bodies import deepmind_atari_states
from looprl.environments.duplicate import DuplicateEnvironment

pytest.importorskip("ale_py")

from looprl.environments.atari import AtariEnvironment  # noqa: E402


def test_atari_copies_keep_their_lives_and_a_lost_life_ends_the_episode_for_learning():
    envs = [AtariEnvironment("Breakout", device="cpu") for _ in range(2)]
    vector = DuplicateEnvironment(envs)
    states = vector.reset(seed=0)
    assert states["lives"].tolist() == [5, 5] and not states["life_lost"].any()
    process, rng, lost = deepmind_atari_states(), np.random.default_rng(0), 0
    for _ in range(60):  # (Breakout's first life ends after about 20 steps of random play)
        states = vector.step(torch.as_tensor(rng.integers(0, 4, 2)))
        for i, env in enumerate(envs):  # each row is its copy's own state
            assert bool(states["life_lost"][i]) == env.state["life_lost"]
            assert int(states["lives"][i]) == env.state["lives"]
        seen = process(states)
        assert torch.equal(seen.done, states.done | states["life_lost"])  # a terminal row
        assert torch.equal(seen.mask == 0, (states.mask == 0) | states["life_lost"])
        lost += int(states["life_lost"].sum())
    assert lost >= 2 and not states.done.all()  # lives lost, the games go on
    vector.close()


def test_gym_copies_step_as_arrays_without_further_entries():
    vector = DuplicateEnvironment([GymEnvironment("CartPole-v1") for _ in range(2)])
    vector.reset(seed=0)
    assert set(vector.step(torch.zeros(2, dtype=torch.long)).keys()) == {
        "observation", "reward", "done", "mask"}
    vector.close()


def test_a_number_of_atari_copies_is_a_whole_number_and_else_one_line():
    """``AtariEnvironment.duplicate(0)`` crashed the interpreter (ale-py, a segmentation
    fault), ``duplicate(-1)`` was a C++ error; now the line ``GymEnvironment`` gives."""
    env = AtariEnvironment("Pong", device="cpu")
    for bad in (0, -1, 1.5, "2"):
        with pytest.raises(TypeError, match=r"needs the number of copies n_envs as an int >= 1"):
            env.duplicate(bad)
    vector = env.duplicate(np.int64(2))
    assert vector.n_envs == 2
    vector.close()
    env.close()
