"""Tests of the ready-made SRL actor-critic policies (looprl.agents.actor_critic)."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch

import looprl.agents  # noqa: F401 -- registers the policies
from looprl.agents import OnPolicyAgent, PPOTrainer
from looprl.agents.actor_critic import (
    ActorCriticAnalysis,
    ActorCriticPolicy,
    GRUPolicyState,
    SeparateGRUPolicyState,
)
from looprl.core import NamedArray, Policy, RolloutRequest, RolloutResult, SampleBatch
from looprl.environments import GymVectorEnvironment
from looprl.nn import NatureCNN

DISCRETE = [
    "actor-critic",
    "actor-critic-separate",
    "actor-critic-shared",
    "actor-critic-auxiliary",
]
CONTINUOUS = ["actor-critic-separate-continuous-action", "actor-critic-shared-continuous-action"]


def _policy(name: str = "actor-critic-separate", **args) -> ActorCriticPolicy:
    args = {"obs_dim": {"obs": 5}, "action_dim": 3, "seed": 0, **args}
    return Policy(type_=name, args=args)


def _obs(rows: int, dim: int = 5, seed: int = 0) -> NamedArray:
    rng = np.random.default_rng(seed)
    return NamedArray(obs=rng.standard_normal((rows, dim)).astype(np.float32))


def _stack_states(states: list) -> NamedArray:
    return NamedArray.stack(states)


@pytest.mark.parametrize("rows", [1, 7])
@pytest.mark.parametrize("rnn_type", [None, "gru"])
@pytest.mark.parametrize("name", DISCRETE + CONTINUOUS)
def test_rollout_shapes_and_dtypes(name: str, rnn_type: str | None, rows: int) -> None:
    policy = _policy(name, action_dim=2, rnn_type=rnn_type, num_rnn_layers=2, rnn_hidden_dim=8)
    assert isinstance(policy, ActorCriticPolicy)
    state = policy.default_policy_state
    states = None if state is None else _stack_states([state] * rows)
    result = policy.rollout(RolloutRequest(obs=_obs(rows), policy_state=states))
    assert isinstance(result, RolloutResult)
    if name in CONTINUOUS:
        assert result.action.shape == (rows, 2) and result.action.dtype == torch.float32
    else:
        assert result.action.shape == (rows,) and result.action.dtype == torch.int64
    assert result.log_prob.shape == (rows,) and result.value.shape == (rows,)
    if rnn_type is None:
        assert state is None and result.policy_state is None
        return
    assert all(leaf.shape == (2, 1, 8) and leaf.dtype == np.float32 for leaf in state.values())
    assert isinstance(result.policy_state, type(state))
    assert all(leaf.shape == (rows, 2, 1, 8) for leaf in result.policy_state.values())
    assert any(float(leaf.abs().sum()) > 0 for leaf in result.policy_state.values())


def test_the_seed_example_with_a_centralized_critic() -> None:
    policy = Policy(
        type_="actor-critic-separate",
        args=dict(obs_dim={"obs": 187}, state_dim={"state": 623}, action_dim=16, seed=0),
    )
    rng = np.random.default_rng(0)
    obs = rng.standard_normal((4, 187)).astype(np.float32)
    state = rng.standard_normal((4, 623)).astype(np.float32)
    first = policy.rollout(RolloutRequest(obs=NamedArray(obs=obs, state=state), is_evaluation=True))
    other_state = policy.rollout(
        RolloutRequest(obs=NamedArray(obs=obs, state=state + 1), is_evaluation=True)
    )
    # the actor reads obs only, the critic state only
    assert torch.equal(first.log_prob, other_state.log_prob)
    assert not torch.allclose(first.value, other_state.value)
    other_obs = policy.rollout(
        RolloutRequest(obs=NamedArray(obs=obs + 1, state=state), is_evaluation=True)
    )
    assert torch.equal(first.value, other_obs.value)
    assert not torch.allclose(first.log_prob, other_obs.log_prob)


@pytest.mark.parametrize("state_dim", [None, {"state": 3}])
@pytest.mark.parametrize("obs_dim", [{"obs": 5}, {"obs": 5, "img": (2, 12, 12)}])
def test_separate_backbones_share_no_parameter(obs_dim, state_dim) -> None:
    policy = _policy(obs_dim=obs_dim, state_dim=state_dim, rnn_type="gru")
    model = policy.module
    actor = {id(p) for p in [*model.actor.parameters(), *model.policy_head.parameters()]}
    critic = {id(p) for p in [*model.critic.parameters(), *model.value_head.parameters()]}
    assert actor and critic and not actor & critic
    assert len(actor) + len(critic) == len(list(model.parameters()))
    # and no gradient flows from the value into the actor path
    rows = 4
    obs = {
        "obs": torch.randn(rows, 5),
        "img": torch.randn(rows, 2, 12, 12),
        "state": torch.randn(rows, 3),
    }
    _, value, _, _ = model(obs)
    value.sum().backward()
    assert all(p.grad is None or float(p.grad.abs().sum()) == 0 for p in model.actor.parameters())
    assert all(p.grad is not None for p in model.critic.parameters())


def test_shared_backbone_feeds_both_heads() -> None:
    policy = _policy("actor-critic-shared")
    model = policy.module
    assert model.critic is None
    _, value, _, _ = model(torch.randn(4, 5))
    value.sum().backward()
    assert all(p.grad is not None for p in model.actor.parameters())


def test_image_fields_use_the_nature_cnn() -> None:
    policy = _policy(obs_dim={"frames": (4, 84, 84), "vec": 3}, action_dim=4)
    assert any(isinstance(m, NatureCNN) for m in policy.module.actor.modules())
    frames = np.zeros((2, 4, 84, 84), dtype=np.uint8)
    result = policy.rollout(RolloutRequest(obs={"frames": frames, "vec": np.zeros((2, 3))}))
    assert result.action.shape == (2,)


@pytest.mark.parametrize("name", ["actor-critic-separate", CONTINUOUS[1]])
def test_evaluation_rows_are_deterministic(name: str) -> None:
    policy = _policy(name)
    obs = _obs(400)
    with torch.no_grad():
        params, _, _, _ = policy.module(obs)
    mode = policy.head.mode(params)
    rows = torch.arange(400) % 2 == 0
    first = policy.rollout(RolloutRequest(obs=obs, is_evaluation=rows.numpy()))
    second = policy.rollout(RolloutRequest(obs=obs, is_evaluation=rows))
    assert torch.equal(first.action[rows], mode[rows])
    assert torch.equal(second.action[rows], first.action[rows])
    assert not torch.equal(first.action[~rows], second.action[~rows])  # sampled rows vary
    everything = policy.rollout(RolloutRequest(obs=obs, is_evaluation=True))
    assert torch.equal(everything.action, mode)


def test_feed_forward_analyze_matches_rollout_for_any_leading_shape() -> None:
    policy = _policy("actor-critic-auxiliary")
    obs = _obs(12)
    result = policy.rollout(RolloutRequest(obs=obs))
    sample = SampleBatch(
        obs=NamedArray(obs=obs.obs.reshape(3, 4, 5)), action=result.action.reshape(3, 4)
    )
    analysis = policy.analyze(sample, target="ppo")
    assert isinstance(analysis, ActorCriticAnalysis)
    for field in ("log_prob", "entropy", "value", "aux_value"):
        assert analysis[field].shape == (3, 4) and analysis[field].requires_grad
    assert torch.allclose(analysis.log_prob.reshape(12), result.log_prob, atol=1e-6)
    assert torch.allclose(analysis.value.reshape(12), result.value, atol=1e-6)
    flat = policy.analyze(NamedArray(obs=obs, action=result.action))
    assert flat.log_prob.shape == (12,)
    values = policy.analyze(sample, target="value")
    assert values.log_prob is None and torch.allclose(values.value, analysis.value)
    assert _policy().analyze(sample).aux_value is None
    with pytest.raises(ValueError, match="unknown analyze target 'q'"):
        policy.analyze(sample, target="q")


def _recurrent_segment(policy: ActorCriticPolicy, steps: int, cols: int, done, truncated):
    """Roll ``cols`` streams for ``steps`` rows, resetting memories after episode ends."""
    rng = np.random.default_rng(1)
    obs = rng.standard_normal((steps, cols, 5)).astype(np.float32)
    default = policy.default_policy_state
    state = _stack_states([default] * cols)
    states, actions, log_probs, values = [], [], [], []
    for t in range(steps):
        states.append(state)
        result = policy.rollout(RolloutRequest(obs=NamedArray(obs=obs[t]), policy_state=state))
        actions.append(result.action)
        log_probs.append(result.log_prob)
        values.append(result.value)
        state = result.policy_state.to_numpy()
        for b in np.nonzero(done[t] | truncated[t])[0]:  # the next row starts a new episode
            state[b] = default
    sample = SampleBatch(
        obs=NamedArray(obs=obs),
        action=torch.stack(actions),
        done=done,
        truncated=truncated,
        policy_state=_stack_states(states),
    )
    return sample, torch.stack(log_probs), torch.stack(values)


@pytest.mark.parametrize("name", ["actor-critic-separate", "actor-critic-shared", CONTINUOUS[0]])
def test_recurrent_analyze_equals_rollout_with_episode_resets(name: str) -> None:
    policy = _policy(name, rnn_type="gru", num_rnn_layers=2, rnn_hidden_dim=16)
    with torch.no_grad():  # sharpen the policy, so that log-probs depend on the memory
        for parameter in policy.module.policy_head.parameters():
            parameter.mul_(100)
    steps, cols = 7, 3
    done = np.zeros((steps, cols), dtype=bool)
    truncated = np.zeros((steps, cols), dtype=bool)
    done[2, 0] = done[4, 1] = True
    truncated[3, 2] = truncated[5, 0] = True
    sample, log_prob, value = _recurrent_segment(policy, steps, cols, done, truncated)
    analysis = policy.analyze(sample, target="ppo")
    assert analysis.log_prob.shape == (steps, cols) and analysis.log_prob.requires_grad
    assert torch.allclose(analysis.log_prob, log_prob, atol=1e-5)
    assert torch.allclose(analysis.value, value, atol=1e-5)
    # without the resets the memories differ after the first episode end
    no_reset = SampleBatch(
        obs=sample.obs,
        action=sample.action,
        done=np.zeros_like(done),
        truncated=np.zeros_like(truncated),
        policy_state=sample.policy_state,
    )
    wrong = policy.analyze(no_reset)
    assert torch.allclose(wrong.log_prob[:3], log_prob[:3], atol=1e-5)
    assert not torch.allclose(wrong.log_prob, log_prob, atol=1e-2)
    assert not torch.allclose(wrong.value, value, atol=1e-2)


def test_recurrent_policy_state_errors_are_one_line() -> None:
    policy = _policy("actor-critic-shared", rnn_type="gru", rnn_hidden_dim=8)
    bad = GRUPolicyState(hx=np.zeros((3, 2, 1, 8), dtype=np.float32))
    with pytest.raises(ValueError, match=r"expected \[B, 1, 1, 8\]") as error:
        policy.rollout(RolloutRequest(obs=_obs(3), policy_state=bad))
    assert "\n" not in str(error.value)
    four = GRUPolicyState(hx=np.zeros((4, 1, 1, 8), dtype=np.float32))
    with pytest.raises(ValueError, match="got obs: 3, policy_state: 4"):
        RolloutRequest(obs=_obs(3), policy_state=four)
    request = RolloutRequest(obs=_obs(3))
    request.__dict__["policy_state"] = four  # (behind its back: the policy's own check)
    with pytest.raises(ValueError, match="policy_state has 4 rows, obs 3"):
        policy.rollout(request)
    with pytest.raises(ValueError, match="policy_state"):
        policy.analyze(SampleBatch(obs=NamedArray(obs=np.zeros((2, 3, 5), np.float32))))
    separate = _policy(rnn_type="gru", rnn_hidden_dim=8)
    assert isinstance(separate.default_policy_state, SeparateGRUPolicyState)
    with pytest.raises(ValueError, match="no 'critic_hx'"):
        separate.rollout(
            RolloutRequest(obs=_obs(4), policy_state=NamedArray(hx=four.hx, other=four.hx))
        )


def test_action_mask_is_respected() -> None:
    policy = _policy(action_dim=4)
    rows = 300
    mask = np.zeros((rows, 4), dtype=bool)
    mask[np.arange(rows), np.arange(rows) % 4] = True  # one valid action per row
    third = np.arange(0, rows, 3)
    mask[third, (third + 1) % 4] = True  # two on every third row
    obs = NamedArray(obs=_obs(rows).obs, action_mask=mask)
    for evaluation in (False, True):
        action = policy.rollout(RolloutRequest(obs=obs, is_evaluation=evaluation)).action
        assert mask[np.arange(rows), action.numpy()].all()
    result = policy.rollout(RolloutRequest(obs=obs))
    analysis = policy.analyze(NamedArray(obs=obs, action=result.action))
    assert torch.allclose(analysis.log_prob, result.log_prob, atol=1e-6)
    assert torch.isfinite(analysis.entropy).all()
    assert torch.allclose(analysis.entropy[1], torch.tensor(0.0))  # a single valid action
    invalid = torch.as_tensor((np.arange(rows) + 2) % 4)
    assert (policy.analyze(NamedArray(obs=obs, action=invalid)).log_prob < -1e6).all()


def test_unknown_type_is_a_key_error_listing_the_names() -> None:
    with pytest.raises(KeyError, match="actor-critic-separate.*q-network"):
        Policy(type_="actor-critic-seperate", args={"obs_dim": 4, "action_dim": 2})


@pytest.mark.parametrize("type_", ["actor-critic-separate", "q-network"])
def test_a_device_torch_cannot_use_is_one_line(type_: str) -> None:
    args = {"obs_dim": {"obs": 4}, "action_dim": 2}
    with pytest.raises(ValueError, match="^Unknown device 'gpu'"):
        Policy(type_=type_, args={**args, "device": "gpu"})
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="sees no CUDA GPU here; use 'cpu'"):
            Policy(type_=type_, args={**args, "device": "cuda"})


def test_bad_observations_give_one_line_errors() -> None:
    policy = _policy(obs_dim={"obs": 5}, state_dim={"state": 3})
    with pytest.raises(ValueError, match=r"no field\(s\) \['state'\]") as missing:
        policy.rollout(RolloutRequest(obs=_obs(2)))
    with pytest.raises(ValueError, match="obs field 'obs' has shape") as shape:
        policy.rollout(RolloutRequest(obs={"obs": np.zeros((2, 6)), "state": np.zeros((2, 3))}))
    assert "\n" not in str(missing.value) and "\n" not in str(shape.value)
    with pytest.raises(ValueError, match="action_dim"):
        _policy(action_dim=0)
    with pytest.raises(ValueError, match="rnn_type"):
        _policy(rnn_type="lstm")


def test_checkpoint_round_trip() -> None:
    policy = _policy("actor-critic-auxiliary", rnn_type="gru")
    policy.version = 7
    buffer = io.BytesIO()
    torch.save(policy.get_checkpoint(), buffer)
    checkpoint = torch.load(io.BytesIO(buffer.getvalue()))
    assert set(checkpoint) == {"state_dict", "version"}  # no optimizer state
    other = _policy("actor-critic-auxiliary", rnn_type="gru", seed=1)
    obs = _obs(3)
    before = other.rollout(RolloutRequest(obs=obs, is_evaluation=True))
    other.load_checkpoint(checkpoint)
    assert other.version == 7
    mine = policy.rollout(RolloutRequest(obs=obs, is_evaluation=True))
    theirs = other.rollout(RolloutRequest(obs=obs, is_evaluation=True))
    assert not torch.allclose(before.value, theirs.value)
    assert torch.equal(mine.value, theirs.value) and torch.equal(mine.log_prob, theirs.log_prob)
    assert torch.equal(mine.policy_state.hx, theirs.policy_state.hx)


def test_seeded_policies_are_reproducible() -> None:
    first, second = _policy(seed=3), _policy(seed=3)
    for a, b in zip(first.module.parameters(), second.module.parameters()):
        assert torch.equal(a, b)
    obs = _obs(50)
    assert torch.equal(
        first.rollout(RolloutRequest(obs=obs)).action,
        second.rollout(RolloutRequest(obs=obs)).action,
    )


def test_continuous_actions_have_a_state_independent_log_std() -> None:
    policy = _policy(CONTINUOUS[0], init_log_std=-1.0, action_low=[-2.0] * 3, action_high=[2.0] * 3)
    params, _, _, _ = policy.module(torch.randn(6, 5))
    _, log_std = params.chunk(2, dim=-1)
    assert torch.allclose(log_std, torch.full((6, 3), -1.0))
    mode = policy.rollout(RolloutRequest(obs=_obs(6), is_evaluation=True)).action
    assert ((mode >= -2) & (mode <= 2)).all()


def test_local_ppo_learns_cartpole() -> None:
    """The local PPO agent trains a registered SRL policy: same classes, both runtimes."""
    torch.manual_seed(1)
    policy = Policy(
        type_="actor-critic-separate",
        args=dict(obs_dim=4, action_dim=2, lr=1e-3, clip_grad=0.5, seed=1),
    )
    trainer = PPOTrainer(policy, epochs=10, minibatch_size=256, entropy_coef=0.0,
                         discount_factor=0.98, gae_lambda=0.8, seed=1)
    agent = OnPolicyAgent(policy, trainer, n_envs=8, n_steps=32)
    env = GymVectorEnvironment("CartPole-v1", 8, seed=1)
    state, returns, episodes = env.reset(), torch.zeros(8), []
    for _ in range(40_000 // 8):
        state = env.step(agent.act(state))
        returns += state.reward
        for row in torch.nonzero(state.done).flatten().tolist():
            episodes.append(float(returns[row]))
            returns[row] = 0
        if len(episodes) >= 10 and np.mean(episodes[-10:]) > 150:
            break
    env.close()
    assert np.mean(episodes[-10:]) > 150, episodes[-10:]
    assert policy.version > 0


def test_a_users_trainer_counts_its_steps_with_inc_version_on_a_registered_policy() -> None:
    """The trainer of docs/coming-from-srl.md calls ``self.policy.inc_version()``: every
    policy has it (was: only ``SingleModelPytorchPolicy``, an ``AttributeError`` on the
    actor-critic and q-network policies)."""
    from looprl.core import Trainer, TrainerStepResult
    from looprl.distributed import AlgorithmSpec, test_pipeline

    class MyTrainer(Trainer):
        def __init__(self, policy: Policy):
            self._policy, self.steps = policy, 0

        @property
        def policy(self) -> Policy:
            return self._policy

        def step(self, samples: SampleBatch) -> TrainerStepResult:
            self.policy.inc_version()
            self.steps += 1
            return TrainerStepResult(stats={"loss": 0.0}, step=self.steps)

    spec = AlgorithmSpec(env="CartPole-v1", policy="actor-critic-separate",
                         policy_args=dict(obs_dim={"obs": 4}, action_dim=2), trainer=MyTrainer)
    report = test_pipeline(spec, episodes=1, max_frames=200, segment_length=8)
    assert report.train_steps > 0


def test_a_users_trainer_builds_its_optimizer_over_a_registered_policys_parameters() -> None:
    """SRL's ``Adam(policy.parameters())`` and ``policy.net`` on the built-in policies (was an
    ``AttributeError``: only ``SingleModelPytorchPolicy`` had them); ``test_pipeline`` runs its
    steps."""
    from looprl.core import Trainer, TrainerStepResult
    from looprl.distributed import AlgorithmSpec, test_pipeline

    class MyTrainer(Trainer):
        def __init__(self, policy: Policy):
            self._policy = policy
            self.optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)

        @property
        def policy(self) -> Policy:
            return self._policy

        def step(self, samples: SampleBatch) -> TrainerStepResult:
            analyzed = self.policy.analyze(samples)
            loss = (analyzed.value ** 2).mean()  # (anything that moves the parameters)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.policy.inc_version()
            return TrainerStepResult(stats={"loss": loss.item()}, step=self.policy.version)

    spec = AlgorithmSpec(env="CartPole-v1", policy="actor-critic-separate",
                         policy_args=dict(obs_dim={"obs": 4}, action_dim=2), trainer=MyTrainer)
    policy = spec.make_policy()
    assert policy.net is policy.module
    assert [p.data_ptr() for p in policy.parameters()] == [
        p.data_ptr() for p in policy.module.parameters()]
    report = test_pipeline(spec, episodes=1, max_frames=200, segment_length=8)
    assert report.train_steps > 0 and report.stats["loss"] > 0
