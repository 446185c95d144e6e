"""The benchmark scripts run through today's API (each failed only after minutes of other work): the
classic-control learning benchmark finds every preset it names, the Atari Rainbow evaluation
measures on its replay and agents, the distributed learning runs fit their presets."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).parent.parent / "benchmarks"


def _script(name: str):
    sys.path.insert(0, str(BENCHMARKS))  # (their harness)
    try:
        spec = importlib.util.spec_from_file_location(f"benchmark_{name}", BENCHMARKS / name)
        module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # (dataclasses)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_learning_classic_control_builds_every_preset_it_names() -> None:
    script = _script("learning_classic_control.py")
    assert all(hasattr(script.builder(name), "build") for name in script.BUDGET)



def test_atari_rainbow_eval_measures_through_the_agents_api(tmp_path: Path) -> None:
    """Its states come from a replay of 3-step windows and its noisy agent is an ``Actor`` (the
    script crashed on both only after training)."""
    pytest.importorskip("ale_py")
    script = _script("atari_rainbow_eval.py")
    preset, buffer, _ = script.train(40, seed=0, logdir=str(tmp_path))
    states = script.replay_states(buffer, 16, seed=0)
    evaluation, noisy = preset.test_agent(), script.noisy_agent(preset)
    mean = evaluation.policy.greedy.eval(states)
    assert mean.shape == (16,)
    # the mean network's actions (epsilon 0.001 may change one); the noisy network's differ
    assert sum(int((evaluation.act(states) != mean).sum()) for _ in range(3)) <= 2
    assert sum(int((noisy.act(states) != mean).sum()) for _ in range(3)) > 2


def test_distributed_learning_runtimes_fit_their_presets() -> None:
    """Each family's Ray run is one its preset accepts (a ``segment_length`` of its own was
    refused only after the local runs)."""
    pytest.importorskip("ray")
    from looprl.distributed import DistributedRun, RuntimeConfig

    script = _script("distributed_learning.py")
    for family in script.FAMILIES.values():
        DistributedRun(family.preset(0), RuntimeConfig(**family.runtime), frames=family.budget,
                       logdir=None, quiet=True)
