"""Where a diverged loss came from: non-finite data from the environment, found after the fact.

A lower learning rate is the wrong advice when the environment returned NaN or inf: after a
``FloatingPointError`` the experiment looks at the episode returns and at the batch the
failing update trained on (the locals of the frames the error passed through).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import Any

import torch

from looprl.core.namedarray import NamedArray

#: Substrings of a variable or field name, and the kind of environment data they hold.
KINDS = (("reward", "rewards"), ("obs", "observations"), ("frame", "observations"))


def kind_of(path: str) -> str | None:
    """``'rewards'`` or ``'observations'`` for a variable path such as ``batch.observation``."""
    return next((kind for marker, kind in KINDS if marker in path.lower()), None)


def _tensors(value: Any, path: str, depth: int = 0) -> Iterator[tuple[str, torch.Tensor]]:
    """``(path, tensor)`` for every tensor in ``value`` (tensors, states, named arrays, tuples)."""
    if isinstance(value, torch.Tensor):
        yield path, value
    elif depth < 3 and isinstance(value, NamedArray | Mapping):
        for key, item in value.items():
            yield from _tensors(item, f"{path}.{key}", depth + 1)
    elif depth < 3 and isinstance(value, tuple | list) and len(value) <= 16:
        for i, item in enumerate(value):
            yield from _tensors(item, f"{path}[{i}]", depth + 1)


def _looprl_frames(traceback: TracebackType | None) -> Iterator[dict[str, Any]]:
    """The local variables of the frames of looprl's own code that ``traceback`` passed."""
    while traceback is not None:
        frame = traceback.tb_frame
        if "looprl" in frame.f_code.co_filename:
            yield frame.f_locals
        traceback = traceback.tb_next


def nonfinite_batch_data(error: BaseException) -> list[str]:
    """Kinds of environment data (``rewards``, ``observations``) that hold NaN or inf in the
    batches the failing update was computing on."""
    found: list[str] = []
    for local_variables in _looprl_frames(error.__traceback__):
        for name, value in local_variables.items():
            for path, tensor in _tensors(value, name):
                kind = kind_of(path)
                if (kind and kind not in found and tensor.is_floating_point()
                        and not torch.isfinite(tensor).all()):
                    found.append(kind)
    return found


def explain_divergence(error: FloatingPointError, env_name: str, frame: int,
                       nonfinite_episode: tuple[int, int] | None = None,
                       running_return_nonfinite: bool = False) -> str:
    """The message for a diverged loss: the environment's bad data if there is any, else
    ``error``'s own message (which advises on learning rates and clipping).

    Args:
        error, env_name, frame: the update's error, the environment, where training stopped.
        nonfinite_episode: ``(episode from 1, frame it ended)`` of the first training
            episode whose return was not finite.
        running_return_nonfinite: an episode still running has a non-finite return.
    """
    kinds = nonfinite_batch_data(error)
    where = ""
    if nonfinite_episode is not None or running_return_nonfinite:
        kinds = ["rewards", *[k for k in kinds if k != "rewards"]]
        if nonfinite_episode is not None:
            episode, end = nonfinite_episode
            where = f" (first in training episode {episode}, which ended at frame {end})"
        else:
            where = f" (in an episode running at frame {frame})"
    if not kinds:
        return str(error)
    return (f"The environment {env_name} returned NaN or infinite {' and '.join(kinds)}{where}, "
            f"and training diverged on them at frame {frame}; this is not a learning-rate "
            "problem. Make the environment return finite values, or wrap it to replace them "
            "(e.g. gymnasium.wrappers.TransformReward / TransformObservation).")
