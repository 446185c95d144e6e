"""What the Atari presets share: the frame check, the DeepMind bodies, the actor-critic
network and the base of the replay presets."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import gymnasium as gym
from torch import nn

from looprl.environments.bodies import BodyStates, deepmind_atari_body, deepmind_atari_states
from looprl.memory.atari_replay import (
    AtariReplayBuffer,
    PrioritizedAtariReplayBuffer,
    check_room,
    slot_bytes,
)
from looprl.nn.cnn import nature_actor_critic
from looprl.policies.distributions import CategoricalHead
from looprl.presets.common import require_discrete_actions
from looprl.presets.constructors import ATARI_AC, custom_actor_critic
from looprl.presets.off_policy import QPreset

#: the frames' height and width the Nature networks take (``nature_features``)
SCREEN = (84, 84)


def require_frames(env: Any, algorithm: str) -> int:
    """The number of stacked frames of ``env``'s ``(frames, 84, 84)`` uint8 observations (the
    Nature networks' size; ``ValueError`` for other observations)."""
    space = env.observation_space
    if not (isinstance(space, gym.spaces.Box) and len(space.shape) == 3 and space.dtype == "uint8"):
        raise ValueError(f"The Atari {algorithm} preset needs stacked uint8 frames (frames, H, "
                         f"W), but {env.name} has {space}; use AtariEnvironment or a "
                         "classic-control preset")
    if space.shape[1:] != SCREEN:
        raise ValueError(f"The Atari {algorithm} preset needs stacked 84x84 frames (frames, 84, "
                         f"84), but {env.name} has {space}; use AtariEnvironment with its "
                         "default screen_size=84, or a classic-control dqn, ddqn or ppo with "
                         "features='cnn' for other channels-first images")
    return int(space.shape[0])


class DeepMindBody:
    """The DeepMind Atari bodies around the agent (``episodic_life``, ``clip_rewards``)."""

    hyperparameters: dict[str, Any]
    env_name: str | None

    def _wrap(self, agent: Any) -> Any:
        hp = self.hyperparameters
        return deepmind_atari_body(agent, hp["episodic_life"], hp["clip_rewards"])

    def remote_env(self) -> tuple[str, dict[str, Any]]:
        """The game as the registered ``"atari"`` environment (whole games, true scores),
        which Ray's actors and evaluation make."""
        return self.env_remote or ("atari", {"game": self.env_name})

    def remote_process(self) -> Callable[[], BodyStates | None]:
        """A picklable factory of the bodies' ``process_state``: a Ray actor records its
        states as the local agent's bodies do, while it reports true scores."""
        hp = self.hyperparameters
        return functools.partial(deepmind_atari_states, bool(hp["episodic_life"]),
                                 bool(hp["clip_rewards"]))


class NatureActorCritic(DeepMindBody):
    """``_build`` of the Atari actor-critic presets: ``network(num_actions, frames,
    features)``, by default the Nature CNN shared by a policy and a value head."""

    algorithm: str
    network = staticmethod(nature_actor_critic)

    def _build(self, env: Any) -> tuple[nn.Module, CategoricalHead]:
        num_actions = require_discrete_actions(env, self.algorithm)
        frames = require_frames(env, self.algorithm)
        model = custom_actor_critic(self.algorithm, self.hyperparameters, env, ATARI_AC,
                                    num_actions, feature_takes_env=False)
        if model is not None:  # (ALL's constructors: the Atari feature model takes no env)
            return model, CategoricalHead(num_actions)
        model = self.network(num_actions, frames, self.hyperparameters["features"])
        return model, CategoricalHead(num_actions)


class AtariReplayPreset(DeepMindBody, QPreset):
    """Base of the Atari DQN family: a ``QPreset`` whose replay is the frame ring that stores
    each frame once (``AtariReplayBuffer``, or ``PrioritizedAtariReplayBuffer``), locally and
    in Ray's trainer worker."""

    replays = (AtariReplayBuffer, PrioritizedAtariReplayBuffer)
    remote_prefix = "atari_"

    replay_device = "cpu"  # (the frame ring, on the host; its batches go to the device)

    def replay_bytes(self, env: Any) -> int:
        """The bytes of a slot of the frame ring: its newest frame, the links to its stack's
        frames and its transition (``AtariReplayBuffer._allocate``)."""
        frames, *screen = env.observation_space.shape
        return slot_bytes(math.prod(screen), 8, frames)  # (an int64 action)

    def check_replay_memory(self, env: Any) -> None:
        """``QPreset``'s check, after the ring's room for a stack and a window (checked at
        its first write: a run already started)."""
        check_room(self.hyperparameters["replay_buffer_size"], env.observation_space.shape[0],
                   self.n_step, self.name)
        super().check_replay_memory(env)
