"""ALL's Atari replay agents, hand-built as ALL's Atari presets build them: ``DeepmindAtariBody(
DQN(..., ExperienceReplayBuffer(1_000_000)), lazy_frames=True)`` stores each frame once (was: the
buffer held both 4x84x84 stacks of every transition, 52.6 GiB, and failed at the first act)."""

from __future__ import annotations

import pytest

pytest.importorskip("ale_py")

import torch  # noqa: E402
from torch import optim  # noqa: E402

from looprl.agents import DQN  # noqa: E402
from looprl.approximation import QNetwork  # noqa: E402
from looprl.bodies import DeepmindAtariBody  # noqa: E402
from looprl.environments.atari import AtariEnvironment  # noqa: E402
from looprl.memory import (  # noqa: E402
    AtariReplayBuffer,
    ExperienceReplayBuffer,
    NStepReplayBuffer,
    PrioritizedAtariReplayBuffer,
    PrioritizedReplayBuffer,
)
from looprl.policies import GreedyPolicy  # noqa: E402
from looprl.presets.atari.models import nature_dqn  # noqa: E402

SIZE = 1_000_000  # ALL's Atari presets' replay_buffer_size


def _agent(env: AtariEnvironment, buffer: object, discount_factor: float) -> DQN:
    torch.manual_seed(0)
    model = nature_dqn(env)
    q = QNetwork(model, optim.Adam(model.parameters(), lr=1e-4))
    policy = GreedyPolicy(q, env.action_space.n, epsilon=1.0)
    return DQN(q, policy, buffer, discount_factor=discount_factor, minibatch_size=4,
               replay_start_size=20, update_frequency=4)


def _play(body: object, env: AtariEnvironment, steps: int) -> None:
    state = env.reset()
    for _ in range(steps):
        state = env.reset() if state.done else env.step(body.act(state))


@pytest.mark.parametrize(("make", "ring", "gamma"), [
    (lambda: ExperienceReplayBuffer(SIZE), AtariReplayBuffer, 0.99),
    (lambda: NStepReplayBuffer(3, 0.99, PrioritizedReplayBuffer(SIZE, 0.5, 0.5)),
     PrioritizedAtariReplayBuffer, 0.99 ** 3),
])
def test_lazy_frames_store_alls_atari_replay_frame_by_frame(make, ring, gamma) -> None:
    env = AtariEnvironment("Breakout", device="cpu", seed=0)
    given = make()
    agent = _agent(env, given, gamma)
    body = DeepmindAtariBody(agent, lazy_frames=True)
    _play(body, env, 40)
    buffer = agent.learner.buffer
    assert type(buffer) is ring and buffer.size == SIZE and len(buffer) > 0
    assert buffer.nbytes < 8 * 2**30  # (1M stacks twice over: 52.6 GiB)
    assert agent.learner.updates > 0
    if isinstance(given, NStepReplayBuffer):  # (ALL's wrapper, the agent's replay_buffer)
        assert given.buffer is buffer and buffer.n_step == 3 and buffer.alpha == 0.5
        assert agent.replay_buffer is given
    else:
        assert agent.replay_buffer is buffer


def test_without_lazy_frames_the_buffer_given_is_kept() -> None:
    env = AtariEnvironment("Breakout", device="cpu", seed=0)
    buffer = ExperienceReplayBuffer(1000)
    agent = _agent(env, buffer, 0.99)
    _play(DeepmindAtariBody(agent), env, 30)
    assert agent.learner.buffer is buffer and len(buffer) > 0
