"""MuJoCo environments (``HalfCheetah-v5``, ``Hopper-v5``, ...) on the ``mujoco`` package."""

from __future__ import annotations

import re
from typing import Any

import gymnasium as gym
import torch

from looprl.core.suggest import check_flag
from looprl.environments.gym import GymEnvironment
from looprl.environments.gym_helpers import require_mujoco


def versioned(env_id: str) -> str:
    """``env_id`` with the newest version where it gives none (``'HalfCheetah-v5'``)."""
    return env_id if re.search(r"-v\d+$", env_id, re.IGNORECASE) else f"{env_id}-v5"


def is_mujoco_id(env_id: str) -> bool:
    """Whether ``env_id`` (``HalfCheetah-v5`` or ``HalfCheetah``) is a MuJoCo environment."""
    spec = gym.registry.get(versioned(env_id))
    return spec is not None and "mujoco" in str(spec.entry_point)


def other_gymnasium_env(env_id: str) -> tuple[str, str] | None:
    """The family and newest id of one of Gymnasium's own non-MuJoCo environments, else ``None``."""
    specs = [gym.registry.get(env_id)] if re.search(r"-v\d+$", env_id) else sorted(
        (spec for spec in gym.registry.values() if spec.namespace is None
         and spec.name == env_id), key=lambda spec: -(spec.version or 0))
    for spec in specs:
        entry = spec.entry_point if spec is not None else None
        if isinstance(entry, str) and entry.startswith("gymnasium.envs.") and (
                not entry.startswith("gymnasium.envs.mujoco")):
            return entry.split(".")[2].replace("_", "-"), spec.id
    return None


class MujocoEnvironment(GymEnvironment):
    """A ``GymEnvironment`` of a MuJoCo id; states leave ``info`` out unless ``no_info=False``."""

    no_info = True  # (environments pickled before it was kept)

    def __init__(self, env: str | gym.Env, device: str | torch.device = "cpu",
                 name: str | None = None, no_info: bool = True, seed: int | None = None,
                 **make_kwargs: Any):
        if isinstance(env, str):
            other = other_gymnasium_env(env)
            if other is not None:
                raise ValueError(f"MujocoEnvironment takes MuJoCo ids (HalfCheetah-v5, Hopper, "
                                 f"...), got {env!r}, a {other[0]} environment: use "
                                 f"GymEnvironment({other[1]!r})")
            env = versioned(env)
        require_mujoco()
        check_flag("no_info", no_info)
        super().__init__(env, device=device, name=name, seed=seed, **make_kwargs)
        self.no_info = bool(no_info)

    def remade(self) -> MujocoEnvironment:
        env = super().remade()
        env.no_info = self.no_info
        return env

    def reset_output(self, seed: int | None = None, options: dict[str, Any] | None = None
                     ) -> tuple[Any, dict[str, Any]]:
        observation, info = super().reset_output(seed, options)
        return observation, {} if self.no_info else info

    def step_output(self, action: Any) -> tuple[Any, ...]:
        output = super().step_output(action)
        return (*output[:4], {}) if self.no_info else output

    def render(self, **kwargs: Any) -> Any:
        """Its ``render_mode``'s frame or window; without one ``None`` and a warning."""
        if getattr(self.env, "render_mode", None) is None:
            gym.logger.warn(f"{self.name}.render() does nothing: create it with "
                            "render_mode='human' (a window) or 'rgb_array' (frames)")
            return None
        return super().render(**kwargs)
