"""Every example call of seed 003 (the autonomous-learning-library's basic concepts) works
as written, with ``looprl`` in place of ``all``.

The Atari and MuJoCo examples need extras (and modules) that are not installed here; they
are skipped.
"""

from __future__ import annotations

import math
import warnings
from abc import ABC
from pathlib import Path

import pytest
import torch
from torch import nn, optim

from helpers import fit_sum
from looprl.approximation import Approximation, FixedTarget, QNetwork
from looprl.core import Agent, Multiagent, MultiagentState, ParallelAgent, Preset, State, StateArray
from looprl.environments import GymEnvironment
from looprl.memory import ExperienceReplayBuffer


# -- Agent-Based Design -------------------------------------------------------------------------
@pytest.mark.parametrize("interface", [Agent, ParallelAgent, Multiagent])
def test_agent_interfaces_are_abstract_act(interface: type) -> None:
    assert issubclass(interface, ABC)
    assert interface.__abstractmethods__ == frozenset({"act"})
    with pytest.raises(TypeError):
        interface()


def test_agent_implementations() -> None:
    class Constant(Agent):
        def act(self, state):
            return 1

    class PerRow(ParallelAgent):
        def act(self, state_array):
            return torch.zeros(state_array.shape, dtype=torch.long)

    class ByName(Multiagent):
        def act(self, multiagent_state):
            return {"first_0": 0, "second_0": 1}[multiagent_state["agent"]]

    states = [State(torch.zeros(2)), State(torch.ones(2))]
    assert Constant().act(states[0]) == 1
    assert PerRow().act(State.array(states)).shape == (2,)
    assert ByName().act(MultiagentState(torch.zeros(2), agent="second_0")) == 1


def test_state_default_entries_and_array() -> None:
    list_of_states = [State({"observation": torch.ones(3) * i, "lives": i}) for i in range(4)]
    state = list_of_states[0]
    for key in ("observation", "reward", "done", "mask"):
        assert key in state
    state_array = State.array(list_of_states)
    assert isinstance(state_array, StateArray)
    assert state_array["observation"].shape == (4, 3)
    assert torch.equal(state_array["lives"], torch.arange(4))
    assert torch.equal(state_array[1:3]["lives"], torch.tensor([1, 2]))


# -- Function Approximation ------------------------------------------------------------------
def test_supervised_approximation_example() -> None:
    torch.manual_seed(0)
    # create a pytorch module
    model = nn.Linear(16, 1)
    # create an associated pytorch optimizer
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    # create the function approximator
    f = Approximation(model, optimizer)
    losses = fit_sum(f)  # (the example's training loop)
    assert sum(losses[-10:]) < 0.1 * sum(losses[:10])
    x = torch.randn(4, 16)
    assert torch.allclose(f.no_grad(x), f.eval(x))
    assert torch.allclose(f.target(x), f.no_grad(x))
    assert not f.no_grad(x).requires_grad


class _SeedDQN:
    """The seed's ``_train`` written against looprl objects."""

    def __init__(self, q: QNetwork, replay_buffer: ExperienceReplayBuffer):
        self.q = q
        self.replay_buffer = replay_buffer
        self.minibatch_size = 16
        self.discount_factor = 0.9
        self.loss = nn.functional.mse_loss

    def _should_train(self) -> bool:
        return len(self.replay_buffer) >= self.minibatch_size

    def _train(self):
        if self._should_train():
            # sample transitions from buffer
            (states, actions, rewards, next_states, _) = self.replay_buffer.sample(
                self.minibatch_size
            )
            # forward pass
            values = self.q(states, actions)
            # compute targets
            targets = rewards + self.discount_factor * torch.max(
                self.q.target(next_states), dim=1
            )[0]
            # compute loss
            loss = self.loss(values, targets)
            # backward pass
            self.q.reinforce(loss)
            return loss.detach()


def test_dqn_train_example_pattern() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
    q = QNetwork(model, optim.Adam(model.parameters(), lr=1e-2), target=FixedTarget(1000))
    buffer = ExperienceReplayBuffer(1000, generator=torch.Generator().manual_seed(0))
    env = GymEnvironment("CartPole-v1", seed=0)
    state = env.reset()
    for t in range(200):
        action = t % 2
        next_state = env.step(action)
        buffer.store(state, action, next_state)
        state = env.reset() if next_state.done else next_state
    agent = _SeedDQN(q, buffer)
    states, actions, rewards, next_states, weights = buffer.sample(8)
    assert states.shape == next_states.shape == (8,)
    assert agent.q(states, actions).shape == (8,)
    assert agent.q.target(next_states).shape == (8, 2)
    # terminal next states contribute no bootstrapped value
    assert torch.equal(agent.q.target(next_states)[next_states.mask == 0], torch.zeros(
        int((next_states.mask == 0).sum()), 2))
    losses = [float(agent._train()) for _ in range(150)]
    assert q.updates == 150
    assert sum(losses[-10:]) < sum(losses[:10])


# -- Environments ----------------------------------------------------------------------------
def test_create_classic_control_environment() -> None:
    # create a classic control environment on the cpu
    env = GymEnvironment("CartPole-v0")
    state = env.reset()
    assert isinstance(state, State)
    assert isinstance(state.observation, torch.Tensor)
    assert env.state is state and env.done is False


def test_environment_properties_for_state_and_reward() -> None:
    # "We add properties to the environment for state, reward, etc."
    env = GymEnvironment("CartPole-v1", seed=0)
    env.reset()
    assert env.reward == 0.0
    env.step(0)
    assert env.reward == env.state.reward == 1.0


def test_atari_environment_example() -> None:
    pytest.importorskip("ale_py", reason="the 'atari' extra is not installed")
    from looprl.environments import AtariEnvironment

    env = AtariEnvironment("Breakout", device="cpu")
    assert env.reset().observation.shape[0] > 0


def test_mujoco_environment_example() -> None:
    pytest.importorskip("mujoco", reason="the 'mujoco' extra is not installed")
    from looprl.environments import MujocoEnvironment

    env = MujocoEnvironment("HalfCheetah-v4")
    assert env.reset().observation.shape == (17,)
    # as ALL's (no_info=True): no info entries, so that steps and resets stack alike
    step = env.step(torch.zeros(6))
    assert sorted(step) == ["done", "mask", "observation", "reward"]
    with_info = MujocoEnvironment("HalfCheetah-v4", "cpu", None, False)  # (ALL's positions)
    with_info.reset()
    assert "x_position" in with_info.step(torch.zeros(6))


def test_control_loop_renders_the_mujoco_environment_as_written() -> None:
    pytest.importorskip("mujoco", reason="the 'mujoco' extra is not installed")
    from looprl.environments import MujocoEnvironment

    env = MujocoEnvironment("HalfCheetah-v4")
    # initialize the environment
    env.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rendering without a render_mode warns
        for _timesteps in range(3):
            assert env.render() is None  # (MuJoCo's own render raised without a render_mode)
            env.step(torch.zeros(6))


def test_control_loop_with_preset_agent() -> None:
    from looprl.presets.classic_control import dqn

    env = GymEnvironment("CartPole-v0")
    preset = dqn.env(env).hyperparameters(
        hidden=16, replay_start_size=50, update_frequency=4, gradient_steps=1
    ).build()
    agent = preset.agent()
    episodes = 0
    # initialize the environment
    env.reset()
    # Loop for some arbitrary number of timesteps.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rendering without a render_mode warns
        for _timesteps in range(300):
            env.render()
            action = agent.act(env.state)
            env.step(action)
            if env.done:
                # terminal update
                agent.act(env.state)
                # reset the environment
                env.reset()
                episodes += 1
    assert episodes >= 3  # an (almost) random agent ends episodes quickly
    assert len(agent.replay_buffer) > 250
    assert agent.policy.version > 0  # it trained


# -- Presets ----------------------------------------------------------------------------------
def test_preset_example_and_interface(tmp_path: Path) -> None:
    from looprl.presets.classic_control import dqn

    # create an environment
    env = GymEnvironment("CartPole-v1")
    # configure and build the preset
    preset = dqn.env(env).build()
    # use the preset to create an agent
    agent = preset.agent()
    assert isinstance(preset, Preset)
    assert isinstance(agent, Agent)
    assert isinstance(preset.agent(logger=None, train_steps=float("inf")), Agent)
    test_agent = preset.test_agent()
    state = env.reset()
    assert int(test_agent.act(state)) in (0, 1)
    filename = tmp_path / "dqn.pt"
    assert preset.save(str(filename)) is None
    loaded = torch.load(str(filename), weights_only=False)
    assert type(loaded) is type(preset)
    assert torch.equal(loaded.test_agent().act(state), test_agent.act(state))


def test_atari_preset_example() -> None:
    pytest.importorskip("ale_py", reason="the 'atari' extra is not installed")
    from looprl.environments import AtariEnvironment
    from looprl.presets.atari import dqn

    preset = dqn.env(AtariEnvironment("Breakout")).build()
    assert isinstance(preset.agent(), Agent)


# -- Experiments ----------------------------------------------------------------------------
def test_run_experiment_and_plot_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from looprl.experiments import plot_returns_100, run_experiment
    from looprl.presets import classic_control

    monkeypatch.chdir(tmp_path)
    agents = [
        # never trains and always explores: ~22-step episodes, >= 100 of them in 3000 frames
        classic_control.dqn.hyperparameters(
            hidden=16, replay_start_size=10**6, final_exploration=1.0
        ),
        classic_control.ppo.hyperparameters(lr=1e-6, n_envs=4, n_steps=64),
    ]
    envs = [GymEnvironment(env) for env in ["CartPole-v1"]]
    results = run_experiment(agents, envs, 3e3, quiet=True, test_episodes=4)
    assert [(r.agent, r.env) for r in results] == [("dqn", "CartPole-v1"), ("ppo", "CartPole-v1")]
    for result in results:
        assert len(result.test_returns) == 4
        assert not math.isnan(result.test_mean)
    # By default, run_experiment will write the results to ./runs
    for agent in ("dqn", "ppo"):
        csv = tmp_path / "runs" / agent / "CartPole-v1" / "returns100.csv"
        lines = csv.read_text().splitlines()
        assert lines[0] == "frame,mean,std,max,min"
        assert len(lines) >= 2  # >= 100 short episodes in 3000 frames
    path = plot_returns_100("./runs")
    assert Path(path).resolve() == (tmp_path / "runs" / "returns100.png").resolve()
    assert Path(path).read_bytes().startswith(b"\x89PNG")


def test_run_experiment_defaults_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from looprl.experiments import run_experiment
    from looprl.presets import classic_control

    monkeypatch.chdir(tmp_path)
    agents = [classic_control.dqn.hyperparameters(hidden=16, replay_start_size=10**6)]
    envs = [GymEnvironment("CartPole-v1")]
    (result,) = run_experiment(agents, envs, 200)  # test_episodes defaults to 100
    assert len(result.test_returns) == 100
    assert (tmp_path / "runs" / "dqn" / "CartPole-v1" / "test_returns.csv").exists()


# -- seed 004 (SRL): the calls its quick start shows ------------------------------------------
def test_srl_actor_critic_policy_as_the_seed_builds_it() -> None:
    import numpy as np

    from looprl.core import NamedArray, Policy, RolloutRequest

    policy = Policy(type_="actor-critic-separate",
                    args=dict(obs_dim={"obs": 187}, state_dim={"state": 623}, action_dim=16))
    obs = NamedArray(obs=np.zeros((5, 187), np.float32), state=np.zeros((5, 623), np.float32))
    result = policy.rollout(RolloutRequest(obs=obs, is_evaluation=np.zeros(5, bool)))
    assert tuple(result.action.shape) == (5,) and int(result.action.max()) < 16
    assert tuple(result.log_prob.shape) == (5,) and tuple(result.value.shape) == (5,)


def test_srl_policy_state_as_a_namedarray() -> None:
    import numpy as np

    from looprl.core import namedarray

    num_rnn_layers, rnn_hidden_dim = 2, 8

    @namedarray
    class MyPolicyState:
        hx: np.ndarray

    default_policy_state = MyPolicyState(
        hx=np.zeros((num_rnn_layers, 1, rnn_hidden_dim), dtype=np.float32)
    )
    assert default_policy_state.hx.shape == (2, 1, 8)


def test_srl_environment_test_and_trainer_step() -> None:
    from looprl.core import Policy, SampleBatch, Trainer, TrainerStepResult
    from looprl.distributed import EnvRunner, test_environment

    report = test_environment("CartPole-v1", test_stepping=True)
    assert report.agent_count == 1
    policy = Policy(type_="actor-critic-separate", args=dict(obs_dim={"obs": 4}, action_dim=2))
    trainer = Trainer(type_="ppo", policy=policy, args=dict(epochs=1))
    runner = EnvRunner("CartPole-v1", n_envs=2, segment_length=8)
    while True:
        runner.step(0, policy.rollout(runner.request(0)))
        samples = runner.segments()
        if samples:
            break
    assert isinstance(samples[0], SampleBatch)
    result = trainer.step(samples[0])
    assert isinstance(result, TrainerStepResult) and result.step == 1 and policy.version == 1
