"""Intrinsic rewards from novelty, ``RND`` and ``NovelD`` (seed 001): post-step they add
``weight * bonus`` to ``transition['reward']`` (and write it as ``intrinsic_reward``);
post-update the predictor trains on ``batch.obs[1:]`` (without a batch: on buffered next
states) and writes ``losses['rnd']``. They log ``log/rnd/intrinsic_reward_mean``,
``.../intrinsic_reward_max`` and ``.../predictor_loss`` (``log/noveld/...`` for ``NovelD``)."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from looprl.core.ranges import NON_NEGATIVE, POSITIVE
from looprl.core.suggest import check_count, check_device, check_flag, check_seed
from looprl.environments.bodies import RunningMeanStd
from looprl.meta.component import MetaComponent
from looprl.nn import FEATURE_EXTRACTORS, feature_extractor, linear_head
from looprl.nn.fields import image_extractor

_RND_STREAM = 0x52D  # (RND's networks apart from the policy's, drawn from the same seed)

__all__ = ["RND", "NovelD", "RNDNetwork"]

NetworkFactory = Callable[[tuple[int, ...]], nn.Module]


class RNDNetwork(nn.Module):
    """A fixed random ``target`` and a trained ``predictor`` of the same output size."""

    def __init__(self, target: nn.Module, predictor: nn.Module):
        super().__init__()
        self.target = target.requires_grad_(False)
        self.predictor = predictor

    def errors(self, x: torch.Tensor) -> torch.Tensor:
        """``mean_j (predictor(x)_j - target(x)_j)^2`` per row, differentiable."""
        with torch.no_grad():
            target = self.target(x).flatten(1)
        return (self.predictor(x).flatten(1) - target).pow(2).mean(dim=1)

    def get_error(self, x: torch.Tensor) -> torch.Tensor:
        """The prediction error of each observation row of ``x`` (``[N, ...]``), no gradient."""
        with torch.no_grad():
            return self.errors(x.to(next(self.predictor.parameters()).device))


class RecentObservations:
    """A preallocated ring buffer of the last ``capacity`` observation rows."""

    def __init__(self, capacity: int):
        self.capacity = int(capacity)
        self.storage: torch.Tensor | None = None
        self.pos = self.size = 0

    def add(self, rows: torch.Tensor) -> None:
        """Keep ``rows``, overwriting the oldest."""
        rows = rows[-self.capacity:]
        if self.storage is None:
            self.storage = rows.new_empty((self.capacity, *rows.shape[1:]))
        n = rows.shape[0]
        index = (torch.arange(n, device=rows.device) + self.pos) % self.capacity
        self.storage[index] = rows
        self.pos = (self.pos + n) % self.capacity
        self.size = min(self.size + n, self.capacity)

    def sample(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor | None:
        """Up to ``n`` stored rows drawn uniformly without replacement (``None`` if empty)."""
        if self.size <= n:  # (all of them)
            return self.storage[: self.size] if self.size else None
        index = torch.randperm(self.size, generator=generator)[:n]
        return self.storage[index.to(self.storage.device)]


class RND(MetaComponent):
    """Random Network Distillation (Burda et al., 2018, https://arxiv.org/abs/1810.12894): the
    bonus is the error on ``next_state`` of a predictor trained to match a fixed random target
    network (with ``normalize``, divided by the running standard deviation of the errors).

    Args:
        network: ``"auto"`` (``"cnn"`` for ``(C, H, W)`` images, else ``"mlp"`` of ``hidden``),
            a name in ``looprl.nn.FEATURE_EXTRACTORS`` or a factory ``shape -> nn.Module``
            (the built-in ones scale ``uint8`` inputs by 1/255).
        batch_size: buffered rows per predictor update (a training batch is used whole).
        update_every: train the predictor at every this-many-th ``post_update`` call only.
        buffer_size: recent next states kept for training while there is no batch.
        obs_shape: build the networks at once (else at the first step).
    """

    #: the ``log/<log_name>/...`` keys it writes
    log_name = "rnd"
    shown = ("internal_reward_weight", "normalize", "network")

    def __init__(self, internal_reward_weight: float = 0.1, normalize: bool = False,
                 network: str | NetworkFactory = "auto", feature_dim: int = 128,
                 hidden: Sequence[int] = (256, 256), lr: float = 1e-3, batch_size: int = 256,
                 gradient_steps: int = 1, update_every: int = 1, buffer_size: int = 1024,
                 obs_shape: Sequence[int] | None = None, device: str | torch.device = "cpu",
                 seed: int | None = None):
        super().__init__()
        names = ("auto", *FEATURE_EXTRACTORS)
        if not callable(network) and network not in names:
            raise ValueError(f"Unknown RND network {network!r}; use a factory shape -> "
                             f"nn.Module or one of: {', '.join(names)}")
        check_count(update_every=update_every, gradient_steps=gradient_steps,
                    batch_size=batch_size, buffer_size=buffer_size, feature_dim=feature_dim)
        owner = type(self).__name__
        self.lr = float(POSITIVE.check("lr", lr, owner))
        if isinstance(hidden, str) or not isinstance(hidden, Sequence):
            raise ValueError(f"hidden must be a sequence of layer sizes like (256, 256), got "
                             f"{hidden!r}")
        check_count(**{f"hidden[{i}]": size for i, size in enumerate(hidden)})
        weight = NON_NEGATIVE.check("internal_reward_weight", internal_reward_weight, owner)
        self.internal_reward_weight = float(weight)
        self.normalize = check_flag(f"{owner}'s normalize", normalize)  # ('no' is true)
        self.network, self.feature_dim, self.hidden = network, int(feature_dim), tuple(hidden)
        self.batch_size, self.gradient_steps = int(batch_size), int(gradient_steps)
        self.update_every, self._update_calls = int(update_every), 0
        self.device, self.seed = torch.device(check_device(device)), check_seed(owner, seed)
        self._network_seed = self.seed  # (or the run's: ``seed_run``)
        self.generator = torch.Generator().manual_seed(self.seed) if self.seed is not None else None
        self.rnd_net: RNDNetwork | None = None  # built with the optimizer, for obs_shape
        self.optimizer: torch.optim.Optimizer | None = None
        self.obs_shape: tuple[int, ...] | None = None
        self.reward_stats = RunningMeanStd(())
        self.recent: RecentObservations | None = RecentObservations(buffer_size)
        self._bonus_sum = self._bonus_max = None  # of the logging interval (log_bonus)
        self._bonus_count = 0
        self.post_step_methods.append(self.get_reward)
        self.post_update_methods.append(self.update_predictor)
        if obs_shape is not None:
            if isinstance(obs_shape, str) or not isinstance(obs_shape, Sequence):  # ('44': 4, 4)
                raise ValueError(f"{owner}'s obs_shape is the observations' shape, a sequence "
                                 f"of sizes like (4,), got {obs_shape!r:.40}")
            self.initialize_networks(obs_shape)

    def initialize_networks(self, shape: Sequence[int]) -> None:
        """Build the target, the predictor and its optimizer for observations of ``shape``."""
        shape = tuple(int(s) for s in shape)
        seed = self._network_seed
        with torch.random.fork_rng(devices=[], enabled=seed is not None):
            if seed is not None:
                torch.manual_seed(seed)
            target, predictor = self._build(shape), self._build(shape)
        self.rnd_net = RNDNetwork(target, predictor).to(self.device)
        self.optimizer = torch.optim.Adam(self.rnd_net.predictor.parameters(), lr=self.lr)
        self.obs_shape = shape

    def seed_run(self, seed: int) -> None:
        """Seed the networks and the draws of recent observations from the run's ``seed`` (a
        stream of its own) unless RND has a ``seed``."""
        if self.seed is None:
            stream = np.random.SeedSequence([seed, _RND_STREAM])
            self._network_seed = int(stream.generate_state(1)[0])
            self.generator = torch.Generator().manual_seed(self._network_seed)

    def _build(self, shape: tuple[int, ...]) -> nn.Module:
        """A factory's network (checked to map a batch of ``shape`` to one row per input), else
        a feature extractor and a linear layer."""
        network = self.network
        if not callable(network):
            name = ("cnn" if len(shape) == 3 else "mlp") if network == "auto" else network
            spec = {"type": "mlp", "hidden": self.hidden} if name == "mlp" else name
            body = image_extractor(shape) if name == "cnn" else feature_extractor(spec, shape)
            return linear_head(body, self.feature_dim)
        module = network(shape)
        try:
            with torch.no_grad():
                out = module(torch.zeros(2, *shape))
        except RuntimeError as error:
            raise ValueError(f"RND network {network!r} does not accept observations of shape "
                             f"{shape}: {error}") from error
        if out.shape[0] != 2:
            raise ValueError(f"RND network {network!r} must output one row per input row, got "
                             f"{tuple(out.shape)} for 2 inputs of shape {shape}")
        return module

    def get_reward(self, metrics: dict[str, Any]) -> dict[str, Any]:
        """Add ``weight * bonus`` to the transition's reward (``intrinsic_reward``)."""
        transition = metrics["transition"]
        next_state = transition["next_state"].to(self.device)
        if self.rnd_net is None:
            self.initialize_networks(next_state.shape[1:])
        if next_state.shape[1:] != self.obs_shape:  # (an obs_shape of another env)
            raise ValueError(f"{type(self).__name__}'s networks take observations of shape "
                             f"{self.obs_shape} (obs_shape), but the environment's have shape "
                             f"{tuple(next_state.shape[1:])}: give obs_shape="
                             f"{list(next_state.shape[1:])}, or none (built at the first step)")
        if self.recent is not None:
            self.recent.add(next_state)
        bonus = self.internal_reward_weight * self.bonus(transition, next_state)
        transition["intrinsic_reward"] = bonus
        reward = transition["reward"]
        transition["reward"] = reward + bonus.to(reward.device).reshape(reward.shape)
        self.log_bonus(metrics, bonus)
        return metrics

    def bonus(self, transition: dict[str, Any], next_state: torch.Tensor) -> torch.Tensor:
        """The (normalized) prediction error of each next state."""
        return self._normalized(self.rnd_net.get_error(next_state))

    def log_bonus(self, metrics: dict[str, Any], bonus: torch.Tensor) -> None:
        """Write the mean and max intrinsic reward of the logging interval."""
        if bonus.numel() == 0:
            return
        key = f"log/{self.log_name}/intrinsic_reward_mean"
        total = bonus.sum(dtype=torch.float64)  # (a float32 sum stops growing by 1 at 2**24)
        if key not in metrics or self._bonus_sum is None:
            self._bonus_sum, self._bonus_count, self._bonus_max = total, 0, bonus.max()
        else:
            self._bonus_sum = self._bonus_sum + total
            self._bonus_max = torch.maximum(self._bonus_max, bonus.max())
        self._bonus_count += bonus.numel()
        metrics[key] = self._bonus_sum / self._bonus_count
        metrics[f"log/{self.log_name}/intrinsic_reward_max"] = self._bonus_max

    def _normalized(self, bonus: torch.Tensor) -> torch.Tensor:
        if self.normalize and bonus.numel():
            self.reward_stats.update(bonus.reshape(-1))
        if not self.normalize or self.reward_stats.count < 2:  # (and the initial pseudo-count)
            return bonus
        return bonus / (self.reward_stats.var + 1e-8).sqrt().to(bonus.device, bonus.dtype)

    def update_predictor(self, metrics: dict[str, Any]) -> dict[str, Any]:
        """Train the predictor on the batch's next observations, else on recent ones."""
        batch = metrics.get("batch")
        if self.rnd_net is None:
            if batch is None:
                return metrics
            self.initialize_networks(batch.obs.shape[2:])
        self._update_calls += 1
        if self._update_calls % self.update_every:
            return metrics
        if batch is None:  # buffered rows
            observations = None if self.recent is None else self.recent.sample(self.batch_size,
                                                                               self.generator)
            if observations is None:
                return metrics
        else:
            observations = batch.obs[1:].to(self.device).flatten(0, 1)
            if (shape := tuple(observations.shape[1:])) != self.obs_shape:
                raise ValueError(f"{type(self).__name__}'s networks take observations of shape "
                                 f"{self.obs_shape}, but the batch holds {shape}; give it the "
                                 "batches of the agent whose steps it rewards")
            self.recent = None  # the agent's batches suffice: stop buffering
        for _ in range(self.gradient_steps):
            loss = self.rnd_net.errors(observations).mean()
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
        loss = loss.detach()
        metrics[f"log/{self.log_name}/predictor_loss"] = loss
        if metrics.get("losses") is not None:
            metrics["losses"]["rnd"] = loss
        return metrics

    def shared_state(self) -> dict[str, Any] | None:
        """The trainer's networks, for the actors' bonuses (``None`` before it built them)."""
        if self.rnd_net is None:
            return None
        return {"obs_shape": self.obs_shape, "rnd_net": self.rnd_net.state_dict()}

    def load_shared_state(self, state: dict[str, Any]) -> None:
        """Compute the bonuses with the trainer's networks (``shared_state``)."""
        if self.obs_shape != tuple(state["obs_shape"]):
            self.initialize_networks(state["obs_shape"])
        self.rnd_net.load_state_dict(state["rnd_net"])

    def state_dict(self) -> dict[str, Any]:
        """The networks, optimizer, reward statistics and update count."""
        if self.rnd_net is None:
            return {"obs_shape": None}
        return copy.deepcopy({**self.shared_state(), "optimizer": self.optimizer.state_dict(),
                              "reward_stats": self.reward_stats,
                              "update_calls": self._update_calls})

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned."""
        if state.get("obs_shape") is None:
            return
        self.load_shared_state(state)
        self.optimizer.load_state_dict(state["optimizer"])
        self.reward_stats = copy.deepcopy(state["reward_stats"])
        self._update_calls = state.get("update_calls", 0)  # (0: a checkpoint made before it)


class NovelD(RND):
    """NovelD (Zhang et al., NeurIPS 2021, https://arxiv.org/abs/2012.08621): the bonus
    ``max(N(s') - alpha * N(s), 0)`` (``N``: the RND error), times ``1[first visit of s']``
    when ``episodic`` (cells ``floor(obs / resolution)`` per env copy and episode)."""

    log_name = "noveld"
    shown = ("alpha", "episodic", "internal_reward_weight")

    def __init__(self, alpha: float = 0.5, episodic: bool = True, resolution: float = 1.0,
                 **kwargs: Any):
        super().__init__(**kwargs)
        POSITIVE.check("resolution", resolution, "NovelD")
        NON_NEGATIVE.check("alpha", alpha, "NovelD")
        self.alpha, self.resolution = float(alpha), float(resolution)
        self.episodic = check_flag("NovelD's episodic", episodic)
        self.visited: list[set[bytes]] = []
        if episodic:
            self.post_episode_methods.append(self.reset_episodes)

    def bonus(self, transition: dict[str, Any], next_state: torch.Tensor) -> torch.Tensor:
        """``max(N(s') - alpha N(s), 0) [* first visit]``."""
        state = transition["state"].to(self.device)
        novelty_next, novelty = self.rnd_net.get_error(torch.cat([next_state, state])).chunk(2)
        bonus = self._normalized((novelty_next - self.alpha * novelty).clamp_min(0.0))
        if not self.episodic:
            return bonus
        return bonus * self.first_visits(next_state, transition.get("env_index")).to(bonus.device)

    def first_visits(self, observations: torch.Tensor, copies: Any = None) -> torch.Tensor:
        """1 for the rows whose env copy (``copies``; default: the row's index) did not visit
        their observation's cell this episode."""
        cells = observations
        if observations.is_floating_point() or self.resolution != 1.0:
            cells = torch.floor(observations.double() / self.resolution).to(torch.int64)
        rows = cells.cpu().numpy()
        # (a key the same in every process, unlike ``hash``: a checkpoint's visits still match)
        keys = [hashlib.blake2b(row.tobytes(), digest_size=8).digest()
                for row in rows.reshape(len(rows), -1)]
        copies = range(len(keys)) if copies is None else [int(i) for i in copies]
        self.visited += [set() for _ in range(max(copies, default=-1) + 1 - len(self.visited))]
        first = []
        for key, i in zip(keys, copies, strict=True):  # (in order: a copy's second row of
            first.append(key not in self.visited[i])  # one cell is no first visit)
            self.visited[i].add(key)
        return torch.tensor(first).float()

    def reset_episodes(self, metrics: dict[str, Any]) -> dict[str, Any]:
        """Forget the visits of the env copies ``metrics['ended']`` marks."""
        for visited, done in zip(self.visited, metrics["ended"].tolist()):
            if done:
                visited.clear()
        return metrics

    def state_dict(self) -> dict[str, Any]:
        """``RND``'s state and the visit sets of the current episodes."""
        return {**super().state_dict(), "visited": [set(v) for v in self.visited]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned."""
        super().load_state_dict(state)
        self.visited = [set(v) for v in state["visited"]]
