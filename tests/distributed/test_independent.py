"""Independent learners on the Ray runtime's parts, without Ray: each agent's policy answers
only its own rows, and each agent's trainer learns only from its own streams."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch

from looprl.agents import PPOTrainer, actor_critic_policy
from looprl.agents.independent import IndependentPolicy, IndependentTrainer
from looprl.agents.independent_learner import IndependentLearner
from looprl.core import NamedArray, Policy, RolloutRequest, RolloutResult
from looprl.distributed import EnvRunner
from looprl.environments import SRLEnvironment
from looprl.environments.srl import step_result


class TwoAgents(SRLEnvironment):
    """Both agents act at every step; agent ``i`` observes ``[i, t]``; episodes of 5 steps."""

    agent_count = 2

    def reset(self):
        self.t = 0
        return self._results()

    def step(self, actions):
        self.t += 1
        return self._results()

    def _results(self):
        return [step_result({"obs": np.array([i, self.t], np.float32)}, float(i), self.t == 5, {})
                for i in range(2)]


class Recording(PPOTrainer):
    """A PPO trainer that keeps the batches it steps on."""

    def __init__(self, policy, **kwargs):
        super().__init__(policy, **kwargs)
        self.seen = []

    def step(self, batch):
        self.seen.append(batch)
        return super().step(batch)


def independent_ppo() -> IndependentTrainer:
    torch.manual_seed(0)
    policies = [actor_critic_policy(obs_dim=2, action_dim=2, hidden_dim=8, seed=i)
                for i in range(2)]
    policy = IndependentPolicy(policies, ["left", "right"])
    return IndependentTrainer(policy, [Recording(p, epochs=1) for p in policies])


def test_independent_trainer_steps_each_agents_trainer_on_its_own_streams():
    trainer = independent_ppo()
    policy = trainer.policy
    runner = EnvRunner(TwoAgents, n_envs=1, segment_length=4, seed=0)
    while not (segments := runner.segments()):
        runner.step(0, policy.rollout(runner.request(0)), policy.version)
    result = trainer.step(segments[0])  # [5, 2]: one stream of each agent
    assert {name.split("/")[0] for name in result.stats} == {"left", "right"}
    for agent, agent_trainer in enumerate(trainer.trainers):
        (batch,) = agent_trainer.seen
        assert batch.reward.shape == (5, 1) and (batch.obs.obs[..., 0] == agent).all()
    assert policy.version == 2 and result.step == 1
    with pytest.raises(ValueError, match="^IndependentPolicy.analyze takes one agent's"):
        policy.analyze(segments[0])
    right = segments[0][:, segments[0].agent[0] == 1]  # the stream of agent 1 only
    assert policy.analyze(right).value.shape == (5, 1)


def test_each_agents_trainer_learns_only_from_its_own_streams():
    trainer = independent_ppo()
    policy, policies = trainer.policy, trainer.policy.policies
    core = IndependentLearner.from_buffers(trainer, [("on_policy", {"batch_streams": 2})] * 2)
    runner = EnvRunner(TwoAgents, n_envs=2, segment_length=4, seed=0)
    steps = []
    for _ in range(10):
        runner.step(0, policy.rollout(runner.request(0)), policy.version)
        for segment in runner.segments():
            assert set(np.unique(segment.agent)) == {0, 1}  # both agents' streams mixed
            core.put(segment)
        while (result := core.train_step()) is not None:
            steps.append(result)
    for agent, agent_trainer in enumerate(trainer.trainers):
        assert agent_trainer.seen, f"agent {agent} never trained"
        for batch in agent_trainer.seen:
            assert batch.reward.shape == (5, 2)  # its own batch_streams, segment_length + 1
            assert (batch.obs.obs[..., 0] == agent).all()  # only its own agent's rows
            assert (batch.reward[1:] == agent).all()
    assert {name.split("/")[0] for r in steps for name in r.stats} == {"left", "right"}
    assert policy.version == len(steps) == policies[0].version == policies[1].version
    saved = io.BytesIO()  # a trainer checkpoint: the agents' trainers and their policies
    torch.save(core.state_dict(), saved)
    saved.seek(0)
    core.load_state_dict(torch.load(saved, weights_only=False))
    assert core.policy is core.trainer.policy and core.policy.version == len(steps)
    assert [c.trainer.policy for c in core.cores] == core.policy.policies
    assert [c.received for c in core.cores] == [t.seen[-1].reward.shape[1] * len(t.seen)
                                                for t in core.trainer.trainers]


class Echo(Policy):
    """Answers every row with action ``k`` and value ``obs[:, 1]``; keeps its requests."""

    def __init__(self, k: int):
        self.k, self.requests = k, []
        self.net = torch.nn.Linear(1, 1)

    @property
    def module(self):
        return self.net

    def rollout(self, request, **kwargs):
        self.requests.append(request)
        obs = np.asarray(request.obs["obs"])
        log_prob = None if self.k == 0 else np.zeros(len(obs), np.float32)
        return RolloutResult(action=np.full(len(obs), self.k), value=obs[:, 1],
                             log_prob=log_prob)

    def analyze(self, sample, target=None, **kwargs):
        return None


def test_each_agents_policy_answers_only_its_own_rows_in_its_view():
    echoes = [Echo(0), Echo(1)]
    policy = IndependentPolicy(echoes, ["left", "right"], masked={"right"})
    agents = np.array([1, 0, 1, 0])
    obs = NamedArray(obs=np.stack([agents, np.arange(4)], 1).astype(np.float32),
                     action_mask=np.array([[1, 0], [0, 1], [0, 1], [1, 1]], bool))
    result = policy.rollout(RolloutRequest(obs=obs, agent=agents, is_evaluation=np.zeros(4, bool)))
    assert result.action.tolist() == [1, 0, 1, 0]
    assert result.value.tolist() == [0, 1, 2, 3]  # the request's row order
    assert np.isnan(result.log_prob[[1, 3]]).all() and (result.log_prob[[0, 2]] == 0).all()
    left, right = (echo.requests[0].obs for echo in echoes)
    assert (left["obs"][:, 0] == 0).all() and left["action_mask"] is not None  # as it came
    assert right.fields == ("obs",) and right["obs"].tolist() == [[1, 0, 1, 0], [1, 2, 0, 1]]
    with pytest.raises(ValueError, match="^the request does not say whose rows it holds"):
        policy.rollout(RolloutRequest(obs=obs))


def test_an_actor_reports_each_agents_exploration_rate():
    """``acting_values`` of independent learners: each agent's ``hp/epsilon`` as
    ``hp/epsilon/<agent>`` (a Ray multi-agent DQN run logged the trainer's copies' rates, which
    never move, as the actors' decayed: none was read from the actor)."""
    from looprl.agents.dqn import q_network_policy
    from looprl.meta.hyperparameters import acting_values

    policies = [q_network_policy(4, 2, hidden_dim=8, epsilon=eps, seed=0) for eps in (0.5, 0.1)]
    assert acting_values(IndependentPolicy(policies, ["left", "right"])) == {
        "hp/epsilon/left": 0.5, "hp/epsilon/right": 0.1}
    assert acting_values(independent_ppo().policy) == {}  # (no exploration rate to report)
