"""The presets by name (``resolve_agent('atari.ppo')``, from each family's ``__all__``), and
the environment a preset's family acts in (``make_env``)."""

from __future__ import annotations

import importlib
import inspect
import warnings
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from looprl.core.suggest import check_seed, did_you_mean

__all__ = ["FAMILIES", "available_agents", "context_sets", "env_for", "family_of",
           "make_contextual", "make_env", "rendering", "resolve_agent"]

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


def default_threads(agent: str) -> int:
    """Torch CPU threads for ``agent``'s family (``looprl train``'s and ``looprl run``'s
    default): 1 for small MLPs, 0 (torch's default) for the Atari CNNs."""
    return 0 if agent.startswith("atari.") else 1


def resolve_agent(name: str) -> Any:
    """The preset builder ``name`` (``ppo``, ``atari.ppo``); ``ValueError`` otherwise."""
    agents = available_agents()
    if name not in agents:
        hint = did_you_mean(name, list(agents), n=3)
        raise ValueError(f"Unknown agent {name!r}.{hint} Available: {', '.join(sorted(agents))}")
    return agents[name]


def make_env(agent: str, env_id: str, context: Mapping[str, Any] | None = None, *,
             render_mode: str | None = None, env_kwargs: Mapping[str, Any] | None = None,
             env_wrappers: Sequence[str] = ()) -> Any:
    """The environment ``env_id`` (a Gymnasium id, a registered name, or an import path
    ``package.module:NAME``) in the form the family of preset ``agent`` acts in; with a
    training set in ``context`` (``context_sets``), the contextual environment over it.
    ``render_mode`` (``'human'``, ``'rgb_array'``): passed to the environment where its
    constructor takes one (Atari always renders frames); else it is built without.
    ``env_kwargs``: the environment's arguments (``gym.make``'s, an Atari game's options, an SRL
    environment's); ``env_wrappers``: import paths of Gymnasium wrapper classes to apply
    (``Wrappers``), as Mighty's config keys of these names."""
    if not isinstance(env_id, str):
        raise ValueError(f"env is an id or an import path, got {env_id!r}; a contextual "
                         "environment's instance sets are context.train / context.test")
    if not isinstance(env_kwargs or {}, Mapping):  # (env_kwargs=5: "not iterable")
        raise ValueError(f"env_kwargs maps the environment's arguments to their values "
                         f"(env_kwargs.is_slippery=false), got {env_kwargs!r:.40}")
    kwargs = dict(env_kwargs or {})
    if context and (context.get("train") is not None or context.get("test") is not None):
        _only_gymnasium(env_id, "a contextual environment (context.train)", kwargs, env_wrappers)
        train, _ = context_sets(env_id, context)
        return make_contextual(agent, env_id, train, context)
    given = [key for key, default in CONTEXT_DEFAULTS.items()
             if context and context.get(key) not in (None, default)]
    if given:  # (context.seed=1 alone trained a plain env without a word)
        raise ValueError(f"context.{given[0]} is for the instances of context.train / "
                         f"context.test, and neither is set: add context.train=N (N instances "
                         f"of {env_id})")
    kind, target = _kind_of(env_id, agent.startswith("multiagent."))
    if kind == "srl":
        _only_gymnasium(env_id, "an SRL environment", {}, env_wrappers)
        return _srl_env(agent, env_id, target, render_mode, kwargs)
    from looprl.environments import AtariEnvironment, GymEnvironment, MultiagentPettingZooEnv
    from looprl.environments.ale import atari_game
    from looprl.environments.gym_helpers import atari_hint
    from looprl.environments.mujoco import MujocoEnvironment, is_mujoco_id
    from looprl.environments.multiagent import MultiagentAtariEnv, is_zoo_atari
    from looprl.environments.srl import is_gymnasium_id
    from looprl.environments.wrappers import Wrappers
    if env_wrappers:
        kwargs["wrap_env"] = Wrappers(env_wrappers)
    if kind == "gym":  # (by the import path: Ray's actors import it too)
        return rendering(partial(GymEnvironment, env_id, **kwargs), render_mode)
    if agent.startswith("atari."):
        if atari_game(env_id) is None and is_gymnasium_id(env_id):
            raise ValueError(f"{env_id} is a Gymnasium environment, not an Atari game: train it "
                             f"with a classic_control or continuous preset (not {agent}); the "
                             "Atari presets play Atari games (Pong, Breakout)")
        _only_gymnasium(env_id, "an Atari game", {}, env_wrappers)
        return AtariEnvironment(env_id, **kwargs)
    if agent.startswith("multiagent."):  # (by name: Ray's actors make it so)
        if is_gymnasium_id(env_id):
            raise ValueError(f"{env_id} is a single-agent Gymnasium environment: train it with "
                             f"a single-agent preset ({agent.partition('.')[2]}, not {agent}); "
                             "the multi-agent presets play PettingZoo games (tictactoe_v3)")
        _only_gymnasium(env_id, "a PettingZoo game", kwargs, env_wrappers)
        return rendering(partial(MultiagentAtariEnv if is_zoo_atari(env_id) else
                                 MultiagentPettingZooEnv, env_id), render_mode)
    if agent.startswith("continuous.") and is_mujoco_id(env_id):
        return rendering(partial(MujocoEnvironment, env_id, **kwargs), render_mode)
    game, name = atari_game(env_id), agent.rpartition(".")[2]
    if game is not None and not is_gymnasium_id(env_id):  # (the preset the user typed)
        preset = name if f"atari.{name}" in available_agents() else "ppo"
        raise ValueError(f"{atari_hint(env_id, game, preset)}; {agent} plays vectors, not "
                         "images")
    return rendering(partial(GymEnvironment, env_id, **kwargs), render_mode)


def _only_gymnasium(env_id: str, what: str, kwargs: Mapping[str, Any],
                    wrappers: Sequence[str]) -> None:
    """One line if ``env_kwargs`` or ``env_wrappers`` are given for ``env_id``, which is
    ``what``, whose environments take none."""
    if kwargs or wrappers:
        key = "env_wrappers" if wrappers else "env_kwargs"
        raise ValueError(f"{key} apply to Gymnasium environments (and env_kwargs to an Atari "
                         f"game's options and an SRL environment's arguments); {env_id} is "
                         f"{what}: leave {key} empty")


def rendering(build: Callable[..., Any], render_mode: str | None) -> Any:
    """``build(render_mode=render_mode)``, or ``build()`` without a ``render_mode`` or where
    the environment's constructor takes none (a ``TypeError``) or not that one (a
    ``RenderModeError``): an environment to watch, as ``make_env`` and ``looprl watch`` of a
    distributed run build it."""
    from looprl.environments.gym_helpers import RenderModeError
    if render_mode is not None:
        with warnings.catch_warnings():  # (Gymnasium's: the mode is not among its modes)
            warnings.filterwarnings("ignore", ".*render_mode", UserWarning)
            try:
                return build(render_mode=render_mode)
            except (TypeError, RenderModeError):
                pass
    return build()


def _kind_of(env_id: str, multiagent: bool) -> tuple[str | None, str]:
    """``("gym" | "srl", name)`` for an import path or an SRL-registered name; ``(None,
    env_id)`` otherwise (for a ``multiagent`` preset, also an import path of a function: a
    PettingZoo factory, ``my_pkg.games:parallel_env``, which ``make_zoo_env`` calls)."""
    from looprl.core.imports import import_module, is_import_path
    from looprl.environments import srl
    if is_import_path(env_id):
        module, _, name = env_id.partition(":")
        if multiagent and inspect.isfunction(
                getattr(import_module(module, f"environment {env_id!r}"), name, None)):
            return None, env_id
        return srl.import_environment(env_id)
    if env_id in srl.registered_environments() and env_id not in BUILT_IN_SRL:
        return "srl", env_id
    return None, env_id


def _srl_env(agent: str, env_id: str, name: str, render_mode: str | None = None,
             env_args: Mapping[str, Any] | None = None) -> Any:
    """The SRL environment ``name`` (made with ``env_args``) in seed 003's multi-agent API, or
    for a single-agent preset its single-agent view (of one agent)."""
    from looprl.environments import MultiagentPettingZooEnv, make
    from looprl.environments.srl_adapters import SRLAgentEnvironment
    env_args = dict(env_args or {})
    env = rendering(partial(make, name, **env_args), render_mode)
    if not agent.startswith("multiagent."):
        return SRLAgentEnvironment(env, (env_id, env_args))
    if env.agent_count == 1:
        raise ValueError(f"{env_id} is an SRL environment of one agent: train it with a "
                         f"single-agent preset ({agent.partition('.')[2]}, not {agent}; "
                         "continuous/ppo or continuous/sac for Box actions)")
    return MultiagentPettingZooEnv(env, name=env_id, remote=(env_id, env_args))


def family_of(agent: Any) -> str | None:
    """The family (``'atari'``, ...) of a looprl preset builder (``dqn.hyperparameters(...)``
    too) or of a preset it built, by the module of the preset's class; ``None`` for a user's."""
    made_by = getattr(agent, "constructor", type(agent))
    parts = str(getattr(made_by, "__module__", "")).split(".")
    return parts[2] if parts[:2] == ["looprl", "presets"] and len(parts) > 3 else None


def env_for(agent: Any, env_id: str) -> Any:
    """``make_env`` for ``agent`` (a family's preset builder, one configured from it, a preset
    built by one, or its name); a Gymnasium environment for any other agent."""
    if not isinstance(agent, str):
        family = family_of(agent)
        name = getattr(agent, "default_name", None) or getattr(agent, "name", "custom")
        agent = f"{family}.{name}" if family else "classic_control.custom"
    return make_env(agent, env_id)


#: the keys of ``context`` that only its instance sets read -> their values when not given
CONTEXT_DEFAULTS = {"ranges": {}, "seed": 0, "hide_context": True, "instance_mode": "random"}
CONTEXT_KEYS = ("train", "test", *CONTEXT_DEFAULTS)


def context_sets(env_id: str, context: Mapping[str, Any]) -> tuple[Any, Any]:
    """The training and held-out instance sets ``context`` describes (``None`` where it
    names none): a number drawn from ``ranges`` (seeds ``seed``, ``seed + 1``) or a YAML/JSON
    file."""
    from looprl.environments.contextual import sample_contexts
    unknown = sorted(set(context) - set(CONTEXT_KEYS))
    if unknown:
        raise ValueError(f"context takes the keys {', '.join(CONTEXT_KEYS)}, got "
                         f"{', '.join(unknown)}")
    ranges, seed = context.get("ranges") or {}, context.get("seed") or 0
    if not isinstance(ranges, Mapping):
        raise ValueError(f"context.ranges maps context features to [low, high] ranges "
                         f"(context.ranges.length=[0.25,1.0]), got {ranges!r}")
    seed = check_seed("context", seed, optional=False)

    def instances(given: Any, seed: int) -> Any:
        if given is None:
            return None
        if isinstance(given, int) and not isinstance(given, bool):
            return sample_contexts(env_id, given, ranges, seed=seed)
        return _contexts_file(given)

    return instances(context.get("train"), seed), instances(context.get("test"), seed + 1)


def _contexts_file(path: Any) -> dict[int, dict[str, float]]:
    """The contexts in the YAML/JSON file ``path`` (a list of dicts), by instance id."""
    from pathlib import Path

    import yaml
    if isinstance(path, str) and path.endswith((".yaml", ".yml", ".json")) and \
            not Path(path).is_file():  # (a file name: relative to where looprl runs)
        raise ValueError(f"context.train / context.test: no file {path!r} in {Path.cwd()} "
                         "(give its path, absolute or from the directory looprl runs in)")
    if not isinstance(path, str) or not Path(path).is_file():
        raise ValueError(f"context.train / context.test is a number of instances or a YAML/JSON "
                         f"file of contexts, got {path!r}")
    try:
        contexts = yaml.safe_load(Path(path).read_text())
    except yaml.YAMLError as error:
        raise ValueError(f"{path} is no YAML/JSON file ({str(error).splitlines()[0]})") from None
    if not (isinstance(contexts, list) and contexts and all(isinstance(c, dict)
                                                           for c in contexts)):
        raise ValueError(f"{path} must hold a non-empty list of contexts, e.g. "
                         "[{length: 0.5}, {length: 1.0}]")
    return dict(enumerate(contexts))


def make_contextual(agent: str, env_id: str, contexts: Any,
                    context: Mapping[str, Any]) -> Any:
    """The contextual environment of ``env_id`` over the instance set ``contexts``, with
    ``context``'s ``hide_context``, ``instance_mode`` and ``seed``."""
    from looprl.environments.contextual import ContextualEnvironment
    if agent.startswith(("atari.", "multiagent.")):
        raise ValueError(f"{agent} does not act in contextual environments; use a "
                         "classic-control or continuous preset")
    given = {key: context.get(key) for key in ("hide_context", "instance_mode", "seed")}
    return ContextualEnvironment(env_id, contexts, **{
        key: CONTEXT_DEFAULTS[key] if value is None else value for key, value in given.items()})
