"""Learning checks for independent learners on PettingZoo's tic-tac-toe (``tictactoe_v3``).

Both players learn at once, against each other (self-play of independent learners). The
trained players are then evaluated against a random opponent that takes uniformly random
legal moves, in both seats: ``score`` is the mean over the two seats of
``win rate - loss rate``. A random policy scores about 0 (the first player wins 58%, the
second 29%); the test passes when an evaluation, made every few thousand frames, reaches
0.3 -- over 200 games per seat, about six standard deviations above random play. (The
evaluations share the training environment: their interval is part of the seeded run.)

A DQN that bootstraps through the end of the game (terminal mask dropped from its targets)
still beats a random player by frame 4,000, so the DQN check also reads its Q-values: with
rewards in {-1, 0, 1} no return exceeds 1, and a correct DQN values its replayed positions
at most about 1.4 (99th percentile, 1.5 by frame 8,000), while without the terminal mask
they climb past 2 by frame 2,000 and past 5 by frame 4,000.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("pettingzoo")

from helpers import evaluations_until  # noqa: E402
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


def replayed_values(agent) -> torch.Tensor:
    """A DQN agent's greedy value ``max_a Q(s, a)`` (legal ``a``) of every position ``s`` in
    its replay buffer that is not an episode's final one (which no update trains)."""
    dqn = agent.unwrapped
    buffer = dqn.replay_buffer
    batch = buffer.gather(torch.arange(len(buffer)))  # every row: no draw from its generator
    live = ~(batch.done[0] | batch.truncated[0])
    q = dqn.policy.q.no_grad(dqn.policy.states(batch.obs[0], (len(buffer),)))
    return q[live].max(dim=-1).values


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
    scores = evaluations_until(experiment, frames, eval_every, BAR,
                               lambda: score(env, preset.test_agent().agents))
    assert max(scores) >= BAR, f"{preset.name} scores against a random player: {scores}"
    if builder is dqn:  # values within reach of the returns: the targets stop at the end
        for agent, learner in experiment.agent.agents.items():
            high = float(replayed_values(learner).quantile(0.99))
            assert high < 2.0, f"{agent}'s replayed positions are valued up to {high:.2f}"
    run = tmp_path / preset.name / "tictactoe_v3"
    for agent in ("player_1", "player_2"):
        assert (run / f"{preset.name}.{agent}" / "tictactoe_v3" / "returns100.csv").exists()
