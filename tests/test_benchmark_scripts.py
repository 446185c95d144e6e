"""The classic-control learning benchmark finds every preset it names (it imports them by
name at run time, after minutes of other runs: a renamed module failed only then)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).parent.parent / "benchmarks"


def _script(name: str):
    sys.path.insert(0, str(BENCHMARKS))  # (their harness)
    try:
        spec = importlib.util.spec_from_file_location(f"benchmark_{name}", BENCHMARKS / name)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_learning_classic_control_builds_every_preset_it_names() -> None:
    script = _script("learning_classic_control.py")
    assert all(hasattr(script.builder(name), "build") for name in script.BUDGET)

