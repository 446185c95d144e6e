"""The presets by name, for the command line and configs: ``resolve_agent('atari.ppo')``.

Each family module (``looprl.presets.classic_control``, ``atari``, ``continuous``,
``multiagent``) lists its presets in ``__all__``; ``make_env`` makes an environment id in the
form a preset's family acts in.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from looprl.core.suggest import did_you_mean

__all__ = ["FAMILIES", "available_agents", "env_for", "make_env", "resolve_agent"]

FAMILIES = ("classic_control", "atari", "continuous", "multiagent")
#: SRL names of the adapters (``looprl.environments.srl``), not environments of their own
BUILT_IN_SRL = ("gym", "atari", "pettingzoo", "contextual")


def available_agents() -> dict[str, Any]:
    """``{name: builder}`` of every preset, as ``family.name`` and (first family) ``name``."""
    agents: dict[str, Any] = {}
    for family in FAMILIES:
        module = importlib.import_module(f"looprl.presets.{family}")
        for name in module.__all__:
            agents[f"{family}.{name}"] = getattr(module, name)
            agents.setdefault(name, getattr(module, name))
    return agents


def resolve_agent(name: str) -> Any:
    """The preset builder ``name`` (``ppo``, ``atari.ppo``); ``ValueError`` listing the
    available ones otherwise."""
    agents = available_agents()
    if name not in agents:
        hint = did_you_mean(name, list(agents), n=3)
        raise ValueError(
            f"Unknown agent {name!r}.{hint} Available: {', '.join(sorted(agents))}"
        )
    return agents[name]


def make_env(agent: str, env_id: str | Mapping[str, Any]) -> Any:
    """The environment ``env_id`` in the form the family of preset ``agent`` acts in.

    ``env_id`` is a Gymnasium id, a name ``looprl.environments.register`` ed, or an import
    path ``package.module:NAME``: a ``gymnasium.Env`` class (played by single-agent presets)
    or an SRL ``Environment`` class (by the multi-agent presets; locally through
    ``SRLParallelEnv``), or a name that importing the module registers (either kind). Ray
    actors make it by the same name (``looprl.environments.make``).

    A mapping makes a contextual environment (``looprl.environments.contextual``):
    ``{id: CartPole-v1, instances: 8, features: {length: [0.25, 1.0]}}`` draws ``instances``
    contexts with each named feature uniform in its range (``sample_contexts``); optional
    ``hide_context`` (default true), ``instance_mode`` (``random``) and ``seed`` (0: of the
    contexts drawn and of the instance choice).
    """
    if isinstance(env_id, Mapping):
        return _contextual(agent, env_id)
    kind, target = _kind_of(env_id)
    if kind == "srl":
        return _srl_env(agent, env_id, target)
    if kind == "gym":
        from looprl.environments import GymEnvironment

        return GymEnvironment(target, name=env_id)  # Ray actors make it by this name
    if agent.startswith("atari."):
        from looprl.environments import AtariEnvironment

        return AtariEnvironment(env_id)
    if agent.startswith("continuous."):
        from looprl.environments.mujoco import MujocoEnvironment, is_mujoco_id

        if is_mujoco_id(env_id):
            return MujocoEnvironment(env_id)
    if agent.startswith("multiagent."):
        from looprl.environments import MultiagentPettingZooEnv

        return MultiagentPettingZooEnv(env_id)
    from looprl.environments import GymEnvironment

    return GymEnvironment(env_id)


def _kind_of(env_id: str) -> tuple[str | None, str]:
    """``("gym" | "srl", name)`` for an import path or an SRL-registered name (see
    ``looprl.environments.srl.import_environment``); ``(None, env_id)`` otherwise."""
    from looprl.core.imports import is_import_path
    from looprl.environments import srl

    if is_import_path(env_id):
        return srl.import_environment(env_id)
    if env_id in srl.registered_environments() and env_id not in BUILT_IN_SRL:
        return "srl", env_id
    return None, env_id


def _srl_env(agent: str, env_id: str, name: str) -> Any:
    """The SRL environment ``name`` for the multi-agent presets (the only ones that play
    SRL environments): as a PettingZoo parallel env, that Ray actors play as itself."""
    from looprl.environments import MultiagentPettingZooEnv, make
    from looprl.environments.srl_parallel import SRLParallelEnv

    if not agent.startswith("multiagent."):
        raise ValueError(f"{env_id} is an SRL environment: train it with a multi-agent preset "
                         "(algorithm=multiagent/ppo or multiagent/dqn), or give a "
                         "gymnasium.Env class for the single-agent ones")
    return MultiagentPettingZooEnv(SRLParallelEnv(make(name), env_id), name=env_id,
                                   remote=(env_id, {}))


def env_for(agent: Any, env_id: str) -> Any:
    """The environment ``env_id`` in the form the family of ``agent`` (a preset builder of
    a family module, or its name) acts in; a Gymnasium environment for any other agent."""
    if not isinstance(agent, str):
        names = [name for name, builder in available_agents().items()
                 if builder is agent and "." in name]
        agent = names[0] if names else "classic_control.custom"
    return make_env(agent, env_id)


CONTEXTUAL_KEYS = ("id", "instances", "features", "hide_context", "instance_mode", "seed")


def _contextual(agent: str, options: Mapping[str, Any]) -> Any:
    """The contextual environment ``options`` describes (see ``make_env``)."""
    from looprl.environments.contextual import ContextualEnvironment, sample_contexts

    unknown = sorted(set(options) - set(CONTEXTUAL_KEYS))
    if unknown or "id" not in options:
        raise ValueError(f"a contextual env takes the keys {', '.join(CONTEXTUAL_KEYS)} (id "
                         f"required), got {', '.join(map(str, options))}")
    if agent.startswith(("atari.", "multiagent.")):
        raise ValueError(f"{agent} does not act in contextual environments; use a "
                         "classic-control or continuous preset")
    seed = options.get("seed", 0)
    contexts = sample_contexts(options["id"], options.get("instances", 1),
                               dict(options.get("features") or {}), seed=seed)
    return ContextualEnvironment(options["id"], contexts,
                                 hide_context=options.get("hide_context", True),
                                 instance_mode=options.get("instance_mode", "random"), seed=seed)
