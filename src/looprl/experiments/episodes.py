"""What every experiment loop uses: seeding, checks, the dashboard and ``play_episodes``."""

from __future__ import annotations

import contextlib
import math
import random
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch

from looprl.collector import EnvRunner, Episode
from looprl.collector.recovery import EnvWatch
from looprl.collector.runner import report_cuts
from looprl.core import ParallelPreset, RolloutRequest, RolloutResult, StateArray
from looprl.core.suggest import check_count, is_whole, warnings_per_run
from looprl.environments import (
    AtariEnvironment,
    Environment,
    MultiagentEnvironment,
    VectorEnvironment,
)
from looprl.environments.gym import refuse_gymnasium
from looprl.environments.multiagent import MultiagentPettingZooEnv
from looprl.experiments.progress import TrainingProgress
from looprl.presets.common import multiagent_advice

__all__ = ["check_episodes", "check_parallel_preset", "check_spaces", "check_test",
           "dashboard", "play_episodes", "played_then_closed", "run_scope",
           "seed_everything", "single_action", "window_advice"]


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global random number generators."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


@contextlib.contextmanager
def run_scope(keep: bool = True, said: set[str] | None = None) -> Iterator[None]:
    """The block as one run: its warnings said once (kept in ``said``), then, with ``keep`` (a
    seeded run), the global random generators as they were before it."""
    states = random.getstate(), np.random.get_state()
    cuda = list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []
    try:
        with warnings_per_run(said), torch.random.fork_rng(devices=cuda, enabled=keep):
            yield
    finally:
        if keep:
            random.setstate(states[0])
            np.random.set_state(states[1])


def dashboard(logger: Any, hyperparameters: dict[str, Any],
              agents: Callable[[], dict[str, float]] = dict) -> Callable[[], list[str]]:
    """The dashboard's lines: the last losses, ``hp/*`` values and ``agents()``' returns."""

    def lines() -> list[str]:
        losses = sorted(getattr(logger, "last_losses", {}).items())
        each = "  ".join(f"{agent} {mean:.4g}" for agent, mean in agents().items())
        shown = [[f"loss/{k} {_number(v)}" for k, v in losses],
                 [f"{k} {_number(h.get())}" for k, h in sorted(hyperparameters.items())],
                 [f"return(100) by agent: {each}"] if each else []]
        return ["  ".join(line) for line in shown if line]

    return lines


def _number(value: Any) -> str:
    try:
        return f"{float(value):.4g}"
    except (TypeError, ValueError):
        return str(value)


def single_action(agent: Any, states: StateArray) -> torch.Tensor:
    """Seed 003's ``agent.act`` of the one ``State`` in ``states``, as a batch of one."""
    return torch.as_tensor(agent.act(states[0])).unsqueeze(0)


def play_episodes(runner: EnvRunner, act: Callable[[RolloutRequest], RolloutResult],
                  episodes: int, show: Callable[[], Any] = lambda: None,
                  max_steps: float = math.inf, progress: TrainingProgress | None = None,
                  timeout: float | None = None) -> list[Episode]:
    """The ``episodes`` episodes played on ``runner`` (each copy its share), ``act`` answering;
    ``show()`` runs once per state; an episode is cut after ``max_steps`` (the runner's cap);
    an env call past ``timeout`` seconds is interrupted (``EnvWatch``, as in training)."""
    check_episodes(episodes)
    check_count(optional=True, max_steps=None if max_steps == math.inf else max_steps)
    copies = len(runner.running_returns)
    if runner.agent_count > 1 and copies > 1:
        raise ValueError(f"play_episodes plays a game of {runner.agent_count} agents in one env "
                         f"copy, got {copies}: build the EnvRunner with n_envs=1")
    quota = np.full(copies, episodes // copies)
    quota[: episodes % copies] += 1
    played: list[Episode] = []
    own = runner.max_episode_steps
    runner.max_episode_steps = int(max_steps if max_steps < math.inf else (
        runner.env_cap if own is None else own))
    cuts, mean = runner.cuts, None
    with EnvWatch(runner, timeout):
        try:
            show()
            while quota.any():
                request = runner.request()
                runner.record(0, None if request is None else act(request))
                runner.segments()  # (not kept; none from a runner built without a buffer)
                runner.advance()
                # (an episode counts while its copy has a share left)
                for episode in runner.pop_episodes():
                    if quota[episode.env] > 0:
                        played.append(episode)
                        quota[episode.env] -= 1
                        if progress is not None:
                            mean = float(np.mean([e.ret for e in played[-100:]]))
                show()
                if progress is not None:
                    progress.update(len(played), len(played), mean)
            report_cuts(runner, cuts)
        finally:
            runner.max_episode_steps = own
    return played


def check_episodes(episodes: Any, caller: str = "play_episodes", least: int = 0) -> None:
    """``ValueError`` unless ``episodes`` is a whole number >= ``least``."""
    if not is_whole(episodes) or episodes < least:
        raise ValueError(f"{caller} plays a whole number of episodes >= {least}, got "
                         f"{episodes!r:.40}")


def check_test(episodes: Any, env: Any, caller: str,
               kinds: tuple[type, ...] = (Environment, MultiagentEnvironment)) -> None:
    """``check_episodes``; a one-line ``TypeError`` unless ``env`` is ``None`` or of ``kinds``."""
    check_episodes(episodes, caller)
    if env is not None and not isinstance(env, kinds):
        builds = {Environment: "GymEnvironment(id)",
                  MultiagentEnvironment: "MultiagentPettingZooEnv(game)"}
        raise TypeError(f"{caller}'s env is one looprl environment ("
                        f"{' or '.join(kind.__name__ for kind in kinds)}), whose copies it "
                        f"plays, got {type(env).__name__} {env!r:.40}: build one, e.g. "
                        + " or ".join(builds[kind] for kind in kinds))


def check_parallel_preset(preset: Any, experiment: str, env: Any = None) -> None:
    """A one-line error unless ``preset`` is a ``ParallelPreset`` of ``env``'s ``n_envs``."""
    if not isinstance(preset, ParallelPreset):
        raise TypeError(f"{experiment} trains a ParallelPreset (its n_envs copies), got the "
                        f"single-environment {type(preset).__name__}: train it with "
                        "SingleEnvExperiment (run_experiment picks the experiment)")
    if isinstance(env, VectorEnvironment) and env.n_envs != preset.n_envs:
        raise ValueError(f"{experiment}: {preset.name} was built for n_envs={preset.n_envs} "
                         f"copies, got the vector environment {env.name} of {env.n_envs}: "
                         f"build the preset with .hyperparameters(n_envs={env.n_envs}), or give "
                         f"a vector environment of {preset.n_envs} copies")


def check_spaces(preset: Any, env: Any, where: str = "looprl") -> Any:
    """``env``; a one-line error unless it is a looprl one of the spaces (multi-agent: the
    agents) ``preset`` expects."""
    refuse_gymnasium(env, where)
    name = getattr(env, "name", type(env).__name__)
    agents, spaces = getattr(preset, "agent_spaces", None), getattr(preset, "env_spaces", None)
    if agents is None and (spaces is None or not hasattr(env, "observation_space")):
        return env
    multiagent = isinstance(env, MultiagentEnvironment)
    if agents is None and multiagent:  # (its spaces: one per agent)
        raise ValueError(f"The preset was built for the single-agent {preset.env_name}; {name} "
                         f"is a multi-agent environment: {multiagent_advice()}")
    if agents is not None and not multiagent:
        raise ValueError(f"The preset was built for the multi-agent {preset.env_name}; {name} "
                         "is a single-agent environment: train it with a single-agent preset "
                         "(dqn, not multiagent.dqn)")
    given = spaces_of(env)
    if agents is None:
        trained, what, sep, same = _shapes(spaces), "observations, actions", ", ", "spaces"
    else:
        trained, what, sep = _agent_shapes(agents), "agents, observations, actions", "; "
        same = "agents, in the same order, and spaces"
    if trained != given:
        raise ValueError(f"The preset was built for {preset.env_name} ({what}: {sep.join(trained)}"
                         f"), {name} has {sep.join(given)}: use it in an environment of the same "
                         f"{same} (for looprl watch: its own, without --env)")
    return env


def spaces_of(env: Any) -> list[str]:
    """``env``'s spaces as ``check_spaces`` compares them: ``['Box(4,)', 'Discrete(2)']``, a
    multi-agent environment's per agent."""
    if not isinstance(env, MultiagentEnvironment):
        return _shapes((env.observation_space, env.action_space))
    return _agent_shapes({agent: (env.observation_space(agent), env.action_space(agent),
                                  env.has_action_mask(agent)) for agent in env.possible_agents})


def _agent_shapes(agents: dict[str, tuple[Any, Any, bool]]) -> list[str]:
    """``['player_1 Box(27,) Discrete(9) masked', ...]``: each agent's name and spaces."""
    return [" ".join([agent, *_shapes((observations, actions))] + ["masked"] * bool(masked))
            for agent, (observations, actions, masked) in agents.items()]


def _shapes(spaces: tuple[Any, Any]) -> list[str]:
    """``['Box(4,)', 'Discrete(2)']``: the kind and shape (or size) of each space."""
    return [f"{type(space).__name__}({space.n})" if hasattr(space, "n")
            else f"{type(space).__name__}{tuple(getattr(space, 'shape', None) or ())}"
            for space in spaces]


def window_advice(env: Any) -> tuple[str, str]:
    """Why ``env`` shows no window, and how to create one that does (``""``: none can)."""
    made = f"{env.name!r}, render_mode='human'"
    if isinstance(env, AtariEnvironment):
        return "an Atari game", ""
    if isinstance(env, MultiagentPettingZooEnv):
        return ("made without render_mode='human'",
                f"create it with MultiagentPettingZooEnv(make_zoo_env({made}))")
    return "made without render_mode='human'", f"create it with GymEnvironment({made})"


def played_then_closed(env: Any, play: Callable[[], Any]) -> Any:
    """``play()``, then ``env.close()`` (``None``: none), also at an error (which stands)."""
    try:
        result = play()
    except BaseException:
        if env is not None:
            with contextlib.suppress(Exception):
                env.close()
        raise
    if env is not None:
        env.close()
    return result
