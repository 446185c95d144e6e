"""The ``looprl`` command: ``train``, ``run``, ``list``, ``plot`` and ``watch``.

    looprl train AGENT ENV [--frames N] [key=value ...]
    looprl run [key=value ...] [-m] [--help]     (config-driven, Hydra; see looprl.configs)
    looprl list [AGENT]
    looprl plot [RUNS_DIR]
    looprl watch RUN_DIR [--episodes N]

Console scripts (``looprl.scripts``) parse their own arguments and run the same commands
through ``main``, ``guarded`` and ``watch_saved``.
"""

from __future__ import annotations

import argparse
import ast
import errno
import importlib
import json
import logging
import math
import os
import shlex
import signal
import sys
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from looprl.core.imports import import_extra
from looprl.core.ranges import Range
from looprl.core.suggest import check_once, check_seed, is_bad_input, memory_hint, one_line
from looprl.environments.faults import EnvironmentFailure
from looprl.presets.catalog import FAMILIES, default_threads, make_env, resolve_agent


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, whose errors are one line (no usage line before it), and whose
    options that store a value are given once (``append``'s: as often as wanted)."""

    def add_argument(self, *names: str, **kwargs: Any) -> argparse.Action:
        """argparse's; a ``store`` or ``store_true`` option given twice (``--frames 1 --frames
        2``, abbreviated or not) is an error naming both (argparse would take the last)."""
        action = kwargs.get("action", "store")
        if names[0].startswith("-") and action in ("store", "store_true"):
            if action == "store_true":
                kwargs.update(nargs=0, const=True, default=kwargs.get("default", False))
            kwargs["action"] = _Once
        return super().add_argument(*names, **kwargs)

    def error(self, message: str) -> Any:
        """Print ``PROG: error: MESSAGE (PROG --help)`` and exit with 2."""
        self.exit(2, f"{self.prog}: error: {message} ({self.prog} --help)\n")


class _Once(argparse.Action):
    """argparse's ``store`` (``nargs=0``: ``store_true``) for an option given at most once."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        shown = [f"{v:g}" if isinstance(v, float) else str(v)
                 for v in (values if isinstance(values, list) else [values])]
        text = " ".join([option_string or self.dest, *shown])
        given = vars(namespace).setdefault("given_options", {})  # (this parse's, by option)
        if self.dest in given:
            both = "" if self.nargs == 0 else f" ({given[self.dest]} and {text})"
            parser.error(f"{max(self.option_strings, key=len)} is given twice{both}: give it once")
        given[self.dest] = text
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)


def number(minimum: float, kind: type = int, above: bool = False) -> Callable[[str], Any]:
    """An argparse ``type``: ``kind`` values >= ``minimum`` (``above``: > ``minimum``)."""
    bound = f"{'>' if above else '>='} {minimum:g}"
    valid = Range(minimum, open_low=above, whole=kind is int,
                  text=f"a whole number {bound}" if kind is int else f"a finite number {bound}")

    def parse(text: str) -> Any:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not valid.holds(value):
            raise argparse.ArgumentTypeError(f"must be {valid.text}, got {text!r}")
        return kind(value)

    return parse


#: ``key=true`` is ``True``, as ``key=True`` is: the spellings of ``looprl run``'s YAML values
YAML_LITERALS = {"true": True, "false": False, "null": None, "none": None}


def parse_hyperparameters(pairs: list[str]) -> dict[str, Any]:
    """``['lr=1e-3', 'hidden=128', 'huber=true']`` -> ``{'lr': 0.001, 'hidden': 128, 'huber':
    True}`` (Python literals, ``inf`` and ``nan``, or YAML's ``true``/``false``/``null``); a
    key given twice is a one-line ``ValueError``."""
    result = {}
    check_once([pair.partition("=")[0] for pair in pairs], pairs)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"Hyperparameters are key=value pairs, got {pair!r}")
        if value in YAML_LITERALS:  # (as looprl run, Hydra and YAML spell them)
            result[key] = YAML_LITERALS[value]
            continue
        try:
            result[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            try:  # inf, nan: numbers to YAML and Hydra too, so the ranges name what is wrong
                result[key] = float(value)
            except ValueError:
                result[key] = value
    return result


def cmd_train(args: argparse.Namespace) -> int:
    builder = resolve_agent(args.agent).hyperparameters(**parse_hyperparameters(args.hparams))
    env = make_env(args.agent, args.env, env_wrappers=args.wrapper or (),
                   render_mode="human" if args.render else None)
    return train_built(builder, env, args)


def train_built(builder: Any, env: Any, args: argparse.Namespace) -> int:
    """``looprl train``'s run of ``builder`` on ``env`` as ``args`` say (``agent``: the
    family's thread default)."""
    import torch

    from looprl.experiments import TrainingInterrupted, run_experiment
    from looprl.experiments.experiment import seed_everything
    if args.device:
        builder = builder.device(args.device)
    if args.seed is not None:
        seed_everything(check_seed("--seed", args.seed, optional=False))
    preset = builder.env(env).build()
    threads = default_threads(args.agent) if args.threads is None else args.threads
    if threads:
        torch.set_num_threads(threads)
    try:
        (result,) = run_experiment(preset, env, args.frames, logdir=args.logdir,
                                   quiet=args.quiet, test_episodes=args.test_episodes,
                                   seed=args.seed, render=args.render, save_freq=args.save_freq)
    except TrainingInterrupted as stop:  # Ctrl-C: keep what was trained
        print(f"interrupted at frame {stop.frame:,}; the preset as trained so far is saved")
        _saved(Path(stop.log_dir), args.logdir, plot=False)
        return 130
    print(result.summary())
    _saved(Path(result.log_dir), args.logdir, plot=result.episodes > 0)
    return 0


def _saved(run_dir: Path, logdir: str, plot: bool) -> None:
    """Say where the logs, plot and preset (``run_experiment`` saved it) are."""
    from looprl.experiments import plot_returns_100
    print(f"logs:   {run_dir}  (tensorboard --logdir {shlex.quote(logdir)})")
    if plot:
        print(f"plot:   {plot_returns_100(str(run_dir), filename=str(run_dir / 'returns100.png'))}")
    print(f"preset: {run_dir / 'preset.pt'}  (looprl watch {shlex.quote(str(run_dir))})")


def cmd_list(args: argparse.Namespace) -> int:
    """Every preset by family, or one preset's hyperparameters with their defaults."""
    if args.agent:
        builder = resolve_agent(args.agent)
        print(f"{args.agent} hyperparameters (defaults; set them as key=value):")
        for key, value in builder.hyperparameter_defaults.items():
            print(f"  {key} = {value!r}")
        return 0
    for family in FAMILIES:
        module = importlib.import_module(f"looprl.presets.{family}")
        summary = (module.__doc__ or "").strip().splitlines()[0].replace("``", "")
        print(f"{family}: {', '.join(sorted(module.__all__))}  ({summary})")
    print("\nlooprl train FAMILY.NAME ENV (a bare NAME: the first family above that has it); "
          "looprl list NAME shows its hyperparameters")
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from looprl.experiments import plot_returns_100
    print(plot_returns_100(args.runs_dir, timesteps=args.timesteps))
    return 0


def trained_env(preset_file: Path, preset: Any) -> str:
    """The environment a saved preset was trained on (its ``run.json``'s, else its own)."""
    run_json = preset_file.parent / "run.json"
    if run_json.exists():
        try:
            return str(json.loads(run_json.read_text())["env"])
        except (ValueError, KeyError, TypeError):
            raise ValueError(f"{run_json} is damaged (not JSON naming the run's env); give the "
                             "environment with --env ENV_ID") from None
    if preset.env_name:
        return preset.env_name
    raise FileNotFoundError(f"{preset_file} does not say which environment it was trained on, "
                            "and there is no run.json beside it (looprl train writes one in each "
                            "run directory): give the environment with --env ENV_ID")


def cmd_watch(args: argparse.Namespace) -> int:
    """``looprl watch``: ``watch_saved``."""
    watch_saved(args)
    return 0


def watch_saved(args: argparse.Namespace) -> Path | None:
    """Play a saved preset, or a distributed run's final policy (``policy.pt``), as ``looprl
    watch`` parsed ``args``; the GIF written (``None``: played in a window)."""
    run_dir = Path(args.run_dir)
    if run_dir.is_file() and (run_dir.parent / "algorithm.pt").exists():  # (its policy.pt)
        run_dir = run_dir.parent
    if run_dir.is_dir() and not (run_dir / "preset.pt").exists():  # (a distributed run below?)
        found = _found(run_dir, "algorithm.pt")
        run_dir = run_dir if found is None else found.parent
    if run_dir.is_dir() and not (run_dir / "preset.pt").exists() and (
            run_dir / "algorithm.pt").exists():
        from looprl.distributed.watch import BEST, watch_run
        returns, path = watch_run(run_dir, args.episodes or 1, args.fps, args.gif,
                                  args.max_steps, prefix=BEST if args.best else "")
    else:
        from looprl.environments.wrappers import load_normalization, preset_normalization
        from looprl.experiments import watch
        from looprl.presets import load_preset
        name = "best_preset.pt" if args.best else "preset.pt"
        preset_file = run_dir / name if run_dir.is_dir() else run_dir
        if run_dir.is_dir() and not preset_file.exists():  # (looprl run keeps it above its
            above = run_dir.parent.parent / name  # logs, in ALGORITHM/ENV/; else a run below)
            preset_file = above if above.exists() else _found(run_dir, name) or preset_file
        if not preset_file.exists() and args.best and run_dir.is_dir():
            raise FileNotFoundError(f"No {name} in {run_dir}: a run keeps its best agent when "
                                    "it evaluates during training (looprl run "
                                    "runner.eval_every=N; OnlineRunner(eval_every=N))")
        if not preset_file.exists():
            checkpoint = run_dir.is_dir() and _found(run_dir, "checkpoint.pt")
            raise FileNotFoundError(f"No saved preset at {preset_file} (train one with looprl "
                                    "train)" + (f"; {checkpoint} is a checkpoint to resume "
                                                "(resume_from), not a preset: save one with "
                                                "runner.preset.save(PATH)" if checkpoint else ""))
        preset = load_preset(str(preset_file), device=args.device)
        env_id = args.env or trained_env(preset_file, preset)
        with watch.rendering_kept():  # (watch_env's offscreen drivers end with it)
            try:
                env, window = watch.watch_env(preset, env_id, window=args.gif is None)
            except ValueError as error:  # (an id the run's own code registered)
                if args.env or not str(error).startswith("Unknown environment"):
                    raise
                raise ValueError(f"{error} If your code registers {env_id}, give the module that "
                                 f"does: --env MODULE:{env_id}") from None
            load_normalization(env, preset_normalization(preset_file, env), env_id)
            gif = None if window else args.gif or str(preset_file.parent / "watch.gif")
            episodes = args.episodes or (sys.maxsize if window else 1)  # (None: ALL's, forever)
            returns, path = watch.watch(preset.test_agent(), env, args.fps, episodes, gif=gif,
                                        max_steps=args.max_steps)
    print_episodes(returns, path)
    return path


def _found(run_dir: Path, name: str) -> Path | None:
    """``run_dir/name``, else the ``name`` file of the one run in ``run_dir/NAME/`` or
    ``run_dir/ALGORITHM/ENV/`` (``None``: none; a one-line ``ValueError``: several)."""
    if (run_dir / name).exists():
        return run_dir / name
    below = sorted(run_dir.glob(f"*/{name}")) + sorted(run_dir.glob(f"*/*/{name}"))
    if len(below) > 1:
        runs = ", ".join(str(path.parent) for path in below[:3]) + (", ..." * (len(below) > 3))
        raise ValueError(f"{run_dir} holds {len(below)} runs ({runs}): give one of them")
    return below[0] if below else None


def print_episodes(returns: list, path: Path | None) -> None:
    """One line per watched episode, and where the animation went."""
    for i, episode_return in enumerate(returns):
        if isinstance(episode_return, dict):  # a multi-agent episode: each agent's return
            episode_return = ", ".join(f"{k} {v:.1f}" for k, v in episode_return.items())
            print(f"episode {i + 1}: returns {episode_return}")
        else:
            print(f"episode {i + 1}: return {episode_return:.1f}")
    if path is not None:
        print(f"animation: {path}")


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="looprl", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    train = sub.add_parser("train", help="train a preset on an environment")
    train.add_argument("agent", help="preset name, e.g. ppo, dqn, classic_control.ppo")
    train.add_argument("env", help="Gymnasium environment id, e.g. CartPole-v1")
    train.add_argument("hparams", nargs="*", metavar="key=value", help="hyperparameters")
    train.add_argument("--wrapper", action="append", metavar="PATH", help="a Gymnasium "
                       "wrapper class to wrap the environment in, by import path (e.g. "
                       "gymnasium.wrappers.FlattenObservation); repeat it for several, in order")
    train.add_argument("--frames", type=float, default=100_000, help="training steps "
                       "(run_experiment checks them)")
    train.add_argument("--logdir", default="runs")
    train.add_argument("--device", default=None)
    train.add_argument("--seed", type=int, default=None)
    train.add_argument("--test-episodes", type=number(0), default=100)
    train.add_argument("--threads", type=number(0), default=None, help="torch CPU threads (0: "
                       "torch's default; default: 1, or torch's default for Atari)")
    train.add_argument("--quiet", action="store_true")
    train.set_defaults(func=cmd_train, render=False, save_freq=math.inf)  # (ALL's scripts')
    # ``run`` is dispatched to Hydra before this parser (main); listed here for --help
    sub.add_parser("run", add_help=False,
                   help="train from a config: groups, overrides, sweeps, Ray (looprl run --help)")
    listing = sub.add_parser("list", help="list the presets, or one preset's hyperparameters")
    listing.add_argument("agent", nargs="?", help="a preset, e.g. ppo or atari.dqn")
    listing.set_defaults(func=cmd_list)
    plot = sub.add_parser("plot", help="plot returns100.csv of every run under RUNS_DIR")
    plot.add_argument("runs_dir", nargs="?", default="runs")
    plot.add_argument("--timesteps", type=number(1), default=-1, help="plot frames up to this "
                      "(default: all)")
    plot.set_defaults(func=cmd_plot)
    watch = sub.add_parser("watch", help="play a saved preset (window, or a GIF without display)")
    watch.add_argument("run_dir", help="a run directory holding preset.pt (or a distributed "
                       "run's policy.pt and algorithm.pt), or the .pt file")
    watch.add_argument("--episodes", type=number(1), default=1)
    watch.add_argument("--best", action="store_true",
                       help="play the best agent so far (best_preset.pt, or a distributed "
                       "run's best_policy.pt: runs with eval_every)")
    watch.add_argument("--env", default=None, help="environment id (default: the run's)")
    watch.add_argument("--fps", type=number(0, float, above=True), default=None,
                       help="frames per second (default: the environment's real time)")
    watch.add_argument("--gif", default=None, help="write the episodes to this GIF")
    watch.add_argument("--max-steps", type=number(1), default=10_000,
                       help="cut longer episodes")
    watch.set_defaults(func=cmd_watch, device=None)
    return parser


#: seconds an interrupted ``looprl`` process may take to exit (a library's non-daemon thread or
#: exit handler that hangs, as Ray Tune's has once after a PBT run) before it exits with 130
EXIT_GRACE = 30.0


def main(argv: list[str] | None = None, command: Callable[[list[str]], int] | None = None,
         prog: str = "looprl") -> int:
    """Entry point of the ``looprl`` command (or of a script's ``command``, named ``prog``);
    errors print one line and exit with 2, Ctrl-C one line (``PROG: interrupted``) and 130."""
    if argv is None and hasattr(sys.stdout, "reconfigure"):  # lines reach the log if killed
        sys.stdout.reconfigure(line_buffering=True)
    if os.getcwd() not in sys.path:  # import paths (--env mymodule:MyEnv) find modules here,
        sys.path.append(os.getcwd())  # as ``python -m`` would (last: no shadowing)
    if argv is None:  # Ctrl-C, and a scheduler's SIGTERM, stop the run (its logs kept)
        for each in (signal.SIGINT, signal.SIGTERM):
            signal.signal(each, _stopping(os.getpid()))
    try:
        logging.basicConfig(level=logging.WARNING,
                            format="%(levelname)s %(name)s: %(message)s")
        return (command or _main)(sys.argv[1:] if argv is None else argv)
    except KeyboardInterrupt as stop:
        where = (f" at frame {stop.frame:,}; its logs are in {stop.log_dir}"
                 if getattr(stop, "log_dir", None) else f"; {stop}" if str(stop) else "")
        print(f"{prog}: interrupted{where}", file=sys.stderr)
        if argv is None:  # (a process of its own: it ends even if a library's thread hangs)
            exit_timer = threading.Timer(EXIT_GRACE, os._exit, (130,))
            exit_timer.daemon = True
            exit_timer.start()
        return 130


def _stopping(pid: int) -> Callable[..., None]:
    """A SIGINT and SIGTERM handler: in process ``pid``, ``KeyboardInterrupt`` the first time and
    nothing after (not ``SIG_IGN``: children inherit it); in a forked process, the default."""
    def handler(signum: int, frame: Any) -> None:
        if os.getpid() == pid:
            for each in (signal.SIGINT, signal.SIGTERM):
                signal.signal(each, lambda *_: None)
            raise KeyboardInterrupt
        if signum == signal.SIGINT:
            signal.default_int_handler(signum, frame)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    return handler


def _main(argv: list[str]) -> int:
    if argv[:1] == ["run"]:  # Hydra parses the rest (key=value overrides, -m, --help)
        return guarded(lambda: cmd_run(argv[1:]))
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    pairs = [x for x in extra if "=" in x and not x.startswith("-")]
    if len(pairs) != len(extra) or (pairs and args.command != "train"):
        parser.error(f"unrecognized arguments: {' '.join(x for x in extra if x not in pairs)}")
    if pairs:
        args.hparams = [*args.hparams, *pairs]
    return guarded(lambda: args.func(args))


def cmd_run(argv: list[str]) -> int:
    """``looprl run``: a config-driven run (``looprl.configs.app``)."""
    import_extra("hydra", "looprl run needs Hydra", "config")
    from looprl.configs.app import main as run_main
    full_error = os.environ.get("HYDRA_FULL_ERROR")
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra raises errors (``guarded`` prints them)
    try:
        with warnings.catch_warnings():  # (a -cd directory's algorithm/ppo.yaml is checked
            warnings.filterwarnings(  # against looprl's, as intended: Hydra warns at every run)
                "ignore", r"\s*'[^']*' is validated against ConfigStore schema", UserWarning)
            return run_main(argv)
    except SystemExit as stop:  # Hydra's --help, or a bad config reported in one line
        return stop.code if isinstance(stop.code, int) else 1
    finally:
        if full_error is None:
            del os.environ["HYDRA_FULL_ERROR"]
        else:
            os.environ["HYDRA_FULL_ERROR"] = full_error


def guarded(command: Callable[[], int], prog: str = "looprl") -> int:
    """Run ``command``; errors print one line, ``PROG: error: ...`` (``prog``: the command's
    name, as its argparse errors begin), and return 2 (``LOOPRL_DEBUG=1`` re-raises)."""
    try:
        return command()
    except Exception as error:
        if os.environ.get("LOOPRL_DEBUG") or not (
                is_bad_input(error) or isinstance(error, EnvironmentFailure)):
            raise
        message, cause = one_line(error) + memory_hint(error), error.__cause__
        if cause is not None and type(error).__module__.startswith("hydra"):  # (its reason)
            message = f"{message}: {str(cause).strip().splitlines()[0]}"
        if getattr(error, "errno", None) == errno.ENOSPC and "disk is full" not in message:
            message += (" (the disk is full: free some space, or write the run elsewhere: "
                        "--logdir, logdir=, hydra.run.dir=; what was written so far is kept)")
        print(f"{prog}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
