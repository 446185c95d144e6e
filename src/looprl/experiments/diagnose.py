"""Where a diverged loss came from: after a ``FloatingPointError``, look for NaN or inf from
the environment in the episode returns, and for NaN, inf or values beyond ``HUGE`` in the batch
the failing update trained on (the locals of the frames the error passed through), since a
lower learning rate cannot fix those.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import torch

from looprl.core.namedarray import NamedArray

#: Prefixes of a word of a variable or field name, and the kind of environment data they hold.
KINDS = (("reward", "rewards"), ("obs", "observations"), ("frame", "observations"))
#: the largest size whose square float32 holds: losses square their data's scale
HUGE = 1.8e19


def kind_of(path: str) -> str | None:
    """``'rewards'`` or ``'observations'`` for a variable path such as ``batch.observation``
    (a word of the path starts with the marker: ``probs`` holds no observations)."""
    words = re.split(r"[^a-z0-9]+", path.lower())
    return next((kind for marker, kind in KINDS if any(w.startswith(marker) for w in words)),
                None)


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


def _batch_data(error: BaseException) -> Iterator[tuple[str, torch.Tensor]]:
    """``(kind, tensor)`` of the float environment data (``rewards``, ``observations``) in the
    locals of looprl's frames that ``error`` passed through."""
    traceback = error.__traceback__
    while traceback is not None:
        frame, traceback = traceback.tb_frame, traceback.tb_next
        if "looprl" not in frame.f_code.co_filename:
            continue
        for name, value in frame.f_locals.items():
            for path, tensor in _tensors(value, name):
                kind = kind_of(path)
                if kind and tensor.is_floating_point() and tensor.numel():
                    yield kind, tensor


def nonfinite_batch_data(error: BaseException) -> list[str]:
    """Kinds of environment data (``rewards``, ``observations``) holding NaN or inf in the
    locals of looprl's frames that ``error`` passed through."""
    found: list[str] = []
    for kind, tensor in _batch_data(error):
        if kind not in found and not torch.isfinite(tensor).all():
            found.append(kind)
    return found


def huge_batch_data(error: BaseException) -> dict[str, float]:
    """Of the kinds of environment data in ``error``'s frames (as ``nonfinite_batch_data``)
    holding values beyond ``HUGE`` in size, the largest size of each."""
    found: dict[str, float] = {}
    for kind, tensor in _batch_data(error):
        largest = float(tensor.detach().abs().max())
        if HUGE < largest > found.get(kind, 0.0):
            found[kind] = largest
    return found


def explain_divergence(error: FloatingPointError, env_name: str, frame: int,
                       nonfinite_episode: tuple[int, int] | None = None,
                       running_return_nonfinite: bool = False) -> str:
    """The message for a diverged loss: the environment's bad data if there is any, else
    ``error``'s own message, after the frame.

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
    if not kinds and (huge := huge_batch_data(error)):
        sizes = " and ".join(f"{kind} as large as {size:.1e}" for kind, size in huge.items())
        return (f"The environment {env_name} returned {sizes}, and training diverged on them "
                f"at frame {frame:,} (beyond {HUGE:.1e}, their squares overflow float32); this "
                "is not a learning-rate problem. Scale them down, e.g. with gymnasium.wrappers."
                "TransformReward / TransformObservation.")
    if not kinds:
        return f"Training diverged at frame {frame:,} on {env_name}: {error}"
    return (f"The environment {env_name} returned NaN or infinite {' and '.join(kinds)}{where}, "
            f"and training diverged on them at frame {frame}; this is not a learning-rate "
            "problem. Make the environment return finite values, or wrap it to replace them "
            "(e.g. gymnasium.wrappers.TransformReward / TransformObservation).")


def diverged(name: str, message: str, log_dir: str | None) -> FloatingPointError:
    """The one line of run ``name``'s divergence ``message``, with where its logs are."""
    logs = "" if log_dir is None else f" Logs until then: {log_dir}"
    return FloatingPointError(f"{name}: {message}{logs}")
