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
