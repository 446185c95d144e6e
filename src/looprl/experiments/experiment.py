"""Local experiments: ``Experiment``, ``ParallelEnvExperiment`` and ``SingleEnvExperiment``."""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from looprl.agents.shell import seed_units
from looprl.collector import EnvRunner, Episode
from looprl.collector.recovery import EnvFault, EnvRestarts, EnvWatch, fault_limits
from looprl.collector.runner import report_cuts
from looprl.core import Preset, RolloutResult, StateArray
from looprl.core.observations import check_default_dtype
from looprl.core.preset import check_built, check_train_steps
from looprl.core.suggest import check_count, check_seed, is_number
from looprl.environments import Environment, VectorEnvironment
from looprl.environments.base import wrapped_seed
from looprl.environments.bodies import body_states
from looprl.environments.duplicate import DuplicateEnvironment
from looprl.environments.wrappers import sync_normalization
from looprl.experiments.budget import warn_past_budget, warn_trained
from looprl.experiments.checkpoint import check_checkpointing, save_checkpoint
from looprl.experiments.diagnose import blamed_data, diverged, explain_divergence
from looprl.experiments.episodes import (
    check_parallel_preset,
    check_spaces,
    check_test,
    dashboard,
    play_episodes,
    played_then_closed,
    run_scope,
    seed_everything,
    single_action,
    window_advice,
)
from looprl.experiments.logger import ExperimentLogger
from looprl.experiments.progress import TrainingProgress, evaluation_progress
from looprl.experiments.run_files import save_preset
from looprl.meta.component import MetaComponent
from looprl.meta.hub import MetaHub, agent_hub
from looprl.meta.hyperparameters import agent_hyperparameters

__all__ = ["Experiment", "ParallelEnvExperiment", "SingleEnvExperiment", "evaluation_seed",
           "log_scalars", "logger_object", "seed_everything"]

log = logging.getLogger(__name__)

#: A run's evaluation episodes reset with ``seed + TEST_SEED_OFFSET`` (``evaluation_seed``).
TEST_SEED_OFFSET = 10_000


def evaluation_seed(seed: int) -> int:
    """The seed of a run's evaluation (every runtime's): ``seed + TEST_SEED_OFFSET``, wrapped."""
    return wrapped_seed(seed + TEST_SEED_OFFSET)


def logger_object(logger: Any) -> Any:
    """An ``Experiment``'s ``logger``: an object, or ``None`` for the default ("tensorboard")."""
    if not isinstance(logger, str):
        return logger
    if logger == "tensorboard":
        return None
    raise ValueError(f"logger={logger!r}: looprl's experiments log to TensorBoard and CSV files "
                     "(logger='tensorboard', the default); ALL's 'comet' is not ported. Mirror "
                     "the scalars to Weights & Biases with ExperimentLogger(..., wandb={...}), or "
                     "pass a logger object")


def log_scalars(hub: MetaHub, logger: Any) -> None:
    """Hand ``logger`` the ``log/*`` scalars ``hub``'s components wrote."""
    for key, value in hub.log_scalars().items():
        logger.add_log(key[4:], value)


def divergence(experiment: Experiment, error: FloatingPointError) -> Exception:
    """The one-line error of ``experiment``'s training that diverged with ``error``."""
    runner = experiment.runner
    running = runner is not None and not np.isfinite(runner.running_returns).all()
    hub = experiment.hub
    facts = (error, experiment.env.name, experiment.frame, experiment._nonfinite_episode,
             running, hub.components if hub is not None else (), runner is not None)
    blamed = blamed_data(*facts)
    return diverged(experiment.name, blamed or explain_divergence(*facts),
                    getattr(experiment.logger, "log_dir", None), data=blamed is not None)


def training_runner(experiment: Experiment) -> EnvRunner:
    """The collector ``experiment`` trains on, cutting its agent's adder's segments."""
    adder = getattr(experiment.agent.unwrapped, "adder", None)  # (None: a user's own Agent)
    limit = experiment.max_restarts
    return EnvRunner(experiment._collected(), seed=experiment.seed, hub=experiment.hub,
                     segment_length=None if adder is None else adder.segment_length,
                     whole_episodes=adder is not None and adder.whole_episodes,
                     process=None if adder is None else body_states(experiment.agent),
                     restarts=EnvRestarts(limit, "max_restarts") if limit else None)


def recovered(experiment: Experiment, faults: list[EnvFault]) -> None:
    """Warn of the env ``faults`` ``experiment`` recovered from; it trains on in the
    environment rebuilt."""
    for fault in faults:
        log.warning("%s", fault.recovered(fault.frame))
    experiment.restarts = [*experiment.restarts, *(fault.restart() for fault in faults)]
    old, new = experiment.vector_env, experiment.runner.envs
    if isinstance(new, VectorEnvironment) and new is not old:
        if experiment.env in getattr(old, "envs", ()):  # (SingleEnvExperiment's env, remade)
            experiment.env = new.envs[0]
        experiment.vector_env = new


def played_test(experiment: Experiment, episodes: int, env: Any) -> list[float]:
    """``Experiment.test``: the returns of ``episodes`` evaluation episodes."""
    check_test(episodes, env, f"{type(experiment).__name__}.test", (Environment,))
    agent = getattr(experiment.preset, experiment.test_agent_of)()
    given = env is not None
    copies = max(1, min(experiment.vector_env.n_envs, episodes))
    env = (check_spaces(experiment.preset, env).duplicate(copies) if given
           else experiment._test_env(copies))
    if env is experiment.vector_env and experiment.runner is not None:
        experiment.runner.truncate()  # training resumes with new episodes
    evaluation = None if experiment.seed is None else evaluation_seed(experiment.seed)
    seed = evaluation if given or experiment.seeded_test else None  # (the env's resets)
    if evaluation is not None and callable(getattr(agent, "seed", None)):  # (a Ray run's
        agent.seed(evaluation)  # evaluation's random numbers; training's: kept)
    with sync_normalization(experiment.vector_env, env), evaluation_progress(  # (training's)
            experiment.description, episodes, experiment.quiet) as progress:
        runner = EnvRunner(env, segment_length=None, seed=seed, is_evaluation=True)
        played = played_then_closed(
            None if env is experiment.vector_env else env, lambda: play_episodes(
                runner, lambda _: RolloutResult(action=experiment._acts(agent, runner.states())),
                episodes, progress=progress, timeout=experiment.env_timeout))
    returns = [episode.ret for episode in played]
    if not given:
        experiment.test_returns = returns
        experiment.logger.add_test_returns(returns)
    return returns


def check_window(env: Any) -> None:
    """``ValueError`` unless ``env`` shows itself in a window (``render_mode='human'``)."""
    if getattr(getattr(env, "env", None), "render_mode", None) != "human":
        why, fix = window_advice(env)
        raise ValueError(f"render=True needs an environment that shows itself, and {env.name} "
                         f"shows no window ({why}): " + (fix or "leave render out, and watch "
                         "the saved preset with looprl watch (a GIF) after training"))


def evaluation_copies(env: Any, vector_env: VectorEnvironment, copies: int) -> VectorEnvironment:
    """``copies`` copies of ``env`` to evaluate in, else a copy of the training environments
    ``vector_env``, else they."""
    if isinstance(env, Environment):
        return env.duplicate(copies)
    try:
        return vector_env.copy()
    except NotImplementedError:
        log.warning("%s cannot be copied (VectorEnvironment.copy): evaluating in the training "
                    "environments, which cuts their episodes short (the agent sees them "
                    "truncated)", type(vector_env).__name__)
        return vector_env


def check_train(experiment: Experiment, frames: float, episodes: float) -> None:
    """A one-line ``ValueError`` for a ``train`` call that cannot run as asked."""
    for name, budget in (("frames", frames), ("episodes", episodes)):
        if not is_number(budget) or not budget > 0:
            raise ValueError(f"train()'s {name} is a positive number (math.inf: no limit), "
                             f"got {budget!r}")
    if math.isinf(frames) and math.isinf(episodes):
        raise ValueError("train() needs a budget: frames=... or episodes=...")
    check_default_dtype(f"{type(experiment).__name__}.train()")
    logger = experiment.logger
    if experiment.checkpoint_every is not None and getattr(logger, "log_dir", None) is None:
        raise ValueError(f"checkpoint_every saves checkpoint.pt in the logger's log_dir; "
                         f"{type(logger).__name__} has none: drop it, or log to a folder")


class Experiment:
    """Trains one preset's agent in ``preset.n_envs`` copies of an environment and evaluates
    it, on the collector the Ray actors run.

    Args:
        train_steps: the training budget in frames (schedules anneal over it).
        render: show the environment while training (created with ``render_mode='human'``).
        save_freq: also save ``preset.pt`` every this many episodes (ALL's; default: never).
        verbose: write losses and debugging statistics to TensorBoard.
        logger: a logger object (default, and ALL's ``"tensorboard"``: an ``ExperimentLogger``).
        seed: seeds torch, the environment and the agent's units (not the preset's weights).
        meta: meta components run after the preset's own (``preset.meta``).
        checkpoint_every, keep_checkpoints, checkpoint_replay: save ``checkpoint.pt`` every this
            many frames, keep the last this many, with the replay buffer (``False``: empty).
        max_restarts: rebuild the environment copies that raise, this many times in all (each
            a warning; ``restarts``: where, at which frame), as a Ray run does; ``0``: stop at
            the first exception, in one line (``looprl run``: ``runtime.max_restarts``, 3).
        env_timeout: seconds an env call may take before it is named and interrupted (a fault
            as above; ``EnvWatch``); ``None``: no limit (``looprl run``: ``runtime.env_timeout``).
    """

    max_restarts, env_timeout = 0, None  # (class defaults: checkpoints saved before they were)
    restarts: list[tuple[str, int]] = []  # noqa: RUF012 -- replaced, never mutated

    #: ``test`` seeds its episodes with ``seed + TEST_SEED_OFFSET`` (off: the env's own draws;
    #: the test agent's random numbers are seeded so either way)
    seeded_test = True
    #: the preset's method making the agent ``test`` plays
    test_agent_of = "parallel_test_agent"
    #: a runner's name of the run (``gen001_ind002``), shown by the progress displays
    label: str | None = None
    #: a multi-agent run's logger of each agent, flushed and closed with ``logger``
    agent_loggers: dict[str, Any] = {}  # noqa: RUF012 -- replaced, never mutated

    def __init__(self, preset: Preset, env: Any, name: str | None = None,
                 train_steps: float = math.inf, logdir: str = "runs", quiet: bool = False,
                 render: bool = False, save_freq: float = math.inf, verbose: bool = True,
                 logger: Any = None, seed: int | None = None, meta: Sequence[MetaComponent] = (),
                 checkpoint_every: int | None = None, checkpoint_replay: bool = True,
                 keep_checkpoints: int | None = None, max_restarts: int = 0,
                 env_timeout: float | None = None):
        check_built(preset, type(self).__name__)
        self.max_restarts, self.env_timeout = fault_limits(max_restarts, env_timeout)
        self.vector_env = self._vector_env(preset, check_spaces(preset, env, type(self).__name__))
        self.runner: EnvRunner | None = None  # made by the first train()
        components = [*preset.meta, *meta]
        self.keep_checkpoints = check_checkpointing(checkpoint_every, keep_checkpoints,
                                                    checkpoint_replay, [env, *components])
        self.checkpoint_every, self.checkpoint_replay = checkpoint_every, checkpoint_replay
        self._next_checkpoint = checkpoint_every or math.inf
        if (seed := check_seed(type(self).__name__, seed)) is not None:
            seed_everything(seed)
        self.preset, self.env, self.name = preset, env, name or preset.name
        check_train_steps(train_steps, type(self).__name__)
        self.train_steps, self.quiet, self.render = train_steps, quiet, render
        check_count(optional=True, save_freq=None if save_freq == math.inf else save_freq)
        self.seed, self.verbose, self.save_freq = seed, verbose, save_freq
        self._check_render()
        self.logger = logger_object(logger) or ExperimentLogger(
            self.name, env.name, logdir, verbose,
            run_info={"hyperparameters": getattr(preset, "hyperparameters", {})})
        self.agent = self._make_agent()
        if seed is not None:  # its units draw from their own generators (as on Ray)
            unwrapped = self.agent.unwrapped
            seed_units(seed, getattr(unwrapped, "actor", None), getattr(unwrapped, "learner", None))
        self.test_returns: Any = []
        self._nonfinite_episode: tuple[int, int] | None = None  # (episode from 1, last frame)
        self.hub: Any = self._attach(components) if components else None  # (MetaHub, StreamHooks)

    def __getstate__(self) -> dict[str, Any]:
        """All but the progress display, the ``hp/*`` accessors (closures), the warnings said."""
        return {k: v for k, v in self.__dict__.items() if k not in ("_progress", "_hp", "_said")}

    @property
    def description(self) -> str:
        """The run in the progress displays: ``dqn on CartPole-v1``, then its ``label``."""
        return f"{self.name} on {self.env.name}" + (f" [{self.label}]" if self.label else "")

    frame = property(lambda self: self.logger.frame, doc="Environment steps taken so far.")
    episode = property(lambda self: self.logger.episode, doc="Training episodes completed so far.")

    def agent_returns100(self) -> dict[str, float]:
        """Of a multi-agent run, each agent's mean return of its last 100 episodes."""
        return {agent: logger.mean_return100 for agent, logger in self.agent_loggers.items()}

    @property
    def training_env(self) -> Any:
        """The environment the agent trains in (``metrics['env']``)."""
        return self.vector_env

    def _attach(self, components: list[MetaComponent]) -> Any:
        """The ``MetaHub`` of ``components`` over the agent and its training environment."""
        return agent_hub(components, self.agent, self.training_env)

    def _check_render(self) -> None:  # (ValueError: render=True, and env cannot show itself)
        if self.render:
            check_window(self.env)

    def _make_agent(self) -> Any:
        return self.preset.agent(logger=self.logger, train_steps=self.train_steps)

    def _vector_env(self, preset: Any, env: Any) -> VectorEnvironment:  # (the copies trained in)
        check_parallel_preset(preset, type(self).__name__, env)
        if isinstance(env, VectorEnvironment):
            return env
        if isinstance(env, Environment):
            return env.duplicate(preset.n_envs)
        raise TypeError(f"Expected an Environment or VectorEnvironment, got {type(env)}")

    def _collected(self) -> Any:
        """What the collector steps (``EnvRunner``'s ``env_name``)."""
        return self.vector_env

    def train(self, frames: float = math.inf, episodes: float = math.inf) -> None:
        """Train until ``frames`` frames or ``episodes`` episodes in all; a later call goes on."""
        check_train(self, frames, episodes)  # (its calls are one run: each warning said once)
        with run_scope(keep=False, said=self.__dict__.setdefault("_said", set())):
            warn_past_budget(self, frames)
            total = int(frames) if math.isfinite(frames) else 0
            self._hp = agent_hyperparameters(self.agent)
            status = dashboard(self.logger, self._hp, self.agent_returns100)
            cuts = 0 if self.runner is None else self.runner.cuts
            with TrainingProgress(total, self.description, quiet=self.quiet,
                                  status=status) as self._progress:
                self._progress.update(self.frame, self.episode, self.logger.mean_return100)
                try:
                    self._train(frames, episodes)
                    report_cuts(self.runner, cuts)
                except FloatingPointError as error:
                    raise divergence(self, error) from error
                finally:  # (a notebook reads the run's files once train returns, or stops)
                    self.flush_loggers()
            warn_trained(self, frames)

    def _train(self, frames: float, episodes: float) -> None:
        """Step all copies until the budget is used, saving the checkpoints on the way."""
        if self.runner is None:
            self.runner = training_runner(self)
            self._act()
        elif self.runner.needs_reset:  # (restored, its episodes lost: they start anew)
            self.runner.truncate()
        elif self.runner.needs_action:  # (a step interrupted, Ctrl-C: its episodes start anew)
            self.runner.truncate()
            self._act()
        logger, ready = self.logger, getattr(self.training_env, "checkpoint_ready", lambda: True)
        with EnvWatch(self.runner, self.env_timeout):
            while logger.frame < frames and logger.episode < episodes:
                self._advance()
                if logger.frame >= self._next_checkpoint and ready():  # (one Atari game: at an
                    every = self.checkpoint_every  # end)
                    self._next_checkpoint = (logger.frame // every + 1) * every
                    save_checkpoint(self, replay=self.checkpoint_replay)

    def _advance(self) -> None:
        """One step of every copy with the policy's actions, then ``_act``."""
        runner, logger = self.runner, self.logger
        frames = runner.total_frames
        runner.advance()
        logger.frame += runner.total_frames - frames
        if runner.restarts is not None and runner.restarts.count > len(self.restarts):
            recovered(self, runner.restarts.pop())
        episodes = runner.pop_episodes()
        for episode in episodes:
            self._log_episode(episode)
        if episodes and self.hub is not None:
            self._log_meta()
        self._act()
        self._progress.update(logger.frame, logger.episode, logger.mean_return100)

    def _log_meta(self) -> None:  # (the log/* scalars the components wrote)
        log_scalars(self.hub, self.logger)

    def _log_episode(self, episode: Episode) -> None:
        """Log a finished training episode (and remember the first non-finite return)."""
        logger = self.logger
        if self._nonfinite_episode is None and not math.isfinite(episode.ret):
            self._nonfinite_episode = (logger.episode + 1, logger.frame)
        logger.add_episode_return(float(episode.ret))
        logger.episode += 1
        if logger.episode % self.save_freq == 0:
            self.save()
        if logger.verbose:
            logger.add_hyperparameters({k: h.get() for k, h in self._hp.items()})

    def _act(self) -> None:
        """The policy acts on the new rows (if any: as on Ray); their segments are trained."""
        runner, agent = self.runner, self.agent.unwrapped
        request = runner.request()
        if getattr(agent, "adder", None) is None:
            runner.record(0, None if request is None else RolloutResult(
                action=self._acts(self.agent, runner.states())))
            runner.segments()  # (nothing learns from them)
            return
        runner.record(0, None if request is None else agent.actor.rollout(request),
                      agent.policy.version)
        for segment in runner.segments():
            agent.train(segment)

    def _acts(self, agent: Any, states: StateArray) -> Any:
        """``agent``'s actions for ``states``, one per row."""
        return agent.act(states)

    def test(self, episodes: int = 100, env: Any = None) -> list[float]:
        """The returns of ``episodes`` evaluation episodes of the test agent in ``min(n_envs,
        episodes)`` copies of the environment, or in ``env`` (unlogged); seeded as a Ray run's."""
        return played_test(self, episodes, env)

    def _test_env(self, copies: int) -> VectorEnvironment:
        """``evaluation_copies`` of the environment."""
        return evaluation_copies(self.env, self.vector_env, copies)

    def save(self) -> str | None:
        """Save the preset and its normalizers' statistics; the path (``None``: no log dir)."""
        log_dir = getattr(self.logger, "log_dir", None)
        return None if log_dir is None else save_preset(self.preset, self.vector_env, log_dir)

    def flush_loggers(self) -> None:
        """Write what the experiment's loggers buffer (rows every 100 episodes, scalars)."""
        for logger in (self.logger, *self.agent_loggers.values()):
            if getattr(logger, "flush", None) is not None:  # (a user's Logger may have none)
                logger.flush()

    def close_loggers(self) -> None:
        """Close the experiment's loggers (safe to call more than once)."""
        for logger in (*self.agent_loggers.values(), self.logger):
            logger.close()

    def close(self) -> None:
        """Close the loggers and the environments."""
        self.close_loggers()
        self.env.close()
        if self.vector_env is not self.env:
            self.vector_env.close()


class ParallelEnvExperiment(Experiment):
    """An agent acting in ``preset.n_envs`` copies of an environment (``render``: ignored)."""

    def _check_render(self) -> None:
        if self.render:
            log.warning("render=True is ignored by %s, which trains in %d environments at once; "
                        "watch it after training with looprl watch or looprl.experiments.watch",
                        self.name, self.vector_env.n_envs)


class SingleEnvExperiment(Experiment):
    """An ``Agent`` acting in one ``Environment`` (seed 003's loop, with logging)."""

    seeded_test, test_agent_of = False, "test_agent"

    def _vector_env(self, preset: Any, env: Any) -> VectorEnvironment:
        if not isinstance(env, Environment):
            what = (f"the vector environment {env.name}" if isinstance(env, VectorEnvironment)
                    else f"{type(env).__name__} {env!r:.40}")
            raise TypeError(f"SingleEnvExperiment trains in one Environment, got {what}: give "
                            "it one (e.g. GymEnvironment(id)); a VectorEnvironment trains a "
                            "parallel preset (ppo, a2c, ...) in ParallelEnvExperiment "
                            "(run_experiment picks the experiment)")
        return DuplicateEnvironment([env])

    def _acts(self, agent: Any, states: StateArray) -> Any:
        return single_action(agent, states)

    def _test_env(self, copies: int) -> VectorEnvironment:
        if self.seeded_test:
            with contextlib.suppress(NotImplementedError):  # (else in ``env``, as ALL's)
                return self.vector_env.copy()
        return self.vector_env
