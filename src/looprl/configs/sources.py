"""Where ``looprl run`` finds its configs: looprl's own, and a user's config directory
(``-cd DIR``: each of its folders a config group, each YAML file in it a config ``-cn NAME``
can start from, ``defaults: [looprl, ...]``; docs/coming-from-mighty.md)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from looprl.core.suggest import did_you_mean

__all__ = ["GROUPS", "MIGHTY_KEYS", "PRIMARY", "check_config_keys", "check_package_header",
           "compose", "config_dir", "config_keys", "config_name", "flag_value", "key_hint",
           "saved_sources", "user_groups"]

#: the config ``looprl run`` composes unless ``-cn`` names another
PRIMARY = "looprl"
#: the groups of the ``looprl`` config, each with a value in every composed config
GROUPS = ("algorithm", "meta", "runner", "runtime")
#: Mighty's top-level keys -> looprl's way: not aliases, a hint in the unknown key's one line
MIGHTY_KEYS = {
    "num_steps": "frames=N", "environment": "env=ID (with env_kwargs, env_wrappers)",
    "algorithm_kwargs": "algorithm.NAME=VALUE, the preset's hyperparameters",
    "meta_kwargs": "meta=[NAME] meta.NAME.ARG=VALUE",
    "num_envs": "algorithm.n_envs=N, where the preset has it",
    "n_episodes_eval": "test_episodes=N", "eval_every_n_steps": "runner.eval_every=N",
    "save_model_every_n_steps": "checkpoint_every=N",
    "checkpoint": "looprl run --resume RUN_DIR",
    "output_dir": "hydra.run.dir=DIR", "experiment_name": "hydra.run.dir=DIR",
    "wandb_project": "logging.wandb={project:NAME}",
}


def flag_value(argv: list[str] | tuple[str, ...], flags: tuple[str, ...]) -> str | None:
    """The value of the last of ``flags`` in ``argv`` (``-cd DIR`` or ``--config-dir=DIR``),
    or ``None``."""
    value = None
    for at, arg in enumerate(argv):
        flag, equals, given = arg.partition("=")
        if flag in flags:
            value = given if equals else (argv[at + 1] if at + 1 < len(argv) else "")
    return value


def config_dir(argv: list[str] | tuple[str, ...]) -> Path | None:
    """The user's config directory ``-cd`` names (absolute), or ``None``."""
    value = flag_value(argv, ("--config-dir", "-cd"))
    if value is None:
        return None
    path = Path(value).expanduser()
    if not path.is_dir():
        raise ValueError(f"--config-dir {value!r} is no directory: give the folder that holds "
                         "your config groups (e.g. my_configs, with my_configs/experiment/*.yaml)")
    return path.resolve()


def config_name(argv: list[str] | tuple[str, ...]) -> str:
    """The config ``-cn`` names (``looprl`` without one): ``looprl`` or a YAML file in the
    ``-cd`` directory."""
    name = (flag_value(argv, ("--config-name", "-cn")) or PRIMARY).removesuffix(".yaml")
    directory = config_dir(argv)
    files = [] if directory is None else sorted(p.stem for p in directory.glob("*.yaml"))
    if name != PRIMARY and name not in files:
        where = f"in {directory}" if directory else "without -cd DIR (the folder that holds it)"
        raise ValueError(f"--config-name {name!r}: no {name}.yaml {where}. Valid: "
                         f"{', '.join([PRIMARY, *files])}")
    return name


def user_groups(argv: list[str] | tuple[str, ...]) -> dict[str, list[str]]:
    """The config groups of the ``-cd`` directory: each folder -> its options (``sub/name`` in
    subfolders)."""
    directory = config_dir(argv)
    groups: dict[str, list[str]] = {}
    for path in sorted(directory.rglob("*.yaml")) if directory else ():
        group, *option = path.relative_to(directory).with_suffix("").parts
        if option:
            groups.setdefault(group, []).append("/".join(option))
    return groups


def check_package_header(path: Path) -> None:
    """A ``# @package`` line of ``path`` (a file of a user's group, ``+experiment=NAME``)
    below another line (a comment too), which Hydra ignores, or none, is a one-line
    ``ValueError``."""
    lines = [line.strip() for line in path.read_text().splitlines() if line.strip()]
    header = next((at for at, line in enumerate(lines) if re.match(r"#\s*@package", line)), None)
    if header is None:  # (Hydra puts its keys under the group's name: experiment.frames)
        raise ValueError(f"{path} needs '# @package _global_' as its first line: without it, "
                         f"Hydra puts its keys under '{path.parent.name}:', which looprl's "
                         "config does not have")
    other = next((at for at, line in enumerate(lines) if not re.match(r"#\s*@", line)), header)
    if other < header:
        raise ValueError(f"{path}: Hydra reads its {lines[header]!r} line only above every "
                         f"other line, and {lines[other]!r} comes first: make it the file's "
                         "first line")


def compose(argv: list[str] | tuple[str, ...], overrides: list[str]) -> Any:
    """The config Hydra composes from ``overrides``, with ``argv``'s ``-cd`` and ``-cn``."""
    from hydra import compose as hydra_compose
    from hydra import initialize, initialize_config_dir
    directory = config_dir(argv)
    context = (initialize(version_base="1.3", config_path=None) if directory is None else
               initialize_config_dir(version_base="1.3", config_dir=str(directory)))
    with context:
        return hydra_compose(config_name(argv), overrides=overrides)


def saved_sources(saved: Path) -> tuple[list[str], dict[str, Any]]:
    """The ``--config-dir`` and ``--config-name`` flags, and the groups' choices (``runtime:
    ray``, ...), of the run whose ``.hydra`` folder is ``saved`` (none without a hydra.yaml)."""
    from omegaconf import OmegaConf
    if not (saved / "hydra.yaml").is_file():
        return [], {}
    hydra = OmegaConf.load(saved / "hydra.yaml").hydra
    flags = [f"--config-dir={source.path}" for source in hydra.runtime.config_sources
             if source.provider == "command-line" and source.schema == "file"]
    name = hydra.job.config_name
    return ([*flags[-1:], *([f"--config-name={name}"] if name != PRIMARY else [])],
            dict(OmegaConf.select(hydra, "runtime.choices") or {}))


def config_keys() -> dict[str, Any]:
    """The ``looprl`` config's top-level keys -> defaults (but ``hydra`` and ``defaults``)."""
    from hydra.core.config_store import ConfigStore
    node = ConfigStore.instance().repo["looprl.yaml"].node
    return {key: node[key] for key in node if key not in ("defaults", "hydra")}


def key_hint(key: str, valid: list[str]) -> str:
    """``did_you_mean`` for an unknown top-level key: looprl's way for a Mighty key
    (``MIGHTY_KEYS``), else the closest of ``valid``."""
    if key in MIGHTY_KEYS:
        return f" looprl's way for Mighty's {key!r}: {MIGHTY_KEYS[key]}."
    return did_you_mean(key, valid)


def check_config_keys(cfg: Any) -> None:
    """A one-line ``ValueError`` for a config missing looprl's keys (a ``-cn`` config without
    ``- looprl`` in its defaults), a group of ``cfg`` set to a plain value (Mighty's
    ``algorithm: DQN``), an algorithm config without its ``preset``'s name, or a top-level key
    the ``looprl`` config lacks."""
    from omegaconf import OmegaConf
    missing = [key for key in config_keys() if key not in cfg]
    if missing:  # (a -cn config of the user's that does not start from looprl's)
        raise ValueError(f"The composed config lacks looprl's {', '.join(missing[:4])}"
                         f"{', ...' if len(missing) > 4 else ''}: a config of your own (-cn) "
                         "extends looprl's, with '- looprl' first in its defaults list "
                         "(docs/coming-from-mighty.md, 'A config of your own')")
    for group in GROUPS:
        value = cfg.get(group)
        if value is not None and not OmegaConf.is_dict(value):
            option = "[NAME]" if group == "meta" else "NAME"
            raise ValueError(f"{group}: {value!r} in the composed config (set by an experiment "
                             f"or a config file, as Mighty's '# @package _global_' ones?) is no "
                             f"{group} config: choose the option in the file's defaults "
                             f"(- override /{group}: {option}) or with {group}={option}, and "
                             f"set its keys under {group}:")
    preset = cfg.algorithm.get("preset") if cfg.get("algorithm") is not None else None
    if not isinstance(preset, str):  # (an algorithm/NAME.yaml of the user's)
        got = "none" if preset is None else repr(preset)
        raise ValueError(f"algorithm.preset is {got}: an algorithm config names the preset it "
                         "sets (preset: classic_control.dqn, as looprl run --help's algorithm "
                         "options do), then its hyperparameters")
    valid = [*config_keys(), *GROUPS]
    for key in cfg:
        if key not in valid:
            raise ValueError(f"Unknown config key {key!r} in the composed config (set by an "
                             f"experiment file or a -cn config?).{key_hint(key, valid)} "
                             f"Valid: {', '.join(valid)}")
