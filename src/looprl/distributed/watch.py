"""``looprl watch RUN_DIR`` of a Ray run: its ``policy.pt`` and ``algorithm.pt`` (the
``AlgorithmSpec``), in an env normalized as training's."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import torch

from looprl.collector import EnvRunner
from looprl.core.files import load_file
from looprl.distributed.config import AlgorithmSpec
from looprl.environments.srl import make
from looprl.environments.wrappers import load_normalization, saved_normalization
from looprl.experiments.episodes import played_then_closed
from looprl.experiments.watch import (
    default_fps,
    has_display,
    play_and_show,
    render_env,
    rendering_kept,
)

__all__ = ["BEST", "POLICY_FILE", "SPEC_FILE", "load_run", "save_spec", "watch_run"]

SPEC_FILE = "algorithm.pt"
POLICY_FILE = "policy.pt"
#: the prefix of the best policy's files so far (``best_policy.pt``; ``runner.eval_every``)
BEST = "best_"


def save_spec(spec: AlgorithmSpec, run_dir: str | Path) -> None:
    """Write ``spec`` to ``run_dir`` (cloudpickled)."""
    from ray import cloudpickle
    torch.save(spec, Path(run_dir) / SPEC_FILE, pickle_module=cloudpickle)


def load_run(run_dir: str | Path, prefix: str = "") -> tuple[AlgorithmSpec, Any]:
    """The spec of the distributed run in ``run_dir`` and its trained policy (on the CPU;
    ``prefix=BEST``: its best so far)."""
    run_dir, policy_file = Path(run_dir), prefix + POLICY_FILE
    for name in (policy_file, SPEC_FILE):
        if not (run_dir / name).exists():
            raise FileNotFoundError(f"No {name} in {run_dir}: a distributed run writes "
                                    f"{SPEC_FILE} when it starts and {POLICY_FILE} when it ends"
                                    + (f", {policy_file} when it evaluates on the way "
                                       "(runner.eval_every=N)" if prefix else ""))
    remedy = f"{run_dir} cannot be played; train the run again"
    spec = load_file(run_dir / SPEC_FILE, "distributed run's algorithm", remedy)
    policy = spec.make_policy()  # (installs the spec's registrations)
    policy.load_checkpoint(load_file(run_dir / policy_file, "trained policy", remedy,
                                     map_location="cpu"))
    return spec, policy


@rendering_kept()
def watch_run(run_dir: str | Path, episodes: int = 1, fps: float | None = None,
              gif: str | Path | None = None, max_steps: int = 10_000, seed: int = 0,
              prefix: str = "") -> tuple[list[float], Path | None]:
    """Play ``episodes`` deterministic episodes of the policy in ``run_dir`` (``prefix=BEST``:
    the best so far; normalized as in training) at ``fps`` (default: the env's), in a window
    where the env draws one, else into a GIF (``gif``, default ``run_dir/watch.gif``); return
    the returns and the GIF path or None."""
    spec, policy = load_run(run_dir, prefix)
    build = partial(make, spec.env, **spec.env_args)
    env, window = render_env(build, window=gif is None and has_display())
    load_normalization(env, saved_normalization(run_dir, prefix, env=env), spec.env_label)
    fps = fps or getattr(env, "render_fps", None) or default_fps(env)
    if not window:
        gif = Path(gif) if gif is not None else Path(run_dir) / "watch.gif"
    runner = partial(EnvRunner, lambda: env, segment_length=None, seed=seed,
                     is_evaluation=True, default_policy_state=policy.default_policy_state)
    played, path = played_then_closed(env, lambda: play_and_show(
        runner(), policy.rollout, env.render, episodes, fps, None if window else gif, max_steps))
    return [episode.ret for episode in played], path

