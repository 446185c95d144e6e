"""What ``pip install looprl[...]`` brings: every package that ``src/looprl`` imports (or
``import_extra`` asks for) is declared in pyproject.toml, in its dependencies or an extra."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import shutil
import subprocess
import sys
import tarfile
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


def test_the_sdist_carries_the_tests_docs_and_benchmarks(tmp_path: Path) -> None:
    """A packager runs the test suite from the sdist: every file of ``tests/`` (its subfolders
    too), ``benchmarks/`` and ``docs/`` is in it (setuptools alone takes only
    ``tests/test_*.py``). Built from a copy of the checkout's files (an old ``*.egg-info``
    would lend the build its file list)."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    checkout = tmp_path / "checkout"
    for name in files:
        if (ROOT / name).is_file():
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / name, checkout / name)
    subprocess.run([sys.executable, "-c", "import sys; from setuptools import build_meta; "
                    "build_meta.build_sdist(sys.argv[1])", str(tmp_path)],
                   cwd=checkout, capture_output=True, check=True)
    (sdist,) = tmp_path.glob("looprl-*.tar.gz")
    with tarfile.open(sdist) as archive:
        carried = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    wanted = {name for name in files if name.split("/")[0] in ("tests", "benchmarks", "docs")}
    assert wanted and not wanted - carried, sorted(wanted - carried)[:5]
