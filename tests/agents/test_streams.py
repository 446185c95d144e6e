"""``RandomStream``: a unit's random numbers do not depend on who else draws in its process."""

from __future__ import annotations

import numpy as np
import torch

from looprl.agents.streams import RandomStream


def test_a_streams_draws_do_not_depend_on_draws_outside_it() -> None:
    torch.manual_seed(0)
    alone = RandomStream(5)
    with alone:
        first = torch.rand(3)
    with alone:
        second = torch.rand(3)
    shared = RandomStream(5)
    with shared:
        assert torch.equal(torch.rand(3), first)
    torch.rand(100)  # another unit of the process draws in between
    outer = torch.get_rng_state()
    with shared:
        assert torch.equal(torch.rand(3), second)
    assert torch.equal(torch.get_rng_state(), outer)  # the process's numbers go on untouched


def _dqn_actor(epsilon: float = 0.5):
    """An Actor over a freshly made ``q-network`` policy (4 observations, 3 actions)."""
    import looprl.agents  # noqa: F401 -- registers the policies
    from looprl.agents.actor import Actor
    from looprl.core import Policy

    return Actor(Policy(type_="q-network", args={"obs_dim": {"obs": 4}, "action_dim": 3,
                                                 "epsilon": epsilon, "seed": 0}))


def _actions(actor, calls: int = 20) -> list[list[int]]:
    from looprl.core import NamedArray, RolloutRequest

    obs = NamedArray(obs=np.linspace(-1, 1, 32, dtype=np.float32).reshape(8, 4))
    return [actor.rollout(RolloutRequest(obs=obs)).action.tolist() for _ in range(calls)]


def test_a_dqn_actors_coins_come_from_its_one_stream_seeded_or_not() -> None:
    """A seeded actor's stream is the only source of its exploration: the same actions as an
    unseeded actor on torch's generator seeded alike (NumPy's generator plays no part)."""
    seeded = _dqn_actor()
    seeded.seed(7)
    np.random.seed(1)
    expected = _actions(seeded)
    torch.manual_seed(7)
    np.random.seed(2)  # another NumPy state: no effect
    assert _actions(_dqn_actor()) == expected
    assert len({str(row) for row in expected}) > 1  # it explores (epsilon 0.5)
    again = _dqn_actor()
    again.seed(7)
    torch.rand(50)  # draws outside the stream: no effect
    assert _actions(again) == expected


def test_a_seeded_learner_samples_from_its_replays_own_generator() -> None:
    from looprl.agents.learner import make_learner
    from looprl.core import SampleBatch, TrainerStepResult

    class Indices:  # a trainer recording the first column of each batch's observations
        sample_buffer = "uniform"
        policy = type("P", (), {"version": 0})()
        seen: list = []

        def step(self, batch: SampleBatch) -> TrainerStepResult:
            self.seen.append(batch.obs[0, :, 0].tolist())
            torch.rand(3)  # a trainer's own draw, from the learner's stream
            return TrainerStepResult({}, 0)

    learner = make_learner(Indices(), buffer_args={"size": 100, "batch": 4})
    learner.seed(3)
    t = np.arange(41, dtype=np.float32)
    learner.put(SampleBatch(obs=np.repeat(t[:, None, None], 2, axis=2),
                            action=np.zeros((41, 1)), reward=t[:, None],
                            done=np.zeros((41, 1), bool), truncated=np.zeros((41, 1), bool)))
    learner.train()
    generator = torch.Generator().manual_seed(3)
    expected = [torch.randint(0, 40, (4,), generator=generator).float().tolist()
                for _ in range(40)]
    assert learner.trainer.seen == expected
