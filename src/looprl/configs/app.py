"""``looprl run``: the Hydra application over the config groups of ``looprl.configs``.

    looprl run algorithm=ppo env=CartPole-v1 meta=[rnd] seed=0
    looprl run -m seed=0,1,2 algorithm.lr=1e-3,3e-4             # a multirun (a grid)
    looprl run -m seed=0,1,2,3 hydra/launcher=joblib            # its jobs in parallel
    looprl run -m seed=0,1 hydra/launcher=submitit_slurm        # on a SLURM cluster
    looprl run --help                                            # the groups and options

Each run builds the config's runner (``runner=online``: train ``frames`` steps, then evaluate
``test_episodes`` episodes) in Hydra's run directory (``outputs/...``, or
``multirun/.../N`` per job) and leaves there the resolved config (``.hydra/config.yaml``),
the experiments' logs (TensorBoard events, ``returns.csv``, ``returns100.csv``), the final
``preset.pt`` and ``results.json`` (the runner's train and eval results).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from looprl.configs import build, check_overrides, register

__all__ = ["execute", "main"]


def execute(cfg: Any, output_dir: str) -> dict[str, Any]:
    """Build the config ``cfg`` and run its runner in ``output_dir``; the results (also
    written to ``results.json``)."""
    import torch

    torch.set_num_threads(1)
    run = build(cfg, output_dir)
    train_results, eval_results = run.runner.run()
    if run.runner.preset is not None:
        run.runner.preset.save(str(Path(output_dir) / "preset.pt"))
    run.runner.close()
    results = {"train": _jsonable(train_results), "eval": _jsonable(eval_results)}
    (Path(output_dir) / "results.json").write_text(json.dumps(results, indent=1))
    return results


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return repr(value)


def main(argv: list[str]) -> int:
    """Run the Hydra application on ``argv`` (overrides and Hydra flags)."""
    import hydra
    from hydra.core.hydra_config import HydraConfig

    register()
    check_overrides(argv)

    @hydra.main(version_base="1.3", config_path=None, config_name="looprl")
    def app(cfg: Any) -> float:
        try:
            results = execute(cfg, HydraConfig.get().runtime.output_dir)
        except (ValueError, TypeError, KeyError) as error:  # a bad config: one line, exit 2
            if os.environ.get("LOOPRL_DEBUG"):
                raise
            message = error.args[0] if isinstance(error, KeyError) and error.args else error
            print(f"looprl: error: {message}", file=sys.stderr)
            raise SystemExit(2) from None
        return results["eval"]["mean_eval_reward"]  # what a sweeper (e.g. Optuna's) optimizes

    saved, root = sys.argv, logging.getLogger()
    handlers, level = root.handlers[:], root.level
    sys.argv = ["looprl run", *argv]
    try:
        app()
    finally:  # Hydra configures logging for its jobs: leave the caller's as it was
        sys.argv = saved
        root.handlers[:], root.level = handlers, level
    return 0
