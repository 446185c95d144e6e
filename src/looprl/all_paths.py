"""ALL 0.9's module paths as looprl's: ``from looprl.presets.preset import Preset`` (the first line
of every ALL preset file), ``from looprl.memory.replay_buffer import ExperienceReplayBuffer``...

looprl keeps ALL's public names in fewer modules. Importing ``looprl.<ALL's path>`` (``PATHS``)
gives a module holding the names of the looprl package that has them, the same objects (a class
keeps its ``__module__``: pickles and checkpoints name looprl's module). Installed by ``import
looprl``; a looprl module of the same path, where there is one, is imported as it is.

Left out: paths whose last part names an object of the package (importing a module sets it on
its parent), so ``looprl.presets.atari.dqn`` and ``looprl.experiments.run_experiment`` stay the
builder and the function (``from looprl.presets.atari import dqn``, as ALL's docs write it);
the four ``all.approximation.target.*`` modules (``looprl.approximation.target`` holds them).
"""

from __future__ import annotations

import importlib
import sys
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

__all__ = ["PATHS"]

#: looprl's package -> ALL's modules (under ``all.``) whose names it holds
_MERGED = {
    "agents": ("ddqn", "rainbow", "vqn", "vsarsa"),
    "approximation": ("checkpointer", "feature_network", "identity", "v_network"),
    "bodies": ("atari", "rewards", "time", "vision"),
    "environments": ("atari_wrappers", "duplicate_env", "gym_wrappers", "multiagent_atari",
                     "multiagent_pettingzoo", "vector_env"),
    "experiments": ("multiagent_env_experiment", "parallel_env_experiment",
                    "single_env_experiment", "slurm"),
    "logging": ("dummy", "experiment"),
    "memory": ("advantage", "generalized_advantage", "replay_buffer"),
    "optim": ("scheduler",),
    "policies": ("gaussian", "soft_deterministic", "softmax"),
    "presets": ("independent_multiagent", "preset"),
}

#: ``looprl.<ALL's module path>`` -> the looprl module whose names it holds
PATHS = {f"looprl.{package}.{module}": f"looprl.{package}"
         for package, modules in _MERGED.items() for module in modules}


class _AllPaths(MetaPathFinder, Loader):
    """Finds ``PATHS`` (after every other finder: looprl's own modules come first)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        return ModuleSpec(fullname, self) if fullname in PATHS else None

    def create_module(self, spec: ModuleSpec) -> None:
        return None  # (a new module: the target's own attributes stay as they are)

    def exec_module(self, module: ModuleType) -> None:
        real = importlib.import_module(PATHS[module.__name__])
        module.__dict__.update({name: value for name, value in vars(real).items()
                                if not name.startswith("__") or name == "__all__"})
        module.__doc__ = (f"ALL's {module.__name__.replace('looprl', 'all', 1)}: the names of "
                          f"{real.__name__}.")
        module.__getattr__ = _on_demand(real)


def _on_demand(real: ModuleType) -> Any:
    """A module ``__getattr__``: the names ``real`` makes on demand (not its dunders)."""

    def __getattr__(name: str) -> Any:  # noqa: N807 -- a module's __getattr__
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(real, name)

    return __getattr__


if not any(isinstance(finder, _AllPaths) for finder in sys.meta_path):
    sys.meta_path.append(_AllPaths())
