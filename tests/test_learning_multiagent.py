"""Learning checks for independent learners on PettingZoo's tic-tac-toe (``tictactoe_v3``).

Both players learn at once, against each other (self-play of independent learners). The
trained players are then evaluated against a random opponent that takes uniformly random
legal moves, in both seats: ``score`` is the mean over the two seats of
``win rate - loss rate``. A random policy scores about 0 (the first player wins 58%, the
second 29%); the test passes when an evaluation, made every few thousand frames, reaches
0.3 -- over 200 games per seat, about six standard deviations above random play. (The
evaluations share the training environment: their interval is part of the seeded run.)
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from looprl.agents.independent import IndependentMultiagent, RandomAgent  # noqa: E402
from looprl.environments.multiagent import MultiagentPettingZooEnv  # noqa: E402
from looprl.experiments.experiment import seed_everything  # noqa: E402
from looprl.experiments.multiagent import MultiagentEnvExperiment, play  # noqa: E402
from looprl.presets.multiagent import dqn, ppo  # noqa: E402

GAMES = 200
BAR = 0.3


def score(env, players: dict, games: int = GAMES) -> float:
    """Mean over seats of (win rate - loss rate) of ``players`` against a random opponent."""
    per_seat = []
    for seat, other in (("player_1", "player_2"), ("player_2", "player_1")):
        opponent = RandomAgent(env.action_space(other), seed=0)
        returns = play(env, IndependentMultiagent({seat: players[seat], other: opponent}), games)
        per_seat.append(float(np.mean(np.sign(returns[seat]))))
    return float(np.mean(per_seat))


def test_random_play_scores_about_zero():
    env = MultiagentPettingZooEnv("tictactoe_v3", seed=7)
    randoms = {n: RandomAgent(env.action_space(n), seed=1) for n in env.possible_agents}
    assert abs(score(env, randoms)) < 0.12


@pytest.mark.parametrize(
    ("builder", "frames", "eval_every"),
    [(dqn, 16_000, 2_000), (ppo, 24_000, 2_000)],
    ids=["dqn", "ppo"],
)
def test_independent_learners_beat_a_random_player(builder, frames, eval_every, tmp_path):
    seed_everything(1)  # before building, so that the initial weights are seeded too
    env = MultiagentPettingZooEnv("tictactoe_v3")
    preset = builder.env(env).device("cpu").build()
    experiment = MultiagentEnvExperiment(
        preset, env, train_steps=frames, logdir=str(tmp_path), quiet=True, verbose=False, seed=1
    )
    scores = []
    for target in range(eval_every, frames + 1, eval_every):
        experiment.train(frames=target)
        scores.append(score(env, preset.test_agent().agents))
        if scores[-1] >= BAR:
            break
    experiment.close()
    assert max(scores) >= BAR, f"{preset.name} scores against a random player: {scores}"
    run = tmp_path / preset.name / "tictactoe_v3"
    for agent in ("player_1", "player_2"):
        assert (run / f"{preset.name}.{agent}" / "tictactoe_v3" / "returns100.csv").exists()
