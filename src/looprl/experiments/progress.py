"""``TrainingProgress``: a cheap rich progress bar and live dashboard for training loops."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable

from rich.console import Console, RenderableType
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

__all__ = ["TrainingProgress"]

WIDE = 120  # columns a console needs for the full one-line bar


class _UnitColumn(ProgressColumn):
    """A task's count in ``unit`` (``_count``) or, with ``rate``, its speed (``_rate``)."""

    def __init__(self, unit: str, rate: bool = False) -> None:
        super().__init__()
        self.unit, self.rate = unit, rate

    def render(self, task: Task) -> Text:
        if self.rate:
            return Text(_rate(task.speed, self.unit), style="progress.data.speed")
        return Text(_count(int(task.completed), int(task.total or 0), self.unit),
                    style="progress.download")


def _rate(speed: float | None, unit: str) -> str:
    """``1,234 fps`` of frames, ``2.5 episodes/s`` of another unit (``?``: not known yet)."""
    if unit == "frames":
        return "? fps" if speed is None else f"{speed:,.0f} fps"
    return f"? {unit}/s" if speed is None else f"{speed:,.1f} {unit}/s"


def _count(done: int, total: int, unit: str) -> str:
    """``done/total unit``, ``done unit`` without a budget, and a note past it."""
    unit = f" {unit}" if unit else ""
    if total <= 0:
        return f"{done:,}{unit}"
    if done > total:
        return f"{done:,}{unit} (budget {total:,} reached)"
    return f"{done:,}/{total:,}{unit}"


class _Dashboard(Progress):
    """A ``Progress`` that shows the lines of ``status()`` under its bar."""

    def __init__(self, *columns: ProgressColumn | str, status: Callable[[], list[str]],
                 **kwargs: object):
        self._status = status  # (Progress.__init__ may render already)
        super().__init__(*columns, **kwargs)  # type: ignore[arg-type]

    def get_renderables(self) -> Iterable[RenderableType]:
        yield self.make_tasks_table(self.tasks)
        for line in self._status():
            yield Text(line, style="dim", overflow="ellipsis", no_wrap=True)


def _format_duration(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}"


def _format_return(mean_return: float | None) -> str:
    return "-" if mean_return is None or math.isnan(mean_return) else f"{mean_return:.4g}"


class TrainingProgress:
    """Progress bar of a training run (a context manager) in ``unit`` (frames, or an evaluation's
    episodes) with ``status()``'s lines under it; on a console that is no terminal, plain lines
    every ``line_interval`` seconds at most and at every tenth of the run."""

    def __init__(self, total_frames: int, description: str, quiet: bool = False,
                 console: Console | None = None, refresh_per_second: float = 10.0,
                 line_interval: float = 60.0, status: Callable[[], list[str]] | None = None,
                 unit: str = "frames") -> None:
        self.total_frames, self.description, self.quiet = int(total_frames), description, quiet
        self.unit = unit
        self.status = status or list  # (no lines)
        self._interval, self._line_interval = 1.0 / refresh_per_second, line_interval
        self._last: tuple[int, int, float | None] = (0, 0, None)
        self._progress: Progress | None = None
        self._task, self._console = None, console
        self._lines: Console | None = None  # plain-line mode (the console is no terminal)
        self._start = self._next_refresh = self._next_line_frame = 0.0
        self._printed_frame = -1
        self._first_frame: int | None = None  # frames may start above 0 (resumed training)

    def start(self) -> None:
        """Show the bar (no-op when quiet or already started; shorter on a console narrower
        than ``WIDE``)."""
        if self.quiet or self._progress is not None or self._lines is not None:
            return
        self._start = time.monotonic()
        console = self._console = self._console or Console(stderr=True)
        if not console.is_terminal:
            self._lines = console
            self._next_refresh = self._start + self._line_interval
            self._next_line_frame = self._next_milestone(0)
            return
        unit = self.unit
        if console.width >= WIDE:
            columns = [TextColumn("[progress.description]{task.description}"),
                       BarColumn(bar_width=24), _UnitColumn(unit), _UnitColumn(unit, rate=True),
                       TimeElapsedColumn(), TextColumn("<"), TimeRemainingColumn()]
        else:
            console.print(self.description, markup=False, highlight=False)
            columns = [BarColumn(bar_width=10), _UnitColumn(""), _UnitColumn(unit, rate=True),
                       TimeRemainingColumn()]
        columns += [TextColumn("episodes {task.fields[episodes]}")] * (unit == "frames")
        columns += [TextColumn("return(100) {task.fields[mean_return]}")]
        self._progress = _Dashboard(*columns, status=self.status, console=console,
                                    auto_refresh=False, transient=False)
        self._task = self._progress.add_task(self.description, total=self.total_frames,
                                             episodes=0, mean_return="-")
        self._progress.start()
        self._next_refresh = time.monotonic()

    def update(self, frame: int, episode: int, mean_return: float | None = None) -> None:
        """Record the progress (``mean_return`` ``None``/``nan``: unknown); redraw if due."""
        if self._lines is None and self._progress is None:
            return
        self._last = (frame, episode, mean_return)
        now = time.monotonic()
        if self._lines is not None:
            if self._first_frame is None:  # (a later train() call's: its next tenth on)
                self._first_frame, self._next_line_frame = frame, self._next_milestone(frame)
            if frame >= self._next_line_frame or now >= self._next_refresh:
                self._print_line(now)
        elif now >= self._next_refresh:
            self._next_refresh = now + self._interval
            self._draw(frame, episode, mean_return)

    def _next_milestone(self, frame: int) -> float:
        """The first frame of the next tenth of the run after ``frame`` (in episodes: none)."""
        if self.total_frames <= 0 or self.unit != "frames":
            return math.inf
        tenth = max(self.total_frames / 10, 1)
        return math.floor(frame / tenth + 1) * tenth

    def _print_line(self, now: float) -> None:
        frame, episode, mean_return = self._last
        elapsed = now - self._start
        fps = (frame - (self._first_frame or 0)) / elapsed if elapsed > 0 else 0.0
        total = self.total_frames
        frames = _count(frame, total, self.unit)
        left = ""
        if total > 0:
            if frame <= total:
                frames += f" ({100 * frame / total:.0f}%)"
            if fps > 0:
                left = f", {_format_duration(max(total - frame, 0) / fps)} left"
        episodes = f", episodes {episode}" if self.unit == "frames" else ""
        line = (f"{self.description}: {frames}, {_rate(fps, self.unit)}, "
                f"{_format_duration(elapsed)} elapsed{left}{episodes}, return(100) "
                f"{_format_return(mean_return)}")
        line = "; ".join([line, *self.status()])
        self._lines.print(line, markup=False, highlight=False, soft_wrap=True)
        self._printed_frame = frame
        self._next_line_frame = self._next_milestone(frame)
        self._next_refresh = now + self._line_interval

    def _draw(self, frame: int, episode: int, mean_return: float | None) -> None:
        self._progress.update(self._task, completed=frame, episodes=episode,
                              mean_return=_format_return(mean_return))
        self._progress.refresh()

    def close(self) -> None:
        """Draw the last values received and stop the display."""
        if self._lines is not None and self._last[0] != self._printed_frame:
            self._print_line(time.monotonic())
        elif self._progress is not None:
            self._draw(*self._last)
            self._progress.stop()
        self._lines = self._progress = None

    def __enter__(self) -> TrainingProgress:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def evaluation_progress(description: str, episodes: int, quiet: bool) -> TrainingProgress:
    """The progress display of ``description``'s evaluation of ``episodes`` episodes."""
    return TrainingProgress(episodes, f"{description}: evaluation", quiet=quiet, unit="episodes")
