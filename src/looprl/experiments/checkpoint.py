"""Checkpoints of a running experiment: everything needed to continue it exactly.

``save_checkpoint(experiment)`` writes ``checkpoint.pt`` into the run directory: the whole
experiment object -- the preset and its networks, the agent (target networks, optimizers, lr
and epsilon schedules, its replay or rollout buffer, its own random generators), the meta
components and the metrics dictionary, the environment (with its random generator) and the
logger's counters -- and the global random states of torch (CUDA's too, on a GPU), NumPy and
``random``. The file is written to a temporary name and renamed, so a run killed while saving
(even by SIGKILL) keeps its previous checkpoint.

``load_checkpoint(path)`` restores the random states and returns the experiment; training on
(``experiment.train(frames=...)``) then continues as if it had never stopped: on CPU, the
returns and the final parameters equal those of an uninterrupted run. The logger drops the
CSV rows and TensorBoard scalars that the dead run wrote after the checkpoint. (On a GPU,
CUDA kernels need not be deterministic, so the run may drift; a checkpoint saved on a GPU
resumes on a GPU.)

Experiments checkpoint themselves every ``checkpoint_every`` frames, with their replay
buffer unless ``checkpoint_replay=False`` (single environments:
at the first episode end after that many frames; vector environments: after that step).
Everything must pickle: Gymnasium's classic-control environments and vector environments
do; components whose hooks are lambdas do not (register bound methods).

**Atari** (``looprl.environments.atari``): ale-py cannot save its emulator, so the
environments are saved without it and a restored one is reset before it steps again
(``needs_reset``). Before saving, ``save_checkpoint`` calls ``experiment.prepare_checkpoint()``,
which lets the environment fix the seed of its next reset (derived from the run's seed and the
frame), in the running run too. With one environment (the DQN family) checkpoints fall on
episode ends, so the uninterrupted and the resumed run start the next episode from the same
seed: the resume is exact. Vector environments (PPO, A2C...) are saved in mid-episode: the
resumed run gives up the running episodes (the agent sees their last states again, with
reward 0, as truncated; they are not logged) and starts new ones from that seed. Networks,
optimizers, buffers, schedules, counters and random states continue, but the run is no longer
step for step the uninterrupted one.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

from looprl.core.files import load_file
from looprl.experiments.logger import moving_runs
from looprl.memory.replay import replay_contents_saved

__all__ = ["CHECKPOINT", "load_checkpoint", "load_saved", "save_checkpoint"]

CHECKPOINT = "checkpoint.pt"


def rng_states() -> dict[str, Any]:
    """The global random states of torch (and of every CUDA device), NumPy and ``random``."""
    states = {"torch": torch.get_rng_state(), "numpy": np.random.get_state(),
              "random": random.getstate()}
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def set_rng_states(states: dict[str, Any]) -> None:
    """Restore states from ``rng_states`` (CUDA ones where this process has the same GPUs)."""
    torch.set_rng_state(states["torch"])
    np.random.set_state(states["numpy"])
    random.setstate(states["random"])
    cuda = states.get("cuda")
    if cuda is not None and torch.cuda.is_available() and len(cuda) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(cuda)


def save_checkpoint(experiment: Any, path: str | Path | None = None, replay: bool = True) -> Path:
    """Write ``experiment`` and the random states to ``path`` (default: ``checkpoint.pt`` in
    its run directory); return the path.

    With ``replay=False`` the replay buffers are saved empty (their capacity, position-free
    state and random generators kept): a much smaller file, and a resumed run that refills
    its buffer before it trains again, so it no longer equals an uninterrupted one.

    Raises:
        TypeError: a part of the experiment cannot be pickled (named in the message).
    """
    path = Path(path) if path is not None else Path(experiment.logger.log_dir) / CHECKPOINT
    if hasattr(experiment, "prepare_checkpoint"):
        experiment.prepare_checkpoint()
    if hasattr(experiment.logger, "flush"):
        experiment.logger.flush()
    temporary = path.with_name(path.name + ".tmp")
    try:
        with replay_contents_saved(replay):
            torch.save({"experiment": experiment, "rng": rng_states()}, temporary)
    except (TypeError, AttributeError, RuntimeError) as error:
        temporary.unlink(missing_ok=True)
        raise TypeError(f"This experiment cannot be checkpointed: {error} (environments and "
                        "meta components must pickle; register hooks as bound methods)") from None
    os.replace(temporary, path)
    return path


def load_checkpoint(path: str | Path, run_name: str | None = None,
                    run_info: dict[str, Any] | None = None) -> Any:
    """The experiment saved at ``path`` (a file, or a run directory holding
    ``checkpoint.pt``), with the global random states it had.

    Args:
        path: the checkpoint.
        run_name: the experiment goes on in a new run directory of this name (under
            ``{logdir}/{agent}/{env}``; ``run_info`` and the preset's hyperparameters in its
            ``run.json``), and the checkpoint's own is left as it is (a PBT member that
            exploits another's checkpoint); ``None``: it continues the checkpoint's run
            directory.
        run_info: more entries of the new ``run.json``.

    Raises:
        FileNotFoundError: there is no checkpoint there.
    """
    path = Path(path)
    if path.is_dir():
        path = path / CHECKPOINT
    if not path.is_file():
        raise FileNotFoundError(f"No checkpoint at {path}: nothing to resume")
    if run_name is None:
        state = load_saved(path)
    else:
        with moving_runs():
            state = load_saved(path)
        preset = state["experiment"].preset
        state["experiment"].logger.start_run(run_name, {
            **(run_info or {}), "hyperparameters": getattr(preset, "hyperparameters", {})})
    set_rng_states(state["rng"])
    return state["experiment"]


def load_saved(path: str | Path) -> Any:
    """``torch.load`` of a checkpoint this library wrote (full pickles); a file that cannot
    be read is one line (``looprl.core.files.load_file``)."""
    return load_file(path, "checkpoint", "start the run anew: the logs of the run so far stay "
                     "in its directory")
