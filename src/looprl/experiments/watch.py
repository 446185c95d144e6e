"""Watch a trained agent: on screen when a display exists, else into a GIF file."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from looprl.environments import GymEnvironment

log = logging.getLogger(__name__)


def has_display() -> bool:
    """Whether a window can be opened (an X11 or Wayland display is set)."""
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def watch(
    agent: Any,
    env_id: str,
    episodes: int = 1,
    fps: float = 50.0,
    gif: str | Path | None = None,
    seed: int | None = None,
) -> tuple[list[float], Path | None]:
    """Play ``episodes`` episodes of ``agent`` in ``env_id`` and show them.

    With a display and no ``gif`` the episodes play in a window at ``fps``; otherwise
    frames are rendered off-screen and written to ``gif``. Returns the episode returns and
    the GIF path (or ``None``).
    """
    to_file = gif is not None or not has_display()
    if not has_display():  # pygame renders off-screen without complaining
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
        os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    env = GymEnvironment(env_id, render_mode="rgb_array" if to_file else "human", seed=seed)
    frames: list[np.ndarray] = []
    returns = []
    try:
        for _ in range(episodes):
            returns.append(_play(agent, env, frames if to_file else None, fps))
    finally:
        env.close()
    if not to_file:
        return returns, None
    path = Path(gif) if gif is not None else Path("watch.gif")
    write_gif(frames, path, fps)
    return returns, path


def _play(agent: Any, env: GymEnvironment, frames: list | None, fps: float) -> float:
    state = env.reset()
    episode_return = 0.0
    while True:
        if frames is not None:
            frames.append(env.render())
        else:
            time.sleep(1.0 / fps)
        if state.done:
            return episode_return
        state = env.step(agent.act(state))
        episode_return += state.reward


def write_gif(frames: list[np.ndarray], path: Path, fps: float, max_frames: int = 2000) -> None:
    """Write RGB frames to an animated GIF (every k-th frame beyond ``max_frames``)."""
    from PIL import Image

    if not frames:
        raise ValueError("No frames to write")
    step = max(1, len(frames) // max_frames)
    images = [Image.fromarray(frame) for frame in frames[::step]]
    path.parent.mkdir(parents=True, exist_ok=True)
    duration = int(1000 * step / fps)
    images[0].save(path, save_all=True, append_images=images[1:], duration=duration, loop=0)
    log.info("Wrote %d frames to %s", len(images), path)
