"""Replay for stacked uint8 frames that stores each frame once (the DQN replay memory).

Stacked Atari observations ``(4, 84, 84)`` share three of their four frames with the next
observation, and a transition holds two of them: storing them as they come costs 8 frames
per transition. ``AtariReplayBuffer`` keeps one ring of single frames instead (one frame per
step, plus the ``stack - 1`` older frames of the first state of each episode) and rebuilds
the stacked observations and next observations when it samples, so an 84x84 frame costs
7,056 bytes: a 1M-transition buffer takes about 7.1 GB instead of 56 GB (see
``AtariReplayBuffer.footprint``).

Slot ``k`` of the ring holds the newest frame of one state; that state is
``frames[k - stack + 1 .. k]`` and its successor ``frames[k - stack + 2 .. k + 1]``. The
action, reward, ``mask`` and ``done`` of the transition out of it are kept at slot ``k`` and
``valid[k]`` says whether one was stored. Writing a slot invalidates the transitions that
needed the frame it overwrites. Like ``ExperienceReplayBuffer``, transitions out of a ``done``
state are skipped, so episode boundaries (including the ``EpisodicLife`` body's life losses)
are never crossed.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch

from looprl.core import State, StateArray

log = logging.getLogger(__name__)

#: Bytes per slot besides the frame: action (int64), reward and mask (float32), done, valid.
_METADATA_BYTES = 8 + 4 + 4 + 1 + 1


class AtariReplayBuffer:
    """Uniform replay of transitions between stacked uint8 frame observations.

    The interface is that of ``ExperienceReplayBuffer`` (``store``, ``sample``, ``gather``,
    ``len``) for a single environment: each ``next_state``'s observation must be the
    previous one shifted by one frame (as ``AtariEnvironment`` and the ``FrameStack`` body
    produce); ``store`` checks it and skips (and counts in ``skipped``) transitions whose
    frames do not continue, such as one into a mid-episode reset.

    Args:
        size: capacity in frames (= transitions, less ``stack - 1`` per episode start).
        device: where sampled batches are returned (storage stays in CPU memory).
        generator: torch RNG used for sampling (for reproducibility).
        check_stacking: verify on every ``store`` that frames continue (a few microseconds);
            without it a discontinuous transition is stored with wrong frames.
    """

    def __init__(
        self,
        size: int,
        device: str | torch.device = "cpu",
        generator: torch.Generator | None = None,
        check_stacking: bool = True,
    ):
        if size < 2:
            raise ValueError(f"Replay buffer size must be at least 2, got {size}")
        self.size = int(size)
        self.device = device
        self.generator = generator
        self.check_stacking = check_stacking
        self.stack = 0
        self._pos = 0  # next slot to write
        self._filled = 0  # slots written so far (up to size)
        self._count = 0  # valid transitions
        self._last: State | None = None  # the state whose newest frame is at _pos - 1
        self.skipped = 0  # transitions skipped because their frames did not continue
        self.frames: torch.Tensor | None = None

    @staticmethod
    def footprint(size: int, frame_shape: tuple[int, ...] = (84, 84)) -> int:
        """Bytes a buffer of ``size`` slots allocates for frames of ``frame_shape``."""
        return int(size) * (int(np.prod(frame_shape)) + _METADATA_BYTES)

    @property
    def nbytes(self) -> int:
        """Bytes allocated by the storage (0 before the first ``store``)."""
        if self.frames is None:
            return 0
        arrays = (self.frames, self.action, self.reward, self.mask, self.done, self.valid)
        return sum(a.nbytes for a in arrays)

    def __len__(self) -> int:
        return self._count

    def _allocate(self, observation: torch.Tensor, action: torch.Tensor) -> None:
        self.stack = int(observation.shape[0])
        if self.size < self.stack + 2:
            raise ValueError(f"Replay size {self.size} is too small for stacks of {self.stack}")
        frame_shape = tuple(observation.shape[1:])
        self.frames = torch.empty((self.size, *frame_shape), dtype=observation.dtype)
        self.action = torch.zeros((self.size, *action.shape), dtype=action.dtype)
        self.reward = torch.zeros(self.size, dtype=torch.float32)
        self.mask = torch.zeros(self.size, dtype=torch.float32)
        self.done = torch.zeros(self.size, dtype=torch.bool)
        self.valid = torch.zeros(self.size, dtype=torch.bool)
        # numpy views of the same memory: scalar writes cost ~0.1 us instead of ~3 us
        self._np = {k: getattr(self, k).numpy() for k in ("reward", "mask", "done", "valid")}
        self._offsets = torch.arange(-self.stack + 1, 2)  # a state's frames and the next one

    def store(self, state: State | None, action: Any, next_state: State) -> None:
        """Store the transition ``state --action--> next_state`` (skipped if ``state`` is
        ``None`` or ``done``)."""
        if isinstance(state, StateArray) or isinstance(next_state, StateArray):
            raise TypeError("AtariReplayBuffer stores single-environment transitions, not batches")
        if state is None or state.done:
            return
        action = torch.as_tensor(action)
        if self.frames is None:
            self._allocate(state.observation, action)
        if self.check_stacking and not self._continues(state.observation, next_state):
            return
        if state is not self._last:  # the first transition of a new sequence of frames
            for frame in state.observation.cpu():
                self._write_frame(frame)
        k = (self._pos - 1) % self.size
        self._write_frame(next_state.observation[-1].cpu())
        self.action[k] = action
        n = self._np
        n["reward"][k] = float(next_state.reward)
        n["mask"][k] = float(next_state.mask)
        n["done"][k] = bool(next_state.done)
        n["valid"][k] = True
        self._count += 1
        self._last = next_state

    def _continues(self, observation: torch.Tensor, next_state: State) -> bool:
        """Whether ``next_state``'s frames continue ``observation``'s; if not, the
        transition cannot be stored (e.g. the environment was reset mid-episode) and is
        skipped like an episode boundary, counted in ``skipped``."""
        if torch.equal(observation[1:], next_state.observation[:-1]):
            return True
        self.skipped += 1
        self._last = None
        if self.skipped == 1:
            log.warning(
                "AtariReplayBuffer skipped a transition whose next observation does not "
                "continue the frame stack (stacked frames must shift by one per step)"
            )
        return False

    def _write_frame(self, frame: torch.Tensor) -> None:
        """Write ``frame`` at the next slot, invalidating the transitions that needed it."""
        p = self._pos
        valid = self._np["valid"]
        for j in range(p, p + self.stack):  # transitions whose window starts at or covers p
            j %= self.size
            if valid[j]:
                valid[j] = False
                self._count -= 1
        self.frames[p] = frame
        self._pos = (p + 1) % self.size
        self._filled = min(self._filled + 1, self.size)

    def sample_indices(self, batch_size: int) -> torch.Tensor:
        """Uniform slots among those holding a valid transition (rejection sampling)."""
        if self._count == 0:
            raise RuntimeError("Cannot sample from an empty replay buffer")
        chosen: list[torch.Tensor] = []
        found = 0
        while found < batch_size:
            candidates = torch.randint(0, self._filled, (2 * batch_size,), generator=self.generator)
            candidates = candidates[self.valid[candidates]]
            chosen.append(candidates)
            found += candidates.shape[0]
        return torch.cat(chosen)[:batch_size]

    def sample(self, batch_size: int):
        """A minibatch ``(states, actions, rewards, next_states, weights)`` with stacked
        uint8 observations (see ``ExperienceReplayBuffer.sample``)."""
        return self.gather(self.sample_indices(batch_size))

    def gather(self, index: torch.Tensor):
        """The transitions at slots ``index``, in the format of ``sample``."""
        window = self.frames[(index.unsqueeze(-1) + self._offsets) % self.size]
        device = self.device
        window = window.to(device)
        n = index.shape[0]
        rewards = self.reward[index].to(device)
        states = StateArray({"observation": window[:, :-1]}, (n,), device=device)
        next_states = StateArray(
            {
                "observation": window[:, 1:],
                "reward": rewards,
                "mask": self.mask[index].to(device),
                "done": self.done[index].to(device),
            },
            (n,),
            device=device,
        )
        weights = torch.ones(n, device=device)
        return states, self.action[index].to(device), rewards, next_states, weights

    def update_priorities(self, td_errors: torch.Tensor) -> None:
        """Uniform replay ignores priorities (kept for interface compatibility)."""
