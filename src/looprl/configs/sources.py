"""Where ``looprl run`` finds its configs: looprl's own, and a user's config directory.

    looprl run -cd my_configs +experiment=pendulum_sac     # my_configs/experiment/pendulum_sac.yaml
    looprl run -cd my_configs -cn my_run                    # my_configs/my_run.yaml as the config

``-cd DIR`` puts ``DIR`` on Hydra's search path: each of its folders is a config group, each
YAML file in it a config ``-cn NAME`` can start from (``defaults: [looprl, ...]``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from looprl.core.suggest import did_you_mean

__all__ = ["GROUPS", "PRIMARY", "check_config_keys", "compose", "config_dir", "config_keys",
           "config_name", "flag_value", "saved_sources", "user_groups"]

#: the config ``looprl run`` composes unless ``-cn`` names another
PRIMARY = "looprl"
#: the groups of the ``looprl`` config, each with a value in every composed config
GROUPS = ("algorithm", "meta", "runner", "runtime")


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


def compose(argv: list[str] | tuple[str, ...], overrides: list[str]) -> Any:
    """The config Hydra composes from ``overrides``, with ``argv``'s ``-cd`` and ``-cn``."""
    from hydra import compose as hydra_compose
    from hydra import initialize, initialize_config_dir
    directory = config_dir(argv)
    context = (initialize(version_base="1.3", config_path=None) if directory is None else
               initialize_config_dir(version_base="1.3", config_dir=str(directory)))
    with context:
        return hydra_compose(config_name(argv), overrides=overrides)


def saved_sources(saved: Path) -> list[str]:
    """The ``--config-dir`` and ``--config-name`` flags of the run whose ``.hydra`` folder is
    ``saved``."""
    from omegaconf import OmegaConf
    if not (saved / "hydra.yaml").is_file():
        return []
    hydra = OmegaConf.load(saved / "hydra.yaml").hydra
    flags = [f"--config-dir={source.path}" for source in hydra.runtime.config_sources
             if source.provider == "command-line" and source.schema == "file"]
    name = hydra.job.config_name
    return [*flags[-1:], *([f"--config-name={name}"] if name != PRIMARY else [])]


def config_keys() -> dict[str, Any]:
    """The ``looprl`` config's top-level keys -> defaults (but ``hydra`` and ``defaults``)."""
    from hydra.core.config_store import ConfigStore
    node = ConfigStore.instance().repo["looprl.yaml"].node
    return {key: node[key] for key in node if key not in ("defaults", "hydra")}


def check_config_keys(cfg: Any) -> None:
    """A one-line ``ValueError`` for a top-level key of ``cfg`` the ``looprl`` config lacks."""
    valid = [*config_keys(), *GROUPS]
    for key in cfg:
        if key not in valid:
            raise ValueError(f"Unknown config key {key!r} in the composed config (set by an "
                             f"experiment file or a -cn config?).{did_you_mean(key, valid)} "
                             f"Valid: {', '.join(valid)}")
