"""The presets' one learning-rate annealer (``ProgressLR``): the rate of every optimizer step."""

from __future__ import annotations

import pytest
import torch

from looprl.approximation import Approximation, ProgressLR
from looprl.core import StateArray
from looprl.environments import GymEnvironment
from looprl.presets.classic_control import vqn, vsarsa


@pytest.mark.parametrize("builder", [vqn, vsarsa], ids=["vqn", "vsarsa"])
def test_vqn_anneals_linearly_over_its_updates_at_every_optimizer_step(builder, monkeypatch):
    """``linear_lr``: ``lr * (1 - k / updates)`` at the ``k``-th optimizer step (one per
    update, ``train_steps / n_envs`` of them), then 0: the rates of the ``LambdaLR`` VQN had."""
    rates = []
    optimizer_step = Approximation._optimizer_step

    def recording(approximation: Approximation, functional: bool) -> None:
        rates.append(approximation.optimizer.param_groups[0]["lr"])
        optimizer_step(approximation, functional)

    monkeypatch.setattr(Approximation, "_optimizer_step", recording)
    preset = builder.env(GymEnvironment("CartPole-v1")).hyperparameters(
        n_envs=4, lr=1e-3, linear_lr=True).device("cpu").build()
    agent = preset.agent(train_steps=400)  # 100 updates
    assert isinstance(agent.policy.q.lr_scheduler, ProgressLR)
    states = StateArray({"observation": torch.zeros(4, 4), "reward": torch.zeros(4),
                         "done": torch.zeros(4, dtype=torch.bool)}, (4,))
    for _ in range(121):  # the first call only acts; the next 120 each take one update
        agent.act(states)
    assert rates == [1e-3 * (1.0 - min(k / 100, 1.0)) for k in range(120)]
    assert rates[50] == pytest.approx(5e-4) and rates[100:] == [0.0] * 20


@pytest.mark.parametrize("builder", [vqn, vsarsa], ids=["vqn", "vsarsa"])
def test_vqn_epsilon_reaches_its_end_after_final_exploration_step_frames(builder):
    """``final_exploration_step`` counts frames, as ALL's (its ``LinearScheduler`` ends at
    ``final_exploration_step / n_envs`` batched steps); was batched steps, so ALL's 250,000
    ended after ``n_envs`` times as many frames (16M with the Atari preset's 64 copies)."""
    preset = builder.env(GymEnvironment("CartPole-v1")).hyperparameters(
        n_envs=4, initial_exploration=1.0, final_exploration=0.1,
        final_exploration_step=40).device("cpu").build()
    agent = preset.agent(train_steps=400)
    states = StateArray({"observation": torch.zeros(4, 4), "reward": torch.zeros(4),
                         "done": torch.zeros(4, dtype=torch.bool)}, (4,))
    epsilons = []
    for _ in range(12):  # 48 frames
        epsilons.append(float(agent.policy.exploration.epsilon))
        agent.act(states)
    assert epsilons[0] == 1.0 and epsilons[5] == pytest.approx(0.55)  # 20 of 40 frames
    assert epsilons[10:] == [pytest.approx(0.1)] * 2  # at 40 frames and after
