"""Deep Q-Networks (Mnih et al., 2015), with Double DQN (van Hasselt et al., 2016) and Ape-X
(Horgan et al., 2018) as options."""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from looprl.agents.losses import dqn_loss
from looprl.agents.on_policy import OnPolicyAgent
from looprl.agents.q_targets import (  # _max: the name older run checkpoints pickled
    UPDATES,
    _max,  # noqa: F401
    bootstrap,
)
from looprl.agents.segments import ApproximationPolicy, PolicyTrainer, on_device
from looprl.agents.shell import AllForm, ReplayAgent, all_replay
from looprl.approximation import Approximation, FixedTarget, gather_actions
from looprl.core import (
    Hyperparameter,
    RolloutRequest,
    RolloutResult,
    SampleBatch,
    State,
    StateArray,
    TrainerStepResult,
    deterministic_rows,
    merge_hyperparameters,
)
from looprl.core.namedarray import NamedArray, recursive_apply
from looprl.core.ranges import check_arguments
from looprl.core.suggest import check_choice, check_count, check_device, check_seed
from looprl.nn import (
    Dueling,
    orthogonal_init,
    single_field,
    weighted_mse_loss,
    weighted_smooth_l1_loss,
)
from looprl.nn.fields import Backbone, field_shapes, observation_fields, observation_tensor
from looprl.policies import MASKED_Q, GreedyPolicy, epsilon_greedy
from looprl.policies.greedy import Coins

__all__ = ["DDQN", "DQN", "DQNPolicy", "DQNTrainer", "MASKED_Q", "QModel", "UPDATES", "VQN",
           "VSarsa", "bootstrap", "q_network_policy", "q_units"]


class DQNPolicy(ApproximationPolicy):
    """Epsilon-greedy policy over a Q approximation mapping observations ``[N, ...]`` to action
    values ``[N, num_actions]``; ``epsilon``: a float or a schedule; ``exploration``: another
    exploration policy in its place; ``evaluation_epsilon``: the rate of evaluation rows."""

    #: whether an ``epsilon`` schedule advances once per row of a request, else once per call
    epsilon_per_row: bool = False

    @property
    def unused_parameters(self) -> bool:
        """None in looprl's networks; a user's network may have some."""
        model = getattr(self.q.model, "model", self.q.model)  # (inside QModule, QDistModule)
        return not type(model).__module__.startswith("looprl.")

    def __init__(self, q: Any, num_actions: int, epsilon: Any = 0.0, exploration: Any = None,
                 seed: int | None = None, evaluation_epsilon: float = 0.0):
        self.q = self.approximation = q  # (the optimized approximation)
        self.device = q.device
        self.num_actions = num_actions
        self.greedy = exploration or GreedyPolicy(q, num_actions, epsilon=epsilon, seed=seed)
        self.evaluation_epsilon = evaluation_epsilon
        self._entries: dict[tuple[int, ...], dict[str, torch.Tensor]] = {}

    @cached_property
    def _coins(self) -> Coins:  # (``rollout``'s, made at its first call: also after unpickling)
        return Coins()

    @property
    def exploration(self) -> Any:
        """The exploration policy (``greedy``)."""
        return self.greedy

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """``q``'s keys and the exploration's rate (``hp/epsilon`` or ``hp/temperature``)."""
        return merge_hyperparameters(super().hyperparameters(), self.greedy.hyperparameters())

    def states(self, obs: Any, shape: tuple[int, ...], done: Any = None) -> StateArray:
        """``obs`` as a ``StateArray`` of ``shape`` (``done`` where given), for ``choose``."""
        obs = single_field(obs, strict=False)
        entries = self._entries.get(shape)
        if entries is None:  # made once per shape: no new tensors per update
            entries = self._entries[shape] = {
                "reward": torch.zeros(shape, device=self.device), "mask": 1.0,
                "done": torch.zeros(shape, dtype=torch.bool, device=self.device)}
        if done is not None:
            ended = torch.as_tensor(done, dtype=torch.bool, device=self.device)
            if ended.numel() != math.prod(shape):
                raise ValueError(f"done has {ended.numel()} rows, obs {math.prod(shape)}")
            entries = {**entries, "done": ended.reshape(shape)}
        return StateArray({"observation": obs, **entries}, shape, device=self.device)

    def rollout(self, request: RolloutRequest, **kwargs: Any) -> RolloutResult:
        """Actions for ``request.obs`` (``[B, ...]``), each row at its rate (``exploration``, else
        the exploration policy's), evaluation rows at ``evaluation_epsilon``."""
        obs = observation_tensor(request.obs, self.device, strict=False)
        rate = getattr(request, "exploration", None)
        rows = obs.shape[0] if isinstance(obs, torch.Tensor) else len(obs)  # (len(): 3x slower)
        deterministic = deterministic_rows(request, rows)
        if (rate is None and deterministic is not True
                and type(self.greedy) is not GreedyPolicy):  # ez-greedy, Boltzmann
            values = self.q.no_grad(obs)
            state = self.states(obs, (rows,), getattr(request, "done", None))
            explored = self.greedy.choose(state, values)
            if isinstance(deterministic, torch.Tensor):  # (evaluation rows: evaluation_epsilon)
                evaluated, _ = epsilon_greedy(values, float(self.evaluation_epsilon),
                                              coins=self._coins)
                explored = torch.where(deterministic.to(explored.device), evaluated, explored)
            return RolloutResult(action=explored)
        epsilon = self._epsilons(rate, deterministic, rows)
        values = (self.q.eval if deterministic is True else self.q.no_grad)(obs)
        action, self.greedy.explored = epsilon_greedy(values, epsilon, coins=self._coins)
        return RolloutResult(action=action)

    def logits_and_values(self, obs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """``Q(obs, .)`` as logits and ``max_a Q(obs, a)`` as values."""
        q = self.q.no_grad(observation_tensor(obs, self.device, strict=False)).float().cpu()
        return q, q.max(dim=-1).values

    def analyze(self, sample: Any, target: str | None = None, **kwargs: Any) -> torch.Tensor:
        """``Q(sample.obs, .)`` ``[..., num_actions]`` with gradients (the only ``target``: "q")."""
        if (target or "q") != "q":
            raise ValueError(f"unknown analyze target {target!r}; DQNPolicy supports 'q'")
        return self._on_rows(self.q, sample)

    def _on_rows(self, forward: Any, sample: Any) -> torch.Tensor:
        """``forward`` of ``sample.obs`` as rows, shaped back as ``sample.reward`` (or ``[B]``)."""
        obs = observation_tensor(sample["obs"], self.device, strict=False)
        reward = sample["reward"] if "reward" in sample.fields else None
        lead = tuple(reward.shape) if reward is not None else (len(obs),)

        def rows(leaf: torch.Tensor) -> torch.Tensor:
            return leaf.flatten(0, len(lead) - 1)

        out = forward(recursive_apply(obs, rows) if isinstance(obs, NamedArray) else rows(obs))
        return out.view(*lead, *out.shape[1:])

    def _epsilons(self, rate: Any, deterministic: Any, rows: int) -> float | torch.Tensor:
        """The rows' exploration rate (``rate``, else ``epsilon``): one float, or one per row."""
        if deterministic is True:
            return float(self.evaluation_epsilon)
        if rate is None:  # the exploration policy's (the constructor's epsilon without one)
            rate = self.greedy.next_epsilon(rows if self.epsilon_per_row else 1)
        if isinstance(rate, (float, int)) and not isinstance(deterministic, torch.Tensor):
            return float(rate)
        eps = torch.as_tensor(rate, dtype=torch.float32, device=self.device).flatten()
        if eps.numel() not in (1, rows):
            raise ValueError(f"exploration has {eps.numel()} rates for {rows} rows; give one "
                             "per row or one for the batch")
        eps = eps.expand(rows)
        if isinstance(deterministic, torch.Tensor):
            return torch.where(deterministic.to(eps.device), float(self.evaluation_epsilon), eps)
        return eps


class DQNTrainer(PolicyTrainer):
    """One step of (n-step) Q-learning (registered ``"dqn"``): ``Q(s_0, a_0)`` of ``[T + 1, B]``
    windows regresses onto ``r^(K) + gamma^K * V(s_K)``, ``V`` by ``update`` (in ``UPDATES``)."""

    sample_buffer = "prioritized"

    def __init__(self, policy: DQNPolicy, discount_factor: float = 0.99, n_step: int = 1,
                 update: str = "q_learning", double_q: bool = False, huber: bool = True,
                 seed: int | None = None):
        check_count(n_step=n_step)
        check_arguments(type(self).__name__, discount_factor=discount_factor)
        if not hasattr(policy, "q"):  # (was: AttributeError 'q' at its first step, or on Ray)
            raise TypeError(f"{type(self).__name__} trains a Q-network policy (a DQNPolicy: "
                            "Policy(type_='q-network', args=...)), got a "
                            f"{type(policy).__name__}")
        self._policy = policy
        self.discount_factor = discount_factor
        self.n_step = n_step
        self.update = "double_q" if double_q else update
        self._rule = UPDATES[check_choice("update", self.update, list(UPDATES))]
        self.huber = huber
        self.steps = 0

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """``hp/discount``."""
        return {"hp/discount": Hyperparameter.attribute(self, "discount_factor", float)}

    def step(self, batch: SampleBatch) -> TrainerStepResult:
        """One update on ``batch``; see the class docstring."""
        batch = on_device(batch, self._policy.device)  # numpy segments (VQN on Ray), a CPU replay's
        values, targets, weights = self._values_and_targets(batch)
        loss = dqn_loss(values, targets, weights, huber=self.huber)
        self._policy.q.reinforce(loss)
        values = values.detach()
        return self._finish(loss, values, targets - values)

    def _values_and_targets(self, batch: SampleBatch) -> tuple[torch.Tensor, ...]:
        """``Q(s_0, a_0)`` (with gradients), the targets and the weights of ``batch``."""
        q = self._policy.q
        returns, discount, next_obs, next_action = bootstrap(
            batch, self.discount_factor, self.n_step)
        values = q(single_field(batch.obs[0], strict=False), batch.action[0])
        next_values = self._rule(q, single_field(next_obs, strict=False), next_action)
        targets = returns + discount * next_values  # discount: gamma^K, 0 at termination
        return values, targets, row_weights(batch)

    def _finish(self, loss: torch.Tensor, values: torch.Tensor,
                td_error: torch.Tensor) -> TrainerStepResult:
        self.steps += 1
        self._policy.version += 1
        self.predictions, self.td_error = {"q_values": values}, td_error
        priorities = td_error.abs()
        stats = {"loss": loss.detach(), "td": priorities.mean()}
        return TrainerStepResult(stats, self.steps, priorities=priorities)


def row_weights(batch: SampleBatch) -> torch.Tensor | None:
    """Row 0's importance weight per column, 0 where row 0 ended an episode, scaled by ``B /
    transitions``; ``None`` (all ones) on the CPU when none ended and nothing is weighted."""
    ended = batch.done[0] | batch.truncated[0]
    if batch.weight is None and ended.device.type == "cpu" and not ended.any():
        return None
    transition = ~ended
    weights = transition * (len(transition) / transition.sum().clamp_min(1))
    return weights if batch.weight is None else weights * batch.weight[0]


#: ALL's losses for the DQN family's agents -> ``DQNTrainer``'s ``huber``
HUBER = {F.mse_loss: False, weighted_mse_loss: False, F.smooth_l1_loss: True,
         weighted_smooth_l1_loss: True}


def q_units(agent: Any, q: Any, policy: Any, discount_factor: float, loss: Any = F.mse_loss,
            n_step: int = 1) -> tuple[DQNPolicy, DQNTrainer]:
    """ALL's ``q`` and ``policy`` as a ``DQNPolicy`` and a ``DQNTrainer`` of ``agent.update``."""
    name = type(agent).__name__
    if not (isinstance(q, Approximation) and isinstance(policy, GreedyPolicy)):
        raise TypeError(f"{name} takes ALL's (q, policy, ...): a QNetwork and its GreedyPolicy(q, "
                        f"n_actions, epsilon), or looprl's (policy, trainer, ...), got "
                        f"{type(q).__name__} and {type(policy).__name__}")
    if loss not in HUBER:
        raise ValueError(f"{name}'s loss is mse_loss or smooth_l1_loss (torch.nn.functional's, or "
                         f"looprl.nn's weighted_ ones), got {getattr(loss, '__name__', loss)!r}")
    acting = DQNPolicy(q, policy.num_actions, exploration=policy)
    return acting, DQNTrainer(acting, discount_factor, n_step, update=agent.update,
                              huber=HUBER[loss])


class DQN(AllForm, ReplayAgent):
    """The DQN agent (seed 003): ALL's ``DQN(q, policy, replay_buffer, discount_factor=0.99,
    loss=mse_loss, minibatch_size=32, replay_start_size=5000, update_frequency=1)``, or
    looprl's ``ReplayAgent(policy, trainer, replay_buffer, ...)`` (the presets')."""

    #: the bootstrap of ALL's form (a name in ``UPDATES``)
    update = "q_learning"

    def _from_all(self, q: Any, policy: Any, replay_buffer: Any, discount_factor: float = 0.99,
                  loss: Any = F.mse_loss, minibatch_size: int = 32, replay_start_size: int = 5000,
                  update_frequency: int = 1) -> None:
        buffer, n_step, gamma = all_replay(type(self).__name__, replay_buffer, discount_factor)
        self._units(*q_units(self, q, policy, gamma, loss, n_step), buffer, minibatch_size,
                    replay_start_size, update_frequency)
        self.replay_buffer = replay_buffer  # (ALL's: the NStepReplayBuffer given)

    @property
    def q(self) -> Any:
        """ALL's ``agent.q``: the policy's Q-network (a C51 preset's: its ``QDist``'s expected
        values, ``ExpectedQ``)."""
        return self.policy.q

    @property
    def q_dist(self) -> Any:
        """ALL's ``agent.q_dist`` of a C51 or Rainbow preset's agent: its ``QDist``."""
        if not hasattr(self.policy, "dist"):
            raise AttributeError(f"{type(self).__name__} of a {type(self.policy).__name__} has no "
                                 "q_dist: it is not distributional (a C51 or Rainbow's has)")
        return self.policy.dist


class DDQN(DQN):
    """ALL's ``DDQN(q, policy, replay_buffer, ...)``: ``DQN`` with double Q-learning."""

    update = "double_q"


class VQN(OnPolicyAgent):
    """ALL's ``VQN``: online Q-learning, one MSE update per ``act`` (of a batch of states)."""

    #: the bootstrap of each update (a name in ``UPDATES``)
    update = "q_learning"

    def __init__(self, q: Any, policy: Any, discount_factor: float = 0.99):
        super().__init__(*q_units(self, q, policy, discount_factor), n_envs=1, n_steps=1)
        self.q = q


class VSarsa(VQN):
    """ALL's ``VSarsa``: ``VQN`` bootstrapping from the action the policy takes next."""

    update = "sarsa"


class QModel(nn.Module):
    """Observation fields (``obs_dim``: ``{field: dim or shape}``) to action values ``[*lead,
    action_dim]``; ``dueling``: value and advantage streams; masked actions get ``MASKED_Q``."""

    def __init__(self, obs_dim: Any, action_dim: int, hidden_dim: int = 64, num_layers: int = 2,
                 activation: str = "relu", dueling: bool = False):
        super().__init__()
        self.backbone = Backbone(field_shapes(obs_dim), hidden_dim, num_layers, activation)
        features = self.backbone.out_features

        def linear(out: int) -> nn.Module:
            return orthogonal_init(nn.Linear(features, out), 1.0)

        self.head = Dueling(linear(1), linear(action_dim)) if dueling else linear(action_dim)

    def forward(self, state: Any, actions: Any = None) -> torch.Tensor:
        obs = state["observation"] if isinstance(state, State) else state
        device = next(self.parameters()).device
        fields, lead, mask = observation_fields(obs, self.backbone.encoder.shapes, device)
        values = self.head(self.backbone.features(fields))
        if mask is not None:
            values = values.masked_fill(~mask, MASKED_Q)
        values = values.reshape(*lead, -1)
        return values if actions is None else gather_actions(values, actions)


def q_network_policy(obs_dim: Any, action_dim: int, hidden_dim: int = 64, num_layers: int = 2,
                     activation: str = "relu", dueling: bool = False, epsilon: float = 0.05,
                     lr: float = 3e-4, clip_grad: float = 10.0, target_update: int = 500,
                     device: str | torch.device = "cpu", seed: int | None = None) -> DQNPolicy:
    """A ``DQNPolicy`` over a ``QModel`` (registered policy ``"q-network"``)."""
    if not isinstance(action_dim, int) or action_dim <= 0:
        raise ValueError(f"action_dim must be a positive int, got {action_dim!r}")
    check_arguments("the q-network policy", epsilon=epsilon, lr=lr, clip_grad=clip_grad)
    seed = check_seed("q-network policy", seed)
    with torch.random.fork_rng(devices=[], enabled=seed is not None):
        if seed is not None:
            torch.manual_seed(seed)
        model = QModel(obs_dim, action_dim, hidden_dim, num_layers, activation, dueling)
    model = model.to(check_device(device))
    q = Approximation(model, torch.optim.Adam(model.parameters(), lr=lr), clip_grad=clip_grad,
                      device=device, target=FixedTarget(target_update), name="q")
    return DQNPolicy(q, action_dim, epsilon, seed=seed)
