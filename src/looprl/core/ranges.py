"""The valid range of every preset hyperparameter (``RANGES``) and its check."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["HP_RANGES", "PRESET_RANGES", "RANGES", "Range", "check_arguments", "check_ranges",
           "is_finite", "range_of"]


@dataclass(frozen=True)
class Range:
    """Values from ``low`` (``open_low``: excluded) to ``high`` (``whole``: whole numbers);
    ``text`` says it in words."""

    low: float = -math.inf
    high: float = math.inf
    open_low: bool = False
    whole: bool = False
    text: str = ""

    def holds(self, value: Any) -> bool:
        """Whether ``value`` lies in the range, a finite number (a NumPy number or a one-element
        array or tensor too; ``None``, bools and non-numbers but text pass)."""
        if isinstance(value, str | bytes):
            return False
        if not isinstance(value, int | float):
            value = one_number(value)
        if value is None or isinstance(value, bool):
            return True
        if not is_finite(value):
            return False
        above = value > self.low if self.open_low else value >= self.low
        return above and value <= self.high and (not self.whole or float(value).is_integer())

    def check(self, name: str, value: Any, owner: str = "", got: str = "") -> Any:
        """``value`` if it is one real number in the range (not a bool, text or ``None``), else
        a one-line ``ValueError`` (``NovelD's alpha must be >= 0, got -1``; ``got``: what to
        show in place of the value, as what the user gave of a value derived from it)."""
        number = isinstance(value, numbers.Real) and not isinstance(value, bool)
        if not (number and self.holds(value if isinstance(value, int | float) else float(value))):
            whose = f"{owner}'s {name}" if owner else name
            text = "; give it as a number, not text" if isinstance(value, str | bytes) else ""
            raise ValueError(f"{whose} must be {self.requirement(value)}, "
                             f"got {got or f'{value!r:.40}'}{text}")
        return value

    def requirement(self, value: Any) -> str:
        """What a value must be, in words, said to ``value`` (told to be finite if it is not)."""
        infinite = isinstance(value, int | float) and not is_finite(value)
        bounded = math.isfinite(self.low) or math.isfinite(self.high)
        finite = "finite and " if infinite and bounded else ""
        huge = infinite and (isinstance(value, int) or math.isfinite(value))
        size = " (at most 3.4e38 in size, float32's largest)" if huge else ""
        return f"{finite}{self.text}{size}"


def one_number(value: Any) -> float | bool | None:
    """``value`` as a float if it is one real number: a NumPy number, a one-element array or
    tensor (``None``: it is not; a bool stays a bool)."""
    if isinstance(value, bool | np.bool_):
        return value
    shape = getattr(value, "shape", None)
    if isinstance(value, numbers.Real) or (shape is not None and math.prod(shape) == 1 and
                                           getattr(value, "dtype", None) is not None):
        try:
            return float(value)
        except (TypeError, ValueError):  # (a complex number, an object array)
            return None
    return None


#: the largest size a hyperparameter may have: float32's (no float32 tensor holds 1e300)
LARGEST = 3.4028234663852886e38
#: float32's smallest normal number
TINY = 1.1754943508222875e-38


def is_finite(value: int | float) -> bool:
    """Whether ``value`` is finite and at most ``LARGEST`` in size (False: an int beyond floats)."""
    try:
        return math.isfinite(value) and abs(value) <= LARGEST
    except OverflowError:
        return False


POSITIVE = Range(0.0, open_low=True, text="positive (> 0)")
NON_NEGATIVE = Range(0.0, text=">= 0")
UNIT = Range(0.0, 1.0, text="in [0, 1]")
SHARE = Range(0.0, 1.0, open_low=True, text="in (0, 1]")
COUNT = Range(1, whole=True, text="a whole number >= 1")
WHOLE = Range(0, whole=True, text="a whole number >= 0")
FINITE = Range(text="a finite number")

#: hyperparameter name -> its valid values, the same in every preset that has it
RANGES: dict[str, Range] = {
    **dict.fromkeys(("temperature", "sigma"), POSITIVE),
    # (0 as ALL and torch's optimizers take it, and as a linear schedule ends: a learning rate
    # of 0 keeps a network as it is, a probe; PPO's clip of 0 clips its ratio to 1)
    **dict.fromkeys(("lr", "lr_pi", "lr_v", "lr_actor", "lr_critic", "lr_temperature", "clip"),
                    NON_NEGATIVE),
    # (below float32's smallest normal number, CPU steps flush Adam's eps to 0: 0 / 0 is NaN)
    "eps": Range(TINY, text="at least 1.2e-38 (float32's smallest normal number; e.g. 1e-8)"),
    # (``alpha``: prioritized replay's exponent, 0 sampling uniformly; SAC's: ``PRESET_RANGES``)
    **dict.fromkeys(("entropy_coef", "value_coef", "clip_grad", "beta_clone", "noise", "alpha",
                     "noise_clip", "target_noise", "value_clip"), NON_NEGATIVE),
    **dict.fromkeys(("discount_factor", "lam", "beta", "epsilon", "initial_exploration",
                     "final_exploration", "test_exploration"), UNIT),
    "polyak_rate": SHARE,
    **dict.fromkeys(("n_envs", "n_steps", "epochs", "minibatch_size", "hidden", "n_policy",
                     "aux_epochs", "aux_minibatch_size", "min_batch_size", "update_frequency",
                     "gradient_steps", "replay_buffer_size", "policy_delay"), COUNT),
    "atoms": Range(2, whole=True, text="a whole number >= 2"),
    "ez_mu": Range(1.0, open_low=True, text="> 1 (ez-greedy's zeta exponent)"),
    "target_entropy": Range(text="a finite number (null: -|A|)"),
    **dict.fromkeys(("v_min", "v_max"), FINITE),
    # (GaussianHead clamps the log std there: beyond, it would stay put, never learned)
    "log_std_init": Range(-20.0, 2.0, text="in [-20, 2]"),
    **dict.fromkeys(("replay_start_size", "final_exploration_step", "target_update_frequency"),
                    WHOLE),
}

#: the values of the ``hp/*`` keys a running agent takes (set by meta components, schedules)
HP_RANGES: dict[str, Range] = {
    "hp/lr": NON_NEGATIVE, "hp/clip": NON_NEGATIVE, "hp/epsilon": UNIT,
    "hp/temperature": POSITIVE, "hp/discount": UNIT, "hp/entropy_coef": NON_NEGATIVE,
    "hp/value_coef": NON_NEGATIVE, "hp/lam": UNIT, "hp/tau": SHARE, "hp/epochs": COUNT,
    "hp/batch_size": COUNT, "hp/update_frequency": COUNT, "hp/gradient_steps": COUNT,
    "hp/target_period": COUNT,
}


#: preset (its builder's name) -> the hyperparameters whose range differs there from ``RANGES``
PRESET_RANGES: dict[str, dict[str, Range]] = {"sac": {"alpha": POSITIVE}}  # (the temperature)


def range_of(name: str, preset: str = "") -> Range | None:
    """The valid values of a hyperparameter of ``preset`` or an ``hp/*`` key (``hp/lr/NAME``:
    ``hp/lr``'s); ``None``: any."""
    if name.startswith("hp/"):
        return HP_RANGES.get("hp/lr" if name.startswith("hp/lr/") else name)
    return PRESET_RANGES.get(preset, {}).get(name, RANGES.get(name))


def check_arguments(owner: str, **values: Any) -> None:
    """``Range.check`` of each of ``owner``'s arguments that ``RANGES`` knows; ``None`` and
    functions (schedules) pass."""
    for name, value in values.items():
        valid = RANGES.get(name)
        if valid is not None and value is not None and not callable(value):
            valid.check(name, value, owner)


def check_ranges(hyperparameters: dict[str, Any], owner: str = "") -> None:
    """A one-line ``ValueError`` for the first of ``hyperparameters`` outside its range
    (``range_of`` in ``owner``, a preset builder's name)."""
    of = f" of {owner}" if owner else ""
    for key, value in hyperparameters.items():
        valid = range_of(key, owner)
        if valid is not None and not valid.holds(value):
            none = " (Python's None is null in a config)" if value in ("None", "none") else ""
            raise ValueError(f"Hyperparameter {key!r}{of} must be {valid.requirement(value)}, "
                             f"got {value!r:.40}{none}")
