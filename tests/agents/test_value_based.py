"""Tests of the value-based presets (ddqn, c51, rainbow, vqn, vsarsa) and of their parts,
whose targets are worked out by hand."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import torch

from helpers import RecordingTrainer
from looprl.agents.c51 import C51Policy, C51Trainer
from looprl.agents.dqn import DQNPolicy, DQNTrainer
from looprl.agents.on_policy import OnPolicyAgent
from looprl.approximation import FixedTarget, QNetwork
from looprl.approximation.q_dist import QDist
from looprl.core import ParallelPreset, SampleBatch, State, StateArray
from looprl.environments import GymEnvironment
from looprl.experiments import make_experiment
from looprl.nn.distributional import CategoricalQHead
from looprl.nn.layers import NoisyFactorizedLinear
from looprl.presets import load_preset
from looprl.presets.classic_control import c51, ddqn, rainbow, vqn, vsarsa

SMALL = {"hidden": 16, "replay_start_size": 50, "update_frequency": 8, "gradient_steps": 2,
         "minibatch_size": 16}
CASES = {
    "ddqn": (ddqn, SMALL),
    "ddqn-per": (ddqn, {**SMALL, "buffer": "prioritized"}),
    "c51": (c51, SMALL),
    "rainbow": (rainbow, SMALL),
    "rainbow-no-double": (rainbow, {**SMALL, "double": False}),
    "rainbow-no-dueling": (rainbow, {**SMALL, "dueling": False}),
    "rainbow-no-noisy": (rainbow, {**SMALL, "noisy": False}),
    "rainbow-one-step": (rainbow, {**SMALL, "n_steps": 1}),
    "rainbow-no-per": (rainbow, {**SMALL, "prioritized": False}),
    "rainbow-no-distributional": (rainbow, {**SMALL, "distributional": False}),
    "vqn": (vqn, {"hidden": 16, "n_envs": 4}),
    "vsarsa": (vsarsa, {"hidden": 16, "n_envs": 4}),
}


def _states(n: int = 32) -> StateArray:
    generator = torch.Generator().manual_seed(1)
    return StateArray({"observation": torch.randn(n, 4, generator=generator)}, (n,))


@pytest.mark.parametrize("case", list(CASES))
def test_preset_trains_saves_loads_and_evaluates(case: str, tmp_path: Path) -> None:
    builder, hyperparameters = CASES[case]
    env = GymEnvironment("CartPole-v1")
    torch.manual_seed(0)
    preset = builder.env(env).hyperparameters(**hyperparameters).device("cpu").build()
    before = [p.detach().clone() for p in preset.model.parameters()]
    experiment = make_experiment(preset, env, train_steps=400, logdir=str(tmp_path), quiet=True,
                                 verbose=False, seed=0)
    experiment.train(frames=400)
    assert experiment.frame >= 400
    assert any(not torch.equal(b, p) for b, p in zip(before, preset.model.parameters()))
    path = tmp_path / "preset.pt"
    preset.save(str(path))
    loaded = load_preset(str(path))
    assert type(loaded) is type(preset) and loaded.model is not preset.model
    states = _states()
    assert torch.equal(loaded.test_agent().act(states), preset.test_agent().act(states))
    single = loaded.test_agent().act(State(states.observation[0]))
    assert single.shape == () and int(single) in (0, 1)
    if isinstance(preset, ParallelPreset):
        assert loaded.parallel_test_agent().act(states).shape == (32,)
    # the experiment evaluates the original preset; replaying the same seeded episodes with
    # the loaded preset's greedy agent gives the very same returns
    if isinstance(preset, ParallelPreset):  # evaluated in 2 copies (one per episode) reset
        returns = sorted(experiment.test(episodes=2))  # with seed 10_000: their first episodes
        expected = sorted(_first_returns(loaded.parallel_test_agent(), 10_000, n_envs=2))
    else:
        env.reset(seed=123)  # seeds the resets of the evaluation episodes
        returns = experiment.test(episodes=2)
        replay = GymEnvironment("CartPole-v1")
        replay.reset(seed=123)
        expected = [_episode(loaded.test_agent(), replay) for _ in range(2)]
    assert returns == expected
    experiment.close()


def _episode(agent, env: GymEnvironment) -> float:
    """The return of one episode of ``agent`` from ``env.reset()``."""
    state, episode_return = env.reset(), 0.0
    while not state.done:
        state = env.step(agent.act(state))
        episode_return += state.reward
    return episode_return


def _first_returns(agent, seed: int, n_envs: int = 4) -> list[float]:
    """The returns of the first episode of each copy of a CartPole vector environment."""
    env = GymEnvironment("CartPole-v1").duplicate(n_envs)
    state, returns = env.reset(seed=seed), torch.zeros(n_envs)
    ended = torch.zeros(n_envs, dtype=torch.bool)
    while not ended.all():
        state = env.step(agent.act(state))
        returns += state.reward * ~ended
        ended |= state.done
    env.close()
    return returns.tolist()


def test_rainbow_switches_build_the_right_parts() -> None:
    env = GymEnvironment("CartPole-v1")
    agent = rainbow.env(env).device("cpu").build().agent()
    assert isinstance(agent.policy, C51Policy) and isinstance(agent.trainer, C51Trainer)
    assert agent.trainer.double and agent.policy.greedy.epsilon == 0.0
    assert type(agent.replay_buffer).__name__ == "PrioritizedReplayBuffer"
    assert agent.replay_buffer.n_step == agent.trainer.n_step == 3
    assert any(isinstance(m, NoisyFactorizedLinear) for m in agent.policy.module.modules())
    off = {"double": False, "noisy": False, "n_steps": 1, "prioritized": False,
           "distributional": False, "dueling": False}
    plain = rainbow.env(env).hyperparameters(**off).device("cpu").build().agent()
    assert isinstance(plain.trainer, DQNTrainer) and plain.trainer.update == "q_learning"
    assert type(plain.replay_buffer).__name__ == "ExperienceReplayBuffer"
    assert not any(isinstance(m, NoisyFactorizedLinear) for m in plain.policy.module.modules())


def test_presets_reject_bad_hyperparameters() -> None:
    env = GymEnvironment("CartPole-v1")
    with pytest.raises(ValueError, match="v_min"):
        c51.env(env).hyperparameters(v_min=1.0, v_max=0.0).build()
    with pytest.raises(ValueError, match="n_steps"):
        rainbow.env(env).hyperparameters(n_steps=0).build()
    with pytest.raises(ValueError, match="discrete"):
        vqn.env(GymEnvironment("Pendulum-v1")).build()


@pytest.mark.parametrize(("v_min", "v_max"), [(1.0, 1.00000001), (-2e38, 2e38)])
def test_a_support_float32_cannot_space_is_one_line_at_build(v_min: float, v_max: float) -> None:
    """Each in range, but one float32 (``1.0``, ``1.00000001``) or a span past float32's
    largest: the first update's projection indexed with NaN ('index -9223372036854775808 is
    out of bounds'), torch's traceback."""
    with pytest.raises(ValueError, match=r"^v_min < v_max needed, with 51 atoms "
                                         r"apart in float32.*got " + re.escape(f"{v_min} and "
                                                                              f"{v_max}") + "$"):
        c51.env(GymEnvironment("CartPole-v1")).hyperparameters(v_min=v_min, v_max=v_max).build()


def _lr_after_50_updates(builder, train_steps: float, **hyperparameters) -> float:
    env = GymEnvironment("CartPole-v1")
    preset = builder.env(env).hyperparameters(n_envs=4, lr=1e-3, **hyperparameters)
    agent = preset.device("cpu").build().agent(train_steps=train_steps)
    states = StateArray({"observation": torch.zeros(4, 4), "reward": torch.zeros(4),
                         "done": torch.zeros(4, dtype=torch.bool)}, (4,))
    for _ in range(51):  # the first call only acts; the next 50 each take one update
        agent.act(states)
    return agent.policy.q.optimizer.param_groups[0]["lr"]


def test_vqn_linear_lr_decays_over_the_training_budget() -> None:
    # 400 steps of 4 environments are 100 updates: after 50 the rate is halved
    assert _lr_after_50_updates(vqn, 400) == pytest.approx(5e-4)
    assert _lr_after_50_updates(vqn, 400, lr_schedule="constant") == 1e-3
    assert _lr_after_50_updates(vqn, float("inf")) == 1e-3  # no budget, nothing to decay over
    assert _lr_after_50_updates(vsarsa, 400) == 1e-3  # vsarsa keeps a constant rate
    assert _lr_after_50_updates(vsarsa, 400, lr_schedule="linear") == pytest.approx(5e-4)


def test_noisy_layer_is_noisy_in_training_and_mean_in_eval() -> None:
    torch.manual_seed(0)
    layer = NoisyFactorizedLinear(3, 2, sigma_init=0.5)
    x = torch.randn(5, 3)
    assert not torch.equal(layer(x), layer(x))
    layer.eval()
    mean = torch.nn.functional.linear(x, layer.weight_mu, layer.bias_mu)
    assert torch.equal(layer(x), mean)
    assert torch.allclose(layer.weight_sigma, torch.full((2, 3), 0.5 / 3**0.5))
    layer.train()
    layer(x).sum().backward()
    assert layer.weight_sigma.grad is not None and layer.weight_sigma.grad.abs().sum() > 0


# A two-action linear Q-function Q(s) = W s whose online and target weights differ (the same
# as in test_dqn.py), and three transitions, the last one terminal:
# online values Q(s, a): s=[1, 1], a=1: 2; s=[1, -1], a=0: 1; s=[0, 1], a=1: 2.
# next state [1, 0]: online values [1, 0], target values [2, 5];
# next state [0, 1]: online values [0, 2], target values [3, 1]; [1, 1] is terminal.
ONLINE_W = [[1.0, 0.0], [0.0, 2.0]]
TARGET_W = [[2.0, 3.0], [5.0, 1.0]]


def _linear_q(lr: float) -> tuple[QNetwork, torch.nn.Linear]:
    model = torch.nn.Linear(2, 2, bias=False)
    with torch.no_grad():
        model.weight.copy_(torch.tensor(TARGET_W))
    q = QNetwork(model, torch.optim.SGD(model.parameters(), lr=lr), target=FixedTarget(1000))
    with torch.no_grad():
        model.weight.copy_(torch.tensor(ONLINE_W))
    return q, model


def _hand_batch(next_actions: torch.Tensor | None = None) -> SampleBatch:
    """One-step windows ``[2, 3]`` of hand-made transitions; the third one terminates."""
    obs = torch.tensor([[[1.0, 1.0], [1.0, -1.0], [0.0, 1.0]],
                        [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]])
    taken = torch.zeros(3, dtype=torch.int64) if next_actions is None else next_actions
    return SampleBatch(
        obs=obs, action=torch.stack([torch.tensor([1, 0, 1]), taken]),
        reward=torch.tensor([[0.0, 0.0, 0.0], [2.0, -1.0, 3.0]]),
        done=torch.tensor([[False] * 3, [False, False, True]]),
        truncated=torch.zeros(2, 3, dtype=torch.bool),
        weight=torch.tensor([1.0, 2.0, 0.5]).expand(2, 3),
    )


def _hand_n_step_batch() -> SampleBatch:
    """Two-step windows ``[3, 3]`` of the same transitions: the first is cut (truncated)
    after one step, the second takes two (rewards -1 and 0), the third terminates."""
    one = _hand_batch()
    obs = torch.cat([one.obs, torch.tensor([[[7.0, 7.0], [0.0, 1.0], [7.0, 7.0]]])])
    obs[1, 1] = torch.tensor([9.0, 9.0])  # the second window's middle state
    return SampleBatch(
        obs=obs, action=torch.cat([one.action, torch.zeros(1, 3, dtype=torch.int64)]),
        reward=torch.cat([one.reward, torch.tensor([[5.0, 0.0, 5.0]])]),
        done=torch.cat([one.done, torch.zeros(1, 3, dtype=torch.bool)]),
        truncated=torch.tensor([[False] * 3, [True, False, False], [False] * 3]),
        weight=torch.tensor([1.0, 2.0, 0.5]).expand(3, 3),
    )


def test_double_q_n_step_trainer_matches_hand_target_and_returns_priorities() -> None:
    q, linear = _linear_q(lr=0.3)
    trainer = DQNTrainer(DQNPolicy(q, 2), discount_factor=0.5, n_step=2, double_q=True,
                         huber=False)
    result = trainer.step(_hand_n_step_batch())
    # returns [2, -1 + 0.5 * 0, 3] with discounts [0.5, 0.25, 0] at the bootstrap states
    # [1, 0], [0, 1] (the terminal one's is not used); the online network picks actions 0 and
    # 1 there, the target network values them 2 and 1: targets [2 + 0.5 * 2, -1 + 0.25 * 1, 3]
    # = [3, -0.75, 3] (DQN's max target would give [4.5, -0.25, 3], the online network's own
    # values [2.5, -0.5, 3])
    td_error = trainer.td_error
    assert torch.allclose(td_error, torch.tensor([1.0, -1.75, 1.0]))
    assert torch.allclose(result.priorities, td_error.abs())
    # weighted MSE (1 * 1 + 2 * 1.75^2 + 0.5 * 1) / 3
    assert torch.isclose(result.stats["loss"], torch.tensor(7.625 / 3))
    # one SGD step, W[a] += lr * 2/3 * sum_i w_i td_i s_i over the rows with action a:
    # W[0] += 0.2 * 2 * -1.75 * [1, -1]; W[1] += 0.2 * (1 * [1, 1] + 0.5 * [0, 1])
    assert torch.allclose(linear.weight, torch.tensor([[0.3, 0.7], [0.2, 2.3]]))
    bootstrap = StateArray({"observation": torch.tensor([[1.0, 0.0], [0.0, 1.0]])}, (2,))
    assert torch.equal(q.target(bootstrap), torch.tensor([[2.0, 5.0], [3.0, 1.0]]))
    assert result.step == 1 and trainer.policy.version == 1


def test_clipped_double_q_takes_the_smaller_estimate_of_the_online_argmax() -> None:
    q, _ = _linear_q(lr=0.0)
    trainer = DQNTrainer(DQNPolicy(q, 2), discount_factor=0.5, n_step=2, huber=False,
                         update="clipped_double_q")
    trainer.step(_hand_n_step_batch())
    # online argmax values [1, 2], target values of those actions [2, 1]: min [1, 1];
    # targets [2 + 0.5 * 1, -1 + 0.25 * 1, 3] = [2.5, -0.75, 3] against Q(s, a) = [2, 1, 2]
    assert torch.allclose(trainer.td_error, torch.tensor([0.5, -1.75, 1.0]))


def test_unknown_update_lists_the_valid_ones() -> None:
    q, _ = _linear_q(lr=0.0)
    with pytest.raises(ValueError, match="'double_qq'.*Did you mean 'double_q'.*q_learning"):
        DQNTrainer(DQNPolicy(q, 2), update="double_qq")


def test_dqn_trainer_huber_loss_and_double_q_switch() -> None:
    q, _ = _linear_q(lr=0.0)
    batch = _hand_batch()
    double = DQNTrainer(DQNPolicy(q, 2), discount_factor=0.5, double_q=True)  # Huber default
    # targets [2 + 0.5 * 2, -1 + 0.5 * 1, 3] = [3, -0.5, 3]; TD errors [1, -1.5, 1];
    # Huber [0.5, 1.5 - 0.5, 0.5], weighted (0.5 + 2 * 1 + 0.5 * 0.5) / 3
    result = double.step(batch)
    assert torch.allclose(double.td_error, torch.tensor([1.0, -1.5, 1.0]))
    assert torch.isclose(result.stats["loss"], torch.tensor(2.75 / 3))
    plain = DQNTrainer(DQNPolicy(q, 2), discount_factor=0.5)
    # DQN's target [2 + 0.5 * 5, -1 + 0.5 * 3, 3] = [4.5, 0.5, 3]
    plain.step(batch)
    assert torch.allclose(plain.td_error, torch.tensor([2.5, -0.5, 1.0]))


def test_sarsa_update_bootstraps_from_the_action_taken_next() -> None:
    q, linear = _linear_q(lr=0.3)
    # the actions taken next are not the target network's greedy ones (1 at [1, 0], 0 at [0, 1])
    batch = _hand_batch(next_actions=torch.tensor([0, 1, 0]))
    trainer = DQNTrainer(DQNPolicy(q, 2), discount_factor=0.5, update="sarsa", huber=False)
    loss = trainer.step(batch).stats["loss"]
    # targets r + 0.5 * mask * Q_target(s', a') = [2 + 0.5 * 2, -1 + 0.5 * 1, 3] = [3, -0.5, 3];
    # TD errors [1, -1.5, 1] (Q-learning's max would give [4.5, 0.5, 3]);
    # weighted MSE (1 * 1 + 2 * 1.5^2 + 0.5 * 1) / 3 = 2
    assert torch.isclose(loss, torch.tensor(2.0))
    # W[0] += 0.2 * 2 * -1.5 * [1, -1]; W[1] += 0.2 * (1 * [1, 1] + 0.5 * [0, 1])
    assert torch.allclose(linear.weight, torch.tensor([[0.4, 0.6], [0.2, 2.3]]))


def test_vsarsa_agent_passes_the_next_action_it_takes_to_the_trainer() -> None:
    torch.manual_seed(0)
    q = QNetwork(torch.nn.Linear(4, 2))
    policy = DQNPolicy(q, 2, epsilon=1.0)  # random actions: rarely the greedy ones
    trainer = RecordingTrainer(policy)
    agent = OnPolicyAgent(policy, trainer, n_envs=64, n_steps=1)  # what vsarsa builds
    first = _states(64)
    second = StateArray({"observation": torch.randn(64, 4), "reward": torch.arange(64.0)}, (64,))
    first_actions = agent.act(first)
    assert trainer.batches == []  # nothing to learn from before the second step
    second_actions = agent.act(second)
    assert not torch.equal(second_actions, q.no_grad(second).argmax(-1))
    assert not torch.equal(second_actions, first_actions)
    batch, = trainer.batches
    assert torch.equal(batch.obs[0], first.observation)
    assert torch.equal(batch.obs[1], second.observation)
    assert torch.equal(batch.action[0], first_actions)
    assert torch.equal(batch.action[1], second_actions)
    assert torch.equal(batch.reward[1], torch.arange(64.0)) and batch.weight is None
    assert not (batch.done | batch.truncated).any()  # every row of `first` is a transition


def test_qdist_masks_terminal_states_to_zero_return() -> None:
    head = CategoricalQHead(torch.nn.Linear(4, 2 * 5), 2, 5)
    dist = QDist(head, num_actions=2, num_atoms=5, v_min=-2.0, v_max=2.0)
    states = StateArray({"observation": torch.randn(3, 4), "mask": torch.tensor([1.0, 0.0, 1.0])},
                        (3,))
    probs = dist.no_grad(states)
    assert probs.shape == (3, 2, 5)
    assert torch.allclose(probs.sum(-1), torch.ones(3, 2))
    assert torch.equal(probs[1], torch.tensor([[0.0, 0.0, 1.0, 0.0, 0.0]] * 2))
    chosen = dist.no_grad(states, torch.tensor([1, 0, 1]))
    assert torch.equal(chosen[0], probs[0, 1]) and torch.equal(chosen[2], probs[2, 1])
    expected = (probs * dist.atoms).sum(-1)
    assert torch.allclose(dist.expectation.no_grad(states), expected)


class ProbabilityTable(torch.nn.Module):
    """C51 model of one-hot observations: ``probs[s]``, shape ``(actions, atoms)``, per state."""

    def __init__(self, probs: list) -> None:
        super().__init__()
        self.probs = torch.nn.Parameter(torch.tensor(probs))

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        return torch.einsum("bs,saz->baz", observation, self.probs)


def _c51_trainer(target: list, online: list, double: bool = False) -> C51Trainer:
    """A ``C51Trainer`` over atoms [-1, 0, 1] whose target and online networks are the
    probability tables ``target`` and ``online``."""
    table = ProbabilityTable(target)
    dist = QDist(table, torch.optim.SGD(table.parameters(), lr=0.0), num_actions=2, num_atoms=3,
                 v_min=-1.0, v_max=1.0, target=FixedTarget(1000))
    with torch.no_grad():
        table.probs.copy_(torch.tensor(online))
    return C51Trainer(C51Policy(dist, 2), discount_factor=0.5, n_step=2, double=double)


def _window(reward: float) -> SampleBatch:
    """A one-step window from the table's second state to its first one."""
    return SampleBatch(obs=torch.tensor([[[0.0, 1.0]], [[1.0, 0.0]]]),
                       action=torch.zeros(2, 1, dtype=torch.int64),
                       reward=torch.tensor([[0.0], [reward]]),
                       done=torch.zeros(2, 1, dtype=torch.bool),
                       truncated=torch.zeros(2, 1, dtype=torch.bool))


# the target distribution of the action with the higher expected value, [0, 0.5, 0.5] at atoms
# [-1, 0, 1], projected after reward 0.5 and discount 0.5: Tz = [0, 0.5, 1] -> 0.5 splits
# between atoms 0 and 1, 0.5 lands on 1: [0, 0.25, 0.75]
PROJECTED_BEST = [0.0, 0.25, 0.75]
UNUSED_STATE = [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]


def test_c51_target_bootstraps_the_action_with_the_highest_expected_value() -> None:
    # action 0: [0.3, 0.7, 0], expected value -0.3 but the most probable single atom (0.7);
    # action 1: [0, 0.5, 0.5], expected value 0.5
    table = [[[0.3, 0.7, 0.0], [0.0, 0.5, 0.5]], UNUSED_STATE]
    trainer = _c51_trainer(table, table)
    targets = trainer.targets(_window(0.5))
    # action 0 would project to [0, 0.3 + 0.35, 0.35]
    assert torch.allclose(targets, torch.tensor([PROJECTED_BEST]))


def test_c51_double_chooses_with_the_online_network_and_evaluates_with_the_target() -> None:
    # target network: action 0 [0, 0.5, 0.5] (expected 0.5), action 1 [0.6, 0.4, 0] (-0.6);
    # online network: action 0 [0.5, 0.5, 0] (-0.5), action 1 [0, 0, 1] (1)
    target = [[[0.0, 0.5, 0.5], [0.6, 0.4, 0.0]], UNUSED_STATE]
    online = [[[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]], UNUSED_STATE]
    window = _window(0.5)
    # double: online picks action 1, the target network's [0.6, 0.4, 0] is projected:
    # Tz = [0, 0.5, 1]: 0.6 on atom 0, 0.4 split evenly between atoms 0 and 1
    double = _c51_trainer(target, online, double=True).targets(window)
    assert torch.allclose(double, torch.tensor([[0.0, 0.8, 0.2]]))
    # not double: the target network picks (and evaluates) its action 0;
    # the online network's own action 1 would give [0, 0, 1]
    single = _c51_trainer(target, online, double=False).targets(window)
    assert torch.allclose(single, torch.tensor([PROJECTED_BEST]))


def test_c51_step_takes_a_numpy_window_as_a_torch_one() -> None:
    """A window that is not torch tensors on the policy's device (numpy; a CPU replay's batch
    for a GPU trainer) is moved before the update: the same loss and priorities."""
    table = [[[0.3, 0.7, 0.0], [0.0, 0.5, 0.5]], UNUSED_STATE]
    torch_step = _c51_trainer(table, table).step(_window(0.5))
    numpy_step = _c51_trainer(table, table).step(_window(0.5).to_numpy())
    assert torch.equal(numpy_step.priorities, torch_step.priorities)


def test_c51_priorities_are_the_kl_divergence_from_the_target() -> None:
    """Rainbow prioritizes by the KL loss (Hessel et al., 2018; ALL's ``C51._kl``): a transition
    whose distribution already is its target gets priority 0, not the target's entropy."""
    learned = [[0.0, 0.25, 0.75], [1.0, 0.0, 0.0]]  # state 1, action 0: PROJECTED_BEST itself
    trainer = _c51_trainer([[[0.3, 0.7, 0.0], [0.0, 0.5, 0.5]], learned],
                           [[[0.3, 0.7, 0.0], [0.0, 0.5, 0.5]], learned])
    result = trainer.step(_window(0.5))
    # the cross-entropy would be the entropy of [0, 0.25, 0.75], about 0.56
    assert result.priorities.abs().max() < 1e-6


def _projection(reward: float, discount: float, probs: list[float]) -> list[float]:
    """Algorithm 1 of Bellemare et al. (2017) for atoms [-1, 0, 1], one atom at a time."""
    atoms, target = [-1.0, 0.0, 1.0], [0.0, 0.0, 0.0]
    for z, p in zip(atoms, probs):
        b = min(max(reward + discount * z, -1.0), 1.0) + 1.0  # (Tz - v_min) / dz
        lower, upper = math.floor(b), math.ceil(b)
        if lower == upper:
            target[lower] += p
        else:
            target[lower] += p * (upper - b)
            target[upper] += p * (b - lower)
    return target


def test_c51_target_uses_the_n_step_discount_of_each_window() -> None:
    table = [[[0.3, 0.7, 0.0], [0.0, 0.5, 0.5]], UNUSED_STATE]
    trainer = _c51_trainer(table, table)  # discount_factor 0.5, n_step 2
    first, second = [1.0, 0.0], [0.0, 1.0]
    windows = SampleBatch(  # one step (cut), two steps (rewards 0, 0), terminal (reward 0.5)
        obs=torch.tensor([[second] * 3, [first, second, first], [first] * 3]),
        action=torch.zeros(3, 3, dtype=torch.int64),
        reward=torch.tensor([[0.0, 0.0, 0.0], [0.0, 0.0, 0.5], [9.0, 0.0, 9.0]]),
        done=torch.tensor([[False] * 3, [False, False, True], [False] * 3]),
        truncated=torch.tensor([[False] * 3, [True, False, False], [False] * 3]),
    )
    targets = trainer.targets(windows)
    # row 0: Tz = [-0.5, 0, 0.5] -> [0, 0.5 + 0.25, 0.25]; row 1 (discount 0.25):
    # Tz = [-0.25, 0, 0.25] -> [0, 0.5 + 0.375, 0.125];
    # row 2 is terminal: everything lands on r = 0.5, half on atom 0 and half on atom 1
    expected = [[0.0, 0.75, 0.25], [0.0, 0.875, 0.125], [0.0, 0.5, 0.5]]
    assert torch.allclose(targets, torch.tensor(expected))
    reference = [_projection(0.0, 0.5, [0.0, 0.5, 0.5]), _projection(0.0, 0.25, [0.0, 0.5, 0.5]),
                 _projection(0.5, 0.0, [0.0, 1.0, 0.0])]
    assert torch.allclose(targets, torch.tensor(reference))
