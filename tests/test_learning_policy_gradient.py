"""Learning checks of the policy-gradient presets VPG, VAC, A2C and PPG on CartPole-v1.

A random policy scores about 22 on CartPole-v1. As in ``tests/test_learning.py``, each
seeded run evaluates the greedy test agent (10 episodes) every few thousand frames and
passes when an evaluation reaches 195 (the classic "solved" bar of v0) within budget.
"""

from __future__ import annotations

import pytest

from looprl.environments import GymEnvironment
from looprl.experiments import make_experiment
from looprl.experiments.experiment import seed_everything
from looprl.presets.classic_control.a2c import a2c
from looprl.presets.classic_control.ppg import ppg
from looprl.presets.classic_control.vac import vac
from looprl.presets.classic_control.vpg import vpg


@pytest.mark.parametrize(
    ("builder", "frames", "eval_every"),
    [(vpg, 60_000, 2_000), (vac, 80_000, 2_000), (a2c, 60_000, 5_000), (ppg, 60_000, 4096)],
    ids=["vpg", "vac", "a2c", "ppg"],
)
def test_beats_random_on_cartpole(builder, frames, eval_every, tmp_path):
    seed_everything(1)  # before building, so that the initial weights are seeded too
    env = GymEnvironment("CartPole-v1")
    preset = builder.env(env).device("cpu").build()
    experiment = make_experiment(
        preset, env, train_steps=frames, logdir=str(tmp_path), quiet=True, verbose=False, seed=1
    )
    evaluations = []
    for target in range(eval_every, frames + 1, eval_every):
        experiment.train(frames=target)
        evaluations.append(sum(experiment.test(episodes=10)) / 10)
        if evaluations[-1] >= 195:
            break
    experiment.close()
    assert max(evaluations) >= 195, f"{preset.name} evaluations: {evaluations}"
    assert experiment.episode > 0
