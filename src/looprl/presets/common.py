"""Helpers shared by presets: their base (``FamilyPreset``), space and memory checks, and the
policy's network."""

from __future__ import annotations

import copy
import logging
import math
from abc import abstractmethod
from typing import Any

import gymnasium as gym
import numpy as np
from torch import nn

from looprl.approximation.schedules import ProgressLR, anneal, check_lr_schedule
from looprl.core import Policy, Preset, Trainer
from looprl.core.observations import observation_dtype
from looprl.core.ranges import check_ranges
from looprl.core.suggest import check_fits, warn_once
from looprl.environments.gym_helpers import shown_space, space_name
from looprl.environments.multiagent import AgentView
from looprl.presets.constructors import given_constructors
from looprl.presets.parts import check_parts

log = logging.getLogger(__name__)


class FamilyPreset(Preset):
    """Base of the family presets: checks the hyperparameters' ranges and ``parts`` (kind ->
    valid names); ``_wrap`` puts the local agent in the family's bodies."""

    parts: dict[str, tuple[str, ...]] = {}

    def __init__(self, name: str, device: Any, hyperparameters: dict[str, Any]):
        check_ranges(hyperparameters, name)
        check_parts(hyperparameters, name, self.parts)
        check_lr_schedule(hyperparameters.get("lr_schedule", "constant"), name)
        super().__init__(name, device, hyperparameters)

    def lr_anneal(self, rate: float, updates: float) -> anneal | None:
        """``rate`` annealed to 0 over the budget as ``lr_schedule`` says (``linear`` or
        ``cosine``, ALL's); ``None`` (a constant rate) for ``constant`` or an unknown budget
        (``updates``: ``inf``)."""
        shape = self.hyperparameters.get("lr_schedule", "constant")
        return None if shape == "constant" or not math.isfinite(updates) else anneal(rate, shape)

    def anneal_rates(self, policy: Policy, trainer: Trainer, updates: float,
                     skip: tuple[str, ...] = ()) -> Trainer:
        """``trainer``; each optimizer of its and ``policy``'s approximations (but ``skip``)
        annealed to 0 over ``updates`` trainer steps as ``lr_anneal`` says (a ``ProgressLR``
        counting its optimizer steps: a TD3 actor's one every ``policy_delay`` updates)."""
        delay = getattr(trainer, "policy_delay", 1)
        for parts, steps in ((policy.approximations(), updates / delay),
                             (trainer.approximations(), updates)):
            for name, approximation in parts.items():
                optimizer = approximation.optimizer
                rates = None if optimizer is None or name in skip else self.lr_anneal(
                    optimizer.param_groups[0]["lr"], updates)
                if rates is not None:
                    approximation.lr_scheduler = ProgressLR(optimizer, rates, max(steps, 1.0))
        return trainer

    @abstractmethod
    def policy(self, logger: Any = None, device: Any = None, copy_model: bool = False,
               optimizer: bool = True) -> Policy:
        """The policy over the preset's network (a copy with ``copy_model``), on ``device``
        (default: the preset's); without ``optimizer``, no optimizer (a process that only
        acts: Ray's actor and policy workers, which import no ``torch._dynamo`` then)."""

    @abstractmethod
    def trainer(self, policy: Any, train_steps: float = math.inf) -> Trainer:
        """The trainer of ``policy``; its schedules span ``train_steps`` env steps."""

    def idle(self) -> dict[str, str]:
        """The hyperparameters the chosen parts leave unused -> the part they need (the
        builder's warning): ``hidden``, where a ``features`` extractor is the network;
        ``hidden``, ``dueling`` and ``log_std_init``, where ALL's model constructors build it."""
        hp = self.hyperparameters
        idle = {"hidden": "features=None"} if "hidden" in hp and hp.get("features") else {}
        given = given_constructors(hp)
        part = " and ".join(f"{key}=None" for key in given)
        return {**idle, **{key: part for key in ("hidden", "dueling", "log_std_init")
                           if given and key in hp}}

    def _wrap(self, agent: Any) -> Any:
        """Bodies around the local agent (none by default)."""
        return agent


def policy_network(preset: Any, device: Any = None, copy_model: bool = False,
                   model: nn.Module | None = None) -> nn.Module:
    """``model`` (default ``preset.model``; a deep copy with ``copy_model``) on ``device``
    (default: the preset's)."""
    model = preset.model if model is None else model
    model = copy.deepcopy(model) if copy_model else model
    return model.to(device if device is not None else preset.device)


def to_device(preset: Any, device: Any) -> None:
    """Set ``preset.device`` and move its networks there."""
    preset.device = device
    for value in vars(preset).values():
        if isinstance(value, nn.Module):
            value.to(device)


def derived(base: dict[str, Any], drop: tuple[str, ...] = (), **changes: Any) -> dict[str, Any]:
    """``base`` without the keys ``drop``, with ``changes`` (new or changed keys)."""
    return {**{key: value for key, value in base.items() if key not in drop}, **changes}


DISCRETE_PRESETS = "ppo, dqn, a2c, c51, rainbow, ..."
CONTINUOUS_PRESETS = ("continuous.ppo, continuous.sac, continuous.td3, continuous.ddpg; "
                      "looprl run algorithm=continuous/sac")
#: what trains several agents of continuous actions (no multi-agent preset has them)
def multiagent_advice(preset: str = "...") -> str:
    """What trains a multi-agent environment instead of the single-agent ``preset``."""
    return ("train it with a multi-agent preset (multiagent.ppo, multiagent.dqn, or "
            f"multiagent.independent({preset}))")


MULTIAGENT_CONTINUOUS = ("looprl has no multi-agent preset for continuous actions; from Python, "
                         "multiagent.independent(continuous.ppo) (or continuous.sac) trains one "
                         "continuous preset per agent")


def require_discrete_actions(env: Any, algorithm: str) -> int:
    """The number of actions of ``env``; ``ValueError`` unless it is one ``Discrete`` space."""
    space = env.action_space
    if isinstance(space, gym.spaces.Discrete) and int(space.start) == 0:
        return int(space.n)
    if isinstance(space, gym.spaces.Discrete):  # (the presets' actions are 0 ... n - 1)
        raise ValueError(f"{algorithm} acts with the actions 0 ... n - 1, but {env.name} has "
                         f"{space} actions (from {int(space.start)}); wrap the environment in "
                         "a gymnasium.ActionWrapper whose action space is "
                         f"Discrete({int(space.n)}) and whose action(a) returns "
                         f"a + {int(space.start)}")
    advice = ((MULTIAGENT_CONTINUOUS if isinstance(env, AgentView) else
               f"choose a preset for continuous actions ({CONTINUOUS_PRESETS})")
              if isinstance(space, gym.spaces.Box) else _composite_advice(space))
    raise ValueError(f"{algorithm} handles discrete actions (one Discrete space), but "
                     f"{env.name} has {space_name(space)} actions ({space}); {advice}")


def require_box_actions(env: Any, algorithm: str, bounded: bool = True) -> gym.spaces.Box:
    """``env``'s flat ``Box`` action space; ``ValueError`` if it is not one (or, with
    ``bounded``, if it is unbounded)."""
    space = env.action_space
    if isinstance(space, gym.spaces.Box) and len(space.shape) == 1:
        if bounded and not (np.isfinite(space.low).all() and np.isfinite(space.high).all()):
            raise ValueError(f"{algorithm} needs finite action bounds, but {env.name} has "
                             f"{space}: declare finite low and high in its action_space (a "
                             "gymnasium.wrappers.ClipAction makes them infinite: drop it, looprl "
                             "clips actions to the bounds), or use continuous.ppo, which acts in "
                             "unbounded spaces")
        return space
    if isinstance(space, gym.spaces.Discrete):
        advice = f"choose a preset for discrete actions ({DISCRETE_PRESETS})"
    elif isinstance(space, gym.spaces.Box):
        advice = ("flatten them in a gymnasium.ActionWrapper whose action space is "
                  "gymnasium.spaces.flatten_space(space)")
    else:
        advice = _composite_advice(space)
    raise ValueError(f"{algorithm} handles continuous actions (one flat Box space), but "
                     f"{env.name} has {space_name(space)} actions ({space}); {advice}")


def _composite_advice(space: gym.Space) -> str:
    """What to do with an action space no looprl preset acts in (``MultiDiscrete``, ...)."""
    return (f"no looprl preset acts in {type(space).__name__} spaces: wrap the environment in a "
            "gymnasium.ActionWrapper whose action space is one Discrete (an index of the "
            f"combinations; presets {DISCRETE_PRESETS}) or one flat Box ({CONTINUOUS_PRESETS})")


#: How to make an environment's observations one flat ``Box``, from where the user is.
FLATTEN_ADVICE = ("wrap the environment in gymnasium.wrappers.FlattenObservation (looprl run ... "
                  "env_wrappers=[gymnasium.wrappers.FlattenObservation]; looprl train ... "
                  "--wrapper gymnasium.wrappers.FlattenObservation; GymEnvironment(id, "
                  "wrap_env=FlattenObservation))")


def require_flat_observations(env: Any, algorithm: str, family: str = "classic-control") -> int:
    """The size of ``env``'s flat ``Box`` observations; ``ValueError`` otherwise."""
    space = env.observation_space
    if isinstance(space, gym.spaces.Box) and len(space.shape) == 1:
        return int(space.shape[0])
    box = isinstance(space, gym.spaces.Box)
    discrete = isinstance(env.action_space, gym.spaces.Discrete)  # (what Atari presets act in)
    if box and len(space.shape) == 3 and discrete:  # (C, H, W)
        advice = ("use an Atari preset for stacked 84x84 frames, or classic-control dqn, ddqn or "
                  "ppo with features='cnn' for other channels-first images")
    else:
        advice = FLATTEN_ADVICE + (
            ", or use classic-control dqn, ddqn or ppo with features='mlp', which flattens them"
            if box and discrete else "")
    raise ValueError(f"The {family} {algorithm} preset needs flat Box observations, but "
                     f"{env.name} has {shown_space(space)}; {advice}")


def require_box_observations(env: Any, algorithm: str) -> tuple[int, ...]:
    """The shape of ``env``'s ``Box`` observations, of one or more dimensions (what a feature
    extractor takes); ``ValueError`` otherwise (a ``Dict`` of a ``TimeAwareObservation``, a
    ``Discrete``)."""
    space = env.observation_space
    if isinstance(space, gym.spaces.Box) and space.shape:
        return space.shape
    raise ValueError(f"The classic-control {algorithm} preset's features take Box observations, "
                     f"but {env.name} has {shown_space(space)}; {FLATTEN_ADVICE}")


def check_memory(name: str, rows: int, what: str, env: Any, remedy: str,
                 row_bytes: int | None = None, device: Any = "cpu") -> None:
    """``check_fits`` for ``rows`` rows of ``row_bytes`` bytes (default: an observation of
    ``env`` as buffers store it, ``value_bytes``); ``what`` names the rows."""
    row_bytes = row_bytes or value_bytes(getattr(env, "observation_space", None))
    check_fits(rows * row_bytes, f"{name}: {what} = {rows:,} rows of {row_bytes:,} bytes need",
               remedy, device)


def value_bytes(space: Any) -> int:
    """The least bytes a value of ``space`` takes in a buffer: of ``observation_dtype`` (a
    float32 a number, a byte a pixel of ``uint8`` images); a ``Dict``'s or ``Tuple``'s, its
    parts'."""
    parts = getattr(space, "spaces", None)
    if isinstance(parts, dict | tuple):
        return sum(value_bytes(part) for part in (parts.values() if isinstance(parts, dict)
                                                  else parts))
    shape = tuple(getattr(space, "shape", None) or ())
    return math.prod(shape) * observation_dtype(getattr(space, "dtype", None), len(shape)).itemsize


def cap_minibatch(name: str, hyperparameters: dict[str, Any], limit: int, what: str,
                  remedy: str) -> dict[str, Any]:
    """``hyperparameters`` with ``minibatch_size`` cut to ``limit`` (the rows it is drawn from,
    ``what``), with a warning."""
    batch = hyperparameters.get("minibatch_size")
    if batch is None or batch <= limit:
        return hyperparameters
    warn_once(log, "%s: minibatch_size=%s is larger than %s; it uses minibatches of %d. Set "
              "minibatch_size to at most %d (or %s) to silence this", name, batch, what, limit,
              limit, remedy)
    return {**hyperparameters, "minibatch_size": limit}
