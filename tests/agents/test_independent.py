"""Independent learners: routing, the single-state adapter and action masks."""

from __future__ import annotations

import gymnasium as gym
import pytest
import torch
from torch import nn

from looprl.agents.independent import (
    IndependentMultiagent,
    MaskedAgent,
    MaskedModule,
    RandomAgent,
    SingleStateAgent,
)
from looprl.agents.losses import segment_gae
from looprl.approximation import QNetwork
from looprl.core import (
    Agent,
    MultiagentState,
    ParallelAgent,
    State,
    StateArray,
    TrainerStepResult,
)
from looprl.policies import MASKED_Q, BoltzmannPolicy, EZGreedyPolicy, GreedyPolicy
from looprl.presets.classic_control import ppo


class Recorder(Agent):
    def __init__(self, action=0):
        self.states, self.action = [], action

    def act(self, state):
        self.states.append(state)
        return torch.tensor(self.action)


class ParallelRecorder(ParallelAgent):
    def __init__(self):
        self.states = []

    def act(self, state_array):
        self.states.append(state_array)
        return torch.arange(len(state_array)) + 7


def ma_state(agent, observation=(0.0, 0.0), mask=None, **kwargs):
    x = {"observation": torch.tensor(observation), **kwargs}
    if mask is not None:
        x["action_mask"] = torch.tensor(mask, dtype=torch.bool)
    return MultiagentState(x, agent=agent)


def test_routes_each_state_to_its_agent():
    a, b = Recorder(1), Recorder(2)
    multiagent = IndependentMultiagent({"a": a, "b": b})
    assert multiagent.act(ma_state("b")) == 2
    assert multiagent.act(ma_state("a")) == 1
    assert multiagent.act(ma_state("b")) == 2
    assert [s["agent"] for s in a.states] == ["a"]
    assert [s["agent"] for s in b.states] == ["b", "b"]
    with pytest.raises(KeyError, match="No agent for 'c'"):
        multiagent.act(ma_state("c"))


def test_agents_that_are_no_dict_of_agents_are_one_line():
    """A list was dict()'s "cannot convert dictionary update sequence element #0 to a
    sequence"; a value without ``act`` an ``AttributeError`` at its agent's first turn."""
    with pytest.raises(TypeError, match=r"^IndependentMultiagent takes a dict agent name -> "
                                        r"agent, got list \[1, 2\]$"):
        IndependentMultiagent([1, 2])
    with pytest.raises(TypeError, match=r"^IndependentMultiagent \(agent 'b'\) plays an agent, "
                                        r"an object with act\(state\), got int"):
        IndependentMultiagent({"a": Recorder(1), "b": 3})


def test_acts_on_each_row_of_a_state_array_with_its_agent():
    """A ``StateArray`` of several rows (``test_agent().act``) was 'unhashable type: list'."""
    a, b = Recorder(1), Recorder(2)
    rows = State.array([ma_state("a"), ma_state("b"), ma_state("a")])
    assert IndependentMultiagent({"a": a, "b": b}).act(rows).tolist() == [1, 2, 1]
    assert [s["agent"] for s in a.states] == ["a", "a"] and len(b.states) == 1


def test_single_state_agent_passes_one_row_state_arrays():
    inner = ParallelRecorder()
    action = SingleStateAgent(inner).act(
        ma_state("a", (1.0, 2.0), mask=[True, False], reward=0.5, done=True)
    )
    assert action == 7
    (array,) = inner.states
    assert isinstance(array, StateArray) and array.shape == (1,)
    assert array.observation.tolist() == [[1.0, 2.0]]
    assert array.reward.tolist() == [0.5]
    assert array.done.tolist() == [True] and array.mask.tolist() == [0.0]
    assert array["action_mask"].tolist() == [[True, False]]
    assert array["agent"] == ["a"]


def test_ppo_with_one_env_drops_the_transition_out_of_an_episode_end():
    space = gym.spaces.Box(-1.0, 1.0, (2,))

    class View:
        name, device, observation_space, action_space = "v", "cpu", space, gym.spaces.Discrete(2)

    preset = ppo.env(View()).hyperparameters(n_envs=1, n_steps=4).device("cpu").build()
    inner = preset.agent()
    batches = []
    inner.trainer.step = lambda batch: batches.append(batch.clone()) or TrainerStepResult({}, 0)
    agent = SingleStateAgent(inner)
    # episode 1: s0, s1, s2 (terminal); episode 2: s3, s4 -> a segment of 5 rows, 3 valid
    agent.act(ma_state("a", (0.0, 0.0)))
    agent.act(ma_state("a", (0.1, 0.0), reward=1.0))
    agent.act(ma_state("a", (0.2, 0.0), reward=2.0, done=True))
    agent.act(ma_state("a", (0.3, 0.0)))
    assert batches == []
    agent.act(ma_state("a", (0.4, 0.0), reward=4.0))
    (batch,) = batches
    assert batch.obs[:, 0, 0].tolist() == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4])
    _, returns, mask = segment_gae(batch.reward, batch.value, batch.done, batch.truncated,
                                   0.98, 0.8)
    assert mask[:, 0].tolist() == [True, True, False, True]  # s2 is a final observation
    # the terminal step is not bootstrapped: the return of s1 is r = 2
    assert returns[1, 0].item() == pytest.approx(2.0)


def test_masked_module_fills_illegal_outputs():
    linear = nn.Linear(5, 3)
    with torch.no_grad():
        linear.weight.zero_()
        linear.bias.copy_(torch.tensor([1.0, 2.0, 3.0]))
    masked = MaskedModule(linear, 3)
    x = torch.tensor([[9.0, 9.0, 1.0, 0.0, 1.0], [9.0, 9.0, 0.0, 0.0, 0.0]])
    assert masked(x).tolist() == [[1.0, MASKED_Q, 3.0], [1.0, 2.0, 3.0]]  # all-0 row unmasked

    class ActorCritic(nn.Module):
        def forward(self, x):
            return linear(x), torch.full((x.shape[0],), 5.0)

    logits, values = MaskedModule(ActorCritic(), 3)(x)
    assert logits[0].tolist() == [1.0, MASKED_Q, 3.0] and values.tolist() == [5.0, 5.0]
    log_p = torch.log_softmax(logits, -1)
    assert torch.isfinite(log_p).all() and (log_p.exp() * log_p).sum(-1).isfinite().all()


def q_network(values):
    class Constant(nn.Module):
        def forward(self, x):
            return torch.tensor(values).expand(*x.shape[:-1], -1)

    return QNetwork(Constant())


def masked_batch(mask=((0, 1, 1, 0), (0, 0, 0, 1), (1, 0, 0, 0))):
    return StateArray(
        {
            "observation": torch.zeros(3, 2),
            "action_mask": torch.tensor(mask).bool(),
            "done": torch.zeros(3, dtype=torch.bool),
        },
        (3,),
    )


def test_greedy_policy_explores_and_exploits_legal_actions_only():
    q = q_network([5.0, 1.0, 2.0, 0.0])  # action 0 is best but illegal
    state = ma_state("a", mask=[False, True, True, False])
    explore = GreedyPolicy(q, 4, epsilon=1.0, seed=0)
    assert {int(explore.no_grad(state)) for _ in range(200)} == {1, 2}
    greedy = GreedyPolicy(q, 4, epsilon=0.0)
    assert int(greedy.no_grad(state)) == 2 and int(greedy.eval(state)) == 2
    assert greedy.no_grad(masked_batch()).tolist() == [2, 3, 0]
    rows = torch.stack([explore.no_grad(masked_batch()) for _ in range(100)])
    assert set(rows[:, 0].tolist()) == {1, 2} and set(rows[:, 1].tolist()) == {3}


@pytest.mark.parametrize("make", [
    lambda q: EZGreedyPolicy(q, 4, epsilon=1.0, seed=0),
    lambda q: BoltzmannPolicy(q, 4, temperature=100.0, seed=0),
], ids=["ez_greedy", "boltzmann"])
def test_other_exploration_policies_take_legal_actions_only(make):
    q = q_network([5.0, 1.0, 2.0, 0.0])
    policy = make(q)
    masks = ([False, True, True, False], [True, False, False, True])  # options cross masks
    singles = {int(policy.no_grad(ma_state("a", mask=masks[i % 2]))) for i in range(200)}
    assert singles == {0, 1, 2, 3}  # every legal action of either mask, at random
    for i in range(100):
        action = int(policy.no_grad(ma_state("a", mask=masks[i % 2])))
        assert masks[i % 2][action], (i, action)
    rows = torch.stack([policy.no_grad(masked_batch()) for _ in range(100)])
    assert set(rows[:, 0].tolist()) == {1, 2} and set(rows[:, 1].tolist()) == {3}
    assert set(rows[:, 2].tolist()) == {0}
    flipped = torch.tensor(masks).repeat(2, 1)[:3]  # rows 0 and 2 alternate between masks
    for i in range(100):
        mask = flipped if i % 2 else ~flipped
        action = policy.no_grad(masked_batch(mask.tolist()))
        assert mask[torch.arange(3), action].all(), (i, action)


def test_masked_agent_appends_the_mask_and_rejects_illegal_actions():
    inner = Recorder(action=1)
    agent = MaskedAgent(inner)
    assert agent.act(ma_state("a", (0.5, 0.5), mask=[False, True])) == 1
    assert inner.states[0].observation.tolist() == [0.5, 0.5, 0.0, 1.0]
    assert inner.states[0]["agent"] == "a"
    with pytest.raises(RuntimeError, match="illegal action 1"):
        agent.act(ma_state("a", mask=[True, False]))
    agent.act(ma_state("a", mask=[False, False], done=True))  # finished agents: no check


def test_masked_agent_explores_legal_actions_only():
    class GreedyAgent(Agent):
        def __init__(self):
            self.policy = type("P", (), {})()
            self.policy.greedy = GreedyPolicy(q_network([0.0, 0.0, 9.0]), 3, epsilon=1.0)

        def act(self, state):
            return self.policy.greedy.no_grad(state)

    agent = MaskedAgent(GreedyAgent())
    state = ma_state("a", mask=[True, False, False])
    assert {int(agent.act(state)) for _ in range(50)} == {0}


def test_random_agent_takes_legal_actions_only():
    agent = RandomAgent(gym.spaces.Discrete(4), seed=0)
    state = ma_state("a", mask=[False, True, False, True])
    assert {agent.act(state) for _ in range(100)} == {1, 3}
    assert {agent.act(ma_state("a")) for _ in range(100)} == {0, 1, 2, 3}
