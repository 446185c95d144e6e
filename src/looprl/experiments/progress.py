"""A cheap rich progress bar for training loops.

``TrainingProgress`` shows frames done/total, frames per second, elapsed and remaining
time, the episode count and the mean return of the last 100 episodes. ``update`` may be
called every environment step: it only checks a monotonic clock and redraws the bar at
most ``refresh_per_second`` times per second. With ``quiet=True`` nothing is ever drawn.
"""

from __future__ import annotations

import math
import time
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

__all__ = ["TrainingProgress"]


class _FramesPerSecondColumn(ProgressColumn):
    """Frames per second, from rich's moving speed estimate."""

    def render(self, task: Task) -> Text:
        """Render the current speed of ``task``."""
        speed = task.speed
        return Text("? fps" if speed is None else f"{speed:,.0f} fps", style="progress.data.speed")


def _format_return(mean_return: float | None) -> str:
    """Format the live mean return (``-`` while unknown)."""
    if mean_return is None or math.isnan(mean_return):
        return "-"
    return f"{mean_return:.4g}"


class TrainingProgress:
    """Progress bar of a training run, usable as a context manager.

    Args:
        total_frames: Number of frames the run will train for.
        description: Text shown left of the bar (e.g. ``"dqn CartPole-v1"``).
        quiet: When True, nothing is printed.
        console: Console to draw on; defaults to a new console on stderr.
        refresh_per_second: Maximum number of redraws per second.

    Example:
        >>> with TrainingProgress(1000, "dqn", quiet=True) as bar:
        ...     bar.update(frame=10, episode=1, mean_return=5.0)
    """

    def __init__(
        self,
        total_frames: int,
        description: str,
        quiet: bool = False,
        console: Console | None = None,
        refresh_per_second: float = 10.0,
    ) -> None:
        self.total_frames = int(total_frames)
        self.description = description
        self.quiet = quiet
        self._interval = 1.0 / refresh_per_second
        self._next_refresh = 0.0
        self._last: tuple[int, int, float | None] = (0, 0, None)
        self._progress: Progress | None = None
        self._task = None
        self._console = console

    def _make_progress(self) -> Progress:
        """Create the (not yet started) rich progress display."""
        return Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("frames"),
            _FramesPerSecondColumn(),
            TimeElapsedColumn(),
            TextColumn("<"),
            TimeRemainingColumn(),
            TextColumn("episodes {task.fields[episodes]}"),
            TextColumn("return(100) {task.fields[mean_return]}"),
            console=self._console or Console(stderr=True),
            auto_refresh=False,
            transient=False,
        )

    def start(self) -> None:
        """Show the bar (no-op when quiet or already started)."""
        if self.quiet or self._progress is not None:
            return
        self._progress = self._make_progress()
        self._task = self._progress.add_task(
            self.description, total=self.total_frames, episodes=0, mean_return="-"
        )
        self._progress.start()
        self._next_refresh = time.monotonic()

    def update(self, frame: int, episode: int, mean_return: float | None = None) -> None:
        """Record progress; the display is redrawn at most ``refresh_per_second`` times/s.

        Args:
            frame: Frames done so far.
            episode: Episodes done so far.
            mean_return: Mean return of the last 100 episodes (``None``/``nan`` if unknown).
        """
        if self._progress is None:
            return
        now = time.monotonic()
        if now < self._next_refresh:
            self._last = (frame, episode, mean_return)
            return
        self._next_refresh = now + self._interval
        self._draw(frame, episode, mean_return)

    def _draw(self, frame: int, episode: int, mean_return: float | None) -> None:
        """Push the values to rich and redraw."""
        assert self._progress is not None
        self._last = (frame, episode, mean_return)
        self._progress.update(
            self._task,
            completed=frame,
            episodes=episode,
            mean_return=_format_return(mean_return),
        )
        self._progress.refresh()

    def close(self) -> None:
        """Draw the last values received and stop the display."""
        if self._progress is None:
            return
        self._draw(*self._last)
        self._progress.stop()
        self._progress = None

    def __enter__(self) -> TrainingProgress:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
