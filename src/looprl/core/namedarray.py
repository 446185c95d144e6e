"""``NamedArray``: named arrays (numpy, torch, nested ``NamedArray`` or ``None``) that share
leading (batch) dimensions. Indexing with anything but a field name applies to every leaf
(``buf[3] = sample`` writes in place, ``buf[[1, 5]]`` gathers); ``iter(x)`` yields field names
and ``len(x)`` is the batch size."""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import torch

from looprl.core import leaves  # (by module: its helpers are imported from there, not here)
from looprl.core.suggest import a_type, check_callable, moved

T = TypeVar("T", bound="NamedArray")


class NamedArray:
    """A record of named arrays: ``NamedArray(obs=x, reward=r)``; fields keep their order and
    cannot be added later. ``ValueError`` if a name clashes with an attribute (``values``) or
    the leading (batch) dimensions differ."""

    _field_names: tuple[str, ...] | None = None  # set by @namedarray on decorated classes
    _defaults: dict[str, Any] = {}
    _fields: tuple[str, ...]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if self._field_names is None:
            if args:
                raise TypeError(f"{type(self).__name__}() takes keyword arguments only")
            _check_names(kwargs)
            values = kwargs
            if len(values) > 1:
                _check_lengths(type(self).__name__, values)
        else:
            values = self._bind(args, kwargs)  # (checks the lengths)
        self.__dict__.update(values)
        self.__dict__["_fields"] = self._field_names or tuple(values)

    def _bind(self, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
        names, name = self._field_names, type(self).__name__
        if len(args) > len(names):
            raise TypeError(f"{name}() takes {len(names)} positional arguments, got {len(args)}")
        values = dict(zip(names, args))
        for key, value in kwargs.items():
            if key not in names:
                raise TypeError(f"{name}() got an unexpected field {key!r}")
            if key in values:
                raise TypeError(f"{name}() got multiple values for field {key!r}")
            values[key] = value
        missing = [n for n in names if n not in values and n not in self._defaults]
        if missing:
            raise TypeError(f"{name}() missing required field(s): {', '.join(map(repr, missing))}")
        values = {n: values[n] if n in values else _fresh(self._defaults[n]) for n in names}
        _check_lengths(name, values)
        return values

    @classmethod
    def _from_fields(cls: type[T], fields: tuple[str, ...], values: Sequence[Any]) -> T:
        obj = cls.__new__(cls)
        obj.__dict__.update(zip(fields, values))
        obj.__dict__["_fields"] = fields
        return obj

    def keys(self) -> tuple[str, ...]:
        """The field names, in order."""
        return self._fields

    fields = property(keys)

    def values(self) -> tuple[Any, ...]:
        """The field values, in field order."""
        return tuple(map(self.__dict__.__getitem__, self._fields))

    def items(self) -> tuple[tuple[str, Any], ...]:
        """``(name, value)`` pairs, in field order."""
        return tuple(zip(self._fields, self.values()))

    def __iter__(self) -> Iterator[str]:
        """Iterates over field names, like a dict."""
        return iter(self._fields)

    def __contains__(self, name: object) -> bool:
        return name in self._fields

    def __len__(self) -> int:
        """The batch size: the leading dimension of the first leaf that has one."""
        for value in self.values():
            length = _length(value)
            if length is not None:
                return length
        raise TypeError(f"len() of unsized {type(self).__name__}")

    def __bool__(self) -> bool:
        return True  # (even with batch size 0)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._fields:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}; fields are "
                                 f"{self._fields}")
        _check_rows_of(self, name, value)
        self.__dict__[name] = value

    def __getitem__(self: T, idx: Any) -> Any:
        """Returns field ``idx`` if it is a string, else indexes every leaf with ``idx``."""
        if isinstance(idx, str):
            if idx in self._fields:
                return self.__dict__[idx]
            raise KeyError(f"{type(self).__name__} has no field {idx!r}")
        try:
            return recursive_apply(self, lambda leaf: leaf[leaves.convert_index(idx, leaf)])
        except (IndexError, ValueError, RuntimeError):
            _diagnose_lengths(self)  # (a decorated class's keyword path checks no lengths)
            raise

    def __setitem__(self, idx: Any, value: Any) -> None:
        """Sets field ``idx`` if it is a string, else writes ``value`` (a ``NamedArray`` of the
        same fields, or what broadcasts) into every leaf in place."""
        if isinstance(idx, str):
            if idx not in self._fields:
                raise KeyError(f"{type(self).__name__} has no field {idx!r}")
            return setattr(self, idx, value)
        named = isinstance(value, NamedArray)
        if named and set(value._fields) != set(self._fields):
            raise ValueError(f"fields {value._fields} do not match {self._fields}")
        name = ""
        try:
            for name, leaf in self.items():
                src = value.__dict__[name] if named else value
                if named and (leaf is None) != (src is None):
                    raise ValueError(f"cannot assign between None and an array in {name!r}")
                if leaf is None:
                    continue
                if isinstance(leaf, NamedArray):
                    leaf[idx] = src
                elif isinstance(leaf, torch.Tensor):
                    src = leaves.as_tensor(src, leaf.device, leaf.dtype)
                    leaf[leaves.convert_index(idx, leaf)] = src
                else:
                    leaf[leaves.convert_index(idx, leaf)] = leaves.as_numpy(src)
        except (IndexError, ValueError, RuntimeError) as error:
            _diagnose_lengths(self)
            if named:
                _diagnose_lengths(value)
            raise ValueError(f"cannot write {type(self).__name__} field {name!r} at {idx!r}: "
                             f"{error}") from None

    def to(self: T, device: str | torch.device = "cpu") -> T:
        """Moves every leaf to ``device`` as a torch tensor (one line if torch cannot use it)."""
        return moved(lambda: recursive_apply(self, lambda x: leaves.as_tensor(x, device)), device)

    to_torch = to  # (the SRL name)

    def to_numpy(self: T) -> T:
        """Converts every torch leaf to a numpy array."""
        return recursive_apply(self, leaves.as_numpy)

    def to_dict(self) -> dict[str, Any]:
        """A (nested) dict of the fields; nested ``NamedArray`` s become dicts."""
        return {k: v.to_dict() if isinstance(v, NamedArray) else v for k, v in self.items()}

    @classmethod
    def from_dict(cls: type[T], d: dict[str, Any]) -> T:
        """Builds a ``cls`` from a dict of text keys; nested dicts become plain ``NamedArray`` s."""
        if not isinstance(d, Mapping):
            raise TypeError(f"{cls.__name__}.from_dict takes a dict of field name -> array, got "
                            f"{a_type(d)} ({d!r:.40}); build one with {cls.__name__}(name=array)")
        bad = next((key for key in d if not isinstance(key, str)), None)
        if bad is not None:
            raise TypeError(f"{cls.__name__}.from_dict: field names are text, got {bad!r:.40} "
                            f"({a_type(bad)})")
        nest = NamedArray.from_dict
        return cls(**{k: nest(v) if isinstance(v, dict) else v for k, v in d.items()})

    @property
    def shape(self) -> dict[str, Any]:
        """Field name to shape tuple (a dict for nested fields, ``None`` for ``None``)."""
        return {
            k: v.shape if isinstance(v, NamedArray) else None if v is None else tuple(np.shape(v))
            for k, v in self.items()
        }

    def clone(self: T) -> T:
        """A deep copy of every leaf."""
        return recursive_apply(self, leaves.copy_leaf)

    @staticmethod
    def stack(xs: Sequence[T], dim: int = 0) -> T:
        """See :func:`stack`."""
        return stack(xs, dim)

    @staticmethod
    def cat(xs: Sequence[T], dim: int = 0) -> T:
        """See :func:`concat`."""
        return concat(xs, dim)

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={leaves.leaf_repr(v)}" for k, v in self.items())
        return f"{type(self).__name__}({body})"


_RESERVED = frozenset(dir(NamedArray)) | {"_fields"}


#: defaults that in-place writes (``x[i] = y``) would change: each instance gets a copy
_MUTABLE = (np.ndarray, torch.Tensor, NamedArray)


def _fresh(default: Any) -> Any:
    """A field's default as one instance gets it (a copy if it is ``_MUTABLE``)."""
    if isinstance(default, NamedArray):
        return default.clone()
    return leaves.copy_leaf(default) if isinstance(default, _MUTABLE) else default


def _check_names(names: Any) -> None:
    clash = _RESERVED.intersection(names)
    if clash:
        raise ValueError(f"field name(s) {sorted(clash)} clash with NamedArray attributes")


def _check_lengths(name: str, values: dict[str, Any]) -> None:
    """A one-line ``ValueError`` if the leaves in ``values`` differ in leading dimension."""
    if not _rows_differ(values.values()):
        return
    lengths = {key: n for key, value in values.items() if (n := _length(value)) is not None}
    listed = ", ".join(f"{key}: {n}" for key, n in lengths.items())
    raise ValueError(f"{name} fields must share their leading (batch) dimension, got "
                     f"{listed}; give every field the same number of rows")


_ARRAYS = (np.ndarray, torch.Tensor)


def _rows_differ(values: Iterable[Any]) -> bool:
    """Whether the sized leaves among ``values`` differ in leading dimension (the check every
    construction makes, so arrays take the short way)."""
    first = None
    for value in values:
        if type(value) in _ARRAYS:
            rows = value.shape[0] if value.shape else None
        else:
            rows = None if value is None else _length(value)
        if rows is not None and rows != first:
            if first is not None:
                return True
            first = rows
    return False


def _length(value: Any) -> int | None:
    """The leading dimension of a leaf (``None``: unsized, a scalar or a 0-d array)."""
    if isinstance(value, NamedArray):
        try:
            return len(value)
        except TypeError:
            return None
    shape = getattr(value, "shape", None)
    return shape[0] if shape else None


def _check_rows_of(x: NamedArray, name: str, value: Any) -> None:
    """``_check_lengths`` of ``x`` with field ``name`` set to ``value``."""
    _check_lengths(type(x).__name__, {**dict(x.items()), name: value})


def _diagnose_lengths(x: NamedArray) -> None:
    try:
        _check_lengths(type(x).__name__, dict(x.items()))
    except ValueError as error:
        raise ValueError(str(error)) from None


def namedarray(cls: type) -> type[NamedArray]:
    """Class decorator: a ``NamedArray`` subclass of the same name whose fields are the
    annotated names, in order (after a decorated base's); a class-level value is a default."""
    if issubclass(cls, NamedArray):
        base, bases = cls, cls.__bases__
    else:
        base, bases = NamedArray, (NamedArray, *(b for b in cls.__bases__ if b is not object))
    own = list(inspect.get_annotations(cls))
    _check_names(own)
    inherited = base._field_names or ()
    namespace = {k: v for k, v in cls.__dict__.items() if k not in ("__dict__", "__weakref__")}
    defaults = {k: namespace.pop(k) for k in own if k in namespace}
    namespace["_defaults"] = {**base._defaults, **defaults}
    namespace["_field_names"] = inherited + tuple(k for k in own if k not in inherited)
    if "__init__" not in namespace:
        namespace["__init__"] = _field_init(cls.__qualname__, namespace["_field_names"],
                                            namespace["_defaults"])
    return type(cls.__name__, bases, namespace)


_UNSET = object()  # a required field that a call to a generated ``__init__`` left out


def _field_init(qualname: str, names: tuple[str, ...], defaults: dict[str, Any]) -> Callable:
    """A generated ``__init__`` for keyword fields (several times cheaper than ``_bind``; both
    check the leading dimensions)."""
    if any(n.startswith("_na_") for n in names):  # (the generated code's own names)
        return NamedArray.__init__
    default = {n: f"_na_defaults[{n!r}]" if n in defaults else "_na_unset" for n in names}
    params = ", ".join(f"{n}={default[n]}" for n in names)
    required = [f"{n} is _na_unset" for n in names if n not in defaults]
    given = ", ".join(f"({n!r}, {n}, {default[n]})" for n in names)
    fields = ", ".join(f"{n!r}: {n}" for n in names)
    fresh = "".join(f"        if {n} is _na_defaults[{n!r}]:\n            {n} = _na_fresh({n})\n"
                    for n in names if isinstance(defaults.get(n), _MUTABLE))  # (as ``_bind``)
    source = (
        f"def __init__(_na_self, *_na_args, {params}, **_na_extra):\n"
        f"    if {' or '.join(['_na_args', '_na_extra', *required])}:\n"
        f"        _na_given = {{k: v for k, v, unset in ({given},) if v is not unset}}\n"
        f"        _na_given.update(_na_extra)\n"
        f"        _na_self.__dict__.update(_na_self._bind(_na_args, _na_given))\n"
        f"        _na_self.__dict__['_fields'] = _na_fields\n"
        f"    else:\n{fresh}"
        f"        if _na_rows_differ(({', '.join(names)},)):\n"
        f"            _na_check_lengths({qualname.rsplit('.', 1)[-1]!r}, {{{fields}}})\n"
        f"        _na_self.__dict__.update({{{fields}, '_fields': _na_fields}})\n"
    )
    scope = {"_na_unset": _UNSET, "_na_defaults": defaults, "_na_fields": names,
             "_na_fresh": _fresh, "_na_rows_differ": _rows_differ,
             "_na_check_lengths": _check_lengths}
    exec(source, scope)  # (the names are identifiers: ``inspect.get_annotations`` gave them)
    init = scope["__init__"]
    init.__qualname__ = f"{qualname}.__init__"
    return init


def from_dict(values: dict[str, Any] | None) -> NamedArray | None:
    """SRL's ``from_dict``: ``NamedArray.from_dict(values)``, ``None`` for ``None`` or ``{}``."""
    if values is None or (isinstance(values, Mapping) and not values):
        return None
    return NamedArray.from_dict(values)


def recursive_apply(x: T, fn: Callable[[Any], Any]) -> T:
    """Applies ``fn`` to every non-``None`` leaf of ``x`` (or to ``x``, a leaf), keeping its
    structure and types, as SRL's; ``TypeError`` if ``fn`` is not callable."""
    check_callable("recursive_apply's fn", fn, "a function of one leaf (lambda v: v * 2)")
    return _apply(x, fn)


def _apply(x: Any, fn: Callable[[Any], Any]) -> Any:
    """``recursive_apply`` once ``fn`` is checked (not again per nested field)."""
    if not isinstance(x, NamedArray):
        return None if x is None else fn(x)
    values = [None if v is None else _apply(v, fn) if isinstance(v, NamedArray) else fn(v)
              for v in x.values()]
    return type(x)._from_fields(x._fields, values)


def recursive_aggregate(xs: Sequence[T], aggregate_fn: Callable[[list[Any]], Any]) -> T:
    """Applies ``aggregate_fn`` to the list of each leaf across ``xs`` (NamedArrays with the same
    fields, in any order, or leaves); as SRL's, a leaf ``None`` in some items only is zeros."""
    check_callable("recursive_aggregate's aggregate_fn", aggregate_fn,
                   "a function of a list of leaves (np.stack, torch.cat)")
    return _aggregate(_items(xs, "recursive_aggregate"), aggregate_fn, fill=True)


def _items(xs: Any, what: str) -> list[Any]:
    """``xs`` as a list; a one-line ``TypeError`` for one ``NamedArray`` (iterating it would give
    its field names), text or no sequence at all."""
    if isinstance(xs, NamedArray | str | bytes | Mapping) or not isinstance(xs, Iterable):
        raise TypeError(f"{what} takes a list of NamedArrays, got {a_type(xs)}"
                        f"{'; wrap it: [x]' if isinstance(xs, NamedArray) else ''}")
    return list(xs)


def _aggregate(xs: list[Any], fn: Callable[[list[Any]], Any], fill: bool, path: str = "") -> Any:
    """``recursive_aggregate`` of ``xs`` at field ``path`` (``fill=False``: no ``None`` filling)."""
    if not xs:
        raise ValueError("cannot aggregate an empty sequence of NamedArrays")
    field = f"field {path!r}" if path else "the item"  # (cheap: not per step)
    nones = sum(x is None for x in xs)
    if nones:
        if nones == len(xs):
            return None
        if not fill:
            raise ValueError(f"{field} is None in some items but not in others")
        zeros = _zeros_like(next(x for x in xs if x is not None))
        xs = [zeros if x is None else x for x in xs]
    first = xs[0]
    if not isinstance(first, NamedArray):
        try:
            return fn(xs)
        except _MixedBackends as error:
            raise TypeError(f"cannot aggregate {field}: {error}; convert the items to one "
                            "backend first (x.to_numpy(), or x.to(device) for torch)") from None
        except (ValueError, TypeError, RuntimeError, IndexError) as error:
            raise ValueError(f"cannot aggregate {field}: {error}") from None
    fields = first._fields
    for x in xs:
        if not isinstance(x, NamedArray) or (x._fields != fields and set(x._fields) != set(fields)):
            what = x._fields if isinstance(x, NamedArray) else a_type(x)
            raise ValueError(f"cannot aggregate NamedArrays with different fields ({field}): "
                             f"{fields} and {what}")
    values = [_aggregate([x.__dict__[name] for x in xs], fn, fill,
                         f"{path}.{name}" if path else name) for name in fields]
    return type(first)._from_fields(fields, values)


def _zeros_like(x: Any) -> Any:
    """Zeros of ``x``'s shapes and dtypes (a leaf or a ``NamedArray``), as SRL's ``array_like``."""
    return recursive_apply(
        x, lambda v: torch.zeros_like(v) if isinstance(v, torch.Tensor) else np.zeros_like(v))


class _MixedBackends(TypeError):
    """Leaves of one field that mix torch tensors and NumPy arrays (``_aggregate`` names it)."""


def _per_library(np_fn: Callable, torch_fn: Callable, dim: int) -> Callable[[list[Any]], Any]:
    """Aggregates leaves by torch's function or NumPy's, all tensors or none (``_MixedBackends``:
    NumPy's would silently turn tensors into arrays)."""
    def aggregate(xs: list[Any]) -> Any:
        tensor = isinstance(xs[0], torch.Tensor)
        for i, x in enumerate(xs):
            if isinstance(x, torch.Tensor) is not tensor:
                raise _MixedBackends(f"item 0 is a {leaves.kind(xs[0])} and item {i} a "
                                     f"{leaves.kind(x)}")
        return torch_fn(xs, dim) if tensor else np_fn(xs, dim)
    return aggregate


def stack(xs: Sequence[T], dim: int = 0) -> T:
    """Stacks ``xs`` along a new dimension ``dim``."""
    return _aggregate(_items(xs, "stack"), _per_library(np.stack, torch.stack, dim), fill=False)


def concat(xs: Sequence[T], dim: int = 0) -> T:
    """Concatenates ``xs`` along ``dim``."""
    return _aggregate(_items(xs, "concat"), _per_library(np.concatenate, torch.cat, dim),
                      fill=False)


class _CallableModule(types.ModuleType):
    """This module, callable as seed 004's ``@namedarray`` decorator."""

    def __call__(self, cls: type) -> type[NamedArray]:
        return namedarray(cls)


sys.modules[__name__].__class__ = _CallableModule
