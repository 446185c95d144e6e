"""Hyperparameter schedules (seed 001): they write ``hp/*`` keys before steps or updates (the
``k``-th call the value at ``t = k``), logged as ``log/schedule/<name>`` (``hp/lr``: ``lr``)."""

from __future__ import annotations

import math
from typing import Any

from looprl.core.ranges import FINITE, NON_NEGATIVE, POSITIVE, Range, range_of
from looprl.core.suggest import check_choice, check_count, check_flag
from looprl.meta.component import MetaComponent

__all__ = ["CosineLRSchedule", "HPSchedule", "cosine_restarts"]


def cosine_restarts(t: int, initial: float, minimum: float, period: float,
                    period_mult: float = 1.0) -> float:
    """``_cosine(initial, minimum, t_cur / T_i)``, ``t_cur`` the time since the last restart
    and ``T_i = period * period_mult**i``."""
    t_cur, t_i = float(t), float(period)
    if period_mult == 1.0:
        t_cur = math.fmod(t_cur, t_i)
    else:
        while t_cur >= t_i:
            t_cur -= t_i
            t_i *= period_mult
    return _cosine(initial, minimum, t_cur / t_i)


def _cosine(start: float, end: float, fraction: float) -> float:
    """``end + (start - end) (1 + cos(pi fraction)) / 2``."""
    return end + 0.5 * (start - end) * (1.0 + math.cos(math.pi * fraction))


def _scaled(start: float, base: float, exponent: float) -> float:
    """``start * base ** exponent``, infinite (of ``start``'s sign) where it overflows a float
    (a long run's growing schedule: its ``end`` bounds it)."""
    try:
        return start * base**exponent
    except OverflowError:
        return math.copysign(math.inf, start) if start else 0.0


def check_key(key: str) -> str:
    """``key`` if it is an ``hp/*`` key, else ``ValueError``."""
    if not isinstance(key, str) or not key.startswith("hp/") or key == "hp/":
        raise ValueError(f"Schedules write hyperparameter keys 'hp/<name>' (e.g. 'hp/lr', "
                         f"'hp/epsilon'), got {key!r}")
    return key


def set_value(metrics: dict[str, Any], key: str, value: float) -> None:
    """Write ``value`` into ``metrics[key]`` and its log key ``log/schedule/<name>``."""
    metrics[key] = metrics["log/schedule/" + key[3:]] = value


class CosineLRSchedule(MetaComponent):
    """Cosine annealing with warm restarts (SGDR, https://arxiv.org/abs/1608.03983) of
    ``key``: ``cosine_restarts(k, ...)`` at the ``k``-th ``pre_update``.

    Args:
        initial_lr: the learning rate at the start of every cycle (``None``: the agent's own).
        period: length of the first cycle in updates (``T_0``).
        period_mult: factor by which each cycle is longer than the previous (``T_mult``).
    """

    shown = ("initial_lr", "min_lr", "period", "period_mult")
    state_attributes = ("updates", "initial_lr")

    def __init__(self, initial_lr: float | None = None, min_lr: float = 0.0,
                 period: int = 1000, period_mult: float = 1.0, key: str = "hp/lr"):
        super().__init__()
        check_count(period=period)
        mult = Range(1.0, text=">= 1").check("period_mult", period_mult, "CosineLRSchedule")
        self.min_lr = float(NON_NEGATIVE.check("min_lr", min_lr, "CosineLRSchedule"))
        self.initial_lr = None if initial_lr is None else self._checked(initial_lr, min_lr)
        self.period, self.period_mult = period, float(mult)
        self.key = check_key(key)
        self.writes = (self.key,)
        self.updates = 0
        self.pre_update_methods.append(self.adapt_lr)

    @staticmethod
    def _checked(initial_lr: float, min_lr: float) -> float:
        POSITIVE.check("initial_lr", initial_lr, "CosineLRSchedule")
        if min_lr > initial_lr:
            raise ValueError(f"min_lr={min_lr} must not exceed initial_lr={initial_lr}")
        return float(initial_lr)

    def value(self, t: int) -> float:
        """The learning rate at update ``t`` (known once ``initial_lr`` is: given, or read from
        the agent at the first update)."""
        if self.initial_lr is None:
            raise ValueError("CosineLRSchedule.value: initial_lr is read from the agent at the "
                             "first update; give initial_lr=... to ask before it")
        return cosine_restarts(t, self.initial_lr, self.min_lr, self.period, self.period_mult)

    def adapt_lr(self, metrics: dict[str, Any]) -> dict[str, Any]:
        """Write the learning rate of this update."""
        if self.initial_lr is None:
            if self.key not in metrics:
                raise KeyError(f"CosineLRSchedule starts from the agent's {self.key}, which "
                               "this agent does not declare; give initial_lr=...")
            self.initial_lr = self._checked(float(metrics[self.key]), self.min_lr)
        set_value(metrics, self.key, self.value(self.updates))
        self.updates += 1
        return metrics


#: What each kind of ``HPSchedule`` needs besides ``start``.
KIND_ARGUMENTS = {"linear": ("end", "duration"), "cosine": ("end", "duration"),
                  "step": ("every", "factor"), "exponential": ("decay",)}


class HPSchedule(MetaComponent):
    """A schedule of any ``hp/*`` key, written before every step or every update; at ``t``:
    ``linear`` ``start + (end - start) * min(t / duration, 1)``, ``cosine`` from ``start`` to
    ``end`` over ``duration``, ``step`` ``start * factor ** (t // every)``, ``exponential``
    ``start * decay ** t`` (these two stop at ``end``).

    ``per`` (``'step'`` or ``'update'``) is the unit of ``t`` and the hook (``pre_<per>``);
    ``clock='metrics'`` reads ``t`` from ``metrics[per]`` instead of counting calls;
    ``integer`` rounds the values (``hp/batch_size``, ``hp/epochs``).
    """

    shown = ("key", "kind", "start", "per")
    state_attributes = ("calls",)

    def __init__(self, key: str, kind: str, start: float, end: float | None = None,
                 duration: int | None = None, every: int | None = None,
                 factor: float | None = None, decay: float | None = None,
                 per: str = "update", clock: str = "calls", integer: bool = False):
        super().__init__()
        self.key = check_key(key)
        self.writes = (self.key,)
        self.kind = check_choice("schedule kind", kind, tuple(KIND_ARGUMENTS))
        self.per = check_choice("per", per, ("step", "update"))
        self.clock = check_choice("clock", clock, ("calls", "metrics"))
        for name, value, valid in (("start", start, FINITE), ("end", end, FINITE),
                                   ("factor", factor, FINITE), ("duration", duration, POSITIVE),
                                   ("every", every, POSITIVE), ("decay", decay, POSITIVE)):
            if value is not None or name == "start":
                valid.check(name, value, "HPSchedule")
        self.start, self.end = float(start), None if end is None else float(end)
        self.duration, self.every, self.factor, self.decay = duration, every, factor, decay
        missing = [name for name in KIND_ARGUMENTS[kind] if getattr(self, name) is None]
        if missing:
            raise ValueError(f"A {kind!r} schedule needs {', '.join(missing)} "
                             f"(it takes start, {', '.join(KIND_ARGUMENTS[kind])})")
        self.integer = check_flag(f"{type(self).__name__}'s integer", integer)
        valid = range_of(key)  # (the values the agent takes: linear and cosine stay between)
        for name, value in (("start", self.start), ("end", self.end)):
            if valid is not None and value is not None:
                checked = round(value) if integer else value  # (shown as the user gave it)
                got = (f"{value!r}, which integer=True rounds to {checked}"
                       if checked != value else "")
                valid.check(f"{name} (a value of {key})", checked, "HPSchedule", got)
        self.calls = 0
        self.methods(f"pre_{per}").append(self.write)

    def value(self, t: float) -> float:
        """The scheduled value at ``t``."""
        if self.kind == "linear":
            value = self.start + (self.end - self.start) * min(t / self.duration, 1.0)
        elif self.kind == "cosine":
            value = _cosine(self.start, self.end, min(t / self.duration, 1.0))
        else:
            value = (_scaled(self.start, self.factor, t // self.every) if self.kind == "step"
                     else _scaled(self.start, self.decay, t))
            if self.end is not None:  # a bound
                value = max(value, self.end) if self.start >= self.end else min(value, self.end)
        return round(value) if self.integer and math.isfinite(value) else value

    def now(self, metrics: dict[str, Any]) -> float:
        """``t`` of this call: own calls so far, or the loop's step or update counter."""
        if self.clock == "calls":
            return self.calls
        if self.per not in metrics:
            raise KeyError(f"HPSchedule(clock='metrics') reads metrics[{self.per!r}], which "
                           "the loop has not written; use clock='calls' to count calls")
        return metrics[self.per]

    def write(self, metrics: dict[str, Any]) -> dict[str, Any]:
        """Write the value at the current ``t`` into ``metrics[key]``."""
        set_value(metrics, self.key, self.value(self.now(metrics)))
        self.calls += 1
        return metrics
