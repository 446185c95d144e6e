"""Trainer-side buffers of sample segments (``SampleBatch``, time-major ``[T + 1, B]``):
``OnPolicyBuffer`` and the replay buffers, built by ``make_sample_buffer``; ALL's on-policy
advantage buffers: ``store(states, actions, rewards)`` ``n_steps`` times, then
``advantages(next_states)`` returns flat ``(states, actions, advantages)`` and empties them."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from looprl.core import SampleBatch, StateArray
from looprl.core.leaves import as_numpy
from looprl.core.namedarray import NamedArray, recursive_apply
from looprl.core.ranges import check_ranges
from looprl.core.suggest import check_choice, check_count
from looprl.memory.atari_replay import AtariReplayBuffer, PrioritizedAtariReplayBuffer
from looprl.memory.prioritized import PrioritizedReplayBuffer
from looprl.memory.replay import ExperienceReplayBuffer
from looprl.memory.returns import generalized_advantage_estimate
from looprl.memory.store import check_action

__all__ = ["REPLAY_KINDS", "GeneralizedAdvantageBuffer", "NStepAdvantageBuffer", "OnPolicyBuffer",
           "make_sample_buffer"]


def _rows_and_streams(sample: SampleBatch) -> tuple[int, int]:
    """``(T + 1, B)`` of a segment, read from ``reward``."""
    shape = None if sample.reward is None else tuple(np.shape(sample.reward))
    if shape is None or len(shape) != 2:
        raise ValueError(f"a sample segment needs reward of shape [T + 1, B], got {shape}")
    return shape  # type: ignore[return-value]


def _columns(sample: SampleBatch, index: slice) -> SampleBatch:
    """The streams ``index`` of a time-major segment."""
    return recursive_apply(sample, lambda leaf: leaf[:, index])


class OnPolicyBuffer:
    """Collects fresh segments into batches of ``batch_streams`` streams (columns), dropping
    those whose oldest ``policy_version`` is more than ``max_lag`` versions behind."""

    def __init__(self, batch_streams: int, max_lag: int | None = None):
        check_count(batch_streams=batch_streams)
        if max_lag is not None and max_lag < 0:
            raise ValueError(f"max_lag must be >= 0 or None, got {max_lag}")
        self.batch_streams, self.max_lag = batch_streams, max_lag
        self._pending: list[SampleBatch] = []
        self._rows: int | None = None

    def __len__(self) -> int:
        """Streams waiting to be batched."""
        return sum(_rows_and_streams(s)[1] for s in self._pending)

    def put(self, sample: SampleBatch, current_version: int) -> bool:
        """Keep ``sample`` (return ``True``) unless it is too old for ``current_version``;
        ``ValueError`` if its length differs from the ones before (``batch_streams > 1``)."""
        rows, _ = _rows_and_streams(sample)
        if self._stale(sample, current_version):
            return False
        if self._rows is not None and rows != self._rows and self.batch_streams > 1:
            raise ValueError(f"segments batched {self.batch_streams} at a time must all have "
                             f"T + 1 = {self._rows} rows, got {rows} (segments of whole "
                             "episodes need batch_streams=1)")
        self._rows = rows
        self._pending.append(sample)
        return True

    def drop_stale(self, current_version: int) -> int:
        """Drop pending segments now more than ``max_lag`` versions behind; return their streams."""
        streams = len(self)
        self._pending = [s for s in self._pending if not self._stale(s, current_version)]
        return streams - len(self)

    def _stale(self, sample: SampleBatch, current_version: int) -> bool:
        versions = getattr(sample, "policy_version", None)
        return (self.max_lag is not None and versions is not None
                and current_version - int(np.min(as_numpy(versions))) > self.max_lag)

    def ready(self) -> bool:
        """Whether ``get`` can return a full batch."""
        return len(self) >= self.batch_streams

    def get(self) -> SampleBatch:
        """The oldest ``batch_streams`` pending streams as one batch, its arrays writable
        (not ``ready``: an error)."""
        if not self.ready():
            raise RuntimeError(f"OnPolicyBuffer holds {len(self)} of {self.batch_streams} streams")
        parts, need = [], self.batch_streams
        while need:
            sample = self._pending.pop(0)
            streams = _rows_and_streams(sample)[1]
            if streams > need:
                self._pending.insert(0, _columns(sample, slice(need, None)))
                sample = _columns(sample, slice(0, need))
            parts.append(sample)
            need -= min(streams, need)
        return _writable(parts[0]) if len(parts) == 1 else NamedArray.cat(parts, dim=1)


def _writable(sample: SampleBatch) -> SampleBatch:
    """``sample`` with a writable copy of each read-only array (Ray's, zero-copy), which a
    trainer may edit in place as it may locally (the others kept: no copy locally)."""
    return recursive_apply(sample, lambda leaf: leaf.copy() if isinstance(leaf, np.ndarray)
                           and not leaf.flags.writeable else leaf)


#: The buffer of each kind a trainer names.
_KINDS = {"on_policy": OnPolicyBuffer, "uniform": ExperienceReplayBuffer,
          "prioritized": PrioritizedReplayBuffer, "atari_uniform": AtariReplayBuffer,
          "atari_prioritized": PrioritizedAtariReplayBuffer}
#: the kinds that replay (every kind but ``"on_policy"``)
REPLAY_KINDS = tuple(kind for kind in _KINDS if kind != "on_policy")


def check_sample_buffer(kind: str | None, owner: str, also: tuple[str, ...] = ()) -> None:
    """A one-line ``ValueError`` for a ``kind`` that is no key of ``_KINDS`` nor of ``also``
    (``owner``: whose it is); ``None`` (the trainer's kind) passes."""
    if kind is not None:
        check_choice(f"{owner} buffer", kind, [*_KINDS, *also])


def make_sample_buffer(kind: str, **kwargs: Any) -> Any:
    """The buffer of ``kind`` (a key of ``_KINDS``) built with ``kwargs`` (checked: one line)."""
    check_choice("sample buffer", kind, list(_KINDS))
    return _KINDS[kind](**kwargs)


class _AdvantageBuffer:
    """The steps of ``n_envs`` environments, up to ``n_steps`` of them."""

    def __init__(self, v: Any, features: Any, n_steps: int, n_envs: int,
                 discount_factor: float = 1):
        check_count(n_steps=n_steps, n_envs=n_envs)
        check_ranges({"discount_factor": discount_factor}, type(self).__name__)
        self.v, self.features = v, features
        self.n_steps, self.n_envs, self.gamma = int(n_steps), int(n_envs), discount_factor
        self._steps: list[tuple[StateArray, torch.Tensor, torch.Tensor]] = []

    def __len__(self) -> int:
        return len(self._steps) * self.n_envs

    def store(self, states: StateArray | None, actions: torch.Tensor, rewards: Any) -> None:
        """One step of every environment (``states`` ``None``: nothing, as ALL's)."""
        if states is None:
            return
        self._check_states("store(states, actions, rewards)", states)
        check_action(f"{type(self).__name__}.store(states, actions, rewards)", states, actions)
        if len(self._steps) >= self.n_steps:
            raise RuntimeError(f"{type(self).__name__} holds n_steps={self.n_steps} steps "
                               "already: call advantages(next_states) before storing more")
        self._steps.append((states, torch.as_tensor(actions),
                            torch.as_tensor(rewards, dtype=torch.float32)))

    def _take(self, next_states: StateArray) -> tuple[StateArray, torch.Tensor, torch.Tensor]:
        """``(states [n_steps + 1, n_envs], actions, rewards [n_steps, n_envs])``; empties."""
        self._check_states("advantages(next_states)", next_states)
        if len(self._steps) < self.n_steps:
            raise RuntimeError(f"{type(self).__name__} holds {len(self._steps)} of its "
                               f"n_steps={self.n_steps} steps: store more before advantages()")
        states, actions, rewards = zip(*self._steps)
        self._steps = []
        steps, first = [*states, next_states], states[0]
        states = StateArray({key: torch.stack([torch.as_tensor(step[key]) for step in steps])
                             for key, value in first.items() if isinstance(value, torch.Tensor)},
                            (len(steps), *first.shape), device=first.device)
        actions = torch.stack(actions)
        rewards = torch.stack(rewards).to(states.observation.device)
        return states, actions.reshape(-1, *actions.shape[2:]), rewards

    def _check_states(self, call: str, states: Any) -> None:
        if not isinstance(states, StateArray):  # (a single State too: one row of no batch)
            raise TypeError(f"{type(self).__name__}.{call} takes a StateArray of the "
                            f"n_envs={self.n_envs} environments' states, got "
                            f"{type(states).__name__}: pass env.state_array")

    def _gae(self, states: StateArray, rewards: torch.Tensor, values: torch.Tensor,
             lam: float) -> torch.Tensor:
        """GAE(gamma, ``lam``) of the steps of ``states``, cut at every episode end."""
        masks = states.mask[1:].float().to(rewards.device)
        ends = torch.as_tensor(states.done[1:], device=rewards.device).bool() | (masks == 0)
        return generalized_advantage_estimate(rewards, values[:-1], values[1:], masks, ends,
                                              self.gamma, lam)

    def _transitions(self, states: StateArray, advantages: torch.Tensor) -> torch.Tensor:
        """``advantages`` at 0 where the stored state ended its episode (its action ignored)."""
        ended = torch.as_tensor(states.done[: self.n_steps], device=advantages.device).bool()
        return advantages.masked_fill(ended, 0.0)

    def _values(self, states: StateArray, mode: str = "target") -> torch.Tensor:
        """``v(features(states))`` through ``mode`` (``target`` or ``eval``)."""
        return getattr(self.v, mode)(getattr(self.features, mode)(states)).view(states.shape)


class NStepAdvantageBuffer(_AdvantageBuffer):
    """n-step advantages ``R_t + gamma^k V(s_{t+k}) - V(s_t)`` (A2C) up to the last step or an
    episode's end: GAE with ``lambda = 1``, the target network's ``V(s_{t+k})``."""

    def advantages(self, states: StateArray) -> tuple[StateArray, torch.Tensor, torch.Tensor]:
        """``(states, actions, advantages)`` of the stored steps, ``states`` the next ones."""
        states, actions, rewards = self._take(states)
        values = self._values(states)
        now = states[: self.n_steps]
        advantages = self._gae(states, rewards, values, 1.0)
        advantages = advantages + values[:-1] - self._values(now, "eval")
        return now.flatten(), actions, self._transitions(states, advantages).view(-1)


class GeneralizedAdvantageBuffer(_AdvantageBuffer):
    """GAE(gamma, lambda) advantages (https://arxiv.org/abs/1506.02438) over the target
    network's values; ``compute_batch_size``: states per forward pass."""

    def __init__(self, v: Any, features: Any, n_steps: int, n_envs: int,
                 discount_factor: float = 1, lam: float = 1, compute_batch_size: int = 256):
        super().__init__(v, features, n_steps, n_envs, discount_factor)
        check_count(compute_batch_size=compute_batch_size)
        check_ranges({"lam": lam}, type(self).__name__)
        self.lam, self.compute_batch_size = lam, int(compute_batch_size)

    def advantages(self, next_states: StateArray
                   ) -> tuple[StateArray, torch.Tensor, torch.Tensor]:
        """``(states, actions, advantages)`` of the stored steps."""
        states, actions, rewards = self._take(next_states)
        flat = states.flatten()
        size = self.compute_batch_size
        values = torch.cat([self._values(flat[i : i + size])
                            for i in range(0, len(flat), size)]).view(states.shape)
        advantages = self._transitions(states, self._gae(states, rewards, values, self.lam))
        return states[: self.n_steps].flatten(), actions, advantages.view(-1)
