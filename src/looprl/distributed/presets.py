"""The distributed counterparts of the local presets: the same hyperparameters, mapped onto a
ready-made policy and an SRL trainer (``looprl run algorithm=ppo ... runtime=ray``).

``ppo`` and ``ppg`` become an ``actor-critic-separate`` policy (``actor-critic-auxiliary`` for
PPG) with the preset's MLP, optimizer settings and schedules, trained on segments of
``n_steps`` rows from ``n_envs`` streams per update (the local rollout's shape); ``dqn`` and
``ddqn`` become a ``q-network`` with Ape-X exploration rates per actor and the local presets'
``DQNTrainer`` on n-step windows of prioritized replay.

``continuous.ppo`` is ``ppo`` with Gaussian actions (the same MLPs, the preset's initial
log-std, actions mapped onto the env's bounds).

``atari.ppo`` and ``atari.ppg`` run on the ``"atari"`` environment (``AtariGameEnvironment``:
the same DeepMind preprocessing, rewards clipped as the preset says) with the Nature CNN shared
by the policy and value heads (``actor-critic-shared``; PPG's ``actor-critic-auxiliary``).
Unlike the local presets they do not end an episode at each lost life (``episodic_life``): the
actors report whole games. The Atari DQN family stays local: its replay of a million frames
lives in the local Atari replay, which stores each frame once, while segments would hold every
stacked frame.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from looprl.distributed.config import AlgorithmSpec

__all__ = ["DISTRIBUTED_PRESETS", "algorithm_spec", "apex_epsilons"]

DISTRIBUTED_PRESETS = ("ppo", "ppg", "dqn", "ddqn", "atari.ppo", "atari.ppg", "continuous.ppo")


def apex_epsilons(n: int, base: float = 0.4, alpha: float = 7.0) -> list[float]:
    """Ape-X's exploration rates ``base ** (1 + alpha * i / (n - 1))`` for ``n`` actors."""
    if n == 1:
        return [base]
    return [float(base ** (1 + alpha * i / (n - 1))) for i in range(n)]


def algorithm_spec(preset: str, hyperparameters: dict[str, Any], env: str, frames: int,
                   actors: int = 1, env_args: dict[str, Any] | None = None, trainers: int = 1
                   ) -> tuple[AlgorithmSpec, dict[str, Any]]:
    """The ``AlgorithmSpec`` of ``preset`` with ``hyperparameters`` on ``env``, and the runtime
    options it implies (``segment_length``). Schedules span ``frames`` shared by ``trainers``
    trainers, each stepping on its own batches.

    Raises:
        ValueError: ``preset`` has no distributed counterpart (the message lists them).
    """
    family, _, name = preset.rpartition(".")
    key = name if family in ("", "classic_control") else preset
    if key not in DISTRIBUTED_PRESETS:
        raise ValueError(f"runtime=ray runs the presets {', '.join(DISTRIBUTED_PRESETS)}; "
                         f"{preset!r} runs locally only (runtime=local), or build an "
                         "AlgorithmSpec in Python")
    hp = hyperparameters
    env_args = dict(env_args or {})
    if family == "atari":  # env is the game
        env_args = {"game": env, "clip_rewards": bool(hp["clip_rewards"]), **env_args}
        env = "atari"
    spaces = _spaces(env, env_args)
    if name in ("ppo", "ppg"):
        return _actor_critic(name, hp, env, env_args, frames / trainers, *spaces)
    return _q_learning(hp, env, env_args, actors, *spaces)


def _spaces(env: str, env_args: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    from looprl.environments.srl import make

    instance = make(env, **env_args)
    try:
        observation, action = instance.observation_spaces[0], instance.action_spaces[0]
    finally:
        instance.close()
    obs_dim = {key: space.shape[0] if len(space.shape) == 1 else tuple(space.shape)
               for key, space in observation.spaces.items() if key != "action_mask"}
    return obs_dim, action


def _action_args(action: Any) -> dict[str, Any]:
    if hasattr(action, "n"):
        return {"action_dim": int(action.n)}
    return {"action_dim": int(np.prod(action.shape)), "continuous_action": True,
            "action_low": action.low.tolist(), "action_high": action.high.tolist()}


def _actor_critic(preset: str, hp: dict[str, Any], env: str, env_args: dict[str, Any],
                  frames: float, obs_dim: dict[str, Any], action: Any
                  ) -> tuple[AlgorithmSpec, dict[str, Any]]:
    from looprl.presets.on_policy import linear

    rows = hp["n_envs"] * hp["n_steps"]
    updates = max(frames / rows, 1.0)
    policy_args = {"obs_dim": obs_dim, **_action_args(action), "lr": hp["lr"], "eps": hp["eps"],
                   "clip_grad": hp["clip_grad"] or 0.0}
    images = env == "atari"
    if images:  # the Nature CNN's own 512-unit layer feeds the heads, as in the local preset
        policy_args["num_layers"] = 0
    else:
        policy_args["hidden_dim"] = hp["hidden"]
    if "log_std_init" in hp:  # Gaussian actions (continuous.ppo)
        policy_args["init_log_std"] = hp["log_std_init"]
    trainer_args = {
        "epochs": hp["epochs"], "minibatch_size": hp["minibatch_size"],
        "clip": linear(hp["clip"]) if hp["linear_clip"] else hp["clip"],
        "lr": linear(hp["lr"]) if hp["linear_lr"] else None, "total_updates": updates,
        "value_coef": hp["value_coef"], "entropy_coef": hp["entropy_coef"],
        "value_clip": hp["value_clip"], "discount_factor": hp["discount_factor"],
        "gae_lambda": hp["lam"],
    }
    policy = "actor-critic-shared" if images else "actor-critic-separate"
    if preset == "ppg":
        policy = "actor-critic-auxiliary"
        trainer_args.update(n_policy=hp["n_policy"], aux_epochs=hp["aux_epochs"],
                            beta_clone=hp["beta_clone"],
                            aux_minibatch_size=hp["aux_minibatch_size"])
    spec = AlgorithmSpec(env=env, env_args=env_args, policy=policy, policy_args=policy_args,
                         trainer=preset, trainer_args=trainer_args,
                         buffer_args={"batch_streams": hp["n_envs"]})
    return spec, {"segment_length": hp["n_steps"]}


def _q_learning(hp: dict[str, Any], env: str, env_args: dict[str, Any], actors: int,
                obs_dim: dict[str, Any], action: Any) -> tuple[AlgorithmSpec, dict[str, Any]]:
    """Ape-X: the local preset's ``DQNTrainer`` on ``n_steps`` windows (3 unless the preset
    says) from prioritized replay, each actor exploring at its ``apex_epsilons`` rate."""
    if not hasattr(action, "n"):
        raise ValueError(f"dqn needs discrete actions; {env} has {action}")
    n_step = hp.get("n_steps", 3)
    policy_args = {"obs_dim": obs_dim, "action_dim": int(action.n), "hidden_dim": hp["hidden"],
                   "lr": hp["lr"], "clip_grad": hp["clip_grad"] or 0.0,
                   "target_update": hp["target_update_frequency"]}
    trainer_args = {"discount_factor": hp["discount_factor"], "n_step": n_step,
                    "update": hp.get("update", "double_q"), "huber": hp["huber"]}
    buffer_args = {"size": hp["replay_buffer_size"], "batch": hp["minibatch_size"],
                   "min_size": max(hp["replay_start_size"], hp["minibatch_size"]),
                   "alpha": hp.get("alpha", 0.6), "beta": hp.get("beta", 0.4)}
    spec = AlgorithmSpec(env=env, env_args=env_args, policy="q-network",
                         policy_args=policy_args, trainer="dqn", trainer_args=trainer_args,
                         buffer="prioritized", buffer_args=buffer_args,
                         explorations=apex_epsilons(actors))
    return spec, {"segment_length": n_step}
