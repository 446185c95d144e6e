"""``looprl run``: the Hydra application over the config groups of ``looprl.configs``.

    looprl run algorithm=ppo env=CartPole-v1 meta=[rnd] seed=0
    looprl run -m seed=0,1,2 algorithm.lr=1e-3,3e-4             # a multirun (a grid)
    looprl run --resume outputs/DATE/TIME                        # continue a killed run

Each run leaves in Hydra's run directory the resolved config, the experiments' logs, the final
``preset.pt`` and ``results.json`` (the runner's train and eval results; ``null`` for a
number that is not finite, such as the mean of no test episodes).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from looprl import configs
from looprl.configs.checks import check_given_once, check_overrides, composition_error
from looprl.configs.overrides import check_grammar, override_pairs, split_flags
from looprl.configs.run_dirs import check_run_dir, claim_run_dir, path_value, run_dir_key
from looprl.configs.runtimes import runtime_help
from looprl.configs.sources import check_config_keys, compose, saved_sources, user_groups
from looprl.core.suggest import is_bad_input, one_line, warnings_per_run
from looprl.experiments.run_files import json_text, restorer

__all__ = ["check_run_dir", "execute", "help_text", "main"]

log = logging.getLogger(__name__)


def execute(cfg: Any, output_dir: str) -> dict[str, Any]:
    """Build the config ``cfg``, run its runner in ``output_dir`` and return the results."""
    import torch
    check_config_keys(cfg)  # (before its groups are read)
    torch.set_num_threads(configs.learner_threads(cfg))  # (on Ray: the trainer's too)
    if cfg.runtime.name == "ray" and cfg.runner.name == "online":  # one distributed run
        return _execute_distributed(cfg, output_dir)
    with warnings_per_run():  # (the config's checks build the preset too: one run)
        run = configs.build(cfg, output_dir)
        try:
            train_results, eval_results = run.runner.run()
        except KeyboardInterrupt:  # (as looprl train: the preset as trained so far, to watch;
            if cfg.runner.name in ("online", "es") and run.runner.preset is not None:  # ES:
                run.runner.save_preset(output_dir)  # its best so far)
            raise
    if run.runner.preset is not None:
        run.runner.save_preset(output_dir)
    if cfg.runner.name == "online" and not cfg.logging.quiet:  # (as a Ray run's, below)
        configs.log_summary(f"{run.runner.experiment.name} on {cfg.env}: "
                            f"{train_results['step']} frames, {train_results['episodes']} "
                            "episodes", eval_results)
    run.runner.close()
    return _write_results(cfg, output_dir, train_results, eval_results)


def _write_results(cfg: Any, output_dir: str, train: dict[str, Any],
                   evaluation: dict[str, Any]) -> dict[str, Any]:
    """Write ``results.json`` and return what it holds (and log a held-out set's returns)."""
    text = json_text({"train": train, "eval": evaluation}, indent=1)
    (Path(output_dir) / "results.json").write_text(text)
    if "test_set" in evaluation and not cfg.logging.quiet:
        train_set, test_set = evaluation["train_set"], evaluation["test_set"]
        log.info("test return on the training instances %.1f +/- %.1f (%d episodes), on the "
                 "held-out instances %.1f +/- %.1f (%d episodes)", train_set["mean_eval_reward"],
                 train_set["std_eval_reward"], train_set["episodes"],
                 test_set["mean_eval_reward"], test_set["std_eval_reward"], test_set["episodes"])
    return json.loads(text)


def _execute_distributed(cfg: Any, output_dir: str) -> dict[str, Any]:
    """``runtime=ray``: the run on Ray workers, then a local run's final evaluation, here."""
    from looprl.distributed.evaluate_every import EvaluateEvery
    from looprl.experiments.logger import mean_return
    from looprl.runners.evaluation import final_evaluation, summary
    run = configs.build_distributed(cfg, output_dir)
    run.evaluate_at_budget = True  # (a resumed run without results.json: not evaluated yet)
    every = cfg.runner.get("eval_every")  # (evaluations on the way: their envs made first)
    envs = None if every is None else configs.make_envs(cfg.algorithm.preset, cfg)
    evaluate = None if envs is None else EvaluateEvery(every, cfg.test_episodes, *envs,
                                                       logdir=output_dir)
    try:
        result = run.run(evaluate)
        evaluation = summary([])
        if (Path(result.log_dir or "") / "policy.pt").is_file():  # (0 episodes: as locally)
            envs = envs or configs.make_envs(cfg.algorithm.preset, cfg)
            evaluation = {**final_evaluation(run, cfg.test_episodes, *envs),
                          "step": result.frames}  # (as a runner reports it)
            if evaluate is not None:
                evaluate.final(run, evaluation)
            run.close()
        elif cfg.test_episodes:  # never score an untrained policy as the run's result
            log.warning("no test episodes: the run saved no final policy (%s)", result.log_dir)
    finally:
        if envs is not None:
            configs.close_envs(*envs)
    train = {"step": result.frames, "episodes": len(result.returns),  # (a local run's keys)
             "returns": list(result.returns), "mean_return": mean_return(result.returns),
             "wall_time": result.seconds, "frames": result.frames,
             "train_steps": result.train_steps, "seconds": result.seconds,
             "frames_per_second": result.frames_per_second,
             "restarts": [list(r) for r in result.restarts], "log_dir": result.log_dir,
             "meta": result.meta}
    if evaluate is not None:  # (an OnlineRunner's keys)
        train.update(evaluations=evaluate.evaluations, best=evaluate.best)
    if not cfg.logging.quiet:
        actors = run.runtime.actors
        configs.log_summary(f"{run.name} on {cfg.env} (Ray, {actors} actor"
                            f"{'s' * (actors > 1)}): {result.frames} frames at "
                            f"{result.frames_per_second:.0f} frames/s", evaluation)
    return _write_results(cfg, output_dir, train, evaluation)


def resume_arguments(argv: list[str]) -> list[str]:
    """``--resume RUN_DIR`` (or ``resume=true hydra.run.dir=RUN_DIR``) and overrides -> the
    run's own overrides, then these, in its directory with ``resume=true``; ``ValueError``
    if they change the run's config (but ``frames`` and ``logging``)."""
    from hydra.core.override_parser.types import Quote, QuotedString

    from looprl.experiments.checkpoint import check_run_files, check_same_config, check_unfinished
    run_dirs = [path_value(a) for a in argv if a.startswith("hydra.run.dir=")]
    if "--resume" in argv:
        at = argv.index("--resume")
        if at + 1 >= len(argv):
            raise ValueError("--resume needs the run directory: looprl run --resume RUN_DIR")
        run_dirs, argv = [argv[at + 1]], argv[:at] + argv[at + 2:]
    elif "resume=true" not in argv:
        return argv
    if not run_dirs:
        raise ValueError("resume=true needs the run directory: looprl run --resume RUN_DIR")
    if run_dir_key(argv) == "hydra.sweep.dir":  # (-m: its jobs' directories are new ones)
        raise ValueError("--resume continues one run, not a multirun: drop -m (a sweep's job: "
                         "looprl run --resume SWEEP_DIR/N)")
    run_dir = Path(run_dirs[0])
    saved = run_dir / ".hydra"
    if not (saved / "config.yaml").is_file():
        raise FileNotFoundError(f"{run_dir} is no looprl run directory (no .hydra/config.yaml)")
    old, overrides = _saved_config(saved)
    checkpoint = configs.find_checkpoint(str(run_dir), old.runner.name, old.runtime.name)
    if old.runtime.name != "ray":  # (before Hydra writes the run's config anew)
        check_run_files(Path(checkpoint).parent)
    kept = configs.expand_shorthands([o for o in overrides
                                      if not o.startswith(("resume=", "hydra."))])
    sources, saved_choices = saved_sources(saved)
    kept = [*sources, *kept]  # (its -cd and -cn)
    extra = [a for a in argv if not a.startswith(("resume=", "hydra.run.dir="))]
    given = dict(override_pairs(extra))  # (they replace the run's own)
    # a group chosen anew (runtime=local for a Ray run) drops the run's keys of its old choice
    choices = {**saved_choices, **dict(override_pairs(kept))}
    switched = {key for key, value in given.items() if choices.get(key, value) != value}
    kept = [o for o in kept if "=" not in o or o.startswith("-") or not (
        (key := o.lstrip("+~").partition("=")[0]) in given or key.partition(".")[0] in switched)]
    new = _compose([*kept, *extra])
    check_same_config(run_dir, _differences(old, new))
    check_unfinished(run_dir, new.runner.get("num_steps", new.frames))
    quoted = QuotedString(text=str(run_dir), quote=Quote.single).with_quotes()  # (any path)
    return [*kept, *extra, f"hydra.run.dir={quoted}", "resume=true"]


def _saved_config(saved: Path) -> tuple[Any, list[str]]:
    """The config and overrides a run saved in its ``.hydra`` folder ``saved``."""
    from omegaconf import DictConfig, ListConfig, OmegaConf
    loaded = []
    for name, kind, needed in (("config.yaml", DictConfig, ("runner", "runtime")),
                               ("overrides.yaml", ListConfig, ())):
        try:
            node = OmegaConf.load(saved / name)
            valid = isinstance(node, kind) and all(key in node for key in needed)
        except Exception as error:  # (YAML's and OmegaConf's errors, an unreadable file)
            if not is_bad_input(error):
                raise
            valid = False
        if not valid:
            raise ValueError(f"{saved / name} is damaged or empty: this run cannot be resumed "
                             "(start a new run, or restore the file)")
        loaded.append(node)
    return loaded[0], list(loaded[1])


def _compose(argv: list[str]) -> Any:
    """The config of ``argv``'s overrides (with its ``-cd`` directory and ``-cn`` config)."""
    overrides = [a for a in argv if "=" in a and not a.startswith("-")]
    configs.register_imports(overrides)
    return compose(argv, overrides)


def _differences(old: Any, new: Any) -> list[str]:
    """``key: old -> new`` for every leaf that differs, but the ``ignored`` ones and the other
    keys of a group whose ``name`` (``algorithm.preset``) differs, which says it."""
    from omegaconf import OmegaConf

    def leaves(node: Any, prefix: str = "") -> dict[str, Any]:
        if isinstance(node, dict):
            return {k: v for key, value in node.items()
                    for k, v in leaves(value, f"{prefix}{key}.").items()}
        return {prefix[:-1]: node}

    before = leaves(OmegaConf.to_container(old, resolve=True))
    after = leaves(OmegaConf.to_container(new, resolve=True))
    ignored = ("frames", "resume", "logging.", "runner.num_steps", "keep_checkpoints", "threads")
    changed = [key for key in sorted(set(before) | set(after))
               if not key.startswith(ignored) and before.get(key) != after.get(key)]
    names = (".name", "algorithm.preset")  # (the key that names a group's choice)
    switched = tuple(key.rpartition(".")[0] + "." for key in changed if key.endswith(names))
    return [f"{key}: {before.get(key)!r} -> {after.get(key)!r}" for key in changed
            if key.endswith(names) or not key.startswith(switched)]


def _remove_if_empty(output_dir: Path) -> None:
    """Remove the run directory (and an empty ``outputs/DATE``) if the run wrote nothing."""
    if any(p.name != ".hydra" and p.suffix != ".log" for p in output_dir.iterdir()):
        return  # the run wrote something: keep it
    shutil.rmtree(output_dir, ignore_errors=True)
    if output_dir.parent.parent.name in ("outputs", "multirun"):  # Hydra's outputs/DATE/TIME
        with contextlib.suppress(OSError):  # (rmdir removes empty directories only)
            output_dir.parent.rmdir()
            output_dir.parent.parent.rmdir()


def help_text(argv: list[str]) -> str:
    """``looprl run --help`` for ``argv``'s config, in the layout of Hydra's application help
    (composed once: Hydra's own composes once per group; with ``-m``, without the sweeps)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf
    if run_dir_key(argv) == "hydra.sweep.dir":  # (a sweep's values compose no one config)
        parser = OverridesParser.create()
        argv = [a for a in argv if "=" not in a or a.startswith("-")
                or not parser.parse_override(a).is_sweep_override()]
    options = configs.group_options()
    for group, files in user_groups(argv).items():  # (the -cd directory's)
        options[group] = sorted({*options.get(group, []), *files})
    groups = "".join(f"{group}: {', '.join(names)}\n" for group, names in options.items())
    config = OmegaConf.to_yaml(_compose(argv))
    return (f"{configs.HELP_HEADER}\n== Configuration groups ==\nCompose your configuration from "
            f"those groups (group=option)\n\n{groups}\n\n== Config ==\nOverride anything in the "
            f"config (foo.bar=value)\n\n{config}\n\n== runtime=ray options ==\nWith "
            f"runtime=ray, set these too (runtime.NAME=VALUE; defaults shown)\n\n"
            f"{runtime_help()}\n{configs.HELP_FOOTER}\n\n")


def _resumable(cfg: Any, output_dir: str) -> bool:
    """Whether ``looprl run --resume output_dir`` would find the run's checkpoint."""
    try:
        configs.find_checkpoint(output_dir, cfg.runner.name, cfg.runtime.name)
    except (ValueError, FileNotFoundError):
        return False
    return True


def main(argv: list[str]) -> int:
    """Run the Hydra application on ``argv`` (overrides and Hydra flags)."""
    import hydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.errors import ConfigCompositionException
    from hydra.types import RunMode
    argv = [f"++{a}" if a.startswith(("context.ranges.", "env_kwargs.", "env_kwargs=")) else a
            for a in argv]  # (new keys: env_kwargs's default is {})
    argv = [f"{a.partition('=')[0]}={os.path.expanduser(a.partition('=')[2])}" if a.startswith(
        ("hydra.run.dir=~", "hydra.sweep.dir=~")) else a for a in argv]  # (the shell and Hydra
    # leave a ~ after = as it is: a folder named ~)
    check_grammar(argv)  # (before any of them is read)
    configs.register(argv)
    argv = configs.expand_shorthands(argv)
    check_given_once(argv)
    argv = resume_arguments(argv)  # (registers a resumed run's imports)
    check_overrides(argv)
    if "--help" in argv or "-h" in argv:  # (its help text; --hydra-help stays Hydra's)
        sys.stdout.write(help_text(argv))
        raise SystemExit(0)
    check_run_dir(argv)
    resumed = [a for a in argv if a.startswith("hydra.run.dir=")] if "resume=true" in argv else []
    restore = restorer(Path(path_value(resumed[-1])), ".hydra") if resumed else None
    claimed = claim_run_dir(argv)
    if claimed is not None:
        argv = [*argv, f"{run_dir_key(argv)}={claimed}"]

    failures: list[Exception] = []
    here = os.getpid()

    @hydra.main(version_base="1.3", config_path=None, config_name="looprl")
    def app(cfg: Any) -> float:
        output_dir = HydraConfig.get().runtime.output_dir
        try:
            results = execute(cfg, output_dir)
        except KeyboardInterrupt:  # (the cli's one line says where the run is)
            raise KeyboardInterrupt(f"the run is in {output_dir}" + (
                f"; looprl run --resume {output_dir} goes on from its last checkpoint"
                if _resumable(cfg, output_dir) else "")) from None
        except Exception as error:
            if os.environ.get("LOOPRL_DEBUG") or not is_bad_input(error):
                raise
            failures.append(error)  # raised after Hydra: the command reports it in one line
            if HydraConfig.get().mode == RunMode.MULTIRUN:  # (a launcher's job runs elsewhere)
                log.error("%s", error)  # in the job's log: why this job failed
                failures[-1] = ValueError(f"job {HydraConfig.get().job.num} ({output_dir}): "
                                          f"{one_line(error)}")
                if os.getpid() != here:  # a launcher's process (joblib, submitit): Hydra hands
                    raise failures[-1] from None  # its error back, as text
            elif not cfg.get("resume"):  # (a config without looprl's keys: none)
                _remove_if_empty(Path(output_dir))
            return math.nan
        # (null in results.json: not finite; absent: nothing evaluated, as an Optuna search
        # none of whose trials completed)
        value = results["eval"].get("mean_eval_reward")
        return math.nan if value is None else value  # what a sweeper (e.g. Optuna's) optimizes

    saved, root = sys.argv, logging.getLogger()
    handlers, level = root.handlers[:], root.level
    flags, overrides = split_flags(argv)  # (Hydra's parser takes the overrides in one run:
    sys.argv = ["looprl run", *flags, *overrides]  # seed=0,1 -m hydra.sweep.dir=... was not)
    try:
        app()
    except ConfigCompositionException as error:  # (a group or option a file's defaults name)
        better = composition_error(error)
        if better is error:
            raise
        raise better from None
    finally:  # Hydra configures logging for its jobs: leave the caller's as it was
        sys.argv = saved
        for handler in set(root.handlers) - set(handlers):  # (its app.log: a file left open)
            handler.close()
        root.handlers[:], root.level = handlers, level
        if claimed is not None and claimed.is_dir() and not any(claimed.iterdir()):
            _remove_if_empty(claimed)  # (Hydra stopped before the run began)
    if failures and restore is not None:  # (a refused resume: the run's config as it was)
        restore()
    if len(failures) > 1:
        raise ValueError(f"{len(failures)} jobs failed; the first, {one_line(failures[0])}")
    if failures:
        raise failures[0]
    return 0
