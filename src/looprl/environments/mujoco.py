"""MuJoCo environments (``HalfCheetah-v5``, ``Hopper-v5``, ...) on the ``mujoco`` package.

``MujocoEnvironment`` is a ``GymEnvironment`` that checks the ``mujoco`` extra is installed,
accepts ids without a version (``'HalfCheetah'`` means ``'HalfCheetah-v5'``) and routes
MuJoCo's warnings to Python logging instead of a ``MUJOCO_LOG.TXT`` file.
"""

from __future__ import annotations

import importlib.util
import logging
import re
from typing import Any

import gymnasium as gym
import torch

from looprl.environments.gym import GymEnvironment

log = logging.getLogger(__name__)

#: The version an id without one gets.
DEFAULT_VERSION = "v5"


def require_mujoco() -> None:
    """``ImportError`` naming the ``mujoco`` extra unless the ``mujoco`` package is installed."""
    if importlib.util.find_spec("mujoco") is None:
        raise ImportError("MujocoEnvironment needs the 'mujoco' package: pip install "
                          "'looprl[mujoco]'")
    import mujoco

    if mujoco.get_mju_user_warning() is None:
        mujoco.set_mju_user_warning(_log_warning)


def _log_warning(message: str) -> None:
    # deprecation notices about Gymnasium's bundled models are not the user's to act on
    level = logging.DEBUG if "deprecated" in message else logging.WARNING
    log.log(level, "MuJoCo: %s", message)


def versioned(env_id: str) -> str:
    """``env_id`` with ``-v5`` appended when it names no version."""
    return env_id if re.search(r"-v\d+$", env_id) else f"{env_id}-{DEFAULT_VERSION}"


def is_mujoco_id(env_id: str) -> bool:
    """Whether ``env_id`` is a registered Gymnasium MuJoCo environment (``HalfCheetah-v5``)."""
    spec = gym.registry.get(env_id)
    return spec is not None and "mujoco" in str(spec.entry_point)


class MujocoEnvironment(GymEnvironment):
    """A Gymnasium MuJoCo environment producing torch ``State`` objects; ``env`` is an id
    (``'HalfCheetah-v5'`` or ``'HalfCheetah'``) or a ``gym.Env``, the other arguments are
    ``GymEnvironment``'s."""

    def __init__(self, env: str | gym.Env, device: str | torch.device = "cpu",
                 name: str | None = None, seed: int | None = None, **make_kwargs: Any):
        require_mujoco()
        if isinstance(env, str):
            env = versioned(env)
        super().__init__(env, device=device, name=name, seed=seed, **make_kwargs)
