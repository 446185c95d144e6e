"""What ``pip install looprl[...]`` brings: every package that ``src/looprl`` imports (or
``import_extra`` asks for) is declared in pyproject.toml, in its dependencies or an extra."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[1]
#: modules a declared distribution brings with it (checked: it requires them)
BROUGHT_BY = {"omegaconf": "hydra-core", "PIL": "matplotlib",
              "submitit": "hydra-submitit-launcher"}


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _imported_modules() -> set[str]:
    modules = set()
    for path in (ROOT / "src" / "looprl").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module)
            elif (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "import_extra"
                  and isinstance(node.args[0], ast.Constant)):
                modules.add(node.args[0].value)
    return {m.split(".")[0] for m in modules} - set(sys.stdlib_module_names) - {"looprl"}


def test_every_imported_package_is_declared() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_name(r) for r in [*project["dependencies"],
                                   *sum(project["optional-dependencies"].values(), [])]}
    distributions = importlib.metadata.packages_distributions()
    for module in sorted(_imported_modules()):
        names = {_name(d) for d in distributions[module]}  # (mujoco: mujoco, mujoco-core, ...)
        if module in BROUGHT_BY:
            assert BROUGHT_BY[module] in declared
            requires = importlib.metadata.requires(BROUGHT_BY[module]) or []
            assert names & {_name(r) for r in requires}, module
        else:
            assert names & declared, f"{module} ({', '.join(names)}) is not declared"
