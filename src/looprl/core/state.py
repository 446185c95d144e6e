"""``State``, ``StateArray`` and ``MultiagentState``: what an agent sees at one time step, a
dict of ``observation``, ``reward``, ``done`` and ``mask`` (``0.`` only when *terminated*:
truncation keeps bootstrapping), plus any further entries, which ``StateArray`` batches along."""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Callable, Iterable, Sequence
from operator import itemgetter
from typing import Any

import numpy as np
import torch

from looprl.core.observations import as_observation
from looprl.core.suggest import check_device, moved


def _to_tensor(value: np.ndarray, device: str | torch.device,
               dtype: torch.dtype | None = None) -> torch.Tensor:
    """``value`` as a tensor on ``device`` (float64 becomes float32)."""
    tensor = torch.from_numpy(value)
    if tensor.dtype == torch.float64:
        tensor = tensor.float()
    try:  # (``moved``'s check, without its closure: a state of every env step comes here)
        return tensor.to(device, dtype)
    except (RuntimeError, AssertionError):
        check_device(device)
        raise


def _entries(x: Any, kwargs: dict[str, Any], kind: str) -> dict[str, Any]:
    if not isinstance(x, dict):
        x = {"observation": x} if x is not None else {}
    x = {**x, **kwargs}
    if "observation" not in x:
        raise KeyError(f"{kind} requires an 'observation' entry")
    if type(x["observation"]) in _NOT_OBSERVATIONS:
        raise TypeError(f"{kind} observation must be a tensor, an array or a number, got "
                        f"{x['observation']!r}; pass the observation (or a dict with an "
                        "'observation' entry) as the state's first argument")
    return x


_NOT_OBSERVATIONS = frozenset({str, bytes, type(None)})
_SCALARS = frozenset({float, int, bool})


def _check_scalars(x: dict[str, Any], kind: str) -> None:
    """A one-line ``TypeError`` if ``reward``, ``done`` or ``mask`` is not one number."""
    for key in ("reward", "done", "mask"):
        value = x.get(key, 0.0)
        if type(value) not in _SCALARS and not _is_number(value):
            raise TypeError(f"a single {kind}'s {key} is one number, got {value!r}; for a "
                            "batch of states use StateArray(x, shape) or State.array([...])")
        if key == "done" and value not in (0, 1):  # (np.array(2) was read as True)
            raise TypeError(f"a single {kind}'s done is True or False (or 1 or 0), got {value!r}")
        if key == "mask" and not 0 <= value <= 1:  # (it multiplies the bootstrapped value)
            raise ValueError(f"a single {kind}'s mask is 0. where the episode terminated, else "
                             f"1., got {value!r}")


def _is_number(value: Any) -> bool:
    """Whether ``value`` is a number, or a tensor or an array of one element."""
    return isinstance(value, numbers.Number | np.bool_) or (
        isinstance(value, torch.Tensor | np.ndarray) and int(np.prod(value.shape)) == 1)


def _stack(key: str, values: list[Any]) -> torch.Tensor:
    try:
        return torch.stack(values)
    except TypeError:  # a number (a default reward, done or mask) next to tensors
        first = values[0]
        return _stack(key, [torch.as_tensor(v, dtype=first.dtype, device=first.device)
                            for v in values])
    except RuntimeError:
        raise _different_shapes(key, {tuple(v.shape) for v in values}) from None


def _different_shapes(key: str, shapes: set[tuple[int, ...]]) -> ValueError:
    return ValueError(f"State.array: the states' {key!r} entries have different shapes "
                      f"{sorted(shapes)}; give every state the same {key!r} shape")


def _objects(values: list, shape: tuple[int, ...]) -> np.ndarray:
    """A list entry of a ``StateArray`` (nested, one level per batch dimension) as an object
    array of batch ``shape``."""
    array = np.empty(shape, dtype=object)
    for index in np.ndindex(*shape):
        item = values
        for i in index:
            item = item[i]
        array[index] = item
    return array


def _model_input(value: torch.Tensor) -> torch.Tensor:
    """``value`` as ``float32``, as ALL's ``as_input`` casts every input, except ``uint8`` images,
    which looprl's image models scale themselves."""
    dtype = getattr(value, "dtype", None)  # (None: fields of a NamedArray, passed as they are)
    if dtype is None or dtype == torch.float32 or dtype == torch.uint8:
        return value
    return value.float()


def _batch_shape(shape: Any) -> tuple[int, ...]:
    if type(shape) is tuple and all(type(n) is int for n in shape):
        return shape
    if isinstance(shape, int) and not isinstance(shape, bool):
        return (shape,)
    if isinstance(shape, tuple | list | torch.Size) and all(
            isinstance(n, int | np.integer) and not isinstance(n, bool) for n in shape):
        return tuple(int(n) for n in shape)
    raise TypeError(f"StateArray shape is a tuple of ints (the batch dimensions), got "
                    f"{shape!r}")


def _check_batched(x: dict[str, Any], shape: tuple[int, ...]) -> None:
    """A one-line ``ValueError`` if a default entry is a tensor not led by ``shape``."""
    n = len(shape)
    for key in ("observation", "reward", "done", "mask"):
        value = x.get(key)
        if type(value) is not torch.Tensor:
            continue
        size = value.shape
        if n == 1 and size and size[0] == shape[0]:  # (the common case, in one look)
            continue
        if size[:n] != shape and (size or key == "observation"):
            raise ValueError(f"StateArray of shape {shape}: its {key!r} has shape "
                             f"{tuple(value.shape)}, whose leading dimensions must be {shape}")


def _gym_fields(gym_output: Any) -> tuple[Any, Any, Any, Any, Any]:
    """``(obs, reward, terminated, truncated, info)`` of a (old) gym ``reset()``/``step()``."""
    if not isinstance(gym_output, tuple):  # the old gym's reset(): an observation
        gym_output = (gym_output, {})
    if len(gym_output) == 2:
        return gym_output[0], 0.0, False, False, gym_output[1]
    if len(gym_output) == 4:  # (obs, reward, done, info)
        return (*gym_output[:3], False, gym_output[3])
    if len(gym_output) == 5:
        return gym_output
    raise ValueError(f"State.from_gym takes reset()'s (obs, info) or step()'s (obs, reward, "
                     f"terminated, truncated, info), got {len(gym_output)} items")


class State(dict):
    """What an agent sees at one time step: ``x`` is a dict with at least ``observation``,
    or the observation itself; ``kwargs`` are further entries (overriding ``x``'s)."""

    def __init__(self, x: Any = None, device: str | torch.device = "cpu", **kwargs: Any):
        x = _entries(x, kwargs, type(self).__name__)
        reward, done = x.setdefault("reward", 0.0), x.setdefault("done", False)
        if type(reward) not in _SCALARS or type(done) not in _SCALARS or done not in (0, 1) or (
                "mask" in x and (type(x["mask"]) not in _SCALARS or not 0 <= x["mask"] <= 1)):
            _check_scalars(x, type(self).__name__)
        x.setdefault("mask", 1.0 - float(done))
        super().__init__(x)
        self.device = device

    @classmethod
    def array(cls, list_of_states: Sequence[State]) -> StateArray:
        """Stack states (or state arrays of one shape) into a ``StateArray``."""
        if not list_of_states:
            raise ValueError("State.array needs at least one state")
        device = list_of_states[0].device
        shape = (len(list_of_states), *list_of_states[0].shape)
        x = {}
        for key in list_of_states[0]:
            try:
                values = [state[key] for state in list_of_states]
            except KeyError:  # (an info entry of some steps only: omitted, as ALL does)
                warnings.warn(f"State.array: some states have no {key!r} entry; it is left out "
                              "of the StateArray", stacklevel=2)
                continue
            if isinstance(values[0], torch.Tensor):
                x[key] = _stack(key, values)
            elif isinstance(values[0], (bool, int, float, np.number, np.bool_, np.ndarray)):
                shapes = {np.shape(v) for v in values}
                if len(shapes) > 1:
                    raise _different_shapes(key, shapes)
                array = np.array(values)  # (numbers as a tensor; strings, objects as a list)
                x[key] = _to_tensor(array, device) if array.dtype.kind in "biuf" else values
            else:
                x[key] = values
        return StateArray(x, shape, device=device)

    @classmethod
    def from_gym(cls, gym_output: Any, device: str | torch.device = "cpu",
                 dtype: Any = None, source: str = "The environment") -> State:
        """A state from ``env.reset()`` or ``env.step()`` output, ``info``'s entries as entries
        (``dtype``: of the observation; ``source``: named by errors)."""
        obs, reward, terminated, truncated, info = _gym_fields(gym_output)
        if dtype is not None and not isinstance(dtype, torch.dtype):  # a NumPy dtype
            dtype = torch.from_numpy(np.empty(0, dtype=np.dtype(dtype))).dtype
        x = {"observation": _to_tensor(as_observation(obs, source), device, dtype),
             "reward": float(reward), "done": bool(terminated or truncated),
             "mask": 0.0 if terminated else 1.0}
        for key, value in (info or {}).items():
            x.setdefault(key, value)
        return cls(x, device=device)

    observation = property(itemgetter("observation"), doc="The observation (a tensor).")
    reward = property(itemgetter("reward"), doc="The reward of the transition that led here.")
    done = property(itemgetter("done"), doc="The episode ended here (terminated or truncated).")
    mask = property(itemgetter("mask"), doc="``0.`` where the episode terminated, else ``1.``")

    terminated = property(lambda self: self.mask == 0, doc="The episode ended in a terminal state.")

    @property
    def truncated(self) -> Any:
        """The episode was cut off (e.g. by a time limit)."""
        if isinstance(self.done, torch.Tensor):
            return self.done & (self.mask != 0)
        return bool(self.done) and self.mask != 0.0

    shape = property(lambda self: (), doc="A single state's batch shape: ``()``.")

    def __len__(self) -> int:  # a single state counts as one
        return 1

    def apply(self, model: Any, *keys: str) -> torch.Tensor:
        """``model(*[self[k] for k in keys])``, reshaped for batches and zeroed where terminal."""
        return self.apply_mask(self.as_output(model(*[self.as_input(key) for key in keys])))

    def as_input(self, key: str) -> torch.Tensor:
        """The entry ``key`` as a batch of one row (``float32``: ``_model_input``)."""
        return _model_input(torch.as_tensor(self[key]).unsqueeze(0))

    def as_output(self, tensor: torch.Tensor) -> torch.Tensor:
        """A batch-first model's output for ``as_input`` without the batch dimension."""
        return tensor.squeeze(0)

    def apply_mask(self, tensor: torch.Tensor) -> torch.Tensor:
        """Zero ``tensor`` where the episode terminated."""
        mask = self.mask
        if type(mask) is float and mask == 1.0 and tensor.is_floating_point():
            return tensor  # not terminal: the product would equal it
        return tensor * mask

    def _new(self, x: dict[str, Any]) -> State:
        return type(self)(x, device=self.device)

    def update(self, key: str | dict | None = None, value: Any = None, **kwargs: Any) -> State:
        """Return a copy with ``key`` set to ``value`` (the original is unchanged)."""
        entries = key if isinstance(key, dict) else {} if key is None else {key: value}
        return self._new({**self, **entries, **kwargs})

    def to(self, device: str | torch.device) -> State:
        """A copy with every tensor entry on ``device`` (one line if torch cannot use it here)."""
        if str(device) == str(self.device):
            return self
        x = moved(lambda: {k: v.to(device) if isinstance(v, torch.Tensor) else v
                           for k, v in self.items()}, device)
        new = self._new(x)
        new.device = device
        return new


class StateArray(State):
    """A batch of states: every batched entry has ``shape`` as its leading dimensions."""

    def __init__(self, x: dict[str, Any], shape: tuple[int, ...],
                 device: str | torch.device = "cpu", **kwargs: Any):
        x = _entries(x, kwargs, "StateArray")
        for key, value in x.items():  # (NumPy entries as tensors, as ``State.array`` makes)
            if type(value) is np.ndarray and value.dtype.kind in "biuf":
                x[key] = _to_tensor(np.ascontiguousarray(value), device)
        shape = _batch_shape(shape)
        _check_batched(x, shape)
        if "reward" not in x:
            x["reward"] = moved(lambda: torch.zeros(shape, device=device), device)
        if "done" not in x:
            x["done"] = moved(lambda: torch.zeros(shape, dtype=torch.bool, device=device), device)
        if "mask" not in x:
            x["mask"] = 1.0 - x["done"].float()
        dict.__init__(self, x)
        self._shape = tuple(shape)
        self.device = device

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    def __len__(self) -> int:
        return self._shape[0]

    def _new(self, x: dict[str, Any], shape: tuple[int, ...] | None = None) -> StateArray:
        return StateArray(x, self._shape if shape is None else shape, device=self.device)

    def _batched(self, value: Any) -> bool:
        return isinstance(value, torch.Tensor) and value.shape[: len(self._shape)] == self._shape

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return dict.__getitem__(self, key)
        x = {}
        for k, v in self.items():
            if self._batched(v):
                x[k] = v[key]
            elif isinstance(v, list):
                index = key.cpu().numpy() if isinstance(key, torch.Tensor) else key
                picked = _objects(v, self._shape)[index]
                x[k] = picked.tolist() if isinstance(picked, np.ndarray) else picked
            else:
                x[k] = v
        feature_dims = self["observation"].dim() - len(self._shape)
        indexed = x["observation"]
        shape = indexed.shape[: indexed.dim() - feature_dims]
        if len(shape) == 0:
            return State(x, device=self.device)
        return self._new(x, tuple(shape))

    def as_input(self, key: str) -> torch.Tensor:
        """The entry ``key`` with the batch dimensions flattened into one (``_model_input``)."""
        value = self[key]
        return _model_input(value.reshape((-1, *value.shape[len(self._shape) :])))

    def as_output(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor.view((*self._shape, *tensor.shape[1:]))

    def apply_mask(self, tensor: torch.Tensor) -> torch.Tensor:
        if not isinstance(self.mask, torch.Tensor):  # one float for every row
            return super().apply_mask(tensor)
        mask = self.mask.view((*self._shape, *([1] * (tensor.dim() - len(self._shape)))))
        return tensor * mask

    def view(self, shape: tuple[int, ...]) -> StateArray:
        """Reshape the batch dimensions of every batched entry (one of them may be ``-1``)."""
        n, shape = len(self._shape), _batch_shape(shape)
        try:  # (a meta tensor of the batch shape: -1 resolved, a wrong size one line)
            shape = torch.empty(self._shape, device="meta").view(shape).shape
        except RuntimeError:
            raise ValueError(f"StateArray.view: a batch of shape {self._shape} cannot be viewed "
                             f"as {shape}: give a shape of {int(np.prod(self._shape))} states "
                             "(one dimension may be -1)") from None
        x = {k: v.view((*shape, *v.shape[n:])) if self._batched(v)
             else _objects(v, self._shape).reshape(shape).tolist() if isinstance(v, list) else v
             for k, v in self.items()}
        return self._new(x, tuple(shape))

    def flatten(self) -> StateArray:
        """Collapse the batch dimensions into one."""
        return self.view((int(np.prod(self._shape)),))

    def batch_execute(self, minibatch_size: int, fn: Callable[[StateArray], Any]) -> Any:
        """``fn`` over slices of at most ``minibatch_size`` rows, results concatenated."""
        if minibatch_size < 1:
            raise ValueError(f"batch_execute needs minibatch_size >= 1, got {minibatch_size}")
        results = [fn(self[first:first + minibatch_size])
                   for first in range(0, self._shape[0], minibatch_size)]
        return StateArray.cat(results) if isinstance(results[0], StateArray) else torch.cat(results)

    @classmethod
    def cat(cls, state_array_list: Iterable[StateArray], axis: int = 0) -> StateArray:
        """Concatenate state arrays along batch axis ``axis``."""
        arrays = list(state_array_list)
        if not arrays or not all(isinstance(array, StateArray) for array in arrays):
            raise TypeError("StateArray.cat concatenates one or more StateArrays, got "
                            f"{[type(array).__name__ for array in arrays]!r:.60}: stack single "
                            "States with State.array(list_of_states)")
        first = arrays[0]
        for i, other in enumerate(arrays[1:], 1):
            if set(other) != set(first):
                raise ValueError(f"StateArray.cat: array {i} has the entries {sorted(other)}, "
                                 f"array 0 {sorted(first)}; give every array the same entries")
        x = {}
        for key, value in first.items():
            if first._batched(value):
                x[key] = torch.cat([a[key] for a in arrays], dim=axis)
            elif isinstance(value, list):
                x[key] = np.concatenate([_objects(a[key], a.shape) for a in arrays],
                                        axis=axis).tolist()
            elif all(_same(a[key], value) for a in arrays[1:]):  # (one value for every row)
                x[key] = value
            else:
                raise ValueError(f"StateArray.cat: the arrays' {key!r} entries differ and have "
                                 f"no batch dimensions to concatenate; give each array a "
                                 f"{key!r} of its shape")
        shape = list(first.shape)
        shape[axis] = sum(a.shape[axis] for a in arrays)
        return StateArray(x, tuple(shape), device=first.device)


def _same(a: Any, b: Any) -> bool:
    """Whether two entries without batch dimensions are equal (tensors: element-wise)."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and torch.equal(a, b.to(a.device))
    try:
        return a is b or bool(np.all(a == b))
    except (TypeError, ValueError, RuntimeError):
        return False


class MultiagentState(State):
    """A ``State`` with an ``agent`` entry naming the agent it belongs to."""

    def __init__(self, x: Any = None, device: str | torch.device = "cpu", **kwargs: Any):
        super().__init__(x, device=device, **kwargs)
        if "agent" not in self:
            raise KeyError("MultiagentState requires an 'agent' entry")

    @property
    def agent(self) -> str:
        return self["agent"]

    @classmethod
    def from_zoo(cls, agent: str, zoo_output: tuple, device: str | torch.device = "cpu",
                 dtype: torch.dtype | None = None) -> MultiagentState:
        """Build from a PettingZoo ``env.last()`` tuple."""
        state = State.from_gym(zoo_output, device=device, dtype=dtype)
        return cls(dict(state), device=device, agent=agent)
