"""looprl: deep reinforcement learning in three loops (``ARCHITECTURE.md``): agents acting in
environments with meta components hooked in, runners over repeated runs, and the same inner
loop spread over Ray."""

import logging
import os
import sys

__version__ = "0.1.0"
__all__ = ["State", "StateArray"]


def _is_program(name: str) -> bool:
    """Whether ``name`` is the looprl program or one of its console scripts (``looprl-classic``...
    in pyproject.toml's [project.scripts]), not a user's ``looprl-mine``."""
    if name.partition("-")[0] != "looprl":
        return False  # (skips the metadata look-up for every other program)
    from importlib.metadata import PackageNotFoundError, distribution
    try:
        scripts = distribution("looprl").entry_points.select(group="console_scripts")
    except PackageNotFoundError:  # (looprl not installed: no console scripts)
        return False
    return name in scripts.names


#: the looprl program or one of its console scripts (else a user's program)
_PROGRAM = _is_program(os.path.basename(sys.argv[0]))

import looprl.all_paths  # noqa: E402, F401  (ALL's module paths: ``looprl.presets.preset``...)

try:
    import numpy  # noqa: F401  (before torch, whose import of it swallows a Ctrl-C)

    from looprl.core import State, StateArray
    from looprl.core.algorithm import register_names_from  # (imports torch: seconds)

    # The built-in policies and trainers (``Policy(type_="ppo", ...)``), imported from
    # looprl.agents the first time a name is asked for (agents are slow to import).
    register_names_from("looprl.agents")
    if _PROGRAM:  # what the looprl program and its console scripts import next
        import looprl.cli  # noqa: F401  (presets, memory...: a Ctrl-C there is the same line)
        import looprl.scripts.watch  # noqa: F401  (and looprl.scripts.train)
except KeyboardInterrupt:
    if not _PROGRAM:
        raise
    # the looprl program: Ctrl-C while it starts is one line (logging's last resort prints it)
    logging.getLogger(__name__).error("%s: interrupted", os.path.basename(sys.argv[0]))
    raise SystemExit(130) from None
