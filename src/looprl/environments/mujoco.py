"""MuJoCo environments (``HalfCheetah-v5``, ``Hopper-v5``, ...) on the ``mujoco`` package."""

from __future__ import annotations

import importlib.util
import logging
import re
from typing import Any

import gymnasium as gym
import torch

from looprl.core.suggest import check_flag
from looprl.environments.gym import GymEnvironment

log = logging.getLogger(__name__)

DEFAULT_VERSION = "v5"


def require_mujoco() -> None:
    """``ImportError`` unless the ``mujoco`` package is installed; route its warnings to
    logging (not a ``MUJOCO_LOG.TXT`` file)."""
    if importlib.util.find_spec("mujoco") is None:
        raise ImportError("MujocoEnvironment needs the 'mujoco' package: pip install "
                          "'looprl[mujoco]'")
    import mujoco

    if mujoco.get_mju_user_warning() is None:
        mujoco.set_mju_user_warning(_log_warning)


def _log_warning(message: str) -> None:
    level = logging.DEBUG if "deprecated" in message else logging.WARNING
    log.log(level, "MuJoCo: %s", message)


def is_mujoco_id(env_id: str) -> bool:
    """Whether ``env_id`` is a registered Gymnasium MuJoCo environment (``HalfCheetah-v5``)."""
    spec = gym.registry.get(env_id)
    return spec is not None and "mujoco" in str(spec.entry_point)


class MujocoEnvironment(GymEnvironment):
    """A ``GymEnvironment`` of a MuJoCo id (``'HalfCheetah-v5'`` or ``'HalfCheetah'``); as in
    ALL, its states leave out Gymnasium's ``info`` entries (``x_position``, ``reward_run``, ...)
    unless ``no_info=False``."""

    no_info = True  # (environments pickled before it was kept)

    def __init__(self, env: str | gym.Env, device: str | torch.device = "cpu",
                 name: str | None = None, no_info: bool = True, seed: int | None = None,
                 **make_kwargs: Any):
        require_mujoco()
        check_flag("no_info", no_info)
        if isinstance(env, str) and not re.search(r"-v\d+$", env):
            env = f"{env}-{DEFAULT_VERSION}"
        super().__init__(env, device=device, name=name, seed=seed, **make_kwargs)
        self.no_info = bool(no_info)

    def reset_output(self, seed: int | None = None, options: dict[str, Any] | None = None
                     ) -> tuple[Any, dict[str, Any]]:
        observation, info = super().reset_output(seed, options)
        return observation, {} if self.no_info else info

    def step_output(self, action: Any) -> tuple[Any, ...]:
        output = super().step_output(action)
        return (*output[:4], {}) if self.no_info else output

    def render(self, **kwargs: Any) -> Any:
        """Its ``render_mode``'s frame or window; without one ``None`` and a warning, as for
        Gymnasium's other environments (MuJoCo's own ``render()`` would raise)."""
        if getattr(self.env, "render_mode", None) is None:
            gym.logger.warn(f"{self.name}.render() does nothing: create it with "
                            "render_mode='human' (a window) or 'rgb_array' (frames)")
            return None
        return super().render(**kwargs)
