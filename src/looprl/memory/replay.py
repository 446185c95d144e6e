"""Experience replay: a preallocated ring buffer of transitions with O(1) ``store``.

Storage is allocated on the first ``store`` from the shapes and dtypes it sees, so no
space needs to be declared up front. Transitions out of a ``done`` state are skipped (the
environment was reset and the action discarded), as are stores with no previous state.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import torch

from looprl.core import State, StateArray

_SAVE_CONTENTS: ContextVar[bool] = ContextVar("save_replay_contents", default=True)


@contextmanager
def replay_contents_saved(saved: bool) -> Iterator[None]:
    """While active, pickling a replay buffer keeps (``True``) or drops its transitions.

    Checkpoints use it to leave the replay buffer out (``checkpoint_replay=False``): the
    restored buffer is empty, with its capacity and random generator, and refills as the
    agent acts.
    """
    token = _SAVE_CONTENTS.set(saved)
    try:
        yield
    finally:
        _SAVE_CONTENTS.reset(token)


class ReplayContents:
    """Mixin for buffers whose transitions a checkpoint may leave out."""

    def _empty_contents(self) -> dict[str, Any]:
        """The attributes of an empty buffer (replacing the stored transitions)."""
        raise NotImplementedError

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        if not _SAVE_CONTENTS.get():
            state.update(self._empty_contents())
        return state


class ExperienceReplayBuffer(ReplayContents):
    """Uniform replay of ``(state, action, reward, next_state)`` transitions.

    Args:
        size: capacity in transitions (the oldest are overwritten).
        device: where sampled batches are returned.
        store_device: where transitions are kept (defaults to ``device``).
        generator: torch RNG used for sampling (for reproducibility).
    """

    #: the run's metrics dictionary when meta components are attached (``looprl.meta``)
    metrics: dict[str, Any] | None = None

    def __init__(
        self,
        size: int,
        device: str | torch.device = "cpu",
        store_device: str | torch.device | None = None,
        generator: torch.Generator | None = None,
    ):
        if size < 1:
            raise ValueError(f"Replay buffer size must be positive, got {size}")
        self.size = int(size)
        self.device = device
        self.store_device = store_device or device
        self.generator = generator
        self._pos = 0
        self._len = 0
        self._storage: dict[str, torch.Tensor] | None = None

    def __len__(self) -> int:
        return self._len

    def _empty_contents(self) -> dict[str, Any]:
        return {"_storage": None, "_pos": 0, "_len": 0}

    def _allocate(self, example: dict[str, torch.Tensor]) -> None:
        self._storage = {
            key: torch.empty((self.size, *value.shape), dtype=value.dtype, device=self.store_device)
            for key, value in example.items()
        }

    def store(self, state: State | None, action: Any, next_state: State) -> None:
        """Store one transition (or one per row when given ``StateArray`` batches)."""
        if state is None:
            return
        if isinstance(state, StateArray):
            self._store_batch(state, action, next_state)
            return
        if state.done:
            return
        self._write(
            observation=state.observation,
            action=torch.as_tensor(action),
            reward=torch.as_tensor(next_state.reward, dtype=torch.float32),
            next_observation=next_state.observation,
            mask=torch.as_tensor(next_state.mask, dtype=torch.float32),
            done=torch.as_tensor(next_state.done, dtype=torch.bool),
        )

    def _write(self, **transition: torch.Tensor) -> None:
        if self._storage is None:
            self._allocate(transition)
        pos = self._pos
        for key, value in transition.items():
            self._storage[key][pos] = value
        self._pos = (pos + 1) % self.size
        self._len = min(self._len + 1, self.size)

    def _store_batch(self, state: StateArray, action: Any, next_state: StateArray) -> None:
        keep = ~state.done
        rows = {
            "observation": state.observation[keep],
            "action": torch.as_tensor(action)[keep],
            "reward": next_state.reward[keep].float(),
            "next_observation": next_state.observation[keep],
            "mask": next_state.mask[keep].float(),
            "done": next_state.done[keep],
        }
        n = rows["observation"].shape[0]
        if n == 0:
            return
        if self._storage is None:
            self._allocate({k: v[0] for k, v in rows.items()})
        index = (torch.arange(n) + self._pos) % self.size
        for key, value in rows.items():
            self._storage[key][index] = value
        self._pos = (self._pos + n) % self.size
        self._len = min(self._len + n, self.size)

    def sample_indices(self, batch_size: int) -> torch.Tensor:
        """Uniform indices of stored transitions."""
        if self._len == 0:
            raise RuntimeError("Cannot sample from an empty replay buffer")
        return torch.randint(0, self._len, (batch_size,), generator=self.generator)

    def sample(self, batch_size: int):
        """A minibatch ``(states, actions, rewards, next_states, weights)``.

        ``states``/``next_states`` are ``StateArray`` objects (``next_states.mask`` is 0
        where the transition terminated); ``weights`` are ones (uniform replay).
        """
        return self.gather(self.sample_indices(batch_size))

    def gather(self, index: torch.Tensor):
        """The transitions at ``index``, in the format of ``sample``."""
        s = self._storage
        device = self.device
        obs = s["observation"][index].to(device)
        next_obs = s["next_observation"][index].to(device)
        rewards = s["reward"][index].to(device)
        mask = s["mask"][index].to(device)
        n = index.shape[0]
        states = StateArray({"observation": obs}, (n,), device=device)
        done = s["done"][index].to(device)
        next_states = StateArray(
            {"observation": next_obs, "reward": rewards, "mask": mask, "done": done},
            (n,),
            device=device,
        )
        weights = torch.ones(n, device=device)
        return states, s["action"][index].to(device), rewards, next_states, weights

    def update_priorities(self, td_errors: torch.Tensor) -> None:
        """Uniform replay ignores priorities (kept for interface compatibility)."""
