"""Watch a trained agent on screen, or into a GIF file. As in ALL, this module is callable as
its ``watch`` (``from looprl.experiments import watch; watch(agent, env)``)."""

from __future__ import annotations

import contextlib
import ctypes.util
import logging
import math
import os
import sys
import tempfile
import time
import types
import warnings
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from looprl.collector import EnvRunner, Episode
from looprl.core import RolloutRequest, RolloutResult
from looprl.core.files import write_atomically
from looprl.core.preset import check_agent
from looprl.core.suggest import check_positive, either, warn_once
from looprl.environments import AtariEnvironment, Environment
from looprl.environments.ale import atari_game
from looprl.environments.contextual import ContextualEnvironment
from looprl.environments.duplicate import DuplicateEnvironment
from looprl.environments.faults import EnvironmentFailure, failure
from looprl.environments.gym import refuse_gymnasium
from looprl.environments.multiagent import MultiagentPettingZooEnv
from looprl.environments.wrappers import load_normalization, preset_normalization
from looprl.experiments.episodes import (
    check_episodes,
    check_spaces,
    play_episodes,
    played_then_closed,
    single_action,
    window_advice,
)
from looprl.experiments.multiagent import game
from looprl.presets import load_preset
from looprl.presets.catalog import family_of, make_env, rendering

log = logging.getLogger(__name__)


class WatchInterrupted(KeyboardInterrupt):
    """Ctrl-C while ``watch`` wrote a GIF: the ``frames`` played until then are in ``gif``."""

    def __init__(self, gif: Path, frames: int):
        super().__init__(f"the {frames:,} frames played so far are in {gif}")
        self.gif = gif
        self.frames = frames


def has_display() -> bool:
    """Whether a window can be opened (an X11 or Wayland display is set)."""
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def shows_in_window(preset: Any) -> bool:
    """Whether ``preset``'s environment can be watched in a window here (Atari cannot)."""
    return has_display() and family_of(preset) != "atari"


#: the environment variables a watch sets (``offscreen_rendering``'s, and SDL's signals)
RENDERING_VARIABLES = ("SDL_VIDEODRIVER", "SDL_AUDIODRIVER", "MUJOCO_GL", "SDL_NO_SIGNAL_HANDLERS")


@contextlib.contextmanager
def rendering_kept() -> Iterator[None]:
    """The block (or the call), then ``RENDERING_VARIABLES`` as they were before it."""
    before = {name: os.environ.get(name) for name in RENDERING_VARIABLES}
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def offscreen_rendering() -> None:
    """Let pygame and MuJoCo (EGL or OSMesa) render without a display."""
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    if "MUJOCO_GL" not in os.environ:
        for backend, library in (("egl", "EGL"), ("osmesa", "OSMesa")):
            if ctypes.util.find_library(library):
                os.environ["MUJOCO_GL"] = backend
                break


def render_env(build: Callable[..., Any], window: bool) -> tuple[Any, bool]:
    """An environment to watch from ``build(render_mode=...)``, and whether in its own window."""
    if window:
        try:
            env = build(render_mode="human")
        except (TypeError, ValueError):
            pass
        else:
            if draws_window(env):
                return env, True
            env.close()  # (built without the mode)
    offscreen_rendering()
    return rendering(build, "rgb_array"), False


def watch_env(preset: Any, env_id: str, window: bool) -> tuple[Any, bool]:
    """The environment a saved ``preset`` acts in, built as training built it, by ``render_env``."""
    remote = getattr(preset, "env_remote", None)
    name, args = remote if isinstance(remote, tuple) else (remote, None)
    if name == "atari" and atari_game(env_id) == args["game"]:  # (the game's options)
        name, args = env_id, {key: value for key, value in args.items() if key != "game"}
    if name == "contextual" and args["env_id"] == env_id:
        build = partial(ContextualEnvironment, **args)
    else:
        family = family_of(preset) or "classic_control"  # (a user's: a Gymnasium env's)
        build = partial(make_env, f"{family}.{preset.name}", env_id,
                        env_kwargs=args if name == env_id else None)
    env, window = render_env(build, window and shows_in_window(preset))
    _check_spaces(preset, env)
    return env, window


def _check_env(env: Any, caller: str) -> None:
    """A one-line ``TypeError`` unless ``env`` is a looprl environment ``watch`` can play."""
    refuse_gymnasium(env, caller)
    if not isinstance(env, Environment | MultiagentPettingZooEnv):
        fix = f" {env!r}: build one (GymEnvironment({env!r}))" if isinstance(env, str) else ""
        raise TypeError(f"{caller} plays in a looprl Environment (GymEnvironment, "
                        "AtariEnvironment, ...) or a MultiagentPettingZooEnv, got "
                        f"{type(env).__name__}{fix}")


def _check_spaces(preset: Any, env: Any) -> None:
    """``check_spaces``, ``env`` closed if it fails."""
    try:
        check_spaces(preset, env)
    except ValueError:
        env.close()
        raise


def draws_window(env: Any) -> bool:
    """Whether ``env`` (or the environment it wraps) was built with ``render_mode='human'``."""
    return "human" in (getattr(env, "render_mode", None),
                       getattr(getattr(env, "env", None), "render_mode", None))


def warn_unseen(env: Any) -> bool:
    """Warn where ``env`` was made without ``render_mode='human'``: it plays with no window
    (then ``True``: nothing is shown, so nothing waits at ``fps``)."""
    if not hasattr(getattr(env, "env", None), "render_mode") or draws_window(env):
        return False
    why, fix = window_advice(env)
    warn_once(log, "watch: %s shows no window (%s), so its episodes play unseen: %swrite them "
              "to a GIF with watch(..., gif=PATH)", env.name, why, fix and f"{fix}, or ")
    return True


def default_fps(env: Any) -> float:
    """The environment's real-time speed: its ``render_fps``, 15 for Atari, else 50."""
    metadata = getattr(getattr(env, "env", None), "metadata", None) or {}
    if metadata.get("render_fps"):
        return float(metadata["render_fps"])
    return 15.0 if isinstance(env, AtariEnvironment) else 50.0


@rendering_kept()
def watch(agent: Any, env: Any, fps: float | None = None, n_episodes: int | None = None,
          episodes: int | None = None, gif: str | Path | None = None, max_steps: int = 10_000,
          ) -> tuple[list[float] | list[dict[str, float]], Path | None]:
    """Play ``n_episodes`` (or ``episodes``; 1 if neither) episodes of ``agent`` in ``env``,
    shown in its window at ``fps`` or written to ``gif``; the returns (per agent in a game) and
    the GIF. ALL's positional order: ``watch(agent, env, fps, n_episodes)``."""
    episodes = either("episodes", episodes, "n_episodes", n_episodes, 1)
    check_episodes(episodes, "watch", least=1)
    check_agent(agent, "watch")
    _check_env(env, "watch")
    fps = fps or default_fps(env)
    shown = gif is not None or not warn_unseen(env)  # (unseen: played at full speed)
    # (before pygame starts: SDL made SIGTERM a quit event, which nothing reads)
    os.environ.setdefault("SDL_NO_SIGNAL_HANDLERS", "1")
    played, path = played_then_closed(env, lambda: play_and_show(
        *_acting(agent, env), env.render, episodes, fps, gif, max_steps, shown))
    if isinstance(env, MultiagentPettingZooEnv):
        names = env.possible_agents
        return [dict(zip(names, e.returns or (e.ret,), strict=True)) for e in played], path
    return [episode.ret for episode in played], path


def _acting(agent: Any, env: Any) -> tuple[EnvRunner, Callable[[RolloutRequest], RolloutResult]]:
    """The collector over ``env`` (unseeded, as seed 003) and ``agent``'s answer to it."""
    if isinstance(env, MultiagentPettingZooEnv):
        return game(env, agent)
    runner = EnvRunner(DuplicateEnvironment([env]), segment_length=None, seed=None,
                       is_evaluation=True)
    return runner, lambda _: RolloutResult(action=single_action(agent, runner.states()))


def play_and_show(runner: EnvRunner, act: Callable[[RolloutRequest], RolloutResult],
                  render: Callable[[], Any], episodes: int, fps: float,
                  gif: str | Path | None, max_steps: int, shown: bool = True
                  ) -> tuple[list[Episode], Path | None]:
    """``play_episodes`` on ``runner``, shown in a window at ``fps`` (``shown=False``: no
    window, played at full speed), or written to ``gif``."""
    check_positive(optional=True, fps=fps)
    if gif is None:
        pace = (lambda: time.sleep(1 / fps)) if shown else (lambda: None)
        return play_episodes(runner, act, episodes, pace, max_steps), None
    check_gif(Path(gif))
    frames: list[np.ndarray] = []
    try:
        played = play_episodes(runner, act, episodes, lambda: frames.append(rgb_frame(render)),
                               max_steps)
    except KeyboardInterrupt:
        if not frames:
            raise
        write_gif(frames, Path(gif), fps)
        raise WatchInterrupted(Path(gif), len(frames)) from None
    write_gif(frames, Path(gif), fps)
    return played, Path(gif)


def check_gif(path: Path) -> None:
    """A one-line ``ValueError`` before the episodes play if no GIF can be written at ``path``."""
    reason = ("it is a directory" if path.is_dir() else "its name does not end in .gif"
              if path.suffix.lower() != ".gif" else None)
    try:
        if reason is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=path.parent):  # (where os.access says yes: /proc)
                pass
    except OSError as error:
        reason = f"{error.strerror or error} ({path.parent})"
    if reason is not None:
        raise ValueError(f"cannot write the GIF at {path}: {reason}; give another file "
                         "(looprl watch --gif PATH, watch(..., gif=PATH))")


def rgb_frame(render: Callable[[], Any]) -> np.ndarray:
    """``render()``'s frame, or a one-line error if it gives no RGB array."""
    env = getattr(render, "__self__", render)
    owner = getattr(env, "name", None) or type(env).__name__
    fix = ("nothing to write to the GIF: build it with render_mode='rgb_array' (an argument "
           "its constructor must take), or have its render() return RGB frames")
    try:
        with warnings.catch_warnings():  # (GLFW's lines of a failure that looprl's names)
            warnings.filterwarnings("ignore", module="glfw")
            frame = render()
    except NotImplementedError as error:
        raise ValueError(str(error) or f"{owner} does not render: {fix}") from None
    except EnvironmentFailure:
        raise
    except Exception as error:  # (the user's render: one line naming it, as step's)
        gl = any(word in str(error) for word in ("OpenGL", "GLFW", "EGL", "OSMesa"))
        raise failure(owner, "render", error, hint=(
            "no offscreen OpenGL here: install EGL or OSMesa (e.g. apt install libegl1 or "
            "libosmesa6) and set MUJOCO_GL=egl or osmesa" if gl else None)) from error
    if not isinstance(frame, np.ndarray) or frame.ndim != 3:
        raise ValueError(f"{owner}.render() gave {type(frame).__name__}, not an (H, W, 3) RGB "
                         f"array: {fix}")
    return frame


def load_and_watch(filename: str | Path, env: Any, fps: float | None = 60,
                   n_episodes: int = sys.maxsize, **options: Any,
                   ) -> tuple[list[float] | list[dict[str, float]], Path | None]:
    """``watch`` the test agent of the preset saved at ``filename`` (normalized as trained)."""
    _check_env(env, "load_and_watch")
    preset = load_preset(str(filename), device=getattr(env, "device", None))
    _check_spaces(preset, env)
    load_normalization(env, preset_normalization(filename, env), env.name)
    return watch(preset.test_agent(), env, fps=fps, n_episodes=n_episodes, **options)


def write_gif(frames: list[np.ndarray], path: Path, fps: float, max_frames: int = 2000) -> None:
    """Write RGB frames (every k-th beyond ``max_frames``) to an animated GIF, atomically."""
    from PIL import Image

    if not frames:
        raise ValueError("No frames to write")
    step = max(1, len(frames) // max_frames)
    scale = max(1, math.ceil(300 / max(frames[0].shape[:2])))
    images = [Image.fromarray(frame.repeat(scale, axis=0).repeat(scale, axis=1))
              for frame in frames[::step]]
    path.parent.mkdir(parents=True, exist_ok=True)
    duration = int(1000 * step / fps)
    write_atomically(path, partial(images[0].save, format="GIF", save_all=True,
                                   append_images=images[1:], duration=duration, loop=0))
    log.info("Wrote %d frames to %s", len(images), path)


class _CallableModule(types.ModuleType):
    """This module, callable as its ``watch`` function."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return watch(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
