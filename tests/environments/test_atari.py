"""Tests of AtariEnvironment on the real emulator (ale-py): DeepMind preprocessing."""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("ale_py")

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from looprl.environments.ale import _import_ale, atari_games, rom_id  # noqa: E402
from looprl.environments.atari import AtariEnvironment, AtariVectorEnvironment  # noqa: E402

NOOP, FIRE = 0, 1


def test_observations_are_stacked_uint8_frames() -> None:
    env = AtariEnvironment("Breakout", seed=0)
    state = env.reset()
    assert env.name == "Breakout" and env.ale_id == "ALE/Breakout-v5"
    assert env.observation_space == gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    assert env.action_space == gym.spaces.Discrete(4)
    assert state.observation.shape == (4, 84, 84) and state.observation.dtype == torch.uint8
    assert not state.observation[:3].any() and state.observation[3].any()  # zero padding
    assert state.reward == 0.0 and not state.done and state.mask == 1.0 and state["lives"] == 5
    previous = state.observation
    for t in range(10):
        state = env.step(t % 4)
        assert state.observation.shape == (4, 84, 84) and state.observation.dtype == torch.uint8
        assert torch.equal(state.observation[:-1], previous[1:])  # the stack shifts by one
        previous = state.observation
    assert env.render().shape == (84, 84, 3)


def test_game_names_and_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("Breakout", "breakout", "ALE/Breakout-v5", "BreakoutNoFrameskip-v4"):
        assert rom_id(name) == "breakout"
    assert rom_id("MsPacman") == "ms_pacman" and rom_id("SpaceInvaders") == "space_invaders"
    assert "Pong" in atari_games() and len(atari_games()) > 50
    with pytest.raises(ValueError, match="Did you mean 'Breakout'") as info:
        AtariEnvironment("Breakot")
    assert "\n" not in str(info.value)
    monkeypatch.setitem(sys.modules, "ale_py", None)
    with pytest.raises(ModuleNotFoundError, match=r"looprl\[atari\]") as info:
        _import_ale()
    assert "\n" not in str(info.value)


def _reset_frames(seed: int, **options) -> torch.Tensor:
    return AtariEnvironment("Breakout", seed=seed, **options).reset().observation


def test_noop_reset_randomizes_the_start() -> None:
    random_starts = {_reset_frames(seed).numpy().tobytes() for seed in range(6)}
    fixed_starts = {_reset_frames(seed, noop_max=0).numpy().tobytes() for seed in range(3)}
    assert len(random_starts) > 1  # a random number of no-ops moves the launched ball
    assert len(fixed_starts) == 1  # no sticky actions: without no-ops the start is fixed


def _lives_after_noops(steps: int, **options) -> int:
    env = AtariEnvironment("Breakout", seed=0, **options)
    env.reset()
    for _ in range(steps):
        state = env.step(NOOP)
    return state["lives"]


def test_fire_reset_launches_the_ball() -> None:
    assert _lives_after_noops(150) < 5  # the ball was launched and missed
    assert _lives_after_noops(150, fire_reset=False) == 5  # never launched without FIRE


def test_a_lost_life_is_flagged_but_the_game_goes_on_until_game_over() -> None:
    env = AtariEnvironment("Breakout", seed=0)
    state = env.reset()
    losses, steps = 0, 0
    while not state.done:
        previous = state
        state = env.step(FIRE if steps % 2 else NOOP)  # FIRE relaunches after a lost life
        steps += 1
        if state["life_lost"]:
            losses += 1
            assert state["lives"] == previous["lives"] - 1
            if not state.done:  # only the environment's state: no reset happens
                assert state.mask == 1.0
                assert torch.equal(state.observation[:-1], previous.observation[1:])
        assert steps < 2000
    assert losses == 5 and state["lives"] == 0
    assert state.done and state.mask == 0.0  # game over terminates
    assert env.reset()["lives"] == 5


def _play(env: AtariEnvironment, actions: np.ndarray) -> list[float]:
    env.reset()
    return [env.step(int(a)).reward for a in actions]


def test_reward_clipping_option() -> None:
    actions = np.random.default_rng(0).integers(0, 6, 300)
    raw = _play(AtariEnvironment("SpaceInvaders", seed=1), actions)
    clipped = _play(AtariEnvironment("SpaceInvaders", seed=1, clip_rewards=True), actions)
    assert max(raw) > 1  # true game scores by default
    assert clipped == [float(np.sign(r)) for r in raw]


def test_same_seed_same_frames() -> None:
    actions = np.random.default_rng(1).integers(0, 4, 50)
    first, second = AtariEnvironment("Breakout", seed=3), AtariEnvironment("Breakout", seed=3)
    first.reset(), second.reset()
    for a in actions:
        assert torch.equal(first.step(int(a)).observation, second.step(int(a)).observation)


def test_alls_seed_seeds_the_next_reset_as_the_constructors_seed() -> None:
    """``env.seed(s)`` (ALL's) was kept for ``duplicate`` only: the next reset was random."""
    actions = np.random.default_rng(2).integers(0, 4, 20)

    def played(env: AtariEnvironment) -> list[torch.Tensor]:
        return [env.reset().observation] + [env.step(int(a)).observation for a in actions]

    seeded, later = AtariEnvironment("Breakout", seed=3), AtariEnvironment("Breakout")
    later.seed(3)
    assert all(map(torch.equal, played(seeded), played(later)))
    vector = AtariVectorEnvironment("Breakout", 2, num_threads=1)
    vector.seed(3)
    assert torch.equal(vector.reset().observation, seeded.duplicate(2).reset().observation)
    given = AtariVectorEnvironment("Breakout", 2, seed=3, num_threads=1)
    for env in (vector, given):  # checkpoints derive their reset seeds from it too
        env.prepare_checkpoint(1000)
    assert torch.equal(vector.reset().observation, given.reset().observation)


def test_duplicate_is_a_native_vector_env_with_next_step_autoreset() -> None:
    env = AtariEnvironment("Breakout", seed=5)
    vector = env.duplicate(3)
    assert isinstance(vector, AtariVectorEnvironment) and vector.n_envs == 3
    assert vector.observation_space == env.observation_space
    assert vector.action_space == env.action_space
    states = vector.reset()
    single = env.reset()
    assert states.observation.shape == (3, 4, 84, 84) and states.observation.dtype == torch.uint8
    assert torch.equal(states.observation[0], single.observation)  # copy 0 has the env's seed
    ended = None
    for t in range(3000):
        action = torch.full((3,), FIRE if t % 2 else NOOP)
        previous, states = states, vector.step(action)
        assert torch.equal(states.observation[0], env.step(int(action[0])).observation)
        assert states["life_lost"].dtype == torch.bool and states["lives"].shape == (3,)
        if ended is not None:
            break
        if states.done.any():
            ended = int(states.done.nonzero()[0])
    assert ended is not None
    assert states["lives"][ended] == 5 and states.reward[ended] == 0  # reset on the next step
    assert not states.observation[ended, :3].any()
    assert previous.mask[ended] == 0.0


def test_vector_copy_has_the_same_options() -> None:
    vector = AtariVectorEnvironment("Breakout", 2, frame_skip=2, repeat_action_probability=0.0)
    copy = vector.copy()
    assert (copy.name, copy.n_envs, copy.options) == (vector.name, 2, vector.options)
    assert copy.reset().observation.shape == vector.reset().observation.shape
    vector.close()
    copy.close()


def test_a_step_before_reset_is_one_line_naming_the_game() -> None:
    for env in (AtariEnvironment("Pong"), AtariVectorEnvironment("Pong", 2, num_threads=1)):
        with pytest.raises(RuntimeError, match=r"^Call reset\(\) on Pong before step\(\)$"):
            env.step(torch.zeros(env.num_envs, dtype=torch.long) if hasattr(env, "n_envs") else 0)
        env.close()


def test_out_of_range_actions_are_refused_before_ale_sees_them() -> None:
    env = AtariEnvironment("Breakout")  # 4 actions; ale-py's vector env hangs on action 10
    env.reset()
    with pytest.raises(ValueError, match=r"Invalid actions \[10\] for Breakout: .* 0\.\.3"):
        env.step(10)
    with pytest.raises(ValueError, match="Invalid actions"):
        env.step(-1)
    assert env.step(1).observation.shape == (4, 84, 84)  # still usable
    with pytest.raises(ValueError, match=r"one whole number per copy, got 0\.7"):
        env.step(0.7)  # (was action 0)
    env.close()


@pytest.mark.parametrize(("options", "message"), [
    ({"noop_max": -1}, "noop_max must be a whole number >= 0, got -1"),
    ({"repeat_action_probability": 1.5}, "repeat_action_probability must be in .0, 1., got 1.5"),
    ({"fire_reset": "no"}, "fire_reset must be True or False, got 'no'"),
    ({"frame_skip": 2.5}, "frame_skip must be a whole number >= 1, got 2.5"),
    ({"frame_stack": 0}, "frame_stack must be a whole number >= 1, got 0"),
    ({"screen_size": 0}, "screen_size must be a whole number >= 1, got 0"),
])
def test_an_option_ale_py_cannot_take_is_one_line(options: dict, message: str) -> None:
    """A stack or a screen of 0 hung ale-py; a negative no-op count and a probability above 1
    were taken silently; text for a flag was pybind11's error of many lines."""
    with pytest.raises(ValueError, match=f"^Atari option {message}$"):
        AtariEnvironment("Breakout", **options)


def test_a_screen_or_stack_too_large_for_memory_is_one_line(monkeypatch) -> None:
    """screen_size=10**6 was NumPy's raw MemoryError ('Unable to allocate 3.64 TiB'), raised
    while ale-py made its observation space; a size that passes the estimate but fails to
    allocate is the same line."""
    with pytest.raises(ValueError, match=r"^Atari: a frame stack of 4 frames of "
                                         r"1,000,000x1,000,000 pixels takes 3,725\.3 GiB, more "
                                         r"than the .* GiB of memory .* on cpu; lower screen_size "
                                         r"\(default 84; the ALE screen is 210x160\) or "
                                         r"frame_stack \(default 4\)$"):
        AtariEnvironment("Breakout", screen_size=10**6)
    with pytest.raises(ValueError, match=r"^Atari: 2 copies of a frame stack of 10,000,000 "):
        AtariVectorEnvironment("Breakout", 2, num_threads=1, frame_stack=10**7)

    def refuse(*args, **kwargs):
        raise MemoryError("Unable to allocate 9 GiB for an array")

    monkeypatch.setattr("ale_py.AtariVectorEnv", refuse)
    with pytest.raises(ValueError, match=r"^Atari: .* 96x96 pixels takes 36\.0 KiB on cpu, which "
                                         r"could not be allocated \(Unable to allocate 9 GiB"):
        AtariEnvironment("Breakout", screen_size=96)


def test_whole_options_given_as_floats_or_numpy_numbers_are_taken() -> None:
    env = AtariEnvironment("Breakout", frame_skip=np.int64(3), screen_size=64.0,
                           fire_reset=np.bool_(True))
    assert env.reset().observation.shape == (4, 64, 64)
    env.close()


def test_a_seed_ale_py_cannot_take_is_one_line() -> None:
    """ale-py seeds copy i with seed + i as an int32: a larger seed was pybind11's error of
    many lines (blamed on the game's reset), a negative one was taken silently; then it was
    taken by the constructor and ``seed()`` and refused only at ``reset()``."""
    for seed in (2**32, -1):  # (no seed's: refused when given)
        with pytest.raises(ValueError, match=r"^Breakout: a seed is a whole number from 0 to"):
            AtariVectorEnvironment("Breakout", 1, seed=seed, num_threads=1)
    with pytest.raises(ValueError, match=r"^Pong: ale-py .* \[0, 2147483646\], got 2147483648$"):
        AtariEnvironment("Pong", seed=2**31)
    for seed, n in ((2**31, 1), (2**31 - 1, 2)):
        with pytest.raises(ValueError, match=r"^Breakout: ale-py seeds .* got \d+$"):
            AtariVectorEnvironment("Breakout", n, seed=seed, num_threads=1)
        env = AtariVectorEnvironment("Breakout", n, num_threads=1)
        for call in (env.seed, env.reset):
            with pytest.raises(ValueError, match="32-bit integer"):
                call(seed)
        assert env.reset(seed=2**31 - 1 - n).observation.shape == (n, 4, 84, 84)
        env.close()
    # a run's evaluation resets from seed + 10,000, wrapped to what ale-py takes (a run seeded
    # near 2**31 failed at its evaluation, after training)
    from looprl.experiments.experiment import evaluation_seed
    assert evaluation_seed(3) == 10_003
    env = AtariVectorEnvironment("Breakout", 8, num_threads=1)
    assert env.reset(seed=evaluation_seed(2**31 - 9)).observation.shape == (8, 4, 84, 84)
    env.close()


def test_a_local_run_seeded_past_ale_pys_range_resets_its_vector_environment() -> None:
    """A run's collector resets its vector environment from the run's seed wrapped below
    ale-py's range, as a Ray actor's. (Was: a local parallel Atari run seeded from
    2**31 - 1 - n_envs up failed at its first reset, ale-py's range named.)"""
    from looprl.collector import EnvRunner

    env = AtariVectorEnvironment("Breakout", 2, num_threads=1)
    runner = EnvRunner(env, n_envs=2, segment_length=None, seed=2**32 - 1)
    assert runner.request(0).obs.shape == (2, 4, 84, 84)
    env.close()


@pytest.mark.parametrize("vector", [False, True])
def test_a_pickled_environment_resets_as_the_original_after_a_checkpoint(vector: bool) -> None:
    import pickle

    options = {"seed": 3, "max_episode_frames": 160}  # 40 steps per episode
    env = AtariVectorEnvironment("Breakout", 2, **options) if vector else \
        AtariEnvironment("Breakout", **options)
    actions = np.random.default_rng(0).integers(0, 4, 130)

    def step(environment, t: int):
        action = np.full(2, actions[t]) if vector else int(actions[t])
        state = environment.step(action)
        return environment.reset() if not vector and state.done else state

    env.reset()
    for t in range(30):
        step(env, t)
    env.prepare_checkpoint(1000)
    restored = pickle.loads(pickle.dumps(env))
    assert restored.needs_reset and not env.needs_reset and restored.options == env.options
    with pytest.raises(RuntimeError, match=r"restored from a checkpoint.*reset\(\) it before"):
        step(restored, 0)
    # both reset with the seed the checkpoint fixed, and play the same episodes on
    assert torch.equal(env.reset().observation, restored.reset().observation)
    assert not restored.needs_reset
    for t in range(130):  # a few episodes: later resets continue the same emulator RNG
        first, second = step(env, t), step(restored, t)
        assert torch.equal(first.observation, second.observation), t
        assert torch.equal(torch.as_tensor(first.reward), torch.as_tensor(second.reward))


def test_alls_render_mode_argument_is_taken_or_one_line() -> None:
    """ALL's ``AtariEnvironment(name, render_mode=...)`` (its ``all-watch-atari`` passes
    ``'human'``) was "Unknown Atari options ['render_mode']"; ``'rgb_array'`` renders frames,
    ``'human'`` is one line saying how to watch, and ``looprl watch`` falls back to frames."""
    from looprl.environments.gym_helpers import RenderModeError
    from looprl.presets.catalog import rendering

    env = AtariEnvironment("Pong", render_mode="rgb_array")
    env.reset(seed=0)
    assert env.render().shape == (84, 84, 3)
    env.close()
    with pytest.raises(RenderModeError, match=r"draws no window; watch the game in a GIF"):
        AtariEnvironment("Pong", render_mode="human")
    env = rendering(lambda **kwargs: AtariEnvironment("Pong", **kwargs), "human")
    assert env.render_mode is None
    env.close()
