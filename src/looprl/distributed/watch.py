"""Watch the policy a distributed run trained (``looprl watch RUN_DIR`` of a Ray run).

``watch_run`` rebuilds the policy from the run directory's ``policy.pt`` (its
``get_checkpoint()``) and ``algorithm.pt`` (its ``AlgorithmSpec``) and plays deterministic
episodes through the actors' ``EnvRunner``, on the loop every watch plays
(``looprl.experiments.watch.play_and_show``): in a window when a display exists and the
environment draws one, else into a GIF of its ``render()`` frames. No Ray here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from looprl.collector import EnvRunner
from looprl.core.files import load_file
from looprl.distributed.config import AlgorithmSpec
from looprl.experiments.watch import default_fps, has_display, offscreen_rendering, play_and_show

__all__ = ["SPEC_FILE", "load_run", "save_spec", "watch_run"]

SPEC_FILE = "algorithm.pt"
POLICY_FILE = "policy.pt"


def save_spec(spec: AlgorithmSpec, run_dir: str | Path) -> None:
    """Write ``spec`` to ``run_dir`` (cloudpickle: registrations made in scripts travel)."""
    from ray import cloudpickle

    torch.save(spec, Path(run_dir) / SPEC_FILE, pickle_module=cloudpickle)


def load_run(run_dir: str | Path) -> tuple[AlgorithmSpec, Any]:
    """The spec of the distributed run in ``run_dir`` and its trained policy (on the CPU).

    Raises:
        FileNotFoundError: ``run_dir`` lacks ``policy.pt`` or ``algorithm.pt`` (named).
    """
    run_dir = Path(run_dir)
    for name in (POLICY_FILE, SPEC_FILE):
        if not (run_dir / name).exists():
            raise FileNotFoundError(f"No {name} in {run_dir}: a distributed run writes "
                                    f"{SPEC_FILE} when it starts and {POLICY_FILE} when it ends")
    remedy = f"{run_dir} cannot be played; train the run again"
    spec = load_file(run_dir / SPEC_FILE, "distributed run's algorithm", remedy)
    policy = spec.make_policy()  # (installs the spec's registrations: _render_env's env too)
    policy.load_checkpoint(load_file(run_dir / POLICY_FILE, "trained policy", remedy,
                                     map_location="cpu"))
    return spec, policy


def watch_run(
    run_dir: str | Path,
    episodes: int = 1,
    fps: float | None = None,
    gif: str | Path | None = None,
    max_steps: int = 10_000,
    seed: int = 0,
) -> tuple[list[float], Path | None]:
    """Play ``episodes`` deterministic episodes of the policy in ``run_dir``.

    Args:
        run_dir: the run directory (``results.csv``, ``policy.pt``, ``algorithm.pt``).
        episodes: episodes to play.
        fps: frames per second of the window or the GIF (default: the environment's real
            time, its ``render_fps``).
        gif: write the frames to this GIF (default: a window when a display exists and the
            environment can draw one, else ``run_dir/watch.gif``).
        max_steps: an episode is cut after this many steps (with a warning).
        seed: the env copy's seed.

    Returns:
        The episode returns (summed over agents) and the GIF path (``None``: a window).

    Raises:
        FileNotFoundError: not a distributed run directory.
        ValueError: the environment cannot render frames (its ``render()``).
    """
    spec, policy = load_run(run_dir)
    env, window = _render_env(spec, window=gif is None and has_display())
    fps = fps or getattr(env, "render_fps", None) or default_fps(env)
    if not window:
        gif = Path(gif) if gif is not None else Path(run_dir) / "watch.gif"
    try:
        runner = EnvRunner(lambda: env, segment_length=None, seed=seed, is_evaluation=True,
                           default_policy_state=policy.default_policy_state)
        played, path = play_and_show(runner, policy.rollout, env.render, episodes, fps,
                                     None if window else gif, max_steps)
    finally:
        env.close()
    return [episode.ret for episode in played], path


def _render_env(spec: AlgorithmSpec, window: bool) -> tuple[Any, bool]:
    """The run's environment, built to draw a window (``window``) or to render frames; and
    whether it draws a window. An environment without ``render_mode`` renders frames."""
    from looprl.environments.srl import make

    if window:
        try:
            return make(spec.env, **spec.env_args, render_mode="human"), True
        except (TypeError, ValueError):
            pass  # no window here (e.g. Atari): frames into a GIF
    offscreen_rendering()
    try:
        return make(spec.env, **spec.env_args, render_mode="rgb_array"), False
    except TypeError:
        return make(spec.env, **spec.env_args), False
