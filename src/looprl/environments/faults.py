"""A user's environment that misbehaves, reported in one line: ``EnvironmentFailure`` and the
checks of what a Gymnasium ``step``/``reset`` returned."""

from __future__ import annotations

import math
import numbers
import re
from typing import Any

import numpy as np
import torch

__all__ = ["EnvironmentFailure", "EnvironmentOutputError", "EnvironmentTimeout",
           "PolicyActionError", "failure",
           "gym_reset_output", "gym_step_output", "place", "unpack_hint", "vector_rewards"]

STEP_API = "Gymnasium's 5-tuple (observation, reward, terminated, truncated, info)"
RESET_API = "Gymnasium's (observation, info) pair"
FLOAT32_MAX = float(np.finfo(np.float32).max)
OLD_GYM = ("the old gym API: port the environment to gymnasium.Env (step returns terminated "
           "and truncated apart, reset takes seed= and returns (observation, info))")


class EnvironmentFailure(RuntimeError):
    """An exception raised in ``environment``'s ``method``, at ``episode``/``step`` when known."""

    def __init__(self, message: str, environment: str, method: str,
                 episode: int | None = None, step: int | None = None):
        super().__init__(message)
        self.environment, self.method = environment, method
        self.episode, self.step = episode, step

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle with every attribute, those set on it too (a Ray worker's failure reaches
        the driver with what the worker adds to it)."""
        return type(self), (str(self), self.environment, self.method, self.episode,
                            self.step), self.__dict__


class EnvironmentTimeout(RuntimeError):
    """An env call that ran past the run's ``env_timeout``, interrupted there."""


class EnvironmentOutputError(TypeError, ValueError):
    """What an environment's ``step`` or ``reset`` returned is not its API (Gymnasium's, or SRL's
    list of ``StepResult`` s): a new copy would return the same, so it is never rebuilt."""


class PolicyActionError(ValueError):
    """An action the policy gave that no environment can take (NaN, say): the policy's fault."""


def failure(name: str, method: str, error: BaseException, episode: int | None = None,
            step: int | None = None, copy: int | None = None, hint: str | None = None,
            where: str | None = None) -> EnvironmentFailure:
    """The ``EnvironmentFailure`` of ``error`` in ``name``'s ``method`` (where known; ``hint``)."""
    parts = [f"copy {copy}" if copy is not None else "",
             place(episode, step if method == "step" else None), where or ""]
    where_text = ", ".join(part for part in parts if part)
    message = (f"{name}.{method}() raised {type(error).__name__}: {error}"
               f"{f' ({where_text})' if where_text else ''}"
               f"{f'; {hint}' if hint else ''}")
    return EnvironmentFailure(message, name, method, episode, step)


def place(episode: int | None = None, step: int | None = None) -> str:
    """``"episode 3, step 17"``, the parts known (``""``: none)."""
    return ", ".join(part for part in (f"episode {episode}" if episode is not None else "",
                                       f"step {step}" if step is not None else "") if part)


_UNPACK = re.compile(r"values to unpack \(expected ([25])")
_NO_DICT = "object has no attribute 'items'"  # (Gymnasium reading an info)


def unpack_hint(error: BaseException, method: str) -> str | None:
    """The hint for an unpacking error in Gymnasium's vector env (not its API), or ``None``."""
    unpacked = isinstance(error, (ValueError, TypeError)) and _UNPACK.search(str(error))
    if not unpacked and not (isinstance(error, AttributeError) and _NO_DICT in str(error)):
        return None
    expected = STEP_API if method == "step" else RESET_API
    return f"looprl expects {expected}; a 4-tuple step or a bare reset observation is {OLD_GYM}"


def gym_step_output(output: Any, name: str) -> tuple[Any, Any, Any, Any, Any]:
    """``output`` of ``name``'s ``step`` if it is Gymnasium's 5-tuple, else a one-line error."""
    if isinstance(output, tuple) and len(output) == 5:
        if type(output[1]) is not float and not _one_number(output[1]):
            raise EnvironmentOutputError(f"{name}.step() returned the reward "
                                         f"{_described(output[1])}; looprl expects one number "
                                         "(a float) per step")
        # (NaN and inf are named if training diverges on them: see experiments.diagnose)
        if FLOAT32_MAX < abs(reward := float(output[1])) < math.inf:
            raise EnvironmentOutputError(f"{name}.step() returned the reward {reward:.4g}, "
                                         f"beyond float32's range (+-{FLOAT32_MAX:.4g}), in "
                                         "which looprl stores rewards: scale it down, e.g. "
                                         "with gymnasium.wrappers.TransformReward")
        for index, flag in ((2, "terminated"), (3, "truncated")):  # (bools, or uint8 0/1)
            value = output[index]
            if not (isinstance(value, bool | np.bool_) or (_one_number(value) and value in (0, 1))):
                raise EnvironmentOutputError(
                    f"{name}.step() returned {flag} {_described(output[index])}; looprl "
                    f"expects {STEP_API} with {flag} a bool")
        if not isinstance(output[4], dict | None):
            raise EnvironmentOutputError(f"{name}.step() returned the info "
                                         f"{_described(output[4])}; looprl expects {STEP_API} "
                                         "with info a dict")
        return tuple(output)  # (a plain tuple as it is; a named tuple as a plain one)
    if isinstance(output, tuple) and len(output) == 4:
        raise EnvironmentOutputError(f"{name}.step() returned a 4-tuple (obs, reward, done, "
                                     f"info), {OLD_GYM}; looprl expects {STEP_API}")
    raise EnvironmentOutputError(f"{name}.step() returned {_described(output)}; looprl "
                                 f"expects {STEP_API}")


def gym_reset_output(output: Any, name: str) -> tuple[Any, dict[str, Any]]:
    """``output`` of ``name``'s ``reset`` if it is Gymnasium's pair, else a one-line error."""
    if isinstance(output, tuple) and len(output) == 2 and isinstance(output[1], dict):
        return output
    old = "" if isinstance(output, tuple) else f", {OLD_GYM}"
    raise EnvironmentOutputError(f"{name}.reset() returned {_described(output)}{old}; looprl "
                                 f"expects {RESET_API} with info a dict")


def vector_rewards(rewards: Any, name: str, step: int) -> np.ndarray:
    """The rewards of ``name``'s vector ``step`` as float64 (one that is no number: one line)."""
    array = np.asarray(rewards)
    if array.dtype.kind not in "biuf":
        bad = next((i for i, value in enumerate(array.ravel()) if not _one_number(value)), None)
        if bad is not None:
            raise EnvironmentOutputError(
                f"{name}.step() returned the reward {_described(array.ravel()[bad])} for copy "
                f"{bad} (vector step {step} since reset); looprl expects one number (a float) "
                "per copy")
    return np.asarray(array, np.float64)


def _one_number(value: Any) -> bool:
    """Whether ``value`` is one real number (a Python, NumPy or torch scalar, a 0-d array)."""
    if isinstance(value, numbers.Real):
        return True
    if isinstance(value, np.ndarray | np.generic):
        return value.shape == () and value.dtype.kind in "biuf"
    return isinstance(value, torch.Tensor) and value.dim() == 0 and not value.is_complex()


def _described(value: Any) -> str:
    """``value`` in a few words: its type or length, and a short repr."""
    text = repr(value)
    kind = f"{len(value)}-tuple" if isinstance(value, tuple) else type(value).__name__
    return f"a {kind} {text if len(text) <= 60 else text[:57] + '...'}"
