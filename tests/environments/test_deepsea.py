"""DeepSea (looprl.environments.deepsea) against hand-computed episodes."""

from __future__ import annotations

import itertools

import gymnasium as gym
import numpy as np
import pytest

from looprl.environments import DeepSea, GymEnvironment


def run(env: DeepSea, moves: list[str]) -> tuple[list[float], list[tuple[int, int]], list[bool]]:
    """Rewards, positions ``(row, column)`` and ``terminated`` flags of an episode of moves
    ``'R'``/``'L'``, translated to actions through the environment's mapping."""
    env.reset(seed=0)
    rewards, positions, done = [], [], []
    for move in moves:
        right = env.action_mapping[env.row, env.column]
        observation, reward, terminated, truncated, _ = env.step(
            int(right if move == "R" else 1 - right))
        assert not truncated
        rewards.append(reward)
        positions.append(position(observation, env.size))
        done.append(terminated)
    return rewards, positions, done


def position(observation: np.ndarray, size: int) -> tuple[int, int] | None:
    """The one-hot cell of a flat observation, ``None`` for the all-zero final one."""
    assert observation.shape == (size * size,) and observation.dtype == np.float32
    cells = np.flatnonzero(observation)
    assert len(cells) <= 1 and observation.sum() == len(cells)
    return None if len(cells) == 0 else divmod(int(cells[0]), size)


def test_all_right_collects_the_treasure_after_paying_every_move():
    env = DeepSea(size=4, randomize_actions=False)
    observation, _ = env.reset()
    assert position(observation, 4) == (0, 0)
    rewards, positions, done = run(env, ["R"] * 4)
    assert rewards == pytest.approx([-0.0025, -0.0025, -0.0025, 1 - 0.0025])
    assert sum(rewards) == pytest.approx(0.99) == env.optimal_return
    assert positions == [(1, 1), (2, 2), (3, 3), None]
    assert done == [False, False, False, True]


def test_every_other_path_earns_at_most_zero():
    env = DeepSea(size=5)
    for moves in itertools.product("LR", repeat=5):
        rewards, _, done = run(env, list(moves))
        assert done == [False] * 4 + [True]
        rights = moves.count("R")
        expected = -0.01 / 5 * rights + (1.0 if rights == 5 else 0.0)
        assert sum(rewards) == pytest.approx(expected)
        assert (sum(rewards) > 0) == (rights == 5)


def test_left_moves_stop_at_the_left_wall():
    env = DeepSea(size=4, randomize_actions=False)
    rewards, positions, _ = run(env, ["L", "R", "R", "L"])
    assert positions == [(1, 0), (2, 1), (3, 2), None]  # left at column 0 stays there
    assert rewards == pytest.approx([0.0, -0.0025, -0.0025, 0.0])
    _, positions, _ = run(env, ["R", "L", "L", "L"])
    assert positions == [(1, 1), (2, 0), (3, 0), None]


def test_fixed_mapping_means_action_one_is_right():
    env = DeepSea(size=3, randomize_actions=False)
    env.reset()
    assert [env.step(1)[1] for _ in range(3)] == pytest.approx([-0.01 / 3] * 2 + [1 - 0.01 / 3])
    env.reset()
    assert [env.step(0)[1] for _ in range(3)] == [0.0, 0.0, 0.0]


def test_action_mapping_is_drawn_from_the_mapping_seed_as_in_bsuite():
    mapping = DeepSea(size=6, mapping_seed=3).action_mapping
    assert np.array_equal(mapping, np.random.RandomState(3).binomial(1, 0.5, [6, 6]))
    assert np.array_equal(mapping, DeepSea(size=6, mapping_seed=3).action_mapping)
    assert not np.array_equal(mapping, DeepSea(size=6, mapping_seed=4).action_mapping)
    # Hand-checked: seed 0's mapping for size 4 (1 where action 1 is right); its diagonal
    # makes actions 1, 1, 1, 0 the path to the treasure.
    assert DeepSea(size=4, mapping_seed=0).action_mapping.tolist() == [
        [1, 1, 1, 1], [0, 1, 0, 1], [1, 0, 1, 1], [1, 1, 0, 0]]
    env = DeepSea(size=4, mapping_seed=0)
    env.reset(seed=123)  # the reset seed does not change the task
    assert sum(env.step(a)[1] for a in [1, 1, 1, 0]) == pytest.approx(0.99)
    env.reset()  # R, R, R, then left at (3, 3): three costs, no treasure
    assert sum(env.step(a)[1] for a in [1, 1, 1, 1]) == pytest.approx(-0.0075)
    env.reset()  # L to (1, 0), then R, R, R to (4, 3): three costs
    assert [env.step(a)[1] for a in [0, 0, 0, 0]] == pytest.approx([0, -0.0025, -0.0025, -0.0025])


def test_only_the_mapped_action_sequence_finds_the_treasure():
    env = DeepSea(size=6, mapping_seed=1)
    winners = []
    for actions in itertools.product([0, 1], repeat=6):
        env.reset()
        if sum(env.step(a)[1] for a in actions) > 0:
            winners.append(actions)
    assert winners == [tuple(int(env.action_mapping[i, i]) for i in range(6))]


def test_stepping_after_the_end_or_with_a_bad_action_raises():
    env = DeepSea(size=2)
    env.reset()
    with pytest.raises(ValueError, match="0 or 1"):
        env.step(2)
    env.step(0)
    env.step(0)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


def test_registered_with_gymnasium_and_usable_by_name():
    env = gym.make("looprl/DeepSea-v0", size=7, mapping_seed=2)
    assert env.observation_space.shape == (49,) and env.action_space.n == 2
    assert np.array_equal(env.unwrapped.action_mapping, DeepSea(7, mapping_seed=2).action_mapping)
    looprl_env = GymEnvironment("looprl/DeepSea-v0", size=5)
    state = looprl_env.reset(seed=0)
    assert state.observation.shape == (25,) and state.observation[0] == 1.0
    steps = 0
    while not state.done:
        state = looprl_env.step(0)
        steps += 1
    assert steps == 5
