"""``SegmentBuffer``: the rows a local collector writes, cut into ``SampleBatch`` segments.

The local on-policy agents (PPO, PPG, A2C, VAC, VPG) act in ``n_envs`` environments and
write one row per environment and step, in ``SampleBatch``'s convention (as the Ray actors'
``EnvRunner`` does): the observation, the reward and end flags that arrived *with* it, and
the policy's outputs for it (action, log-prob, value, version). Once ``n_steps + 1`` rows are
stored, ``segment()`` is a ``[n_steps + 1, n_envs]`` ``SampleBatch`` for ``Trainer.step``, and
``restart(keep_last=True)`` makes its last row the first row of the next segment (consecutive
segments overlap by one row: row ``T`` is the bootstrap row of one and row 0 of the next).

Storage is preallocated on the first ``store`` (``grow=True`` doubles it when full, for
segments cut at episode ends), so a step costs a few indexed copies and nothing else; on the
CPU those copies go through NumPy views of the storage, which cost a tenth of a tensor
index-copy each.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from looprl.core import RolloutResult, SampleBatch
from looprl.core.namedarray import as_numpy

__all__ = ["SegmentBuffer"]

#: the policy outputs stored per row (``RolloutResult`` fields; those a policy leaves ``None``,
#: as ``DQNPolicy`` its log-probabilities, are not)
_OUTPUTS = ("action", "log_prob", "value")


class SegmentBuffer:
    """Preallocated ``[n_steps + 1, n_envs]`` rows of ``SampleBatch`` segments.

    Args:
        n_steps: ``T``, the transitions per segment (``grow``: the initial capacity).
        n_envs: streams (environments) per row.
        device: where the rows live.
        grow: double the capacity when it is full instead of refusing more rows.
    """

    def __init__(self, n_steps: int, n_envs: int, device: str | torch.device = "cpu",
                 grow: bool = False):
        if n_steps < 1 or n_envs < 1:
            raise ValueError(f"n_steps and n_envs must be >= 1, got {n_steps}, {n_envs}")
        self.n_steps = n_steps
        self.n_envs = n_envs
        self.device = device
        self.grow = grow
        self._t = 0
        self._data: dict[str, torch.Tensor] | None = None
        self._views: dict[str, np.ndarray] | None = None  # of _data ({}: not on the CPU)

    @property
    def full(self) -> bool:
        """Whether ``n_steps + 1`` rows are stored (a whole segment)."""
        return self._t == self.n_steps + 1

    def __len__(self) -> int:
        """Rows stored in the segment in progress."""
        return self._t

    def store(self, obs: torch.Tensor, reward: Any, end: Any, mask: Any,
              result: RolloutResult, version: int = 0) -> None:
        """Write the next row: what arrived with ``obs`` and the policy's ``result`` for it.

        Args:
            obs: ``[n_envs, ...]`` observations.
            reward: rewards that arrived with them.
            end: whether each observation ends its episode (terminal or truncated).
            mask: 0 where the end is terminal (no bootstrapping), 1 elsewhere.
            result: the policy's ``rollout`` for ``obs``.
            version: the policy version that made ``result``.

        Raises:
            RuntimeError: the buffer is full (and does not ``grow``).
        """
        if self._data is None:
            self._allocate(obs, result)
        elif self._t == self._data["reward"].shape[0]:
            if not self.grow:
                raise RuntimeError(f"SegmentBuffer holds {self._t} rows already; take the "
                                   "segment() and restart() before storing more")
            self._data = {k: torch.cat((v, torch.zeros_like(v))) for k, v in self._data.items()}
            self._views = None
            self.n_steps = self._data["reward"].shape[0] - 1
        t = self._t
        rows = self._views if self._views is not None else self._numpy_views()
        names = self._outputs
        if not rows:  # off the CPU: indexed tensor copies
            rows = self._data
            outputs = [getattr(result, name) for name in names]
        else:
            obs, reward, end, mask = as_numpy(obs), as_numpy(reward), as_numpy(end), as_numpy(mask)
            outputs = [as_numpy(getattr(result, name)) for name in names]
        rows["obs"][t] = obs
        rows["reward"][t] = reward
        rows["end"][t] = end
        rows["mask"][t] = mask
        for name, value in zip(names, outputs):
            rows[name][t] = value
        rows["policy_version"][t] = version
        self._t = t + 1

    def _numpy_views(self) -> dict[str, np.ndarray]:
        """NumPy views of the storage (empty off the CPU, or for dtypes NumPy lacks), made
        again after it grows or is unpickled."""
        self._views = {}
        if all(v.device.type == "cpu" for v in self._data.values()):
            try:
                self._views = {k: v.numpy() for k, v in self._data.items()}
            except TypeError:  # a dtype NumPy lacks (bfloat16): tensor copies
                pass
        return self._views

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_views"] = None  # views of the tensors: a copy would write elsewhere
        return state

    def _allocate(self, obs: torch.Tensor, result: RolloutResult) -> None:
        if result.policy_state is not None:
            raise ValueError("the local on-policy agents run feed-forward policies; train "
                             "recurrent ones with runtime=ray (looprl.distributed)")
        rows, n, device = self.n_steps + 1, self.n_envs, self.device

        def like(x: Any, dtype: torch.dtype | None = None) -> torch.Tensor:
            x = torch.as_tensor(x)
            shape = (rows, n, *x.shape[1:]) if x.dim() > 0 else (rows, n)
            return torch.zeros(shape, dtype=dtype or x.dtype, device=device)

        self._outputs = tuple(name for name in _OUTPUTS if getattr(result, name) is not None)
        self._data = {
            "obs": like(obs), "reward": like(0.0, torch.float32),
            "end": like(False, torch.bool), "mask": like(1.0, torch.float32),
            "policy_version": like(0, torch.int64),
            **{name: like(getattr(result, name)) for name in self._outputs},
        }  # fmt: skip

    def segment(self) -> SampleBatch:
        """The stored rows as a ``[rows, n_envs]`` ``SampleBatch`` (views of the storage:
        valid until the next ``store``)."""
        if self._t < 2:
            raise RuntimeError(f"a segment needs at least 2 rows, the buffer holds {self._t}")
        data = {k: v[: self._t] for k, v in self._data.items()}
        end, terminal = data.pop("end"), data.pop("mask") == 0
        return SampleBatch(**data, done=end & terminal, truncated=end & ~terminal)

    def restart(self, keep_last: bool = True) -> None:
        """Start the next segment, from the last row (``keep_last``) or from nothing."""
        if keep_last and self._t > 0:
            rows = self._views or self._data
            for value in rows.values():
                value[0] = value[self._t - 1]
            self._t = 1
        else:
            self._t = 0
