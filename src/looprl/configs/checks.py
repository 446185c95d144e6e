"""Checks of ``looprl run``'s overrides before Hydra composes anything (whose messages are
multi-line tracebacks): each a one-line ``ValueError``."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from looprl.configs import (
    ES_FRAMES,
    RUN_MINIMUMS,
    _choices,
    algorithm_options,
    check_run_value,
    runners,
    runtimes,
)
from looprl.configs.overrides import HYDRA_FLAGS, VALUED_FLAGS, override_pairs, split_flags
from looprl.configs.runtimes import check_trial_options
from looprl.configs.sources import (
    GROUPS,
    MIGHTY_KEYS,
    PRIMARY,
    check_package_header,
    config_dir,
    config_keys,
    config_name,
    key_hint,
    user_groups,
)
from looprl.core.ranges import check_ranges
from looprl.core.suggest import check_choice, check_once, did_you_mean
from looprl.meta.registry import own_name
from looprl.presets.all_names import hyperparameter_hint

__all__ = ["check_given_once", "check_overrides", "composition_error"]

#: the long names of Hydra's valued flags that have a short one
_LONG_FLAGS = {"-c": "--cfg", "-p": "--package", "-i": "--info", "-cp": "--config-path",
               "-cn": "--config-name", "-cd": "--config-dir"}
#: the options the ``looprl`` config chooses in its defaults
DEFAULTS = {"algorithm": ["ppo"], "runner": ["online"], "meta": [], "runtime": ["local"]}
#: Mighty's option names that are not looprl's in lower case (``_mighty_hint``)
MIGHTY_OPTIONS = {"runner": {"standard": "online", "default": "online"}}


def check_overrides(overrides: list[str]) -> None:
    """A one-line ``ValueError`` for an override naming an unknown group option, key or
    argument."""
    from hydra.core.config_store import ConfigStore
    for i, arg in enumerate(overrides):
        flag, given, value = arg.partition("=")
        if flag.startswith("-") and flag not in HYDRA_FLAGS:  # (Hydra: its usage block)
            if not given and overrides[i + 1:i + 2] and "=" not in overrides[i + 1]:
                value = overrides[i + 1]  # (--frames 500)
            raise ValueError(f"Unknown flag {flag!r} of looprl run.{_flag_hint(flag, value)} "
                             "It takes key=value overrides and Hydra's flags: see looprl run "
                             "--help (a negative value goes after the '=': seed=-1)")
        _check_flag_value(arg, overrides[i + 1:i + 2])
    given = override_pairs(overrides)
    if ("hydra/launcher", "submitit_slurm") in given and shutil.which("srun") is None:
        raise ValueError("hydra/launcher=submitit_slurm needs a SLURM cluster (no srun here): "
                         "run it on one, or use hydra/launcher=submitit_local or joblib")
    pairs = [(key, value) for key, value in given if not key.startswith("hydra")]
    meta = ConfigStore.instance().repo["meta"]
    builtin = {"algorithm": list(algorithm_options()), "runner": list(runners()),
               "meta": sorted(name.removesuffix(".yaml") for name in meta),
               "runtime": list(runtimes())}
    mine = user_groups(overrides)
    options = {group: [*builtin.get(group, []), *mine.get(group, [])]
               for group in {*builtin, *mine}}
    # the options the looprl config chooses; with a user's config in play, its own
    known = config_name(overrides) == PRIMARY and not any(key in mine for key, _ in pairs)
    chosen = dict(DEFAULTS) if known else {}
    _check_appended(overrides, [group for group in mine if group not in builtin])
    for key, value in pairs:
        if key in options:
            if key != "meta" and value.strip().startswith("["):  # (Hydra merges a list's)
                raise ValueError(f"{key}={value}: {key} takes one option; a sweep over "
                                 f"several is -m {key}={','.join(_choices(value))}")
            chosen[key] = _choices(value)
            for choice in chosen[key]:
                check_choice(key, choice, options[key], _mighty_hint(key, choice, options[key]))
            for options_list in re.findall(r"\[([^\]]*)\]", value) if key == "meta" else ():
                _check_listed_once(key, _choices(options_list))  # (each list of a sweep)
    primary, targets = config_keys(), _meta_targets(pairs)
    for key, value in pairs:
        group, _, field = key.partition(".")
        if group == "meta" and field.partition(".")[0] in targets:
            _check_target_field(field, targets)
        elif group in builtin and field and group in chosen:  # (else build checks it)
            ours = [c for c in chosen[group] if c in builtin[group]]
            if ours or not chosen[group]:  # (a user's option: build checks its keys)
                _check_field(group, field, ours)
            for number in _swept_numbers(key, value) if group == "algorithm" else ():
                for algorithm in ours:  # (before the first job trains, not when its job starts)
                    check_ranges({field: number}, algorithm.rpartition("/")[2])
        elif key in RUN_MINIMUMS:
            for number in _swept_numbers(key, value):
                check_run_value(key, number)
        elif group not in options and group not in primary:
            valid = [*primary, *sorted(options)]
            check_choice("config key", group, valid, key_hint(group, valid))
        elif field and group in ("context", "logging"):  # nodes of fixed keys
            check_choice(f"{group} key", field.split(".")[0], list(primary[group]))
    trials = [runner for runner in chosen.get("runner", ()) if runner in ("es", "optuna", "pbt")]
    if trials and "ray" in chosen.get("runtime", ()):  # (even at a Ray run's default value)
        check_trial_options([key[8:] for key, _ in pairs if key.startswith("runtime.")],
                            trials[0])
    if "es" in chosen.get("runner", ()) and any(key == "frames" for key, _ in pairs):
        raise ValueError(ES_FRAMES)
    budget = {key: value for key, value in pairs if key in ("frames", "runner.num_steps")}
    if len(budget) == 2:  # (was: runner.num_steps trained, frames silently left unread)
        raise ValueError(f"runner.num_steps={budget['runner.num_steps']} and frames="
                         f"{budget['frames']} both set the training budget (runner.num_steps "
                         "is frames unless given): give frames alone")


def _check_flag_value(flag: str, after: list[str]) -> None:
    """A Hydra flag that takes a value (``--cfg job``) without one (or before a ``key=value``),
    or ``--cfg`` with another than Hydra's choices, is a one-line ``ValueError``."""
    if flag not in VALUED_FLAGS or flag in ("--info", "-i"):  # (--info's value is optional)
        return
    value = after[0] if after else ""
    choices = ("job", "hydra", "all") if flag in ("--cfg", "-c") else ()
    if not value or value.startswith("-") or "=" in value or (choices and value not in choices):
        got = f", got {value!r}" if value else ""
        wanted = "job, hydra or all" if choices else "a value"
        raise ValueError(f"Hydra's flag {flag} takes {wanted} after it{got} (looprl run --help)")


def _swept_numbers(key: str, value: str) -> list[int | float]:
    """The numbers a sweep (``-m algorithm.lr=1e-3,-1``, ``seed=0,-1``) gives ``key``; none
    for one value (checked where the run starts) or an interval or a syntax error (Hydra's)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    try:
        override = OverridesParser.create().parse_override(f"{key}={value}")
        values = list(override.sweep_iterator()) if override.is_sweep_override() else []
    except HydraException:
        return []
    return [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]


def _mighty_hint(group: str, choice: str, options: list[str]) -> str:
    """" Did you mean ...?" naming looprl's options for Mighty's (``algorithm=SAC``:
    ``continuous/sac``; ``runner=standard``: ``online``), or ``""``."""
    mighty = own_name(choice) if group == "meta" else MIGHTY_OPTIONS.get(group, {}).get(choice)
    name = (mighty or choice).lower()
    same = [o for o in options if o.rpartition("/")[2] == name]
    return f" Did you mean {', '.join(map(repr, same))}?" if same else ""


def composition_error(error: Exception) -> Exception:
    """Hydra's error for a group or option a config file's defaults list names (an experiment
    file's ``- override /algorithm: SAC``, ``- override /environment: ...``) as the command
    line's one line, with its hint for Mighty's names; any other error as it is."""
    from looprl.configs.runtimes import runtimes
    missing = getattr(error, "missing_cfg_file", None)  # (MissingConfigException's)
    unmatched = re.search(r"Could not override '([^']+)'\. No match in the defaults", str(error))
    if missing:
        group, _, choice = str(missing).strip("/").rpartition("/")
    elif unmatched:
        group, choice = unmatched.group(1).strip("/"), "..."
    else:
        return error
    listed = f"(a defaults list's '- override /{group}: {choice}')"
    if group in MIGHTY_KEYS:  # (Mighty's environment group: looprl's env key)
        return ValueError(f"looprl has no config group {group!r} {listed}: looprl's way for "
                          f"Mighty's {group!r}: {MIGHTY_KEYS[group]}")
    builtin = {"algorithm": algorithm_options, "runner": runners, "runtime": runtimes}
    if unmatched:
        return ValueError(f"looprl has no config group {group!r} {listed}; its groups: "
                          f"{', '.join(GROUPS)}.{did_you_mean(group, list(GROUPS))}")
    if group not in builtin and group != "meta":
        return error
    options = list(dict.fromkeys([*(builtin[group]() if group in builtin else ()),
                                  *(getattr(error, "options", None) or ())]))
    try:
        check_choice(group, choice, options, _mighty_hint(group, choice, options))
    except ValueError as unknown:
        return ValueError(str(unknown).replace(f"{choice!r}.", f"{choice!r} {listed}.", 1))
    return error


def _flag_hint(flag: str, value: str) -> str:
    """" Did you mean ...?" naming the override a flag stands for (``--frames 500``:
    ``frames=500``), else the closest of Hydra's flags."""
    name, primary = flag.lstrip("-").replace("-", "_"), config_keys()
    if name in primary and name not in ("context", "logging"):
        return f" Did you mean {name}={value or '...'}?"
    if name in primary.get("logging", {}):
        return f" Did you mean logging.{name}={value or 'true'}?"
    return did_you_mean(flag, HYDRA_FLAGS)


def check_given_once(overrides: list[str]) -> None:
    """A key, ``--resume`` or one of Hydra's flags that take a value (``-cn``, ``-cd``, ...)
    given twice is a one-line ``ValueError`` naming both (Hydra would silently take the last)."""
    flags = split_flags(overrides)[0]
    valued = [(at, arg) for at, arg in enumerate(flags) if arg.partition("=")[0] in VALUED_FLAGS]
    check_once([_LONG_FLAGS.get(name, name) for name in (a.partition("=")[0] for _, a in valued)],
               [arg if "=" in arg or not flags[at + 1:] or flags[at + 1].startswith("-")
                else f"{arg} {flags[at + 1]}" for at, arg in valued])  # (its value, if any)
    resumed = [at for at, arg in enumerate(overrides) if arg == "--resume"]
    check_once(["--resume"] * len(resumed), [" ".join(overrides[at:at + 2]) for at in resumed],
               "resume one run directory at a time")
    pairs = override_pairs(overrides)
    check_once([key for key, _ in pairs], [f"{key}={value}" for key, value in pairs],
               "give each key once (a sweep's values as key=a,b with -m)")


def _check_listed_once(group: str, choices: list[str]) -> None:
    """An option listed twice (``meta=[rnd,rnd]``) is a one-line ``ValueError``: its config
    node is one, so Hydra would silently attach it once."""
    from looprl.meta.registry import component_class
    twice = next((c for i, c in enumerate(choices) if c in choices[:i]), None)
    if twice is not None:
        cls = component_class(twice)
        raise ValueError(f"{group}=[{','.join(choices)}] lists {twice!r} twice, but the config "
                         f"holds one node per option ({group}.{_meta_key(twice)}): add the "
                         f"second copy under a name of its own, +{group}.NAME._target_="
                         f"{cls.__module__}.{cls.__qualname__} (+{group}.NAME.ARG=... for "
                         "its arguments)")


def _check_appended(overrides: list[str], groups: list[str]) -> None:
    """Choosing one of the user's ``groups`` needs ``+`` (``+experiment=NAME``) with the
    ``looprl`` config, and the chosen file its ``# @package`` header on top."""
    if config_name(overrides) != PRIMARY or not groups:  # (also checks -cn, -cd's directory)
        return
    directory = config_dir(overrides)  # (groups: there is one)
    for arg in overrides:
        group, _, name = arg.partition("=")
        if not arg.startswith(("+", "-", "~")) and group in groups:
            raise ValueError(f"{arg}: the looprl config has no {group} in its "
                             f"defaults; add it with +{arg}")
        if group.startswith("+") and group[1:] in groups:
            path = Path(directory, group[1:], f"{name}.yaml")
            if path.is_file():
                check_package_header(path)


def _meta_key(option: str) -> str:
    """The config key of the ``meta`` option: its name, or an import path's class name."""
    from looprl.meta.registry import COMPONENTS, component_class
    return option if option in COMPONENTS else component_class(option).__name__


def _meta_targets(pairs: list[tuple[str, str]]) -> dict[str, type]:
    """``{key: class}`` of the ``meta.<key>._target_=PATH`` overrides (Hydra's form)."""
    from looprl.meta.registry import component_class
    return {key.split(".")[1]: component_class(value) for key, value in pairs
            if key.startswith("meta.") and key.count(".") == 2 and key.endswith("._target_")}


def _check_target_field(field: str, targets: dict[str, type]) -> None:
    """``mine.scale`` must be an argument of the class ``meta.mine._target_`` names."""
    from looprl.meta.registry import accepted_parameters
    name, _, argument = field.partition(".")
    valid = list(accepted_parameters(targets[name]))
    head = argument.split(".")[0]
    if head != "_target_" and head not in valid:
        raise ValueError(f"meta.{field}: {head!r} is not an argument of "
                         f"{targets[name].__name__}.{did_you_mean(head, valid)} "
                         f"Valid: {', '.join(valid)}")


def _check_field(group: str, field: str, chosen: list[str]) -> None:
    """``field`` (``lr``, ``rnd.lr``) must exist in a chosen option of ``group``."""
    from hydra.core.config_store import ConfigStore
    head = field.split(".")[0]
    if group == "meta":
        name, _, argument = field.partition(".")
        keys = {_meta_key(option): option for option in chosen}
        if name not in keys:
            raise ValueError(f"meta.{field} sets an argument of {name!r}, which is not "
                             f"attached: add it with meta=[{','.join([*chosen, name])}]")
        chosen, head = [keys[name]], argument.split(".")[0]
        if not argument:
            valid = [k for k in ConfigStore.instance().load(f"meta/{chosen[0]}.yaml").node]
            raise ValueError(f"meta.{name} holds the arguments of {chosen[0]}: set one with "
                             f"meta.{name}.ARG=VALUE (Valid ARG: {', '.join(valid) or 'none'})")
    if not chosen:  # an empty choice (algorithm=): Hydra names the group's options
        return
    for option in chosen:
        keys = list(ConfigStore.instance().load(f"{group}/{option}.yaml").node)
        if head in keys:
            return
    what = {"algorithm": "a hyperparameter of", "runner": "an argument of the runner",
            "meta": "an argument of", "runtime": "an option of the runtime"}[group]
    valid = [k for k in keys if k != "name"]
    options = f"Valid: {', '.join(valid)}" if valid else f"{group}={'/'.join(chosen)} takes none"
    raise ValueError(f"{group}.{field}: {head!r} is not {what} {'/'.join(chosen)}."
                     f"{hyperparameter_hint(head, valid)} {options}")
