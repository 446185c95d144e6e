"""AtariReplayBuffer's samples, pinned: scripted streams of steps and segments (episode ends,
truncations, lost lives, frames that do not continue, several streams, a restarted stream,
the ring wrapping round) give the slots, the windows and, at a fixed seed, the draws that the
frame ring gave when its n-step windows were cut by ``memory.windows`` (digests of them)."""

from __future__ import annotations

import hashlib
import pickle

import numpy as np
import pytest
import torch
from tests.memory.test_atari_replay import _column, _frames, _stream, _stream_segments

from looprl.core import State
from looprl.memory import AtariReplayBuffer, PrioritizedAtariReplayBuffer


class _Samples:
    """A running digest of what a buffer gives: its size, skips and seeded draws."""

    def __init__(self, buffer: AtariReplayBuffer):
        self.buffer = buffer
        self.digest = hashlib.sha256()
        self.draws = 0

    def check(self) -> None:
        buffer = self.buffer
        buffer.generator = torch.Generator().manual_seed(self.draws)
        self.draws += 1
        index = buffer.sample_indices(32)
        batch = buffer.gather(index)
        if isinstance(buffer, PrioritizedAtariReplayBuffer):  # priorities that tell slots apart
            buffer.update_priorities(index.double() % 7 + 0.5, index)
        parts = [len(buffer), buffer.skipped, index, *(getattr(batch, key) for key in
                 ("obs", "action", "reward", "done", "truncated", "weight"))]
        for part in filter(lambda part: part is not None, parts):  # (uniform: no weight)
            data = part if isinstance(part, torch.Tensor) else torch.tensor(float(part))
            self.digest.update(np.ascontiguousarray(data.cpu().numpy()).tobytes())


def _stored(kind: type, n: int) -> str:
    """One env's steps through ``store``: lost lives, resets, a break and a state that is not
    the last one stored; the ring (120 slots) wraps about four times."""
    samples = _Samples(kind(120, n_step=n))
    for t, (previous, action, state) in enumerate(_stream(400, seed=n)):
        if t == 150:  # frames that do not continue: skipped
            samples.buffer.store(previous, action, State(_frames(200)))
            continue
        if t == 260 and previous is not None and not previous.done:  # another state object
            previous = State(previous.observation.clone())
        samples.buffer.store(previous, action, state)
        if t % 37 == 36:
            samples.check()
    samples.check()
    return samples.digest.hexdigest()[:32]


def _put(kind: type, n: int, streams: bool) -> str:
    """Three streams' segments of 5 transitions through ``put`` (numbered or not), a restart of
    stream 1 in the middle (a segment that does not continue it), a row whose frames do not
    continue and a pickled copy going on; the ring (300 slots) wraps about three times."""
    samples = _Samples(kind(300, n_step=n))
    segments, _ = _stream_segments(160, length=5, seed=7 + n, streams=3)
    for i, segment in enumerate(segments):
        if i == 14:  # stream 1 restarts: new frames, under the same stream number
            restart = [State(_frames(150 + t)[:, :1], reward=1.0) for t in range(6)]
            column = _column(restart, 5000)
            for key, value in column.items():
                getattr(segment, key)[:, 1] = value
        if i == 25:  # frames that do not continue, in the middle of stream 2's segment
            segment.obs[3, 2] = _frames(220)[:, :1]
        if not streams:
            segment.stream = None
        samples.buffer.put(segment)
        if i == 20:
            samples.buffer = pickle.loads(pickle.dumps(samples.buffer))
        if i % 3 == 2:
            samples.check()
    samples.check()
    assert samples.buffer.skipped == 2
    return samples.digest.hexdigest()[:32]


#: the digests of the frame ring's samples, pinned from the ring that windowed them itself
PINNED = {
    "store-uniform-n1": "2bab38f9abfb749791b099b034f9166c",
    "store-uniform-n3": "30ba6b3d96db9b20ca731b9e0f8e885b",
    "store-prioritized-n1": "1c9c339b59c361f85bf3a94d6eaa0368",
    "store-prioritized-n3": "ffc995f8864e82904a9dda2d39a1cfd3",
    "put-uniform-n1": "189ecd1b6a77de9e835f78b7dad8d9f3",
    "put-uniform-n3": "9c0dbec2555706d4b419a69ad53a4c05",
    "put-prioritized-n1": "1fb222c62e2a3f27acbc94ba8ac5716c",
    "put-prioritized-n3": "f36c8fedd52588e5cba47e6814a91626",
    "put-cut-uniform-n1": "189ecd1b6a77de9e835f78b7dad8d9f3",
    "put-cut-uniform-n3": "25bf97702345dc4a84f1e8bbd41df9c4",
    "put-cut-prioritized-n1": "1fb222c62e2a3f27acbc94ba8ac5716c",
    "put-cut-prioritized-n3": "aa3d4a1481d941e50168e547bf1558bd",
}

SCENARIOS = {f"{how}-{'prioritized' if kind is PrioritizedAtariReplayBuffer else 'uniform'}-n{n}":
             (how, kind, n)
             for how in ("store", "put", "put-cut")
             for kind in (AtariReplayBuffer, PrioritizedAtariReplayBuffer) for n in (1, 3)}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_frame_ring_gives_its_pinned_samples(name: str) -> None:
    how, kind, n = SCENARIOS[name]
    digest = _stored(kind, n) if how == "store" else _put(kind, n, streams=how == "put")
    assert digest == PINNED[name]


if __name__ == "__main__":  # print the digests of the code as it is
    for name, (how, kind, n) in SCENARIOS.items():
        digest = _stored(kind, n) if how == "store" else _put(kind, n, streams=how == "put")
        print(f"    {name!r}: {digest!r},")
