"""ALL's model-constructor hyperparameters (``model_constructor``, ...): a function that builds
a preset's network (``dqn.hyperparameters(model_constructor=fc_relu_q)``), or its import path
(``looprl run algorithm.model_constructor=pkg.module:fn``), called as ALL's presets call it;
the module it returns is checked with a forward pass of an observation of the environment."""

from __future__ import annotations

import inspect
from typing import Any

import torch
from torch import nn

from looprl.core.imports import import_object
from looprl.core.state import State

__all__ = ["call_constructor", "check_outputs", "constructor_name", "sample_input"]


def constructor_name(value: Any) -> str:
    """``value``'s ``module:qualname`` (a function, a class), its text (an import path), else its
    ``repr``."""
    if isinstance(value, str):
        return value
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    return f"{module}:{qualname}" if module and qualname else repr(value)


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
                        f"{constructor_name(value)} does not take that ({error})") from None
    except ValueError:  # (no signature to read)
        pass
    module = function(*args, **kwargs)
    if not isinstance(module, nn.Module):
        raise TypeError(f"{preset}: {key}={constructor_name(value)} returned "
                        f"{type(module).__name__}, not a torch.nn.Module")
    return module


def sample_input(env: Any) -> torch.Tensor:
    """A batch of one observation of ``env``'s observation space, as the presets' networks
    take it (``State.as_input``)."""
    return State({"observation": torch.as_tensor(env.observation_space.sample())}
                 ).as_input("observation")


def check_outputs(preset: str, key: str, value: Any, module: nn.Module, env: Any,
                  *shapes: tuple[int, ...]) -> nn.Module:
    """``module`` if its output for ``sample_input(env)`` has one of ``shapes`` past the batch
    dimension, else a one-line ``ValueError`` naming ``key`` and the shapes (the random state
    and ``module``'s training mode are left as they were)."""
    x = sample_input(env)
    training = module.training
    try:
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            output = module.eval()(x)
    except Exception as error:  # (the user's module: any failure is a mismatch)
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise ValueError(f"{preset}: the network {key}={constructor_name(value)} built fails on "
                         f"a batch of one observation {tuple(x.shape)} of {env.observation_space}"
                         f": {type(error).__name__}: {first}") from None
    finally:
        module.train(training)
    got = tuple(getattr(output, "shape", ()))
    if got[1:] not in shapes or got[:1] != (1,):
        wanted = " or ".join(str((1, *shape)) for shape in shapes)
        raise ValueError(f"{preset}: the network {key}={constructor_name(value)} built returns "
                         f"shape {got} for a batch of one observation {tuple(x.shape)}; "
                         f"{preset} needs {wanted}")
    return module
