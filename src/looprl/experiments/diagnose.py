"""Where a diverged loss came from: after a ``FloatingPointError``, look for NaN or inf from
the environment in the episode returns and in the batch the failing update trained on (the
locals of the frames the error passed through), since a lower learning rate cannot fix those.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
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


def nonfinite_batch_data(error: BaseException) -> list[str]:
    """Kinds of environment data (``rewards``, ``observations``) holding NaN or inf in the
    locals of looprl's frames that ``error`` passed through."""
    found: list[str] = []
    traceback = error.__traceback__
    while traceback is not None:
        frame, traceback = traceback.tb_frame, traceback.tb_next
        if "looprl" not in frame.f_code.co_filename:
            continue
        for name, value in frame.f_locals.items():
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
    ``error``'s own message.

    Args:
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
