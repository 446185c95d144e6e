"""Faults of an ``EnvRunner``'s environment copies where a run goes on (``max_restarts``, on both
runtimes): ``EnvRestarts`` counts and reports them (``EnvFault``) and raises past the limit."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from looprl.core.suggest import is_whole
from looprl.environments.faults import (
    EnvironmentFailure,
    EnvironmentOutputError,
    failure,
    place,
    unpack_hint,
)

__all__ = ["EnvFault", "EnvRestarts", "env_call", "restart_limit"]


@dataclass(frozen=True)
class EnvFault:
    """An exception the runner recovered from, raised in env copy ``copy`` (``None``: a vector
    env) at ``episode`` and ``step`` (where known); ``error``: its ``"Type: message"`` line."""

    env: str
    copy: int | None
    method: str
    episode: int | None
    step: int | None
    error: str
    frame: int

    def line(self) -> str:
        """``"CartPole-v1 copy 1 raised in step (episode 3, step 17): RuntimeError: boom"``."""
        where_text = place(self.episode, self.step)
        if self.copy is None and self.error.startswith(f"{self.env}."):
            return f"{self.error} (its copies are rebuilt together)"  # (a vector env's line)
        copy = f" copy {self.copy}" if self.copy is not None else ""
        return (f"{self.env}{copy} raised in {self.method}"
                f"{f' ({where_text})' if where_text else ''}: {self.error}")

    @property
    def label(self) -> str:
        """Where it was in a run's ``restarts``: ``"copy1"``, or ``"env"`` (a vector env)."""
        return "env" if self.copy is None else f"copy{self.copy}"

    def recovered(self, frame: int) -> str:
        """The warning of a run that rebuilt the copy and went on, at its ``frame``."""
        return f"{self.line()}; rebuilt it, dropped its episode in progress and went on " \
               f"(frame {frame})"


def restart_limit(value: Any) -> int:
    """``max_restarts`` as an int, or a one-line ``ValueError`` unless a whole number >= 0."""
    if not is_whole(value) or value < 0:
        raise ValueError(f"max_restarts is a whole number >= 0 (0: stop at an environment's "
                         f"exception), got {value!r:.40}")
    return int(value)


class EnvRestarts:
    """The ``count`` faults an ``EnvRunner`` recovered from, at most ``limit`` (an option)."""

    def __init__(self, limit: int, limit_name: str = "limit") -> None:
        if limit < 0:
            raise ValueError(f"{limit_name} must be >= 0, got {limit}")
        self.limit, self.limit_name = limit, limit_name
        self.count = 0
        self._unreported: deque[EnvFault] = deque()

    def note(self, env: str, copy: int | None, method: str, error: BaseException,
             episode: int | None, step: int | None, frame: int) -> EnvFault:
        """Count ``error`` and keep it for ``pop``; ``EnvironmentFailure`` past ``limit``, and
        ``error`` itself if it says the environment's API is wrong (a new copy's is too)."""
        failed = isinstance(error, EnvironmentFailure)  # (its cause: the environment's own)
        cause = error.__cause__ if failed and error.__cause__ is not None else error
        if isinstance(cause, EnvironmentOutputError) or unpack_hint(cause, method):
            raise error
        said = str(error) if failed and copy is None else None
        if self.count >= self.limit:
            hint = (f"its copies were rebuilt {self.count} times, the limit "
                    f"({self.limit_name}={self.limit})")
            if said:  # (a vector environment's line names the copy)
                raise EnvironmentFailure(f"{said}; {hint}", env, method, episode, step) from error
            raise failure(env, method, cause, episode, step, copy=copy, hint=hint) from error
        self.count += 1
        text = str(cause).strip().splitlines()
        fault = EnvFault(env, copy, method, episode, step, said or
                         f"{type(cause).__name__}: {text[0] if text else ''}".rstrip(": "),
                         frame)
        self._unreported.append(fault)
        return fault

    def pop(self) -> list[EnvFault]:
        """The faults noted since the last call (safe from another thread)."""
        return [self._unreported.popleft() for _ in range(len(self._unreported))]


def env_call(runner: Any) -> tuple[float, str, int | None, str, int | None, int | None] | None:
    """``(seconds, env, copy, method, episode, step)`` of ``runner``'s env call in progress
    (``None`` if none; ``copy``, ``episode``, ``step``: ``None`` for a vector env); thread-safe."""
    call = runner.env_call
    if call is None:
        return None
    since, copy, method = call
    copies = runner._copies
    if copy is None:
        return time.monotonic() - since, copies.name, None, method, None, None
    episode, step = copies.place(copy, method)
    return time.monotonic() - since, copies.name, copy, method, episode, step
