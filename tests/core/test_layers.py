"""The layers of ARCHITECTURE.md hold in the code: each package imports only from the
packages above it in the "Layers" table, and the modules inside a package form no cycle.

Every ``import looprl.x`` / ``from looprl.x import y`` counts, at module level and inside
functions (and ``importlib.import_module("looprl.x")`` with a literal name); ``if
TYPE_CHECKING:`` imports count for the layers but not for the cycles (they never run). A
name registered by import path (``"looprl.x:Name"``) is data, resolved when used: no import.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "looprl"

# Upward imports (module, imported module) the code still has: this set must shrink, never
# grow (delete an entry when its import goes). None at present.
KNOWN_UPWARD: set[tuple[str, str]] = set()

# Cycles between the modules of a package, each the sorted modules of one strongly connected
# component: this set must shrink, never grow.
KNOWN_CYCLES: set[tuple[str, ...]] = set()


def layers() -> list[str]:
    """The packages of ARCHITECTURE.md's "Layers" table, top (imported by all) first."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    table = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `looprl\.(\w+)` \|", table, flags=re.MULTILINE)


def modules() -> dict[str, Path]:
    """Every module of looprl by dotted name (a package by its ``__init__``)."""
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def package(module: str) -> str:
    """``looprl.environments.gym`` -> ``environments``; ``looprl`` itself -> ``""``."""
    return module.split(".")[1] if "." in module else ""


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _literal_prefix(node: ast.expr) -> str | None:
    """A string literal, or the literal start of an f-string (``f"looprl.x.{y}"``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return str(node.values[0].value)
    return None


def imports(name: str, path: Path, known: dict[str, Path]
            ) -> Iterator[tuple[str, int, bool, bool]]:
    """``(imported looprl module, line, type-checking only, whole name)`` for every import in
    the module ``name``; ``from a import b`` is an import of ``a.b`` where that is a module.
    An f-string's ``import_module`` gives only its literal start (``whole name`` False)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    type_only = {id(node) for block in ast.walk(tree)
                 if isinstance(block, ast.If) and _is_type_checking(block)
                 for statement in block.body for node in ast.walk(statement)}
    for node in ast.walk(tree):
        targets: list[tuple[str, bool]] = []
        if isinstance(node, ast.Import):
            targets = [(alias.name, True) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package
                here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                here = here[:len(here) - node.level + 1]
                base = ".".join(here + ([node.module] if node.module else []))
            submodules = [f"{base}.{alias.name}" for alias in node.names
                          if f"{base}.{alias.name}" in known]
            targets = [(target, True) for target in submodules or [base]]
        elif (isinstance(node, ast.Call) and node.args
              and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"):
            literal = _literal_prefix(node.args[0])
            if literal is not None:
                whole = isinstance(node.args[0], ast.Constant)
                targets = [(literal.rstrip("."), whole)]
        for target, whole in targets:
            if target == "looprl" or target.startswith("looprl."):
                yield target, node.lineno, id(node) in type_only, whole


def test_every_package_is_a_layer_of_the_table() -> None:
    order = layers()
    assert order[:2] == ["core", "environments"] and order[-2:] == ["cli", "scripts"], order
    packages = {package(name) for name in modules()} - {""}
    assert packages <= set(order), (
        f"packages missing from ARCHITECTURE.md's Layers table: {sorted(packages - set(order))}")


def test_every_package_is_a_row_of_the_layout_table() -> None:
    table = (ROOT / "docs" / "layout.md").read_text().split("| package |", 1)[1]
    rows = set(re.findall(r"^\| `looprl\.(\w+)` \|", table, flags=re.MULTILINE))
    packages = {package(name) for name in modules()} - {""}
    assert rows == packages, (f"docs/layout.md's package table lacks {sorted(packages - rows)}, "
                              f"names no package {sorted(rows - packages)}")


def test_no_package_imports_a_package_below_it() -> None:
    order = layers()
    rank = {layer: i for i, layer in enumerate(order)}
    rank[""] = len(order)  # the top package ``looprl`` may import every layer: none imports it
    known = modules()
    upward = {}
    for name, path in known.items():
        for target, line, _, _ in imports(name, path, known):
            mine, theirs = package(name), package(target)
            if mine and mine != theirs and rank[theirs] > rank[mine]:
                upward[(name, target)] = f"{path.relative_to(ROOT)}:{line}"
    new = {edge: where for edge, where in upward.items() if edge not in KNOWN_UPWARD}
    assert not new, "imports of a lower layer (see ARCHITECTURE.md, Layers): " + "; ".join(
        f"{where} {a} imports {b}" for (a, b), where in sorted(new.items()))
    _warn_stale("KNOWN_UPWARD", KNOWN_UPWARD - set(upward))


def test_no_cycle_between_the_modules_of_a_package() -> None:
    known = modules()
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        for target, _, type_only, whole in imports(name, path, known):
            if (whole and not type_only and target in known and target != name
                    and package(target) == package(name)):
                graph[name].add(target)
    cycles = {tuple(sorted(component)) for component in strongly_connected(graph)
              if len(component) > 1}
    new = cycles - KNOWN_CYCLES
    assert not new, "import cycles (even through imports inside functions): " + "; ".join(
        " <-> ".join(cycle) for cycle in sorted(new))
    _warn_stale("KNOWN_CYCLES", KNOWN_CYCLES - cycles)


def _warn_stale(name: str, stale: set) -> None:
    if stale:
        warnings.warn(f"{name} lists what the code no longer has, delete it: {sorted(stale)}",
                      stacklevel=2)


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of ``graph`` (iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(component)
    return components


def test_strongly_connected_finds_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert sorted(sorted(c) for c in strongly_connected(graph)) == [["a", "b", "c"], ["d"], ["e"]]


def test_core_imports_no_agent_and_built_in_names_still_resolve() -> None:
    """``looprl.core`` names no lower layer: ``looprl`` (the top package) has ``Policy(type_=
    ...)`` import ``looprl.agents`` the first time a built-in name is asked for. (The name
    resolves to its factory, which refuses an argument it does not take: building the network
    would import ``torch._dynamo``, seconds in a fresh process, for its optimizer; the
    policies built by name are checked in ``test_actor_critic_policies``.)"""
    import subprocess
    import sys

    code = ("import sys\nfrom looprl.core import Policy, Trainer\n"
            "assert 'looprl.agents' not in sys.modules, 'import looprl.core imported agents'\n"
            "try:\n"
            "    Policy(type_='actor-critic-separate', args=dict(obs_dim=4, action_dim=2, no=1))\n"
            "except TypeError as error:\n"
            "    print(error)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "actor_critic_policy() got an unexpected keyword argument 'no'"
