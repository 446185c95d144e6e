"""How an actor hands segments to the trainer (``SegmentSender``) and what a trainer publishes
(``publication``): an asynchronous actor batches small segments into few puts, in order, and
loses none; a synchronous one puts each at once and returns the trainer's answer; parameters
travel as NumPy arrays and come back as equal tensors."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

pytest.importorskip("ray")

from looprl.core import SampleBatch  # noqa: E402
from looprl.distributed import sender as sender_module  # noqa: E402
from looprl.distributed.sender import (  # noqa: E402
    HOLD_ROWS,
    SegmentSender,
    transitions,
)
from looprl.distributed.server import publication, unpack  # noqa: E402

# (Ray's get and wait are faked: these tests start no Ray instance)


class _Ref:
    """A put's answer, done or still in flight."""

    def __init__(self, value: int, done: bool) -> None:
        self.value, self.done = value, done


class _Ray:
    """Ray's ``get`` and ``wait`` over ``_Ref`` s (``get`` of one in flight: it completes)."""

    def __init__(self) -> None:
        self.gets = 0

    def get(self, ref: _Ref) -> int:
        self.gets += 1
        ref.done = True
        return ref.value

    def wait(self, refs: list[_Ref], timeout: float) -> tuple[list, list]:
        assert timeout == 0
        return [r for r in refs if r.done], [r for r in refs if not r.done]


class _Trainer:
    """Records each put's segments; answers 7, at once or (``slow``) left in flight."""

    def __init__(self, slow: bool = False) -> None:
        self.puts: list[list] = []
        self.frames: list[int] = []  # (each put's: the actor's env steps since the last)
        self.writes: list[list | None] = []  # (each put's: the hooks' writes of trainer keys)
        self.put = self
        self.slow = slow

    def remote(self, segments: list, frames: int = 0, writes: list | None = None) -> _Ref:
        self.puts.append(list(segments))
        self.frames.append(frames)
        self.writes.append(writes)
        return _Ref(7, done=not self.slow)


@pytest.fixture
def fake_ray(monkeypatch) -> _Ray:
    fake = _Ray()
    monkeypatch.setattr(sender_module, "ray", fake)
    return fake


def _segment(index: int, steps: int = 1) -> SampleBatch:
    """A ``[steps + 1, 1]`` segment whose rewards carry ``index``."""
    return SampleBatch(obs=np.zeros((steps + 1, 1, 2)), reward=np.full((steps + 1, 1), index))


def test_an_asynchronous_actor_sends_one_transition_segments_in_few_puts(fake_ray,
                                                                         monkeypatch):
    monkeypatch.setattr(sender_module, "HOLD_SECONDS", 60.0)  # (only the row count sends)
    trainer, waits = _Trainer(), []
    sender = SegmentSender(trainer, sync=False, index=0, waited=waits.append)
    for index in range(3 * HOLD_ROWS + 5):
        assert sender.send([_segment(index)]) is None
    assert [len(put) for put in trainer.puts] == [HOLD_ROWS] * 3
    assert sender.flush() == 7  # (the last five, at the budget's end)
    sent = [int(segment.reward[0, 0]) for put in trainer.puts for segment in put]
    assert sent == list(range(3 * HOLD_ROWS + 5))  # none lost, none twice, in order
    assert sender.send([]) is None and len(trainer.puts) == 4  # nothing held: no put
    assert len(waits) >= 4 and all(seconds >= 0 for seconds in waits)


def test_an_asynchronous_actor_sends_what_it_holds_once_the_hold_time_passed(fake_ray,
                                                                             monkeypatch):
    monkeypatch.setattr(sender_module, "HOLD_SECONDS", 0.0)
    trainer = _Trainer()
    sender = SegmentSender(trainer, sync=False, index=0, waited=lambda seconds: None)
    sender.send([_segment(0)])
    assert len(trainer.puts) == 1
    sender.send([_segment(1, steps=HOLD_ROWS)])  # (a long segment: sent at once)
    assert [[int(s.reward[0, 0]) for s in put] for put in trainer.puts] == [[0], [1]]


def test_a_synchronous_actor_puts_each_segment_at_once_and_gets_the_answer(fake_ray):
    trainer = _Trainer(slow=True)
    sender = SegmentSender(trainer, sync=True, index=0, waited=lambda seconds: None)
    assert sender.send([_segment(0)], frames=3) == 7
    assert sender.send([], frames=4) is None  # (a step that completed none)
    assert sender.send([_segment(1), _segment(2)], frames=6) == 7
    assert [len(put) for put in trainer.puts] == [1, 2]
    assert fake_ray.gets == 2  # (it waited for each answer)
    # each put carries the actor's env steps since the last (the trainer logs at the run's
    # frame, not at its count of transitions, which counts the rows that start an episode)
    assert trainer.frames == [3, 3]


def test_an_asynchronous_actor_holds_segments_while_its_put_is_in_flight(fake_ray,
                                                                         monkeypatch):
    monkeypatch.setattr(sender_module, "HOLD_SECONDS", 0.0)
    trainer = _Trainer(slow=True)  # (each put stays in flight until the actor waits for it)
    sender = SegmentSender(trainer, sync=False, index=0, waited=lambda seconds: None)
    sender.send([_segment(0)])
    for index in range(1, HOLD_ROWS):  # held: the first put is in flight
        sender.send([_segment(index)])
    assert len(trainer.puts) == 1 and fake_ray.gets == 0
    sender.send([_segment(HOLD_ROWS)])  # HOLD_ROWS held: it waits for the first, then puts
    assert fake_ray.gets == 1
    assert [len(put) for put in trainer.puts] == [1, HOLD_ROWS]


def test_a_put_carries_what_the_hooks_wrote_to_the_trainers_keys_since_the_last(fake_ray):
    """Each hub's ``take_writes`` (one per agent of independent learners) goes with the next
    put; a put after none carries ``None`` (nothing for the trainer to look at)."""

    class Hub:
        def __init__(self) -> None:
            self.written: dict = {}

        def take_writes(self) -> dict:
            taken, self.written = self.written, {}
            return taken

    trainer, hubs = _Trainer(), [Hub(), Hub()]
    sender = SegmentSender(trainer, sync=True, index=0, waited=lambda seconds: None, hubs=hubs)
    sender.send([_segment(0)])
    hubs[1].written = {"hp/lr": 0.5}
    sender.send([_segment(1)])
    sender.send([_segment(2)])
    assert trainer.writes == [None, [{}, {"hp/lr": 0.5}], None]


def test_a_publication_carries_tensors_as_arrays_and_gives_back_equal_tensors():
    parameters = {"weight": torch.randn(3, 4), "steps": torch.tensor(5),
                  "half": torch.randn(2, dtype=torch.bfloat16), "note": "kept"}
    payload = publication(parameters, [{"rnd": 1}], [{"hp/lr": 0.1}],
                          [{"hp/epsilon": (3, 0.2)}], {"hp/lr": 0.1, "hp/epsilon": 0.5})
    carried = pickle.loads(payload)[0]  # (what travels: arrays where NumPy has the dtype)
    assert isinstance(carried["weight"], np.ndarray) and isinstance(carried["steps"], np.ndarray)
    restored, shared, values, written, run_values = unpack(payload)
    assert shared == [{"rnd": 1}] and values == [{"hp/lr": 0.1}]
    assert written == [{"hp/epsilon": (3, 0.2)}]
    assert run_values == {"hp/lr": 0.1, "hp/epsilon": 0.5}
    assert restored["note"] == "kept"
    for key in ("weight", "steps", "half"):
        assert isinstance(restored[key], torch.Tensor)
        assert restored[key].dtype == parameters[key].dtype
        assert torch.equal(restored[key], parameters[key])
    module = torch.nn.Linear(4, 3)
    module.load_state_dict(unpack(publication(torch.nn.Linear(4, 3).state_dict()))[0])


def test_an_actor_served_by_a_policy_worker_sends_its_last_rows(fake_ray, monkeypatch):
    """(Was: with ``runtime.policy_workers > 0`` an actor whose budget was spent neither
    recorded its latest observations' rows, which complete its segments, nor sent what its
    sender held: the run lost them.)"""
    import threading

    from looprl.distributed import AlgorithmSpec, EnvRunner, workers

    spec = AlgorithmSpec(env="CartPole-v1", policy="actor-critic-separate", trainer="ppo",
                         policy_args={"obs_dim": {"obs": 4}, "action_dim": 2})
    policy = spec.make_policy()
    monkeypatch.setattr(workers, "ray", fake_ray)

    class PolicyWorker:  # answers at once (``_Ref`` done)
        rollout = None

        def remote(self, request):
            return _Ref((policy.rollout(request).to_numpy(), 0), done=True)

    class Sender:
        sent, flushed = [], False

        def send(self, segments, frames=0):
            self.sent += segments

        def flush(self):
            self.flushed = True

    class Stop(threading.Event):
        def wait(self, timeout=None):  # (run waits for stop once finished: not here)
            return True

    server = PolicyWorker()
    server.rollout = server
    actor = object.__new__(workers.ActorWorker.__ray_actor_class__)
    actor.__dict__.update(
        local=None, policy_worker=server, sender=Sender(), sync=False, budget=8, index=0,
        _stop=Stop(), _lock=threading.Condition(), _stats=workers._fresh_stats(), _meta_state=None,
        runner=EnvRunner(spec.make_env, None, 2, 4, policy.default_policy_state, groups=2))
    actor.run()
    assert actor._finished and actor.sender.flushed
    assert sum(transitions(segment) for segment in actor.sender.sent) == 8  # 2 copies x 4
