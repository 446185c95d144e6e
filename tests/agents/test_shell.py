"""``LearningAgent.act`` (seed 003) over an Actor and a Learner: as ALL's agents, a parallel
agent takes a batch of any width, whatever its preset's ``n_envs``."""

from __future__ import annotations

import pytest
import torch

from looprl.environments import GymEnvironment
from looprl.experiments.experiment import seed_everything
from looprl.presets.classic_control import a2c, ppo


@pytest.mark.parametrize("builder", [ppo, a2c], ids=["ppo", "a2c"])
def test_a_parallel_agent_acts_on_batches_narrower_than_its_n_envs(builder) -> None:
    seed_everything(0)
    env = GymEnvironment("CartPole-v1")
    preset = builder.hyperparameters(n_envs=8, n_steps=4, hidden=8).env(env).device("cpu").build()
    agent = preset.agent()
    vector = env.duplicate(2)  # 2 copies, not the preset's 8
    state = vector.reset(seed=0)
    for _ in range(40):
        state = vector.step(agent.act(state))
    assert agent.unwrapped.trainer.updates >= 2  # 10 segments of [5, 2]: batches of 2 streams
    with pytest.raises(ValueError, match="acts on batches of 2 rows .* got 3"):
        agent.act(GymEnvironment("CartPole-v1").duplicate(3).reset(seed=0))
    assert torch.isfinite(next(preset.model.parameters())).all()
