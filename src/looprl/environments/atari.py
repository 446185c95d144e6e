"""Atari 2600 games with the DeepMind preprocessing (``ale.DEEPMIND_OPTIONS``) in ale-py's native
``AtariVectorEnv`` (one environment: a vector of one); episodic life and reward clipping are
agent-side (``bodies``). They pickle without the emulator: the unpickled one ``needs_reset``."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from looprl.core import State, StateArray
from looprl.core.leaves import as_numpy
from looprl.core.suggest import check_device, check_seed
from looprl.environments.ale import DEEPMIND_OPTIONS, game_name, make_ale_vector_env
from looprl.environments.base import Environment, forwarded
from looprl.environments.gym_helpers import RenderModeError, discrete_actions
from looprl.environments.vector import (
    NumpyVectorEnvironment,
    check_copies,
    state_array_from_numpy,
)


def derived_seed(root: int, frame: int, n_envs: int = 1) -> int:
    """The reset seed a checkpoint at ``frame`` fixes for a run seeded with ``root``."""
    words = np.random.SeedSequence([root % 2**32, frame]).generate_state(1)
    return int(words[0]) % (2**31 - n_envs)


def ale_seed(name: str, seed: Any, n_envs: int, optional: bool = True) -> int | None:
    """``check_seed``'s seed, at most ``2**31 - 1 - n_envs`` (ale-py's copies' are int32)."""
    seed = check_seed(name, seed, optional)
    highest = 2**31 - 1 - n_envs
    if seed is not None and seed > highest:
        raise ValueError(f"{name}: ale-py seeds its copy i with seed + i, a 32-bit integer: give "
                         f"a whole number seed in [0, {highest}], got {seed!r}")
    return seed


class AtariVectorEnvironment(NumpyVectorEnvironment):
    """``n_envs`` copies of an Atari game in ale-py's native vector env, on ``num_threads``."""

    def __init__(self, name: str, n_envs: int, device: str | torch.device = "cpu",
                 seed: int | None = None, num_threads: int | None = None, **options: Any):
        check_device(device)
        shown = game_name(name)
        # (ale-py's: a crash at 0, a C++ error below)
        n_envs = check_copies(f"AtariVectorEnvironment({name!r}, n_envs)", n_envs)
        seed = ale_seed(shown, seed, n_envs)  # (before the emulator, not at its reset)
        env = make_ale_vector_env(name, n_envs, num_threads=num_threads, **options)
        super().__init__(env, shown, n_envs, device, seed)
        self._arguments = (name, num_threads, options)
        self.options = {**DEEPMIND_OPTIONS, **options}
        self._lives = np.zeros(n_envs, dtype=np.int32)
        self._frame: np.ndarray | None = None  # copy 0's newest (``render``)
        # what checkpoints derive reset seeds from: the last seed given, else a random one
        self._root_seed = seed if seed is not None else int(np.random.SeedSequence().entropy)

    def prepare_checkpoint(self, frame: int) -> None:
        """The next reset without a seed uses ``derived_seed(run's seed, frame)``."""
        self._seed = derived_seed(self._root_seed, frame, self.n_envs)

    def seed(self, seed: int) -> None:
        """Seed the next reset and the checkpoints' (as the constructor's ``seed``)."""
        super().seed(ale_seed(self.name, seed, self.n_envs, optional=False))
        self._root_seed = self.given_seed

    def __getstate__(self) -> dict[str, Any]:
        """Everything but the emulator and the current batch."""
        return {**self.__dict__, "env": None, "_state": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Rebuild the emulator, not reset yet (``needs_reset``)."""
        self.__dict__.update(state)
        name, num_threads, options = self._arguments
        self.env = make_ale_vector_env(name, self.n_envs, num_threads=num_threads, **options)
        self.needs_reset = True

    def reset_output(self, seed: int | None = None) -> tuple[np.ndarray, Any]:
        if seed is not None:
            self._root_seed = ale_seed(self.name, seed, self.n_envs)
        self.needs_reset = False
        obs, info = super().reset_output(seed)
        self._frame = obs[0, -1]
        return obs, info

    def step(self, action: Any) -> StateArray:
        self._state = self._make_state(*self.step_output(action))
        return self._state

    def step_output(self, action: Any) -> tuple[Any, ...]:
        """ale-py's step of one action per copy: Gymnasium's 5-tuple of arrays."""
        if self.needs_reset:
            raise RuntimeError(f"{self.name} was restored from a checkpoint, which cannot hold "
                               "the emulator's state: reset() it before step()")
        if self._frame is None:  # (ale-py's words: "last_recv_env_ids_ is uninitialized")
            raise RuntimeError(f"Call reset() on {self.name} before step()")
        actions = discrete_actions(as_numpy(action), self.action_space, self.n_envs)
        n = self.action_space.n
        if actions.min() < 0 or actions.max() >= n:  # (ale-py hangs on an out-of-range one)
            raise ValueError(f"Invalid actions {actions.tolist()} for {self.name}: its actions "
                             f"are 0..{n - 1}")
        output = self.env.step(actions)
        self._frame = output[0][0, -1]
        return output

    def render(self, **kwargs: Any) -> np.ndarray:
        """The newest preprocessed frame of copy 0 as an ``(84, 84, 3)`` uint8 RGB array."""
        if self._frame is None:
            raise RuntimeError(f"{self.name}.render() before reset(): nothing to show")
        return np.repeat(self._frame[..., None], 3, axis=-1)

    def _make_state(self, obs, reward, terminated, truncated, info) -> StateArray:
        """The batch with ``lives`` and ``life_lost`` (a reset restores every life)."""
        lives = info["lives"]
        life_lost, self._lives = lives < self._lives, lives
        return state_array_from_numpy(
            obs, reward, terminated, truncated, self.device,
            life_lost=np.asarray(life_lost, dtype=bool), lives=np.asarray(lives, dtype=np.int64),
        )

    def copy(self) -> AtariVectorEnvironment:
        name, num_threads, options = self._arguments
        return AtariVectorEnvironment(name, self.n_envs, self.device, num_threads=num_threads,
                                      **options)

    remade = copy  # (a copy is made anew)


class AtariEnvironment(Environment):
    """One Atari game (``'Breakout'``, ``'ALE/Breakout-v5'``; ``options``: ``DEEPMIND_OPTIONS``);
    ``render_mode``: ALL's argument, ``None`` or ``'rgb_array'`` (``render`` gives frames)."""

    def __init__(self, name: str, device: str | torch.device = "cpu", seed: int | None = None,
                 render_mode: str | None = None, **options: Any):
        if render_mode not in (None, "rgb_array"):  # (ALL's ``render_mode='human'``)
            raise RenderModeError(
                f"AtariEnvironment({name!r}) offers the render mode 'rgb_array' (or None), got "
                f"render_mode={render_mode!r}: ale-py's vector environment draws no window; "
                "watch the game in a GIF (watch(agent, env, gif='game.gif'), looprl watch "
                "RUN_DIR --gif game.gif)")
        self._vector = AtariVectorEnvironment(name, 1, device, seed, num_threads=1, **options)
        self.render_mode = render_mode  # (``render`` gives frames whatever the mode)
        self.name = self._vector.name
        self.device = device
        self.given_seed = seed
        self.options = dict(options)

    @property
    def ale_id(self) -> str:
        """The Gymnasium id of the game (``'ALE/Breakout-v5'``)."""
        return f"ALE/{self.name}-v5"

    env = forwarded("_vector.env", "The wrapped ``ale_py.AtariVectorEnv`` (of one environment).")
    needs_reset = forwarded("_vector.needs_reset")
    observation_space = forwarded("_vector.observation_space")
    action_space = forwarded("_vector.action_space")

    def prepare_checkpoint(self, frame: int) -> None:
        self._vector.prepare_checkpoint(frame)

    def seed(self, seed: int) -> None:
        """Seed the next ``reset`` (the emulator's) and the copies ``duplicate`` makes."""
        self._vector.seed(seed)
        self.given_seed = self._vector.given_seed

    def __getstate__(self) -> dict[str, Any]:
        """Without the current state (a restored copy resets)."""
        return {**self.__dict__, "_state": None}

    def reset(self, seed: int | None = None) -> State:
        return self._keep(self._vector.reset(seed=seed))

    def step(self, action: Any) -> State:
        return self._keep(self._vector.step(action))

    def _keep(self, states: StateArray) -> State:
        x = {"observation": states.observation[0], "reward": float(states.reward[0]),
             "done": bool(states.done[0]), "mask": float(states.mask[0]),
             "life_lost": bool(states["life_lost"][0]), "lives": int(states["lives"][0])}
        self._state = State(x, device=states.device)
        return self._state

    def render(self, **kwargs: Any) -> np.ndarray:
        """The newest preprocessed frame as an ``(84, 84, 3)`` uint8 RGB array."""
        return self._vector.render()

    def close(self) -> None:
        self._vector.close()

    def remote_env(self) -> tuple[str, dict[str, Any]]:
        """The SRL ``"atari"`` environment of this game and options."""
        return "atari", {"game": self.name, **self.options}

    def remade(self) -> AtariEnvironment:
        return AtariEnvironment(self.name, self.device, self.given_seed, **self.options)

    def duplicate(self, n: int) -> AtariVectorEnvironment:
        """``n`` copies with the same options, stepped by ale-py's native vector env."""
        return AtariVectorEnvironment(self.name, n, device=self.device, seed=self.given_seed,
                                      **self.options)
