"""The ``runtime`` group of ``looprl run``: ``local``, and ``ray``: one distributed run with
``runner=online``, the trials at once in Ray processes with ``runner=es|optuna|pbt``."""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Iterable
from typing import Any

from looprl.core.suggest import check_count

__all__ = ["TRIAL_OPTIONS", "distributed_options", "ray_trials", "runtime_help", "runtimes",
           "trial_gpus"]

#: the ``device`` values a Ray worker or trial takes (the GPU Ray gives it is its ``cuda:0``)
RAY_DEVICES = ("cpu", "cuda", "cuda:0")

#: the ``runtime`` options of runners whose trials run on Ray
TRIAL_OPTIONS = ("trials_in_parallel", "gpus_per_trial", "num_cpus", "address", "runtime_env",
                 "max_restarts", "env_timeout")


def runtimes() -> dict[str, dict[str, Any]]:
    """The ``runtime`` group's options and their nodes."""
    from dataclasses import asdict

    from looprl.distributed.config import RuntimeConfig
    ray = {key: value for key, value in asdict(RuntimeConfig()).items()
           if key != "segment_length"}  # (a preset's own: its n_steps, its replay's cut)
    return {"local": {"name": "local", "max_restarts": ray["max_restarts"],  # (env copies)
                      "env_timeout": ray["env_timeout"]},
            "ray": {"name": "ray", **ray, "groups": None,  # (its default)
                    "trials_in_parallel": None, "gpus_per_trial": None}}


def runtime_help(width: int = 100) -> str:
    """``looprl run --help``'s ``runtime.NAME=DEFAULT`` lines, each with the first sentence
    of ``RuntimeConfig``'s docstring on it."""
    from looprl.distributed.config import RuntimeConfig
    said = {**_attributes(RuntimeConfig.__doc__ or ""),
            "trials_in_parallel": "trials of runner=es|optuna|pbt at once (null: Ray's CPUs).",
            "gpus_per_trial": "GPUs each trial of runner=es|optuna reserves (null: 1 with "
                              "device=cuda, else 0; 0.25: four trials share one)."}
    lines = []
    for name, default in runtimes()["ray"].items():
        if name == "name":
            continue
        option = f"  runtime.{name}={json.dumps(default)}"
        text = re.split(r"(?<=\.)\s", said.get(name, ""), maxsplit=1)[0]
        text = text.replace("``", "").replace("None", "null")  # (as the command line says)
        lines += textwrap.wrap(text, width, initial_indent=option.ljust(36),
                               subsequent_indent=" " * 36) or [option]
    return "\n".join(lines) + "\n"


def _attributes(doc: str) -> dict[str, str]:
    """The ``Attributes:`` entries of a Google-style docstring (``a, b: text`` gives both)."""
    entries: dict[str, str] = {}
    names: list[str] = []
    section = doc.partition("Attributes:")[2]
    for line in textwrap.dedent(section).splitlines():
        match = re.match(r"(\w+(?:, \w+)*): (.*)", line)
        if match:
            names = match.group(1).split(", ")
            entries.update(dict.fromkeys(names, match.group(2)))
        elif line.startswith(" ") and names:  # (a continuation line)
            entries.update(dict.fromkeys(names, f"{entries[names[0]]} {line.strip()}"))
    return entries


def distributed_options(runtime: dict[str, Any], device: Any = "cpu") -> dict[str, Any]:
    """The ``RuntimeConfig`` options of a ``runner=online runtime=ray`` config's ``runtime``
    and ``device``: ``cuda`` (``null``: if this machine has one for each trainer and Ray starts
    here, as a local run's) reserves each trainer a GPU (``runtime.gpus_per_trainer``: 1, or
    the fraction set)."""
    import torch

    from looprl.distributed.config import starts_local
    options = {k: v for k, v in runtime.items() if k != "name"}
    for key in ("trials_in_parallel", "gpus_per_trial"):
        if options.pop(key, None) is not None:
            raise ValueError(f"runtime.{key} is for runner=es, optuna or pbt on Ray; "
                             "runner=online with runtime=ray is one distributed run: set its "
                             "workers with runtime.actors (and runtime.trainers), its GPUs with "
                             "device=cuda (runtime.gpus_per_trainer)")
    if device is None:  # (a GPU per trainer, as a worker computes on one)
        device = "cuda" if starts_local(options.get("address")) and torch.cuda.is_available() \
            and torch.cuda.device_count() >= (options.get("trainers") or 1) else "cpu"
    if str(device) not in RAY_DEVICES:
        raise ValueError(f"device={device}: on Ray each worker computes on the GPU Ray gives it; "
                         "device=cuda puts the trainer on one (runtime.gpus_per_trainer=1), "
                         "runtime.gpus_per_policy the policy workers")
    if str(device) != "cpu":
        options["gpus_per_trainer"] = options.get("gpus_per_trainer") or 1
    return options


def check_trial_options(keys: Iterable[str], runner: str) -> None:
    """A one-line ``ValueError`` for the first of the ``runtime`` node's ``keys`` that a trial
    of ``runner=es|optuna|pbt`` on Ray does not take."""
    unused = [key for key in keys if key not in ("name", *TRIAL_OPTIONS)]
    if unused:
        raise ValueError(f"runtime.{unused[0]} does not apply to runner={runner} on Ray: each "
                         "trial runs the local runtime in a Ray process of its own; its runtime "
                         f"options are runtime.{', runtime.'.join(TRIAL_OPTIONS)}")


def ray_trials(runtime: dict[str, Any], runner: str, device: Any, options: dict[str, Any]
               ) -> Any:
    """The ``RayTrials`` of a ``runner=es|optuna|pbt`` config's ``runtime`` node (PBT's on
    either runtime)."""
    from looprl.distributed.config import starts_local
    from looprl.distributed.trials import RayTrials
    defaults = runtimes()["ray"]  # (a config file's options; overrides: each one given)
    check_trial_options([key for key, value in runtime.items() if value != defaults.get(key)],
                        runner)
    cpus = runtime.get("num_cpus")
    if cpus is None and options.get("num_cpus") is not None:  # (PBT's runner.num_cpus)
        check_count(**{"runner.num_cpus": options["num_cpus"]})
        cpus = options["num_cpus"]
    gpus = trial_gpus(runner, device, runtime.get("gpus_per_trial"))
    if gpus and starts_local(runtime.get("address")):  # (a local instance: this machine's)
        import torch
        found = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if found < gpus:
            raise ValueError(f"each trial of runner={runner} reserves {gpus:g} GPU (device=cuda, "
                             f"runtime.gpus_per_trial) and this machine has {found}: lower "
                             "runtime.gpus_per_trial, or train on the CPU (device=cpu)")
    return RayTrials(parallel=runtime.get("trials_in_parallel"), address=runtime.get("address"),
                     num_cpus=cpus, runtime_env=runtime.get("runtime_env"), gpus=gpus)


def trial_gpus(runner: str, device: Any, gpus: float | None) -> float:
    """The GPUs each trial of ``runner`` on Ray reserves: ``gpus`` (``runtime.gpus_per_trial``;
    ``None``: 1 with ``device=cuda``, else none) and ``device`` agreeing, or one line."""
    from looprl.distributed.trials import check_trial_gpus
    if gpus is not None:
        gpus = check_trial_gpus(gpus)
    if runner == "pbt":
        if gpus is not None:
            raise ValueError("runtime.gpus_per_trial is for runner=es|optuna; PBT's members "
                             "reserve runner.gpus_per_member GPUs each")
        return 0.0
    kind = None if device is None else str(device)
    if kind is not None and kind not in RAY_DEVICES:
        raise ValueError(f"device={device}: on Ray each trial computes on the GPU Ray gives it; "
                         "device=cuda reserves runtime.gpus_per_trial (1 by default) for each")
    if kind == "cpu" and gpus:
        raise ValueError(f"device=cpu with runtime.gpus_per_trial={gpus}: set device=cuda (or "
                         "leave it null) for the trials to train on their GPUs")
    cuda = kind is not None and kind != "cpu"
    if cuda and gpus is not None and not gpus:
        raise ValueError(f"device={device} with runtime.gpus_per_trial=0: set it above 0 (0.25: "
                         "four trials share a GPU), or device=cpu")
    return 1.0 if cuda and gpus is None else float(gpus or 0)
