"""How a trainer hands its publications to the parameter server (``Publisher``): from a thread
of its own, so that the trainer's loop does not wait while Ray stores a payload; only the newest
pending publication is sent, in order, and ``flush`` waits for it. (A ``runtime.sync`` run
publishes so too: ``test_runtime_switch`` holds it to the local run, bit for bit.)"""

from __future__ import annotations

import threading

import pytest

pytest.importorskip("ray")

from looprl.distributed.server import Publisher  # noqa: E402

# (the parameter server is faked: these tests start no Ray instance)


class _Server:
    """A ``ParameterServer`` handle whose ``put.remote`` blocks until ``release``."""

    def __init__(self, blocked: bool) -> None:
        self.sent: list[tuple[int, bytes, str]] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        if not blocked:
            self.release.set()
        self.put = self  # (``server.put.remote``)

    def remote(self, version: int, payload: bytes) -> None:
        self.entered.set()
        assert self.release.wait(60.0), "the test never released the server"
        self.sent.append((version, payload, threading.current_thread().name))


def test_the_newest_is_sent_without_blocking_the_caller() -> None:
    server = _Server(blocked=True)
    publisher = Publisher(server)
    publisher.send(1, b"one")
    assert server.entered.wait(60.0)  # the publisher thread is inside Ray's call ...
    assert not publisher.flush(timeout=0.05)  # (flush waits for a send in progress too)
    publisher.send(2, b"two")  # ... and the caller goes on: these return at once
    publisher.send(3, b"three")  # (replaces 2, which was still pending)
    assert not publisher.flush(timeout=0.05)  # not yet sent
    server.release.set()
    assert publisher.flush(timeout=60.0)
    assert [(v, p) for v, p, _ in server.sent] == [(1, b"one"), (3, b"three")]
    assert {thread for *_, thread in server.sent} == {"publisher"}


def test_a_failing_send_does_not_stop_later_publications(caplog) -> None:
    server = _Server(blocked=False)
    calls = []

    def remote(version: int, payload: bytes) -> None:
        calls.append(version)
        if version == 1:
            raise ConnectionError("the server is restarting")
        server.sent.append((version, payload, "publisher"))

    server.remote = remote
    publisher = Publisher(server)
    publisher.send(1, b"one")
    assert publisher.flush(timeout=60.0)
    publisher.send(2, b"two")
    assert publisher.flush(timeout=60.0)
    assert calls == [1, 2] and [v for v, *_ in server.sent] == [2]
    assert "could not publish version 1" in caplog.text


def test_a_flush_that_runs_out_says_so_naming_the_option(caplog) -> None:
    """Was: a 10 s wait whose result the trainer ignored, so that parameters not yet handed
    to Ray (the first before the actors pull, the last before the run saves them) went
    unsaid; the trainer now waits ``answer_timeout(runtime)``, as its other waits do."""
    server = _Server(blocked=True)
    publisher = Publisher(server)
    publisher.send(1, b"one")
    assert server.entered.wait(60.0)
    assert not publisher.flush(timeout=0.01)
    assert ("the trainer's latest parameters were not handed to the parameter server yet (no "
            "answer within 0.01s: the machine may be overloaded; raise "
            "runtime.placement_timeout)") in caplog.text
    server.release.set()
    caplog.clear()
    assert publisher.flush(timeout=60.0) and not caplog.text
