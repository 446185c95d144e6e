"""``looprl run``: the Hydra application over the config groups of ``looprl.configs``.

    looprl run algorithm=ppo env=CartPole-v1 meta=[rnd] seed=0
    looprl run -m seed=0,1,2 algorithm.lr=1e-3,3e-4             # a multirun (a grid)
    looprl run -m seed=0,1,2,3 hydra/launcher=joblib            # its jobs in parallel
    looprl run -m seed=0,1 hydra/launcher=submitit_slurm        # on a SLURM cluster
    looprl run --help                                            # the groups and options

Each run trains the preset for ``frames`` steps in Hydra's run directory (``outputs/...``, or
``multirun/.../N`` per job), evaluates it for ``test_episodes`` episodes, and leaves there
the resolved config (``.hydra/config.yaml``), the experiment's logs (TensorBoard events,
``returns.csv``, ``returns100.csv``), the trained ``preset.pt`` and ``eval.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from looprl.configs import build, check_overrides, register

__all__ = ["execute", "main"]


def execute(cfg: Any, output_dir: str) -> dict[str, Any]:
    """Build and run the config ``cfg`` in ``output_dir``; the evaluation results."""
    import torch

    from looprl.experiments import make_experiment

    torch.set_num_threads(1)
    run = build(cfg)
    logging = cfg.logging
    experiment = make_experiment(
        run.preset, run.env, train_steps=cfg.frames, logdir=output_dir, quiet=logging.quiet,
        verbose=logging.verbose, seed=cfg.seed, meta=run.meta,
    )
    experiment.train(frames=cfg.frames)
    returns = experiment.test(episodes=cfg.test_episodes) if cfg.test_episodes else []
    experiment.close()
    run.preset.save(str(Path(output_dir) / "preset.pt"))
    mean = float(sum(returns) / len(returns)) if returns else float("nan")
    results = {"mean_eval_reward": mean, "eval_returns": [float(r) for r in returns],
               "frames": experiment.frame, "episodes": experiment.episode}
    (Path(output_dir) / "eval.json").write_text(json.dumps(results, indent=1))
    return results


def main(argv: list[str]) -> int:
    """Run the Hydra application on ``argv`` (overrides and Hydra flags)."""
    import hydra
    from hydra.core.hydra_config import HydraConfig

    register()
    check_overrides(argv)

    @hydra.main(version_base="1.3", config_path=None, config_name="looprl")
    def app(cfg: Any) -> float:
        results = execute(cfg, HydraConfig.get().runtime.output_dir)
        return results["mean_eval_reward"]  # what a sweeper (e.g. Optuna's) optimizes

    saved = sys.argv
    sys.argv = ["looprl run", *argv]
    try:
        app()
    finally:
        sys.argv = saved
    return 0
