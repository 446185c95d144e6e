"""AtariReplayBuffer's samples, transition by transition: scripted streams of steps and segments
(episode ends, truncations, lost lives, frames that do not continue, several streams, a
restarted stream, streams taking turns, the ring wrapping round, a pickled copy going on) are
fed to the frame ring and to a naive reference that keeps the rows fed (no ring). Every seeded
draw must be the reference's windows (stacked observations, actions, rewards, ends), the ring
must hold the newest complete transitions of each stream, each once, and prioritized draws
carry the importance weights of the priorities set; the digests of the draws are pinned."""

from __future__ import annotations

import hashlib
import pickle
import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import torch
from tests.memory.test_atari_replay import _column, _frames, _stream, _stream_segments

from looprl.core import SampleBatch, State
from looprl.memory import AtariReplayBuffer, PrioritizedAtariReplayBuffer


@dataclass
class _Piece:
    """Rows that go on one from another (``obs``, the ``action`` taken there, the ``reward``,
    ``terminal`` and ``truncated`` that came with it); ``closed``: no row will follow, the
    windows running past the last row are cut there."""

    stream: Any
    rows: list[dict[str, Any]]
    closed: bool = False


@dataclass
class _Reference:
    """The transitions fed to a buffer, each window cut from the rows by hand."""

    n: int
    pieces: list[_Piece] = field(default_factory=list)
    open: dict[Any, _Piece] = field(default_factory=dict)
    last: State | None = None  # the state ``store`` goes on from

    def _start(self, stream: Any, rows: list[dict[str, Any]], closed: bool = False) -> _Piece:
        if stream in self.open:
            self.open.pop(stream).closed = True
        piece = _Piece(stream, rows, closed)
        self.pieces.append(piece)
        if not closed:
            self.open[stream] = piece
        return piece

    def store(self, previous: State | None, action: int, state: State) -> None:
        """As ``store`` takes a step: a new piece unless ``previous`` is the last state."""
        if previous is None or previous.done:
            return
        piece = self.open.get("store")
        if piece is None or previous is not self.last:
            piece = self._start("store", [_row(previous)])
        if not torch.equal(previous.observation[1:], state.observation[:-1]):  # skipped
            self.open.pop("store").closed, self.last = True, None
            return
        piece.rows[-1]["action"] = action
        piece.rows.append(_row(state))
        self.last = state

    def put(self, segment: SampleBatch) -> None:
        """Each column goes on with its stream's piece where its first row is that piece's
        last (that row: the column's); columns without stream numbers: closed pieces."""
        length, columns = segment.reward.shape
        for b in range(columns):
            rows = [{"obs": segment.obs[t, b], "action": int(segment.action[t, b]),
                     "reward": float(segment.reward[t, b]), "terminal": bool(segment.done[t, b]),
                     "truncated": bool(segment.truncated[t, b])} for t in range(length)]
            if segment.stream is None:
                self._start(None, rows, closed=True)
                continue
            stream = int(segment.stream[0, b])
            piece = self.open.get(stream)
            if piece is not None and torch.equal(piece.rows[-1]["obs"], rows[0]["obs"]):
                piece.rows[-1:] = rows
            else:
                self._start(stream, rows)

    def windows(self) -> tuple[dict[int, dict[str, Any]], dict[Any, list[int]]]:
        """The complete windows by transition (its action), and each stream's complete
        transitions in the order they were fed."""
        windows: dict[int, dict[str, Any]] = {}
        order: dict[Any, list[int]] = {}
        for piece in self.pieces:
            rows = piece.rows
            for t in range(len(rows) - 1):
                if not _goes_on(rows, t):
                    continue
                window = _window(rows, t, self.n, piece.closed)
                if window is not None:
                    windows[rows[t]["action"]] = window
                    order.setdefault(piece.stream, []).append(rows[t]["action"])
        return windows, order


def _row(state: State) -> dict[str, Any]:
    terminal = bool(state.done) and float(state.mask) == 0
    return {"obs": state.observation, "action": None, "reward": float(state.reward),
            "terminal": terminal, "truncated": bool(state.done) and not terminal}


def _ended(row: dict[str, Any]) -> bool:
    return row["terminal"] or row["truncated"]


def _goes_on(rows: list[dict[str, Any]], t: int) -> bool:
    """Whether row ``t`` starts a transition: no end, a next row whose frames shift by one."""
    if t + 1 == len(rows):
        return False
    if "goes on" not in rows[t]:  # (a row's next one never changes once there)
        rows[t]["goes on"] = not _ended(rows[t]) and torch.equal(rows[t]["obs"][1:],
                                                                 rows[t + 1]["obs"][:-1])
    return rows[t]["goes on"]


def _window(rows: list[dict[str, Any]], t: int, n: int, closed: bool) -> dict[str, Any] | None:
    """Row ``t``'s window: up to ``n`` steps, to an episode's end, or cut (truncated) where the
    frames stop going on; ``None`` while it waits for rows."""
    j = t
    while True:
        j += 1
        m = j - t
        if _ended(rows[j]) or m == n:
            terminal, truncated = rows[j]["terminal"], rows[j]["truncated"]
            break
        if not _goes_on(rows, j):
            if j == len(rows) - 1 and not closed:
                return None
            terminal, truncated = False, True
            break
    return {"obs": [row["obs"] for row in rows[t : j + 1]],
            "action": [row["action"] for row in rows[t:j]],
            "reward": [row["reward"] for row in rows[t : j + 1]],
            "terminal": terminal, "truncated": truncated and not terminal, "steps": m}


class _Samples:
    """Draws from a buffer, each checked against the reference, and a running digest of them."""

    def __init__(self, buffer: AtariReplayBuffer, reference: _Reference):
        self.buffer, self.reference = buffer, reference
        self.digest = hashlib.sha256()
        self.draws = 0
        self.priorities: dict[int, float] = {}  # by transition, as set (prioritized)
        self.max_priority = 1.0

    def feed(self, method: str, *args: Any) -> None:
        """``method`` (``"store"``, ``"put"``) of the buffer and of the reference on ``args``."""
        getattr(self.buffer, method)(*args)
        getattr(self.reference, method)(*args)

    def end(self, skipped: int) -> _Samples:
        """These samples, after a last check that the buffer skipped ``skipped`` rows."""
        self.check()
        assert self.buffer.skipped == skipped
        return self

    def check(self) -> None:
        buffer = self.buffer
        windows, order = self.reference.windows()
        ready = self._check_ready(windows, order)
        buffer.generator = torch.Generator().manual_seed(self.draws)
        self.draws += 1
        index = buffer.sample_indices(32)
        assert buffer.ready[index].all()
        batch = buffer.gather(index)
        ids = _check_windows(batch, windows)
        prioritized = isinstance(buffer, PrioritizedAtariReplayBuffer)
        if prioritized:
            self._check_priorities(buffer, batch, ready, ids)
        else:
            assert batch.weight is None
        parts = [len(buffer), buffer.skipped, index, *(getattr(batch, key) for key in
                 ("obs", "action", "reward", "done", "truncated", "weight"))]
        for part in filter(lambda part: part is not None, parts):  # (uniform: no weight)
            data = part if isinstance(part, torch.Tensor) else torch.tensor(float(part))
            self.digest.update(np.ascontiguousarray(data.cpu().numpy()).tobytes())

    def _check_ready(self, windows: dict[int, dict[str, Any]], order: dict[Any, list[int]]
                     ) -> dict[int, int]:
        """The ready slots hold complete transitions, each once and with its window: the
        newest of each stream."""
        buffer = self.buffer
        slots = buffer.ready.nonzero().squeeze(-1)
        ids = _check_windows(buffer.gather(slots), windows)
        ready = dict(zip(ids, slots.tolist()))
        assert len(ready) == len(ids) == len(buffer) > 0
        for complete in order.values():
            held = [i for i in complete if i in ready]
            assert held == complete[len(complete) - len(held):]  # no gap: the newest ones
        return ready

    def _check_priorities(self, buffer: PrioritizedAtariReplayBuffer, batch: SampleBatch,
                          ready: dict[int, int], ids: list[int]) -> None:
        """Ready transitions have the priority set for them (new ones the largest so far),
        others none; the weights are ``(N P(i))^-beta`` over the batch's largest."""
        alpha, beta = buffer.alpha, buffer.beta
        priorities = {i: self.priorities.get(i, self.max_priority**alpha) for i in ready}
        self.priorities = priorities
        slots = np.array([ready[i] for i in priorities])
        assert np.allclose(buffer.tree[slots], list(priorities.values()))
        assert np.array_equal(buffer.tree[np.arange(buffer.size)] > 0, buffer.ready.numpy())
        total = sum(priorities.values())
        assert buffer.tree.total == pytest.approx(total)
        weights = np.array([(len(ready) * priorities[i] / total) ** -beta for i in ids])
        expected = torch.from_numpy(weights / weights.max()).float()
        assert torch.allclose(batch.weight, expected.expand_as(batch.weight), rtol=1e-5)
        new = {i: i % 7 + 0.5 for i in ids}  # priorities that tell transitions apart
        buffer.update_priorities(torch.tensor([new[i] for i in ids], dtype=torch.float64),
                                 torch.tensor([ready[i] for i in ids]))
        for i, p in new.items():
            priorities[i] = (p + buffer.epsilon) ** alpha
            self.max_priority = max(self.max_priority, p + buffer.epsilon)


def _check_windows(batch: SampleBatch, windows: dict[int, dict[str, Any]]) -> list[int]:
    """Each column of ``batch`` is the window of its transition (named by its first action),
    its last row repeated after its ``steps``; return the transitions."""
    ids = batch.action[0].tolist()
    assert set(ids) <= set(windows)
    picked = [windows[i] for i in ids]
    steps = torch.tensor([w["steps"] for w in picked])
    rows = torch.arange(batch.reward.shape[0]).unsqueeze(1)
    at = torch.minimum(rows, steps).tolist()  # [n + 1, B]: each row's row of the window
    assert torch.equal(batch.obs, torch.stack([torch.stack(
        [w["obs"][s] for w, s in zip(picked, row)]) for row in at]))
    assert torch.equal(batch.reward, torch.tensor(
        [[w["reward"][s] for w, s in zip(picked, row)] for row in at]))
    inside = rows < steps
    assert torch.equal(batch.action[inside], torch.tensor(
        [w["action"][r] for r, row in enumerate(at) for w, s in zip(picked, row) if r < w["steps"]],
        dtype=batch.action.dtype))
    for key, flag in (("done", "terminal"), ("truncated", "truncated")):
        assert torch.equal(batch[key].bool(), ~inside & torch.tensor([w[flag] for w in picked]))
    return ids


def _stored(kind: type, n: int) -> _Samples:
    """One env's steps through ``store``: lost lives, resets, a break and a state that is not
    the last one stored; the ring (120 slots) wraps about four times."""
    samples = _Samples(kind(120, n_step=n), _Reference(n))
    for t, (previous, action, state) in enumerate(_stream(400, seed=n)):
        if t == 150:  # frames that do not continue: skipped
            state = State(_frames(200))
        elif t == 260 and previous is not None and not previous.done:  # another state object
            previous = State(previous.observation.clone())
        samples.feed("store", previous, action, state)
        if t == 150:
            continue
        if t % 37 == 36:
            samples.check()
    return samples.end(skipped=1)


def _restart(segment: SampleBatch, b: int) -> None:
    """Column ``b`` of ``segment`` restarts its stream: new frames under the same number."""
    length = segment.reward.shape[0]
    restart = [State(_frames(150 + t)[:, :1], reward=1.0) for t in range(length)]
    for key, value in _column(restart, 5000).items():
        getattr(segment, key)[:, b] = value


def _put(kind: type, n: int, streams: bool) -> _Samples:
    """Three streams' segments of 5 transitions through ``put`` (numbered or not), a restart of
    stream 1 in the middle (a segment that does not continue it), a row whose frames do not
    continue and a pickled copy going on; the ring (300 slots) wraps about twice (three times
    without stream numbers, each segment a new sequence)."""
    samples = _Samples(kind(300, n_step=n), _Reference(n))
    segments, _ = _stream_segments(160, length=5, seed=7 + n, streams=3)
    for i, segment in enumerate(segments):
        if i == 14:  # stream 1 restarts: new frames, under the same stream number
            _restart(segment, 1)
        if i == 25:  # frames that do not continue, in the middle of stream 2's segment
            segment.obs[3, 2] = _frames(220)[:, :1]
        if not streams:
            segment.stream = None
        samples.feed("put", segment)
        if i == 20:
            samples.buffer = pickle.loads(pickle.dumps(samples.buffer))
        if i % 3 == 2:
            samples.check()
    return samples.end(skipped=2)


def _turns(kind: type, n: int) -> _Samples:
    """Two streams' segments of 4 transitions (the local collector's), one column per ``put``,
    the streams taking turns of 1 to 4 segments: a stream goes on from its last state, in
    its turn and after the other's (its waiting transitions with it). Stream 1 restarts in the
    middle of a turn; stream 0's frames stop going on inside a segment, and at a segment's
    first row within a turn and after the other's; a pickled copy goes on; the ring (150
    slots) wraps about five times."""
    samples = _Samples(kind(150, n_step=n), _Reference(n))
    segments, _ = _stream_segments(300, length=4, seed=20 + n, streams=2)
    queues = [[segment[:, [s]] for segment in segments] for s in range(2)]
    turns, fed, s, last = random.Random(n), 0, 0, None
    events = {"restart": 45, "inner": 55, "first in place": 35, "first after": 25}
    skips = 0
    while queues[0] or queues[1]:
        for _ in range(turns.randint(1, 4)):
            if not queues[s]:
                break
            segment, left, going_on = queues[s].pop(0), len(queues[s]), last == s
            quiet = not (segment.done | segment.truncated).any()  # (no episode end in it)
            event = next((e for e, at in events.items() if quiet and left <= at and going_on == (
                e != "first after") and (s == 1) == (e == "restart")), None)
            if event is not None:
                del events[event]
                if event == "restart":
                    _restart(segment, 0)
                else:  # two transitions skipped (into and out of the row)
                    segment.obs[2 if event == "inner" else 1, 0] = _frames(220)[:, :1]
            skips += _skips(segment)
            samples.feed("put", segment)
            fed, last = fed + 1, s
            if fed == 60:
                samples.buffer = pickle.loads(pickle.dumps(samples.buffer))
            if fed % 7 == 6:
                samples.check()
        s = 1 - s
    assert not events and skips == 6
    return samples.end(skipped=skips)


def _skips(segment: SampleBatch) -> int:
    """The transitions of ``segment`` whose frames do not go on (``put`` skips them)."""
    ended = segment.done | segment.truncated
    same = (segment.obs[:-1, :, 1:] == segment.obs[1:, :, :-1]).flatten(2).all(-1)
    return int((~same & ~ended[:-1]).sum())


#: the digests of the frame ring's draws (the reference checks every transition drawn); those
#: of streams taking turns ("put": three in each segment, "turns") since the ring's links; all
#: since row 0's reward is its state's (was 0: with it 0, the draws are those pinned before)
PINNED = {
    "store-uniform-n1": "321c39793e7d1b8c3867bd72d8b9a08c",
    "store-uniform-n3": "68458650b221537375cb67292705b998",
    "store-prioritized-n1": "a08dccad040ccea49b48737d4a3bcb4f",
    "store-prioritized-n3": "7b488d97fc2cb7e8404b4a4e32a2d49e",
    "put-uniform-n1": "f677b6518586a44395c5511a101742da",
    "put-uniform-n3": "389d68b03298ea68d4348bd8bc130191",
    "put-prioritized-n1": "f65b516d45e3a3c33d954f3b9b689b3c",
    "put-prioritized-n3": "0b49b3f27e3ffc031b3c4a0bf20c8662",
    "put-cut-uniform-n1": "41f144fc47c23e6ee1c9896a5c5c298e",
    "put-cut-uniform-n3": "1029f099c8a1af54ae1949e35f5a2f55",
    "put-cut-prioritized-n1": "5f43bf708a8d8397962eadaf243badcf",
    "put-cut-prioritized-n3": "638413ad81906c80e86fec855145e089",
    "turns-uniform-n1": "73cf4ece136674215de15f6a8fdec6be",
    "turns-uniform-n3": "7b8a470aeab78d13a2047c9d6a0f76d7",
    "turns-prioritized-n1": "d4d168330bc769864ac81b125c784792",
    "turns-prioritized-n3": "0dcb30dfc0d19166dcf5b1b109850de5",
}

SCENARIOS = {f"{how}-{'prioritized' if kind is PrioritizedAtariReplayBuffer else 'uniform'}-n{n}":
             (how, kind, n)
             for how in ("store", "put", "put-cut", "turns")
             for kind in (AtariReplayBuffer, PrioritizedAtariReplayBuffer) for n in (1, 3)}


def _run(how: str, kind: type, n: int) -> _Samples:
    if how == "store":
        return _stored(kind, n)
    if how == "turns":
        return _turns(kind, n)
    return _put(kind, n, streams=how == "put")


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_frame_ring_draws_the_transitions_fed_to_it(name: str) -> None:
    samples = _run(*SCENARIOS[name])
    assert samples.digest.hexdigest()[:32] == PINNED[name]


if __name__ == "__main__":  # print the digests of the code as it is
    for name, scenario in SCENARIOS.items():
        print(f'    "{name}": "{_run(*scenario).digest.hexdigest()[:32]}",')
