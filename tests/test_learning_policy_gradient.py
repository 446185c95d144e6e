"""Learning checks of the policy-gradient presets VPG, VAC, A2C and PPG on CartPole-v1.

A random policy scores about 22 on CartPole-v1. Each seeded run evaluates the greedy test agent
(10 episodes) before it trains, where it must score under 20: seed 0's untrained networks score
about 9, while some seeds' untrained greedy agents balance the pole (seed 1's scored 221, and
with the policy loss zeroed every preset passed at its first evaluation). It then evaluates
every 1,000 frames and passes when an evaluation reaches 100 (as the value-based checks), which
an agent whose policy does not learn never does. Seed 0 gets there by frame 2,000 (VPG, PPG),
4,000 (VAC) and 7,000 (A2C); over seeds 0, 3, 5, 12, 15 and 16 the latest were frames 15,000
(VPG), 9,000 (VAC), 7,000 (A2C) and 5,000 (PPG): each budget is over 1.4 times that. (PPG's
budget is part of its seeded run: its schedules anneal over it.)
"""

from __future__ import annotations

import pytest

from helpers import evaluations_until
from looprl.environments import GymEnvironment
from looprl.experiments import make_experiment
from looprl.experiments.experiment import seed_everything
from looprl.presets.classic_control import a2c, ppg, vac, vpg

SEED, BAR = 0, 100


@pytest.mark.parametrize(("builder", "frames"),
                         [(vpg, 22_000), (vac, 13_000), (a2c, 11_000), (ppg, 10_000)],
                         ids=["vpg", "vac", "a2c", "ppg"])
def test_beats_random_on_cartpole(builder, frames, tmp_path):
    seed_everything(SEED)  # before building, so that the initial weights are seeded too
    env = GymEnvironment("CartPole-v1")
    preset = builder.env(env).device("cpu").build()
    experiment = make_experiment(preset, env, train_steps=frames, logdir=str(tmp_path),
                                 quiet=True, verbose=False, seed=SEED)
    untrained = sum(experiment.test(episodes=10)) / 10
    evaluations = evaluations_until(experiment, frames, 1_000, BAR)
    assert untrained < 20, f"the untrained {preset.name} already scores {untrained}"
    assert max(evaluations) >= BAR, f"{preset.name} evaluations: {evaluations}"
    assert experiment.episode > 0
