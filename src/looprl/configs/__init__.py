"""Config-driven runs: the Hydra config groups of ``looprl run`` (docs/runners.md).

Keys of the ``looprl`` config:

- ``algorithm`` (group): one option per preset (``dqn``, ``atari/ppo``), fields ``preset`` and
  its hyperparameters; ``exploration=``, ``buffer=`` and ``update=`` are shorthands for
  ``algorithm.exploration=...``.
- ``meta`` (group, several at once): ``meta=[rnd,plr]``; a user's by import path
  (``meta=[my_pkg.module:MyComponent]``) or ``+meta.mine._target_=my_pkg.module.MyComponent``.
- ``runner`` (group): ``online`` (default), ``es``, ``optuna``, ``pbt``; ``runtime`` (group):
  ``local`` (default) or ``ray`` (``looprl.configs.runtimes``).
- ``env``, ``env_kwargs`` and ``env_wrappers``, as in Mighty; ``context``: instance sets of a
  contextual ``env`` (``context.train=32 context.test=64 context.ranges.length=[0.05,2.0]``).
- ``frames``, ``seed``, ``test_episodes``, ``device`` (``null``: CUDA if available),
  ``threads`` (``null``: as ``looprl train --threads``), ``checkpoint_every``,
  ``keep_checkpoints``, ``checkpoint_replay``, ``resume``; ``logging``: ``quiet``,
  ``verbose``, ``wandb`` (``wandb.init`` arguments or ``null``).

A user's config directory adds groups and configs (``looprl.configs.sources``).
"""

from __future__ import annotations

import inspect
import logging
import re
import sys
from dataclasses import dataclass
from typing import Any

from looprl.configs.overrides import override_pairs
from looprl.configs.runtimes import distributed_options, ray_trials, runtimes

__all__ = ["BuiltConfig", "algorithm_options", "build", "make_components", "make_envs", "register",
           "register_imports", "runtimes"]

PRIMITIVES = (bool, int, float, str, type(None))
HELP_HEADER = """looprl run: train a preset on an environment, described by a config.

    looprl run algorithm=dqn env=CartPole-v1 meta=[rnd] seed=0 algorithm.lr=1e-3
    looprl run -m seed=0,1,2 algorithm.lr=1e-3,3e-4     (a multirun over a grid)
"""
HELP_FOOTER = """Other families: algorithm=atari/ppo env=ALE/Pong-v5, algorithm=continuous/sac.
On Ray: runtime=ray runtime.actors=4 (one distributed run); runner=es|optuna|pbt runtime=ray
runtime.trials_in_parallel=4 (the trials at once, each a Ray process; default: Ray's CPUs).
Parallel jobs: -m ... hydra/launcher=joblib; SLURM: hydra/launcher=submitit_slurm
(submitit_local runs the same path without a cluster). Show the composed config without
running: --cfg job. Runs go to outputs/DATE/TIME (multirun/DATE/TIME/N with -m).
Your experiment files: -cd DIR +experiment=NAME (DIR/experiment/NAME.yaml, starting with
'# @package _global_'); -cn NAME composes DIR/NAME.yaml instead of the looprl config.
"""


def algorithm_options() -> dict[str, str]:
    """Option name of the ``algorithm`` group -> preset (``family.name``)."""
    from looprl.presets.catalog import FAMILIES, available_agents
    options = {}
    for key in available_agents():
        family, _, name = key.rpartition(".")
        if family in FAMILIES:
            options[name if family == "classic_control" else f"{family}/{name}"] = key
    return options


def _config_value(value: Any) -> Any:
    """``value`` as OmegaConf can hold it (tuples become lists), or ``None`` if it cannot."""
    if isinstance(value, PRIMITIVES):
        return value
    if isinstance(value, list | tuple) and all(isinstance(v, PRIMITIVES) for v in value):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return None


def _component_node(cls: type) -> dict[str, Any]:
    """A meta component's arguments with their defaults (``???``: required)."""
    from looprl.meta.registry import accepted_parameters
    node: dict[str, Any] = {}
    for name, parameter in accepted_parameters(cls).items():
        default = parameter.default
        if default is inspect.Parameter.empty:
            node[name] = "???"
        elif _config_value(default) is not None or default is None:
            node[name] = _config_value(default)
    return node


def runners() -> dict[str, type]:
    """The ``runner`` group's options: name -> runner class (``looprl.runners``)."""
    from looprl.runners import ESRunner, OnlineRunner, OptunaRunner, PBTRunner
    return {cls.name: cls for cls in (OnlineRunner, ESRunner, OptunaRunner, PBTRunner)}


#: the ``looprl`` config's ``frames``
DEFAULT_FRAMES = 100_000
#: why ``frames`` is refused with ``runner=es``
ES_FRAMES = ("frames does not apply to runner=es: each individual trains "
             "runner.num_steps_per_iteration steps (default 10000) in each of "
             "runner.iterations generations; set those instead")

#: Runner arguments a run fills from the top-level config, not from the ``runner`` node.
RUN_ARGUMENTS = ("agent", "env", "seed", "logdir", "meta", "device", "quiet", "eval_episodes",
                 "checkpoint_every", "keep_checkpoints", "checkpoint_replay", "resume_from",
                 "verbose", "wandb", "test_env", "trials", "run_info", "max_restarts",
                 "env_timeout")


#: The logger of a run's summary line: on stdout, as ``looprl train`` prints it, and in app.log.
SUMMARY_LOGGER = "looprl.summary"


def log_summary(run: str, evaluation: dict[str, Any]) -> None:
    """Log what ``run`` did (and the final evaluation's mean return) on ``SUMMARY_LOGGER``; on
    stdout where nothing handles it (``hydra/job_logging=disabled``, no logging set up)."""
    n = len(evaluation.get("returns", []))
    line = run + (f", test return {evaluation['mean_eval_reward']:.1f} over {n} "
                  f"episode{'s' * (n > 1)}" if n else "")
    if logging.getLogger(SUMMARY_LOGGER).hasHandlers():
        logging.getLogger(SUMMARY_LOGGER).info("%s", line)
    else:
        sys.stdout.write(line + "\n")


#: ``hydra/job_logging=looprl`` (the default): Hydra's, but the log lines go to stderr, as
#: ``looprl train``'s, and the summary to stdout.
JOB_LOGGING = {
    "version": 1, "disable_existing_loggers": False,
    "formatters": {"simple": {"format": "[%(asctime)s][%(name)s][%(levelname)s] - %(message)s"},
                   "plain": {"format": "%(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "simple",
                             "stream": "ext://sys.stderr"},
                 "summary": {"class": "logging.StreamHandler", "formatter": "plain",
                             "stream": "ext://sys.stdout"},
                 "file": {"class": "logging.FileHandler", "formatter": "simple",
                          "filename": "${hydra.runtime.output_dir}/${hydra.job.name}.log"}},
    "root": {"level": "INFO", "handlers": ["console", "file"]},
    "loggers": {SUMMARY_LOGGER: {"level": "INFO", "handlers": ["summary", "file"],
                                 "propagate": False}},
}


def register(overrides: list[str] | tuple[str, ...] = ()) -> None:
    """Store the ``looprl`` config and its groups in Hydra's ``ConfigStore`` (and the import
    paths ``overrides`` attach, ``register_imports``)."""
    from hydra.core.config_store import ConfigStore

    from looprl.meta.registry import COMPONENTS
    from looprl.presets.catalog import CONTEXT_DEFAULTS, resolve_agent
    store = ConfigStore.instance()
    for option, preset in algorithm_options().items():
        defaults = resolve_agent(preset).hyperparameter_defaults
        node = {"preset": preset, **{k: _config_value(v) for k, v in defaults.items()}}
        group, _, name = f"algorithm/{option}".rpartition("/")
        store.store(group=group, name=name, node=node, package="algorithm")
    for name, cls in COMPONENTS.items():
        store.store(group="meta", name=name, node=_component_node(cls), package=f"meta.{name}")
    register_imports(overrides)
    for name, cls in runners().items():
        node = {k: v for k, v in _component_node(cls).items() if k not in RUN_ARGUMENTS}
        if "num_steps" in node:  # the run's budget unless the runner node says otherwise
            node["num_steps"] = "${frames}"
        store.store(group="runner", name=name, node={"name": name, **node}, package="runner")
    for name, node in runtimes().items():
        store.store(group="runtime", name=name, node=node, package="runtime")
    store.store(group="hydra/job_logging", name="looprl", node=JOB_LOGGING,
                package="hydra.job_logging")
    store.store(name="looprl", node={
        "defaults": ["_self_", {"algorithm": "ppo"}, {"meta": []}, {"runner": "online"},
                     {"runtime": "local"}, {"override hydra/job_logging": "looprl"}],
        "env": "CartPole-v1", "env_kwargs": {}, "env_wrappers": [],
        "context": {"train": None, "test": None, **CONTEXT_DEFAULTS},
        "frames": DEFAULT_FRAMES, "seed": 0, "test_episodes": 10, "device": None, "threads": None,
        "checkpoint_every": None, "keep_checkpoints": None, "checkpoint_replay": True,
        "resume": False,
        "logging": {"quiet": False, "verbose": True, "wandb": None},
        "hydra": {"help": {"app_name": "looprl run", "header": HELP_HEADER,
                           "footer": HELP_FOOTER}},
    })


def group_options() -> dict[str, list[str]]:
    """Every ``ConfigStore`` group (``algorithm/atari``, ``meta``, ...) -> its options, sorted."""
    from hydra.core.config_store import ConfigStore
    store = ConfigStore.instance()
    groups: dict[str, list[str]] = {}
    pending = [name for name in store.list("") if name != "hydra" and not name.endswith(".yaml")]
    while pending:
        group = pending.pop()
        entries = store.list(group)
        options = [e.removesuffix(".yaml") for e in entries if e.endswith(".yaml")]
        if options:
            groups[group] = sorted(options)
        pending += [f"{group}/{e}" for e in entries if not e.endswith(".yaml")]
    return dict(sorted(groups.items()))


def _choices(value: str) -> list[str]:
    """The options a group override (``meta=[rnd,plr]``, ``runner=es``; a sweep's
    ``runner=es,optuna``, ``meta=[rnd],[plr,rnd]``) chooses, in all."""
    return [v.strip() for v in re.split(r"[\[\],]", value) if v.strip()]


def register_imports(overrides: list[str] | tuple[str, ...]) -> None:
    """Store a ``meta`` option (under ``meta.<class name>``) for each import path
    ``overrides`` attach, instead of earlier ones."""
    from hydra.core.config_store import ConfigStore

    from looprl.meta.registry import COMPONENTS, component_class
    group = ConfigStore.instance().repo.setdefault("meta", {})
    for name in [n for n in group if n.removesuffix(".yaml") not in COMPONENTS]:
        del group[name]
    for path in [p for key, value in override_pairs(overrides) if key == "meta"
                 for p in _choices(value)]:
        if path in COMPONENTS or not (":" in path or "." in path):
            continue  # a built-in name, or an unknown one (check_overrides says so)
        cls = component_class(path)
        ConfigStore.instance().store(group="meta", name=path, package=f"meta.{cls.__name__}",
                                     node={"_target_": path, **_component_node(cls)})


def build_distributed(cfg: Any, output_dir: str) -> Any:
    """The ``DistributedRun`` a ``runner=online runtime=ray`` config describes."""
    from looprl.distributed import DistributedRun, RuntimeConfig
    from looprl.experiments.experiment import seed_everything
    _check_run_values(cfg)
    runner = _plain(cfg.runner)  # (runner=online: its budget, num_steps, is ${frames})
    frames = runner.get("num_steps", cfg.frames)
    if runner.get("eval_every") is not None and not cfg.test_episodes:  # (as a local run)
        raise ValueError("runner=online scores each policy that eval_every compares (best_policy) "
                         "by its evaluation returns: it needs test_episodes >= 1, got 0")
    options = distributed_options(_plain(cfg.runtime), cfg.device)
    if options.get("trainer_threads") is None:  # (the trainer computes what a local run does,
        options["trainer_threads"] = max(  # on as many threads: Atari's CNNs on torch's
            learner_threads(cfg), options.get("torch_threads") or 1)  # default, as locally)
    builder, env, held_out = _builder(cfg)  # (the app evaluates on the held-out set)
    seed_everything(cfg.seed)  # the initial weights every worker starts from
    preset = builder.env(env).device("cpu").build()
    components = make_components(cfg, env)
    close_envs(env, held_out)
    return DistributedRun(preset, RuntimeConfig.from_dict(options), frames=frames,
                          logdir=output_dir, seed=cfg.seed, name=preset.name,
                          quiet=cfg.logging.quiet, resume_from=output_dir if cfg.resume else None,
                          meta=components, verbose=cfg.logging.verbose,
                          wandb=_plain(cfg.logging.wandb), checkpoint_every=cfg.checkpoint_every,
                          keep_checkpoints=cfg.get("keep_checkpoints"),
                          checkpoint_replay=cfg.checkpoint_replay)


@dataclass
class BuiltConfig:
    """What a config describes, built: preset builder, environment, components and runner."""

    builder: Any
    env: Any
    meta: list[Any]
    runner: Any


def make_envs(preset: str, cfg: Any) -> tuple[Any, Any]:
    """The training and held-out (``None``: no ``context.test``) environments of ``cfg``."""
    from looprl.presets.catalog import context_sets, make_contextual, make_env
    context = _plain(cfg.get("context")) or {}
    env = make_env(preset, _plain(cfg.env), context, env_kwargs=_plain(cfg.get("env_kwargs")),
                   env_wrappers=_plain(cfg.get("env_wrappers")) or ())
    _, test = context_sets(cfg.env, context) if context.get("test") is not None else (0, None)
    return env, None if test is None else make_contextual(preset, cfg.env, test, context)


def close_envs(*envs: Any) -> None:
    """Close each of ``envs`` that is not ``None``."""
    for env in envs:
        if env is not None:
            env.close()


def make_components(cfg: Any, env: Any = None) -> list[Any]:
    """The meta components of ``cfg.meta``; one line, in ``looprl run``'s terms, for a
    curriculum (``meta=[plr]``, ``[space]``) over an ``env`` that is not contextual."""
    from looprl.environments.contextual import contextual_envs
    from looprl.meta.registry import make_component
    meta = {name: kwargs or {} for name, kwargs in (_plain(cfg.get("meta")) or {}).items()}
    for name, kwargs in meta.items():
        if not isinstance(kwargs, dict):  # (a meta/NAME.yaml of the user's, no header)
            raise ValueError(f"meta.{name} is {kwargs!r:.40}, where meta holds one mapping "
                             "of arguments per component: a meta/NAME.yaml file of your "
                             "config directory needs '# @package meta.NAME' as its first "
                             "line (without it Hydra merges its keys into meta itself)")
        check_required(kwargs, f"meta {name}", f"meta.{name}")
    components = [make_component(name, **kwargs) for name, kwargs in meta.items()]
    curricula = [c for c in components if getattr(c, "needs_contexts", False)]
    try:
        if curricula and env is not None:
            contextual_envs(env)
    except (ValueError, TypeError):
        name = type(curricula[0]).__name__.lower()
        raise ValueError(
            f"meta {name} picks the instances of a contextual environment, and env={cfg.env} "
            "has none: set context.train=N with a range per context field "
            "(context.ranges.NAME=[low,high], e.g. context.ranges.length=[0.25,1.0]), or "
            "context.train=FILE (a YAML/JSON list of contexts)") from None
    return components


def check_required(options: dict[str, Any], owner: str, node: str) -> None:
    """One line naming the required arguments of ``owner`` left unset (``???``: see
    ``_component_node``) in its config ``node``."""
    missing = [key for key, value in options.items() if value == "???"]
    if missing:
        raise ValueError(f"{owner} needs {', '.join(missing)}: set " + " ".join(
            f"{node}.{key}={EXAMPLES.get(key, '...')}" for key in missing))


#: a value of each required runner argument, as ``check_required`` shows it
EXAMPLES = {"search_space": "'{lr: {low: 1e-5, high: 1e-2, log: true}}'",
            "mutations": "'{hp/lr: [1e-5, 1e-2, log]}'"}


def _builder(cfg: Any) -> tuple[Any, Any, Any]:
    from looprl.presets.catalog import resolve_agent
    algorithm = dict(_plain(cfg.algorithm))
    preset_name = algorithm.pop("preset")
    return (resolve_agent(preset_name).hyperparameters(**algorithm),
            *make_envs(preset_name, cfg))


def _plain(node: Any) -> Any:
    from omegaconf import OmegaConf
    return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node


def _check_run_values(cfg: Any) -> None:
    """One line for an unknown top-level key, a count of ``RUN_MINIMUMS`` (or ``runner=online``'s)
    out of range (whole floats, ``frames=1e6``, become integers), or a ``resume`` that is not
    true or false; a note for an ``eval_every`` past the budget."""
    from looprl.configs.sources import check_config_keys
    from looprl.core.suggest import check_count, check_flag
    check_config_keys(cfg)
    check_flag("resume", cfg.resume)  # (resume=maybe looked for a checkpoint)
    for key in RUN_MINIMUMS:
        cfg[key] = check_run_value(key, cfg[key])
    if cfg.runner.name == "online":  # (its arguments, by their keys on both runtimes)
        frames, every = cfg.runner.get("num_steps", cfg.frames), cfg.runner.get("eval_every")
        check_count(**{"runner.num_steps": frames})
        check_count(optional=True, **{"runner.eval_every": every})
        if every is not None and every > frames:
            logging.getLogger(__name__).warning(
                "runner.eval_every=%s is more than the run's %s frames: it evaluates once, at "
                "its end", every, frames)


#: the run's counts -> their least value (``threads`` may be null: the preset's default)
RUN_MINIMUMS = {"frames": 1, "seed": 0, "test_episodes": 0, "threads": 0}


def learner_threads(cfg: Any) -> int:
    """The torch threads that learn: ``threads``, else the preset's default (1, or for the
    Atari presets 0: torch's default, this process's count)."""
    import torch

    from looprl.presets.catalog import default_threads
    threads = check_run_value("threads", cfg.get("threads"))
    threads = default_threads(str(cfg.algorithm.preset)) if threads is None else threads
    return threads or torch.get_num_threads()


def check_run_value(key: str, value: Any) -> int | None:
    """``value`` of ``key`` (one of ``RUN_MINIMUMS``) as an int (``frames=1e6``, as --frames
    takes it), or a one-line ``TypeError`` unless it is a whole number in range."""
    if value is None and key == "threads":
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < RUN_MINIMUMS[key]:
        raise TypeError(f"{key} must be an integer >= {RUN_MINIMUMS[key]}, got {value!r}")
    if key == "seed":  # (NumPy's global generator takes it)
        from looprl.core.suggest import check_seed
        check_seed("seed", value, optional=False)
    return value


def build(cfg: Any, output_dir: str | None = None) -> BuiltConfig:
    """The preset builder, environment, meta components and runner (writing under
    ``output_dir``) ``cfg`` describes; one-line errors for bad names and values."""
    from looprl.experiments.experiment import seed_everything
    _check_run_values(cfg)
    builder, env, test_env = _builder(cfg)
    builder.env(env).build()  # wrong values fail now, in one line
    seed_everything(cfg.seed)
    components = make_components(cfg, env)
    options = dict(_plain(cfg.runner))
    name = options.pop("name")
    if name == "es" and cfg.frames != DEFAULT_FRAMES:  # (set by an experiment file: else checks')
        raise ValueError(ES_FRAMES)
    if cfg.resume:
        options["resume_from"] = find_checkpoint(output_dir, name)
    if name == "pbt" or (cfg.runtime.name == "ray" and name != "online"):  # trials on Ray
        options["trials"] = ray_trials(_plain(cfg.runtime), name, cfg.device, options)
    check_required(options, f"runner={name}", "runner")
    on_ray = name != "pbt" and "trials" in options  # (each trial sets its own device)
    runner = runners()[name](
        builder, env, seed=cfg.seed, logdir=output_dir, meta=components,
        device=None if on_ray else cfg.device,
        quiet=cfg.logging.quiet, eval_episodes=cfg.test_episodes,
        checkpoint_every=cfg.checkpoint_every, checkpoint_replay=cfg.checkpoint_replay,
        keep_checkpoints=cfg.get("keep_checkpoints"), verbose=cfg.logging.verbose,
        test_env=test_env, wandb=_plain(cfg.logging.wandb),
        max_restarts=cfg.runtime.get("max_restarts", 0),
        env_timeout=cfg.runtime.get("env_timeout"), **options)
    return BuiltConfig(builder, env, components, runner)


def find_checkpoint(run_dir: str | None, runner: str, runtime: str = "local") -> str:
    """The one checkpoint a resume takes under ``run_dir`` (``checkpoint.resumable``'s;
    ``runtime="ray"``: ``controller_checkpoint.pt``); one-line errors otherwise."""
    from looprl.core.files import find_one
    from looprl.distributed.run_state import find_controller_checkpoint
    from looprl.experiments.checkpoint import CHECKPOINT, resumable
    if runner == "optuna":
        raise ValueError("resume continues runner=online runs; an Optuna search resumes from "
                         "its storage instead: run it again with the same runner.storage")
    if runner != "online":
        raise ValueError(f"resume continues runner=online runs; runner={runner} cannot: run the "
                         "search again")
    where = run_dir or "."
    if runtime == "ray":
        return str(find_controller_checkpoint(where))
    return str(find_one(where, CHECKPOINT, f"No checkpoint in {run_dir}: nothing to resume "
                        "(runs write them with checkpoint_every=N)",
                        f"checkpoints in {run_dir}; resume one experiment at a time",
                        resumable(where)))


def expand_shorthands(overrides: list[str]) -> list[str]:
    """``exploration=X`` (a part of ``PARTS``) -> ``algorithm.exploration=X``; ``algorithm=sac``
    (a bare name no option has) -> the first family's, as ``looprl train sac`` reads it."""
    from looprl.presets.parts import PARTS
    bare: dict[str, str] = {}
    for option in algorithm_options():
        bare.setdefault(option.rpartition("/")[2], option)
    return [f"algorithm.{o}" if o.partition("=")[0] in PARTS else
            f"algorithm={bare[o[10:]]}" if o.startswith("algorithm=") and o[10:] in bare else o
            for o in overrides]
