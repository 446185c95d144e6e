"""The eleven Atari presets (see ``looprl.presets.atari``). The DQN family replays a 1M-frame
``AtariReplayBuffer`` (uint8 frames stored once: about 7 GB when full); its sizes and
frequencies count agent steps of 4 frames, ``target_update_frequency`` gradient steps."""

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
from looprl.nn import PPGNetwork
from looprl.nn.cnn import (
    actor_critic_heads,
    nature_actor_critic,
    nature_c51,
    nature_dqn,
    nature_dueling_dqn,
    nature_features,
    nature_rainbow,
)
from looprl.nn.distributional import CategoricalQHead
from looprl.policies.distributions import CategoricalHead
from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control import a2c as classic_a2c
from looprl.presets.classic_control import ppo as classic_ppo
from looprl.presets.classic_control import vac as classic_vac
from looprl.presets.classic_control import vqn as classic_vqn
from looprl.presets.classic_control.a2c import (
    A2CClassicControlPreset,
    VACClassicControlPreset,
    VPGClassicControlPreset,
)
from looprl.presets.classic_control.dqn import extensions
from looprl.presets.classic_control.ppo import PPGClassicControlPreset, PPOClassicControlPreset
from looprl.presets.classic_control.vqn import (
    OnlineClassicControlPreset,
    VSarsaClassicControlPreset,
)
from looprl.presets.common import derived, require_discrete_actions
from looprl.presets.constructors import AC_NAMES, ATARI_AC, custom_actor_critic
from looprl.presets.off_policy import QPreset
from looprl.presets.on_policy import ActorCriticPreset

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
        if model is None:
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


#: the replay schedule of the Atari DQN family (C51 and Rainbow change some)
replay_defaults: dict[str, Any] = {
    "discount_factor": 0.99, "lr": 1e-4, "eps": 1.5e-4, "minibatch_size": 32,
    "update_frequency": 4, "gradient_steps": 1, "target_update_frequency": 1000,
    "replay_start_size": 80_000, "replay_buffer_size": 1_000_000, "initial_exploration": 1.0,
    "final_exploration": 0.01, "final_exploration_step": 250_000, "test_exploration": 0.001,
    "clip_grad": 0.0, "episodic_life": True, "clip_rewards": True,
    # ALL's: CosineAnnealingLR over the budget's updates (looprl.approximation.anneal)
    "lr_schedule": "cosine",
}


class DQNAtariPreset(AtariReplayPreset):
    """Builds DQN agents with the Nature CNN over 4 stacked 84x84 frames."""

    def _build(self, env: Any) -> nn.Module:
        frames = require_frames(env, self.algorithm)
        return nature_dqn(self.num_actions, frames, features=self.hyperparameters["features"])


class DDQNAtariPreset(DQNAtariPreset):
    """Builds Double DQN agents (van Hasselt et al., 2016, https://arxiv.org/abs/1509.06461);
    ``dueling`` picks ``nature_dueling_dqn`` over ``nature_dqn`` (which ``features`` shapes)."""

    double = True
    algorithm = "DDQN"

    def _build(self, env: Any) -> nn.Module:
        if not self.hyperparameters["dueling"]:
            return super()._build(env)
        return nature_dueling_dqn(self.num_actions, require_frames(env, self.algorithm))


class C51AtariPreset(AtariReplayPreset):
    """Builds C51 agents (Bellemare et al., 2017, https://arxiv.org/abs/1707.06887): 51 atoms
    per action over the Nature CNN."""

    algorithm = "C51"
    model_arguments = ("atoms",)

    def _build(self, env: Any) -> CategoricalQHead:
        hp = self.hyperparameters
        return nature_c51(self.num_actions, hp["atoms"], require_frames(env, self.algorithm),
                          hp["features"])


class RainbowAtariPreset(AtariReplayPreset):
    """Builds Rainbow agents (Hessel et al., 2018, https://arxiv.org/abs/1710.02298), with
    ``classic_control.rainbow``'s switches."""

    algorithm = "Rainbow"
    model_arguments = ("atoms", "sigma")

    def _build(self, env: Any) -> nn.Module:
        hp = self.hyperparameters
        return nature_rainbow(self.num_actions, hp["atoms"], require_frames(env, self.algorithm),
                              hp["hidden"], hp["sigma"], dueling=hp["dueling"], noisy=hp["noisy"],
                              distributional=hp["distributional"])


class OnlineAtariPreset(DeepMindBody, OnlineClassicControlPreset):
    """The VQN preset (and VSarsa's base): online Q-learning over 64 environments, no replay,
    a dueling Nature network and by default no target network."""

    def _build(self, env: Any) -> nn.Module:
        return nature_dueling_dqn(self.num_actions, require_frames(env, self.algorithm))


class VSarsaAtariPreset(OnlineAtariPreset, VSarsaClassicControlPreset):
    """Builds VSarsa agents: ``atari.vqn`` with the target ``Q(s', a')`` of the action taken."""


class A2CAtariPreset(NatureActorCritic, A2CClassicControlPreset):
    """Builds A2C agents (Mnih et al., 2016, https://arxiv.org/abs/1602.01783) over ``n_envs``
    Atari environments x 5 steps (one Adam over the shared Nature CNN)."""

    _optimizer = ActorCriticPreset._optimizer  # (not SeparateMLPs' two parameter groups)


class PPOAtariPreset(NatureActorCritic, PPOClassicControlPreset):
    """Builds PPO agents (Schulman et al., 2017, https://arxiv.org/abs/1707.06347) with a shared
    Nature CNN and the PPO paper's Atari settings."""


def nature_ppg(num_actions: int, frames: int = 4, features: str = "nature") -> PPGNetwork:
    """A Nature CNN trunk with policy (gain 0.01) and auxiliary value (gain 1) heads, and a
    separate Nature value network."""
    trunk = nature_features(features, frames)
    return PPGNetwork(trunk, *actor_critic_heads(trunk.out_features, num_actions),
                      nature_dqn(1, frames, features))


class PPGAtariPreset(NatureActorCritic, PPGClassicControlPreset):
    """Builds PPG agents (Cobbe et al., 2021, https://arxiv.org/abs/2009.04416): ``atari.ppo``'s
    policy phase and an auxiliary phase every ``n_policy`` iterations."""

    network = staticmethod(nature_ppg)


class VACAtariPreset(NatureActorCritic, VACClassicControlPreset):
    """Builds online actor-critic agents over ``n_envs`` Atari environments (A3C's entropy
    bonus)."""


class VPGAtariPreset(NatureActorCritic, VPGClassicControlPreset):
    """Builds VPG agents for a single Atari environment (a lost life ends an episode)."""


dqn = PresetBuilder("dqn", {
    **replay_defaults, "huber": True, "features": "nature",
    # ALL's model_constructor(env) (or its import path): the network instead of features'
    "model_constructor": None,
}, DQNAtariPreset)
ddqn = PresetBuilder("ddqn", derived(dqn.default_hyperparameters, dueling=True, n_steps=1,
                                     prioritized=True, alpha=0.5, beta=0.5), DDQNAtariPreset)
c51 = PresetBuilder("c51", {
    **replay_defaults, "initial_exploration": 0.02, "final_exploration": 0.0, "atoms": 51,
    "v_min": -10.0, "v_max": 10.0, "features": "nature",
    "model_constructor": None,  # ALL's model_constructor(env, atoms=atoms) (models.nature_c51)
}, C51AtariPreset)
rainbow = PresetBuilder("rainbow", {
    **replay_defaults, "lr": 1e-4, "initial_exploration": 0.02, "final_exploration": 0.0,
    "huber": True, "hidden": 512, **extensions, "beta": 0.5, "v_min": -10.0, "v_max": 10.0,
    # ALL's model_constructor(env, atoms=atoms, sigma=sigma) (models.nature_rainbow)
    "model_constructor": None,
}, RainbowAtariPreset)
vqn = PresetBuilder("vqn", derived(
    classic_vqn.default_hyperparameters, drop=("hidden",), discount_factor=0.99, eps=1.5e-4,
    n_envs=64, final_exploration=0.01, final_exploration_step=250_000, test_exploration=0.001,
    target_update_frequency=0, lr_schedule="cosine", clip_grad=0.0, huber=False, episodic_life=True,
    clip_rewards=True,
), OnlineAtariPreset)
vsarsa = PresetBuilder("vsarsa", dict(vqn.default_hyperparameters), VSarsaAtariPreset)
a2c = PresetBuilder("a2c", derived(
    classic_a2c.default_hyperparameters, drop=("hidden",), lr=7e-4, eps=1e-3, n_envs=16,
    lr_schedule="cosine", entropy_coef=0.01, clip_grad=0.5, episodic_life=True,
    clip_rewards=True, features="nature",
    deterministic_test=False,  # (ALL's test agents sample: ``on_policy.EVALUATION``)
), A2CAtariPreset)
ppo = PresetBuilder("ppo", derived(
    classic_ppo.default_hyperparameters, drop=("hidden",), discount_factor=0.99, lam=0.95,
    lr=2.5e-4, lr_schedule="cosine", n_steps=128, epochs=4, clip=0.1, entropy_coef=0.01,
    features="nature",
    episodic_life=True, clip_rewards=True, deterministic_test=False,
), PPOAtariPreset)
ppg = PresetBuilder("ppg", derived(
    ppo.default_hyperparameters, drop=AC_NAMES, n_policy=32, aux_epochs=6, beta_clone=1.0,
    aux_minibatch_size=256, update="ppg",
), PPGAtariPreset)
vac = PresetBuilder("vac", derived(
    classic_vac.default_hyperparameters, drop=("hidden",), discount_factor=0.99, lr_pi=1e-4,
    lr_v=5e-4, lr_schedule="cosine", eps=1.5e-4, value_coef=0.25, entropy_coef=0.01, clip_grad=0.5,
    episodic_life=True, clip_rewards=True, features="nature", deterministic_test=False,
), VACAtariPreset)
vpg = PresetBuilder("vpg", derived(vac.default_hyperparameters, drop=("n_envs",),
                                   min_batch_size=1000), VPGAtariPreset)
