"""``ESRunner.record``: the hook the runner calls for every scored individual (a subclass
notes each one there, as ``benchmarks/search_bad_ppo.py``'s ``ClockedES`` does)."""

from __future__ import annotations

from typing import Any

import pytest

from looprl.runners import ESRunner


class NotingES(ESRunner):
    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.noted: list[tuple[int, int, dict[str, Any], float]] = []

    def record(self, individual: Any, fitness: float, agent: Any) -> float:
        self.noted.append((individual.iteration, individual.index, individual.values, fitness))
        return super().record(individual, fitness, agent)


@pytest.mark.parametrize("targets", [{"lr": (1e-4, 1e-2, "log")}, {"hp/clip": (0.05, 0.5)}],
                         ids=["fresh-agents", "one-agent"])
def test_every_scored_individual_is_recorded_in_order(small_ppo, targets):
    runner = NotingES(small_ppo, "CartPole-v1", search_targets=targets, iterations=2, popsize=2,
                      num_steps_per_iteration=64, eval_episodes=1, seed=0, strategy="openai",
                      sigma=0.3)
    results, _ = runner.run()
    history = results["history"]
    assert [(i, j) for i, j, _, _ in runner.noted] == [(i, j) for i in (1, 2) for j in range(2)]
    assert [values for _, _, values, _ in runner.noted] == [v for h in history for v in h["values"]]
    assert [fitness for *_, fitness in runner.noted] == [f for h in history for f in h["fitness"]]
    assert results["best"]["fitness"] == max(fitness for *_, fitness in runner.noted)
