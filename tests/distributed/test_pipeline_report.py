"""``PipelineReport.mean_return``: the mean of the last 20 returns, as every report of a run
computes a mean (``looprl.experiments.logger.mean_return``); and ``test_pipeline`` seeds every
generator a seeded run does. No Ray."""

from __future__ import annotations

import math
import random

from looprl.distributed import AlgorithmSpec, test_pipeline
from looprl.distributed.pipeline import PipelineReport


def test_mean_return_is_of_the_last_20_episodes() -> None:
    assert PipelineReport(episodes=[float(i) for i in range(30)]).mean_return == 19.5
    assert PipelineReport(episodes=[1.0, 2.0]).mean_return == 1.5
    assert math.isnan(PipelineReport().mean_return)


def test_a_seeded_pipeline_seeds_pythons_generator_too() -> None:
    spec = AlgorithmSpec(env="CartPole-v1", policy="actor-critic-separate",
                         policy_args={"obs_dim": {"obs": 4}, "action_dim": 2}, trainer="ppo",
                         trainer_args={"epochs": 1}, buffer_args={"batch_streams": 2})
    state = random.getstate()
    first = test_pipeline(spec, episodes=1, segment_length=8, seed=3)
    assert random.getstate() == state  # (the caller's generator goes on as it left it)
    random.random()  # (the caller draws between: the pipeline seeds its own anew)
    again = test_pipeline(spec, episodes=1, segment_length=8, seed=3)
    assert again.episodes == first.episodes
