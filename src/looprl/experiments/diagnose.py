"""Where a diverged loss came from: NaN, inf or values beyond ``HUGE`` from the environment in
the returns or the batch the failing update trained on, which a lower learning rate cannot fix."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import torch

from looprl.core.namedarray import NamedArray

#: Prefixes of a word of a variable or field name, and the kind of environment data they hold.
KINDS = (("reward", "rewards"), ("obs", "observations"), ("frame", "observations"))
#: the largest size whose square float32 holds: losses square their data's scale
HUGE = 1.8e19


def kind_of(path: str) -> str | None:
    """``'rewards'``, ``'observations'`` or ``None`` for a path such as ``batch.observation``."""
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


def _frames(error: BaseException) -> Iterator[Any]:
    """The looprl frames of ``error``'s traceback and of the errors it was raised from."""
    while error is not None:
        traceback = error.__traceback__
        while traceback is not None:
            if "looprl" in traceback.tb_frame.f_code.co_filename:
                yield traceback.tb_frame
            traceback = traceback.tb_next
        error = error.__cause__


def explain_divergence(error: FloatingPointError, env_name: str, frame: int,
                       nonfinite_episode: tuple[int, int] | None = None,
                       running_return_nonfinite: bool = False,
                       components: Sequence[Any] = (), returns_seen: bool = False) -> str:
    """The message for a diverged loss: ``blamed_data``'s, else ``error``'s own message."""
    return blamed_data(error, env_name, frame, nonfinite_episode, running_return_nonfinite,
                       components, returns_seen) or \
        f"Training diverged at frame {frame:,} on {env_name}: {error}"


def blamed_data(error: FloatingPointError, env_name: str, frame: int,
                nonfinite_episode: tuple[int, int] | None = None,
                running_return_nonfinite: bool = False,
                components: Sequence[Any] = (), returns_seen: bool = False) -> str | None:
    """The environment's bad data a diverged loss trained on, if any (``nonfinite_episode``:
    ``(episode from 1, frame it ended)``; ``None``: none found). Rewards a meta component of
    ``components`` may have written are its (``returns_seen``: the environment's own were all
    seen, finite), or the environment's or its (a Ray trainer's, which sees neither)."""
    kinds: list[str] = []  # (of the data in ``error``'s frames with NaN or inf)
    huge: dict[str, float] = {}  # (and beyond ``HUGE``)
    for stack_frame in _frames(error):
        for name, value in stack_frame.f_locals.items():
            for path, tensor in _tensors(value, name):
                kind = kind_of(path)
                if not (kind and tensor.is_floating_point() and tensor.numel()):
                    continue
                if kind not in kinds and not torch.isfinite(tensor).all():
                    kinds.append(kind)
                largest = float(tensor.detach().abs().max())
                if HUGE < largest > huge.get(kind, 0.0):
                    huge[kind] = largest
    where = ""
    if nonfinite_episode is not None or running_return_nonfinite:
        kinds = ["rewards", *[k for k in kinds if k != "rewards"]]
        if nonfinite_episode is not None:
            episode, end = nonfinite_episode
            where = f" (first in training episode {episode}, which ended at frame {end})"
        else:
            where = f" (in an episode running at frame {frame})"
    if not kinds and huge:
        sizes = " and ".join(f"{kind} as large as {size:.1e}" for kind, size in huge.items())
        return (f"The environment {env_name} returned {sizes}, and training diverged on them "
                f"at frame {frame:,} (beyond {HUGE:.1e}, their squares overflow float32); this "
                "is not a learning-rate problem. Scale them down, e.g. with gymnasium.wrappers."
                "TransformReward / TransformObservation.")
    if not kinds:
        return None
    names = ", ".join(dict.fromkeys(type(c).__name__ for c in components))
    if names and kinds == ["rewards"] and not where and returns_seen:  # (the env's were seen)
        return (f"NaN or infinite rewards reached training at frame {frame:,}, though "
                f"{env_name} returned finite ones: a meta component of the run ({names}) "
                "wrote them into metrics['transition'] or metrics['batch']; make it write "
                "finite rewards.")
    if names and not where:  # (the environment's observations are not watched)
        return (f"NaN or infinite {' and '.join(kinds)} reached training at frame {frame:,}: "
                f"{env_name} returned them, or a meta component of the run ({names}) wrote them "
                "into metrics['transition'] or metrics['batch']; check the environment with "
                "looprl.distributed.test_environment, and run without the components.")
    return (f"The environment {env_name} returned NaN or infinite {' and '.join(kinds)}{where}, "
            f"and training diverged on them at frame {frame}; this is not a learning-rate "
            "problem. Make the environment return finite values, or wrap it to replace them "
            "(e.g. gymnasium.wrappers.TransformReward / TransformObservation).")


class DataDivergence(FloatingPointError):
    """Training diverged on NaN, infinite or huge data (``blamed_data`` named them): no
    hyperparameter is to blame, so a search (ES, Optuna) stops at it, where it scores a
    diverged training as the worst and goes on."""


def diverged(name: str, message: str, log_dir: str | None, data: bool = False
             ) -> FloatingPointError:
    """The one line of run ``name``'s divergence ``message``, with where its logs are (a
    ``DataDivergence`` where ``data``: the data were to blame)."""
    logs = "" if log_dir is None else f" Logs until then: {log_dir}"
    return (DataDivergence if data else FloatingPointError)(f"{name}: {message}{logs}")
