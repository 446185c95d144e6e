"""The Ray runtime's waits for a worker's answer follow ``answer_timeout(runtime)``
(``runtime.placement_timeout``, at least 120 s) and name that option when they run out (was:
fixed 30 s waits, silent or naming nothing to raise, that a loaded cluster ran past). Stand-ins
that never answer and a tiny timeout: no Ray instance, no real waits."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

ray = pytest.importorskip("ray")

from looprl.distributed import placement, trainer_worker, workers  # noqa: E402
from looprl.distributed.cluster import answer_timeout  # noqa: E402
from looprl.distributed.config import RuntimeConfig  # noqa: E402
from looprl.distributed.run_state import DistributedResult, SampleCounts  # noqa: E402
from looprl.distributed.sender import PolicyCopy  # noqa: E402

TINY = 0.05
RAISE = "raise runtime.placement_timeout"


def test_answer_timeout_is_the_placement_timeout_at_least_120_s() -> None:
    assert answer_timeout(RuntimeConfig()) == 120.0
    assert answer_timeout(RuntimeConfig(placement_timeout=600.0)) == 600.0


class _Silent:
    """A worker whose answers never come: each ``METHOD.remote(*args)`` is recorded."""

    def __init__(self, asked: list[tuple[str, tuple]]) -> None:
        self.asked = asked

    def __getattr__(self, method: str) -> SimpleNamespace:
        return SimpleNamespace(remote=lambda *args: self.asked.append((method, args)))


def test_the_driver_waits_answer_timeout_in_all_for_silent_workers(monkeypatch, caplog) -> None:
    """``stats`` and ``actors_meta_state``: one deadline for all (was 30 s each, and 10 s for
    a step to end), and the warning names the option to raise."""
    asked: list[tuple[str, tuple]] = []
    waited: list[float] = []

    def never(ref: object, timeout: float | None = None) -> None:  # (Ray's, run out)
        waited.append(timeout)
        raise ray.exceptions.GetTimeoutError("no answer")

    monkeypatch.setattr(ray, "get", never)
    monkeypatch.setattr(placement, "answer_timeout", lambda runtime: TINY)
    pool = placement.WorkerPool(None, RuntimeConfig(actors=2), DistributedResult(),
                                SampleCounts())
    pool.workers = {name: _Silent(asked) for name in ("actor0", "actor1", "trainer")}
    assert pool.stats() == {}
    with caplog.at_level("WARNING", "looprl.distributed"):
        assert pool.actors_meta_state() == {}
    assert ("components_state", (TINY / 2,)) in asked  # (the actors answer within it)
    assert len(waited) == 5 and all(timeout is not None and timeout <= TINY for timeout in waited)
    assert caplog.text.count(f"no answer within {TINY:g}s: the machine may be overloaded; "
                             f"{RAISE}") == 2, caplog.text


def test_a_sync_actor_waits_answer_timeout_for_its_trained_parameters(monkeypatch,
                                                                      caplog) -> None:
    """(Was: 30 s, then acting on with the old parameters without a word.)"""
    copy = object.__new__(PolicyCopy)
    copy.__dict__.update(policy=SimpleNamespace(version=2), maybe_pull=lambda wait=False: None)
    with caplog.at_level("WARNING", "looprl.distributed"):
        copy.pull_until(3, TINY)
    assert "version 3 did not arrive" in caplog.text and RAISE in caplog.text, caplog.text
    pulled: list[tuple] = []  # an actor worker's wait, and its evaluation's normalizers'
    actor = object.__new__(workers.ActorWorker.__ray_actor_class__)
    actor.__dict__.update(
        runner=SimpleNamespace(segments=list, total_frames=0), sync=True, timeout=TINY,
        sender=SimpleNamespace(send=lambda segments, frames: 3),
        local=SimpleNamespace(pull_until=lambda *args: pulled.append(args)),
        normalizers=["actor0"], _stop=threading.Event())
    monkeypatch.setattr(workers, "normalize_as_training", lambda *args: pulled.append(args))
    actor._send_completed()
    actor._normalize_as_training()
    assert pulled == [(3, TINY), (actor.runner, ["actor0"], TINY)]


def test_a_sync_trainer_waits_answer_timeout_for_a_training_step(monkeypatch, caplog) -> None:
    """(Was: 30 s, then the actor's ``put`` answered without a word.)"""
    monkeypatch.setattr(trainer_worker, "answer_timeout", lambda runtime: TINY)
    trainer = object.__new__(trainer_worker.TrainerWorker.__ray_actor_class__)
    trainer.__dict__.update(runtime=RuntimeConfig(), _waiting=0, _more=0, _training=True,
                            _stop=threading.Event(), _lock=threading.Condition())
    with caplog.at_level("WARNING", "looprl.distributed"), trainer._lock:
        trainer._wait_trained(3)  # (a step that never ends)
    assert trainer._waiting == 0
    assert "version 3 were not trained on" in caplog.text, caplog.text
    assert f"no answer within {TINY:g}s" in caplog.text and RAISE in caplog.text, caplog.text


def test_a_trainer_waits_answer_timeout_for_its_last_publication(monkeypatch) -> None:
    """(Was: 10 s, its result ignored: the run's last parameters silently not published.)"""
    monkeypatch.setattr(trainer_worker, "answer_timeout", lambda runtime: TINY)
    flushed: list[float] = []
    trainer = object.__new__(trainer_worker.TrainerWorker.__ray_actor_class__)
    trainer.__dict__.update(runtime=RuntimeConfig(), _next_batch=lambda: None,
                            publisher=SimpleNamespace(flush=flushed.append))
    trainer.run()  # (stopped: no batch)
    assert flushed == [TINY]


def test_a_worker_error_is_named_by_its_first_line_and_rays_by_its_last() -> None:
    """A multi-line error of the user's (torch's NaN check) keeps its summary, the first line
    (was: the last, ``ValueError: [nan, nan, nan]])``); Ray's wrappers end with the original
    message."""
    from looprl.distributed.cluster import error_line
    raised = ValueError("Expected parameter logits ... but found invalid values:\n"
                        "tensor([[nan, nan, nan]])")
    assert error_line(raised) == "Expected parameter logits ... but found invalid values:"
    wrapped = ray.exceptions.RayTaskError("step", "Traceback ...\nValueError: boom", raised)
    assert error_line(wrapped) == str(wrapped).strip().splitlines()[-1]
    assert error_line(RuntimeError()) == "RuntimeError"
