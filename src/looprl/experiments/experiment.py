"""Control loops: run a preset's agent in an environment, log, and evaluate.

``Experiment`` is the one local loop, the collector over copies of the environment (with
budget, logging, checkpoints, divergence); ``ParallelEnvExperiment`` and
``SingleEnvExperiment`` (over ``DuplicateEnvironment([env])``) are its two forms.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

from looprl.agents.shell import seed_units
from looprl.collector import EnvRunner, Episode
from looprl.core import Preset, RolloutResult, StateArray
from looprl.environments import Environment, VectorEnvironment
from looprl.environments.bodies import body_states
from looprl.environments.duplicate import DuplicateEnvironment
from looprl.experiments.checkpoint import check_checkpointing
from looprl.experiments.diagnose import explain_divergence
from looprl.experiments.episodes import (  # (and seed 003's names from here)
    DEFAULT_EPISODE_CAP,
    check_episodes,
    dashboard,
    episode_cap,
    play_episodes,
    seed_everything,
    single_action,
)
from looprl.experiments.logger import ExperimentLogger
from looprl.experiments.progress import TrainingProgress
from looprl.experiments.records import RunRecords
from looprl.meta.component import MetaComponent
from looprl.meta.hub import MetaHub, agent_hub
from looprl.meta.hyperparameters import agent_hyperparameters

__all__ = ["DEFAULT_EPISODE_CAP", "Experiment", "ParallelEnvExperiment", "SingleEnvExperiment",
           "episode_cap", "seed_everything"]

log = logging.getLogger(__name__)


class Experiment(RunRecords):
    """Trains one preset's agent in ``preset.n_envs`` copies of an environment (a
    ``VectorEnvironment``, or copies of an ``Environment``) and evaluates it.

    It is the collector the Ray actors run (``looprl.collector.EnvRunner``): the policy acts,
    the hooks run, the rows are cut into segments as the agent's adder does and each goes to
    the agent's ``train`` (its ``Learner``). The agent's ``act`` is for hand-written loops.

    Args:
        preset, env: a built ``Preset`` and its environment.
        name: run name (default: the preset's).
        train_steps: the training budget in frames (schedules anneal over it).
        logdir: root directory of run directories.
        quiet: no progress bar or printed results.
        render: show the environment while training (created with ``render_mode='human'``).
        verbose: write losses and debugging statistics to TensorBoard.
        logger: a logger to use instead of a new ``ExperimentLogger``.
        seed: seeds torch and the environment (``seed_everything(seed)`` before building the
            preset seeds its initial weights, as ``run_experiment`` does).
        meta: meta components (``looprl.meta``) run after the preset's own (``preset.meta``).
        checkpoint_every: save ``checkpoint.pt`` every this many frames (``None``: never).
        checkpoint_replay: checkpoints hold the replay buffer (``False``: saved empty).
        keep_checkpoints: also keep the last this many as ``checkpoint_<frame>.pt``.
    """

    def __init__(self, preset: Preset, env: Any, name: str | None = None,
                 train_steps: float = math.inf, logdir: str = "runs", quiet: bool = False,
                 render: bool = False, verbose: bool = True, logger: Any = None,
                 seed: int | None = None, meta: Sequence[MetaComponent] = (),
                 checkpoint_every: int | None = None, checkpoint_replay: bool = True,
                 keep_checkpoints: int | None = None):
        self.vector_env = self._vector_env(preset, env)
        self.runner: EnvRunner | None = None  # made by the first train()
        self.keep_checkpoints = check_checkpointing(checkpoint_every, keep_checkpoints)
        self.checkpoint_every = checkpoint_every
        self.checkpoint_replay = checkpoint_replay
        self._next_checkpoint = checkpoint_every or math.inf
        if seed is not None:
            seed_everything(seed)
        self.preset = preset
        self.env = env
        self.name = name or preset.name
        self.train_steps = train_steps
        self.quiet = quiet
        self.render = render
        self.seed = seed
        self.verbose = verbose
        self._check_render()
        self.logger = logger or ExperimentLogger(
            self.name, env.name, logdir, verbose,
            run_info={"hyperparameters": getattr(preset, "hyperparameters", {})})
        self.agent = self._make_agent()
        if seed is not None:  # its units draw from their own generators (as on Ray)
            unwrapped = self.agent.unwrapped
            seed_units(seed, getattr(unwrapped, "actor", None),
                       getattr(unwrapped, "learner", None))
        self.test_returns: Any = []
        self._nonfinite_episode: tuple[int, int] | None = None  # (episode from 1, last frame)
        self.hub: MetaHub | None = None
        components = [*preset.meta, *meta]
        if components:
            self._attach(components)

    def _attach(self, components: list[MetaComponent]) -> None:
        """Build the run's ``MetaHub`` for ``components``."""
        self.hub = agent_hub(components, self.agent, self.training_env)

    def _check_render(self) -> None:
        """``ValueError`` if ``render=True`` but the environment cannot show itself."""
        if self.render and getattr(getattr(self.env, "env", None), "render_mode", None) != "human":
            raise ValueError(f"render=True needs an environment that shows itself: create it with "
                             f"render_mode='human' (GymEnvironment({self.env.name!r}, render_mode="
                             f"'human'), or for PettingZoo make_zoo_env({self.env.name!r}, "
                             "render_mode='human')); Atari environments have no window: watch a "
                             "saved preset with looprl watch")

    def _make_agent(self) -> Any:
        """The preset's training agent, logging to this experiment's logger."""
        return self.preset.agent(logger=self.logger, train_steps=self.train_steps)

    def train(self, frames: float = math.inf, episodes: float = math.inf) -> None:
        """Train until ``frames`` frames or ``episodes`` episodes have passed."""
        if math.isinf(frames) and math.isinf(episodes):
            raise ValueError("train() needs a budget: frames=... or episodes=...")
        total = int(frames) if math.isfinite(frames) else 0
        description = f"{self.name} on {self.env.name}"
        self._hp = agent_hyperparameters(self.agent)
        status = dashboard(self.logger, self._hp)
        with TrainingProgress(total, description, quiet=self.quiet,
                              status=status) as self._progress:
            try:
                self._train(frames, episodes)
            except FloatingPointError as error:
                message = explain_divergence(error, self.env.name, self.frame,
                                             self._nonfinite_episode,
                                             self._running_return_nonfinite())
                raise FloatingPointError(message) from error

    def _vector_env(self, preset: Any, env: Any) -> VectorEnvironment:
        """The environment copies the agent trains in."""
        if isinstance(env, VectorEnvironment):
            return env
        if isinstance(env, Environment):
            return env.duplicate(preset.n_envs)
        raise TypeError(f"Expected an Environment or VectorEnvironment, got {type(env)}")

    def _train(self, frames: float, episodes: float) -> None:
        """Step all copies until the budget is used, with the checkpoints in between; a
        later call continues the episodes (unless the environment ``needs_reset``)."""
        if self.runner is None:
            self.runner = self._make_runner()
            self._act()
        elif getattr(self.vector_env, "needs_reset", False):
            self.runner.truncate()
        while self.logger.frame < frames and self.logger.episode < episodes:
            self._advance()
            self._maybe_checkpoint()

    def _make_runner(self) -> EnvRunner:
        """The collector over ``_collected``, cutting rows as the agent's adder."""
        adder = getattr(self.agent.unwrapped, "adder", None)  # (None: a user's own Agent)
        return EnvRunner(
            self._collected(), segment_length=None if adder is None else adder.segment_length,
            whole_episodes=adder is not None and adder.whole_episodes, seed=self.seed,
            hub=self.hub, process=None if adder is None else body_states(self.agent))

    def _collected(self) -> Any:
        """What the collector steps (``EnvRunner``'s ``env_name``): the vector environment."""
        return self.vector_env

    @property
    def training_env(self) -> Any:
        """The environment the agent trains in (``metrics['env']``)."""
        return self.vector_env

    def _advance(self) -> None:
        """One step of every copy with the policy's actions, then ``_act``."""
        runner = self.runner
        frames = runner.total_frames
        runner.advance()
        self.logger.frame += runner.total_frames - frames
        episodes = runner.pop_episodes()
        for episode in episodes:
            self._log_episode(episode)
        if episodes:
            self._log_meta()
        self._act()
        self._update_progress()

    def _log_episode(self, episode: Episode) -> None:
        """Log a finished training episode."""
        self._log_training_episode(episode.ret)

    def _log_meta(self) -> None:
        """Log the ``log/*`` scalars the meta components wrote (after episodes ended)."""
        if self.hub is not None:
            self._log_meta_scalars(self.hub, self.logger)

    def _act(self) -> None:
        """The policy acts on the new observations, the runner records the rows, and every
        segment they complete is trained. A user's own ``Agent`` (no adder) acts on the
        states themselves, rewards and ends included."""
        runner, agent = self.runner, self.agent.unwrapped
        request = runner.request()
        if getattr(agent, "adder", None) is None:
            runner.record(0, RolloutResult(action=self._own_actions(runner)))
            runner.segments()  # (nothing learns from them)
            return
        runner.record(0, agent.actor.rollout(request), agent.policy.version)
        for segment in runner.segments():
            agent.train(segment)

    def _own_actions(self, runner: EnvRunner) -> Any:
        """A user's own agent's actions for the rows ``runner`` asks."""
        return self._acts(self.agent, runner.states())

    def _acts(self, agent: Any, states: StateArray) -> Any:
        """``agent``'s actions for ``states``, one per row."""
        return agent.act(states)

    def test(self, episodes: int = 100, env: Any = None) -> list[float]:
        """Run ``episodes`` evaluation episodes of the test agent (``play_episodes``: each
        copy its share, an episode cut at ``episode_cap``) in the vector environment (or in
        ``min(n_envs, episodes)`` copies of ``env``: then not logged); their returns."""
        check_episodes(episodes, f"{type(self).__name__}.test")
        agent = self._test_agent()
        given = env is not None
        copies = max(1, min(self.vector_env.n_envs, episodes))
        env = env.duplicate(copies) if given else self._test_env(copies)
        if env is self.vector_env and self.runner is not None:
            self.runner.truncate()  # training resumes with new episodes
        runner = EnvRunner(env, segment_length=None, seed=self._test_seed(given),
                           is_evaluation=True)
        played = play_episodes(runner, lambda _: RolloutResult(
            action=self._acts(agent, runner.states())), episodes, max_steps=episode_cap(env))
        returns = [episode.ret for episode in played]
        if env is not self.vector_env:
            env.close()
        if not given:
            self._log_test(returns)
        return returns

    def _test_agent(self) -> Any:
        return self.preset.parallel_test_agent()

    def _test_seed(self, given: bool) -> int | None:
        """The seed of the evaluation environments' reset (``seed + 10,000``)."""
        return None if self.seed is None else self.seed + 10_000

    def _test_env(self, copies: int) -> VectorEnvironment:
        """``copies`` copies of the environment, else a copy of the training environments
        (so that their episodes go on), else they."""
        if isinstance(self.env, Environment):
            return self.env.duplicate(copies)
        try:
            return self.vector_env.copy()
        except NotImplementedError:
            log.warning("%s cannot be copied (VectorEnvironment.copy): evaluating in the training "
                        "environments, which cuts their episodes short (the agent sees them "
                        "truncated)", type(self.vector_env).__name__)
            return self.vector_env

    def close(self) -> None:
        """Close the loggers and the environments."""
        self.close_loggers()
        self.env.close()
        if self.vector_env is not self.env:
            self.vector_env.close()


class ParallelEnvExperiment(Experiment):
    """An agent acting in ``preset.n_envs`` copies of an environment at once; ``render``
    is ignored (with a warning)."""

    def _check_render(self) -> None:
        if self.render:
            log.warning("render=True is ignored by %s, which trains in %d environments at once; "
                        "watch it after training with looprl watch or looprl.experiments.watch",
                        self.name, self.vector_env.n_envs)


class SingleEnvExperiment(Experiment):
    """An ``Agent`` acting in one ``Environment`` (seed 003's loop, with logging): the
    collector over ``DuplicateEnvironment([env])``. Evaluation plays in ``env``."""

    def _vector_env(self, preset: Any, env: Any) -> VectorEnvironment:
        if not isinstance(env, Environment):
            raise TypeError(f"SingleEnvExperiment trains in one Environment, got {type(env)}: "
                            "give a VectorEnvironment to ParallelEnvExperiment")
        return DuplicateEnvironment([env])

    def _acts(self, agent: Any, states: StateArray) -> Any:
        """``agent``'s action for the one ``State`` (seed 003's ``Agent``), as a batch of one."""
        return single_action(agent, states)

    def _test_agent(self) -> Any:
        return self.preset.test_agent()

    def _test_seed(self, given: bool) -> int | None:
        """None (the environment's own random state, as seed 003), unless ``test`` was given
        another environment."""
        return super()._test_seed(given) if given else None

    def _test_env(self, copies: int) -> VectorEnvironment:
        """The training environment (seed 003 evaluates in it)."""
        return self.vector_env
