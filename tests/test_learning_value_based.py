"""Learning checks of the value-based presets: short, seeded runs on CartPole-v1.

A random policy scores about 22 on CartPole-v1, the untrained greedy agent about 10. Each
run evaluates the greedy test agent (10 episodes) periodically and passes when an evaluation
reaches 100 within the budget, which only a learning agent does: the replay methods get there
in 2,000 to 5,000 frames, and with the terminal mask dropped from their targets (the one
signal CartPole gives) they stay near 10 for the whole budget. The seed also fixes the
initial weights; the evaluations share the training environment, so the evaluation interval
is part of the seeded run. The hidden layers are 64 wide (DQN's and C51's 256, Rainbow's 128):
each update costs less, and DDQN, swapped-parts DQN and C51 still pass by frame 3,000 (seeds 1
to 3; budget 10,000 frames). Rainbow gets there by frame 3,000 (its budget of 5,000 frames
keeps it well short of what a broken Rainbow reaches by chance later: 98 at frame 7,000 without
the terminal mask).
VQN learns at 3e-3 (not 1e-3): by frame 10,000 instead of 120,000.
"""

from __future__ import annotations

import pytest

from helpers import evaluations_until
from looprl.environments import GymEnvironment
from looprl.experiments import make_experiment
from looprl.experiments.experiment import seed_everything
from looprl.presets.classic_control import c51, ddqn, dqn, rainbow, vqn, vsarsa

BAR = 100
#: DQN with every part swapped by name (looprl.presets.parts)
SWAPPED = dqn.hyperparameters(exploration="ez_greedy", epsilon=0.1, buffer="prioritized",
                              update="clipped_double_q")


@pytest.mark.parametrize(
    ("builder", "frames", "eval_every"),
    [
        (ddqn.hyperparameters(hidden=64), 10_000, 1_000),
        (SWAPPED.hyperparameters(hidden=64), 10_000, 1_000),
        (c51.hyperparameters(hidden=64), 10_000, 1_000),
        (rainbow.hyperparameters(hidden=64), 5_000, 1_000),
        (vqn.hyperparameters(lr=3e-3), 200_000, 5_000),
        (vsarsa, 200_000, 20_000),
    ],
    ids=["ddqn", "dqn-swapped-parts", "c51", "rainbow", "vqn", "vsarsa"],
)
def test_beats_random_on_cartpole(builder, frames, eval_every, tmp_path):
    seed_everything(1)  # the initial weights too
    env = GymEnvironment("CartPole-v1")
    preset = builder.env(env).device("cpu").build()
    experiment = make_experiment(
        preset, env, train_steps=frames, logdir=str(tmp_path), quiet=True, verbose=False, seed=1
    )
    evaluations = evaluations_until(experiment, frames, eval_every, BAR)
    assert max(evaluations) >= BAR, f"{preset.name} evaluations: {evaluations}"
