"""ALL's model-constructor hyperparameters: a function that builds a preset's network
(``dqn.hyperparameters(model_constructor=fc_relu_q)``, ``a2c.hyperparameters(
feature_model_constructor=f, value_model_constructor=v, policy_model_constructor=p)``), or its
import path (``looprl run algorithm.model_constructor=pkg.module:fn``), called as ALL's presets
call it; the modules it returns are checked with a forward pass of a sample of the spaces.
``None`` (the default) keeps the preset's own network (``hidden``, ``features``)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn

from looprl.core.imports import import_object, object_path
from looprl.core.state import State
from looprl.nn import SharedActorCritic

__all__ = ["AC_NAMES", "ATARI_AC", "CLASSIC_AC", "DDPG_MODELS", "PPO_CONTINUOUS_MODELS",
           "SAC_MODELS", "LogVarianceToLogStd", "call_constructor", "constructors",
           "custom_actor_critic", "given_constructors", "run_checked", "space_sample"]

_CLASSIC = "looprl.presets.classic_control.models:"
_ATARI = "looprl.presets.atari.models:"
_CONTINUOUS = "looprl.presets.continuous.models:"
#: ALL's feature, value and policy constructors (the actor-critic presets) -> ALL's defaults
AC_NAMES = ("feature_model_constructor", "value_model_constructor", "policy_model_constructor")
CLASSIC_AC = dict(zip(AC_NAMES, (_CLASSIC + "fc_relu_features", _CLASSIC + "fc_value_head",
                                 _CLASSIC + "fc_policy_head"), strict=True))
ATARI_AC = dict(zip(AC_NAMES, (_ATARI + "nature_features", _ATARI + "nature_value_head",
                               _ATARI + "nature_policy_head"), strict=True))
DDPG_MODELS = {"q_model_constructor": _CONTINUOUS + "fc_q",
               "policy_model_constructor": _CONTINUOUS + "fc_deterministic_policy"}
SAC_MODELS = {"q1_model_constructor": _CONTINUOUS + "fc_q",
              "q2_model_constructor": _CONTINUOUS + "fc_q",
              "policy_model_constructor": _CONTINUOUS + "fc_soft_policy"}
PPO_CONTINUOUS_MODELS = {"value_model_constructor": _CONTINUOUS + "fc_v",
                         "policy_model_constructor": _CONTINUOUS + "fc_policy"}


def given_constructors(hp: Mapping[str, Any]) -> list[str]:
    """The model-constructor hyperparameters ``hp`` sets (not ``None``)."""
    return [key for key, value in hp.items()
            if key.endswith("model_constructor") and value is not None]


def call_constructor(preset: str, key: str, value: Any, *args: Any, **kwargs: Any) -> nn.Module:
    """``value(*args, **kwargs)`` (``value`` a callable or its import path), the hyperparameter
    ``key`` of ``preset``; a one-line ``TypeError`` unless it is a callable that returns a
    ``torch.nn.Module`` and takes these arguments (ALL's call)."""
    function = import_object(value, f"{preset}'s {key}") if isinstance(value, str) else value
    if not callable(function):
        raise TypeError(f"{preset}: {key} must be a function that returns a torch.nn.Module (or "
                        f"its import path 'package.module:name'), got {value!r:.60}")
    try:
        inspect.signature(function).bind(*args, **kwargs)
    except TypeError as error:
        call = ", ".join(["env"] * len(args) + [f"{name}={arg!r}" for name, arg in kwargs.items()])
        raise TypeError(f"{preset} calls {key}({call}), as ALL's preset does, but "
                        f"{object_path(value)} does not take that ({error})") from None
    except ValueError:  # (no signature to read)
        pass
    module = function(*args, **kwargs)
    if not isinstance(module, nn.Module):
        raise TypeError(f"{preset}: {key}={object_path(value)} returned "
                        f"{type(module).__name__}, not a torch.nn.Module")
    return module


def constructors(hp: Mapping[str, Any], defaults: Mapping[str, str]) -> dict[str, Any] | None:
    """The constructors ``defaults`` names (name -> import path of ALL's default), as ``hp``
    gives them, ``None`` where ``hp`` gives none of them (the preset's own
    network); those ``hp`` leaves at ``None`` take ALL's defaults."""
    given = {name: hp.get(name) for name in defaults}
    if all(value is None for value in given.values()):
        return None
    return {name: defaults[name] if value is None else value for name, value in given.items()}


def space_sample(space: Any) -> torch.Tensor:
    """A batch of one sample of ``space``, as the presets' networks take it
    (``State.as_input``: ``float32``, ``uint8`` images kept)."""
    return State({"observation": torch.as_tensor(space.sample())}).as_input("observation")


#: (a lazy one becomes one of these at its first forward pass)
_BATCH_NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.SyncBatchNorm)


def run_checked(preset: str, key: str, value: Any, module: Any, inputs: Sequence[torch.Tensor],
                shapes: Sequence[tuple[int, ...]] = (), what: str = "") -> Any:
    """``module(*inputs)`` in its own mode, as the agent acts (no gradients; the random state
    and ``module``'s buffers, batch-norm statistics included, as they were) if its output has
    one of ``shapes`` (batch dimension included; none: any), else a one-line ``ValueError``
    naming ``key`` and the shapes (``what``: what the preset needs)."""
    modules = list(module.modules()) if isinstance(module, nn.Module) else []
    parameter = next(iter(module.parameters()), None) if modules else None
    if parameter is not None:  # (a module made on its device: ALL's ``constructor(env).cuda()``)
        inputs = [x.to(parameter.device) for x in inputs]
    buffers = [(buffer, buffer.clone()) for buffer in module.buffers()  # (a lazy one's: none)
               if not isinstance(buffer, nn.parameter.UninitializedBuffer)] if modules else []
    try:
        cuda = [parameter.device] if parameter is not None and parameter.is_cuda else []
        with torch.random.fork_rng(devices=cuda), torch.no_grad():
            output = module(*inputs)
    except Exception as error:  # (the user's module: any failure is a mismatch)
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        given = ", ".join(str(tuple(x.shape)) for x in inputs)
        norm = any(isinstance(m, _BATCH_NORMS) and m.training for m in modules)
        raise ValueError(f"{preset}: the network {key}={object_path(value)} built fails on "
                         f"an input of shape {given}: {type(error).__name__}: {first}" + (
                             "; BatchNorm in training mode cannot normalise the batch of one "
                             "row an agent acts on: use nn.LayerNorm or nn.GroupNorm"
                             if norm else "")) from None
    finally:
        with torch.no_grad():
            for buffer, saved in buffers:
                buffer.copy_(saved)
    got = tuple(getattr(output, "shape", ()))
    if shapes and got not in shapes:
        wanted = " or ".join(map(str, shapes)) + (f" ({what})" if what else "")
        raise ValueError(f"{preset}: the network {key}={object_path(value)} built returns "
                         f"shape {got} for an input of shape {tuple(inputs[0].shape)}; "
                         f"{preset} needs {wanted}")
    return output


class LogVarianceToLogStd(nn.Module):
    """``model``'s ``cat(mean, log_variance)`` (ALL's Gaussian and soft policies: ``fc_policy``,
    ``fc_soft_policy``) as ``cat(mean, log_std)``, what looprl's Gaussian heads take."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        mean, log_variance = self.model(observation).chunk(2, dim=-1)
        return torch.cat((mean, 0.5 * log_variance), dim=-1)


def custom_actor_critic(preset: str, hp: Mapping[str, Any], env: Any,
                        defaults: Mapping[str, str], num_actions: int,
                        feature_takes_env: bool = True) -> nn.Module | None:
    """ALL's ``feature_model_constructor(env)`` (``()`` on Atari, ``feature_takes_env=False``),
    ``value_model_constructor()`` and ``policy_model_constructor(env)`` as one
    ``SharedActorCritic`` (checked on an observation sample), ``None`` without them."""
    given = constructors(hp, defaults)
    if given is None:
        return None
    feature_key, value_key, policy_key = AC_NAMES
    features = call_constructor(preset, feature_key, given[feature_key],
                                *([env] if feature_takes_env else []))
    value = call_constructor(preset, value_key, given[value_key])
    policy = call_constructor(preset, policy_key, given[policy_key], env)
    x = run_checked(preset, feature_key, given[feature_key], features,
                    [space_sample(env.observation_space)])
    run_checked(preset, policy_key, given[policy_key], policy, [x], [(1, num_actions)],
                f"a logit per action of {env.name}")
    run_checked(preset, value_key, given[value_key], value, [x], [(1, 1)], "one value")
    return SharedActorCritic(features, policy, value)
