"""``Runner``: the outer loop's handle on one agent of a preset builder (build, train, evaluate,
change its hyperparameters and network parameters); ``OnlineRunner``: train one, then evaluate it.
``train`` returns ``TRAIN_KEYS``, ``evaluate`` ``EVAL_KEYS`` (with a ``test_env``: the held-out
set's, and both sets' under ``train_set`` and ``test_set``).
"""

from __future__ import annotations

import copy
import functools
import math
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from looprl.collector.recovery import fault_limits
from looprl.core import Hyperparameter
from looprl.core.suggest import (
    a_type,
    check_count,
    check_flag,
    check_seed,
    is_number,
    warnings_per_run,
)
from looprl.environments import Environment, MultiagentEnvironment
from looprl.experiments.budget import warn_budget_extended
from looprl.experiments.checkpoint import (
    check_checkpointing,
    check_same_config,
    check_unfinished,
    load_checkpoint,
)
from looprl.experiments.episodes import run_scope, spaces_of
from looprl.experiments.experiment import Experiment, seed_everything
from looprl.experiments.logger import MemoryLogger, RecordingLogger, check_wandb, mean_return
from looprl.experiments.run import fresh_components, make_experiment
from looprl.experiments.run_files import keep_until, save_preset
from looprl.meta.hyperparameters import (
    agent_hyperparameters,
    set_hyperparameter,
    unknown_hyperparameter,
)
from looprl.presets.catalog import env_for
from looprl.runners.evaluation import (
    SETS,
    best_evaluation,
    final_evaluation,
    record_evaluation,
)


def one_run(method: Callable[..., Any]) -> Callable[..., Any]:
    """A runner's ``run`` as one run (``run_scope``): its trials warn once for it, and not again
    what its agents built before it said; the caller's random numbers go on."""

    @functools.wraps(method)
    def run(self: Runner, *args: Any, **kwargs: Any) -> Any:
        with run_scope(said=set(self.said)):
            return method(self, *args, **kwargs)

    return run


TRAIN_KEYS: tuple[str, ...] = ("step", "episodes", "returns", "mean_return", "wall_time",
                               "restarts")
EVAL_KEYS: tuple[str, ...] = ("mean_eval_reward", "std_eval_reward", "returns", "episodes", "step")

#: the ``Runner`` arguments a replica takes as they are (``replica_arguments``)
REPLICATED = ("env", "seed", "meta", "quiet", "eval_episodes", "checkpoint_every",
              "checkpoint_replay", "verbose", "wandb", "test_env", "keep_checkpoints", "run_info",
              "max_restarts", "env_timeout")

__all__ = ["EVAL_KEYS", "TRAIN_KEYS", "MemoryLogger", "OnlineRunner", "RecordingLogger", "Runner"]


def whole(value: Any, name: str) -> int:
    """``value`` as an int; a one-line ``ValueError`` unless it is a whole number >= 0."""
    if not (is_number(value) and value >= 0 and float(value).is_integer()):
        raise ValueError(f"{name} must be a whole number >= 0, got {value!r}")
    return int(value)


def _environment(agent: Any, env: Any, name: str = "env") -> Any:
    """``env``, an environment or an id made as ``run_experiment`` does; else a ``TypeError``."""
    made = env_for(agent, env) if isinstance(env, str) else env
    if not isinstance(made, Environment | MultiagentEnvironment):
        what = "Expected" if name == "env" else f"{name}: expected"
        raise TypeError(f"{what} an Environment, a MultiagentEnvironment or a Gymnasium id, got "
                        f"{type(env).__name__}")
    return made


class Runner:
    """Trains and evaluates agents of one preset on one environment (the other arguments
    are ``Experiment``'s).

    Args:
        agent: a preset builder, e.g. ``looprl.presets.classic_control.ppo``.
        env: an environment, or an id (``"CartPole-v1"``, ``"tictactoe_v3"``, ``"Pong"``).
        seed: seeds every new agent (``run()`` leaves the global random generators as found).
        logdir: a directory for run directories; ``None``: nothing is written.
        meta: meta components (``looprl.meta``; or one) hooked into every agent's experiment.
        eval_episodes: the default number of episodes of ``evaluate``.
        wandb: ``wandb.init`` arguments, to log to W&B too; needs a ``logdir``.
        test_env: a held-out environment of the same spaces (or an id) ``evaluate`` plays too
            (each contextual instance at least once).
        run_info: more entries of every ``run.json`` (beside ``runner``, ``seed``, ``meta``).
    """

    #: the runner's name in ``run.json`` (``looprl run``'s ``runner=`` option)
    name = "runner"
    #: what the runner scores by its evaluation returns (then it needs ``eval_episodes >= 1``)
    scores: str = ""

    def __init__(self, agent: Any, env: Any, seed: int = 0, logdir: str | None = None,
                 meta: Sequence[Any] | Any = (), device: str | None = None, quiet: bool = False,
                 eval_episodes: int = 10, checkpoint_every: int | None = None,
                 checkpoint_replay: bool = True, verbose: bool = False,
                 wandb: dict[str, Any] | None = None, test_env: Any = None,
                 keep_checkpoints: int | None = None, run_info: dict[str, Any] | None = None,
                 max_restarts: int = 0, env_timeout: float | None = None):
        if not (hasattr(agent, "hyperparameters") and hasattr(agent, "build")):
            raise TypeError(f"Runners take a preset builder (e.g. "
                            f"looprl.presets.classic_control.ppo), got {type(agent).__name__}")
        self.builder = agent.device(device) if device is not None else agent
        self.env = _environment(agent, env)
        self.test_env = None if test_env is None else _environment(agent, test_env, "test_env")
        held_out = None if test_env is None else spaces_of(self.test_env)
        if held_out is not None and held_out != spaces_of(self.env):  # (was found at the end)
            raise ValueError(f"test_env {self.test_env.name} has {', '.join(held_out)}, env "
                             f"{self.env.name} {', '.join(spaces_of(self.env))}: a held-out "
                             "environment has the spaces (and agents) of the one trained in")
        self.seed = check_seed(type(self).__name__, seed, optional=False)
        self.logdir = logdir
        self.meta = tuple(meta) if isinstance(meta, list | tuple) else (meta,)  # (meta=RND())
        self.quiet = check_flag("quiet (looprl run's logging.quiet)", quiet)
        # each new agent's components start as given (a trial does not go on from the last's)
        self._fresh_meta = fresh_components(self.builder, self.meta)
        self.eval_episodes = whole(eval_episodes, "eval_episodes (looprl run's test_episodes)")
        if self.scores and self.eval_episodes == 0:
            raise ValueError(f"runner={self.name} scores each {self.scores} by its evaluation "
                             "returns: it needs eval_episodes >= 1 (looprl run: test_episodes "
                             ">= 1), got 0")
        self.checkpoint_every, self.checkpoint_replay = checkpoint_every, checkpoint_replay
        self.keep_checkpoints = check_checkpointing(checkpoint_every, keep_checkpoints,
                                                    checkpoint_replay, logdir=logdir)
        if not isinstance(run_info or {}, dict):  # (was: "'str' object is not a mapping")
            raise TypeError(f"run_info is a dict of what to note in the run's files, got "
                            f"{type(run_info).__name__} {run_info!r:.40}")
        self.run_info = {"runner": self.name, "meta": [repr(component) for component in self.meta],
                         **(run_info or {}), "seed": self.seed}  # (its own: a PBT member's)
        self.wandb = check_wandb(wandb, logdir)
        self.verbose = check_flag("verbose (looprl run's logging.verbose)", verbose)
        self.max_restarts, self.env_timeout = fault_limits(max_restarts, env_timeout)
        self.experiment: Any = None
        self.preset: Any = None
        self._next_run: tuple[str, dict[str, Any]] | None = None  # label_next_run
        self.said: set[str] = set()  # (warnings of agents built before ``run``: see ``one_run``)

    @property
    def agent(self) -> Any:
        """The current agent (``experiment.agent``; ``None`` before the first ``new_agent``),
        Mighty's ``self.agent``: its hyperparameters are set by ``set_hyperparameters``."""
        return None if self.experiment is None else self.experiment.agent

    def replica_arguments(self) -> dict[str, Any]:
        """The ``Runner`` arguments of a replica in another process (a trial on Ray)."""
        return {"agent": self.builder, **{key: getattr(self, key) for key in REPLICATED},
                "logdir": None if self.logdir is None else os.path.abspath(self.logdir)}

    def new_agent(self, hyperparameters: dict[str, Any] | None = None,
                  train_steps: float = math.inf, logged: bool = True) -> None:
        """A fresh, seeded agent of the preset ``hyperparameters``, its schedules annealing over
        ``train_steps``; ``logged=False``: no run directory."""
        self.close()
        builder = self.builder.hyperparameters(**(hyperparameters or {}))
        seed_everything(self.seed)
        with warnings_per_run(self.said):  # (made before ``run``: it does not say them again)
            self.preset = builder.env(self.env).build()
            self.preset.meta, meta = copy.deepcopy(self._fresh_meta)
            label, info = self._next_run or (None, {})
            logger: Any = MemoryLogger()
            if logged and self.logdir is not None:  # (else the label waits for a logged one)
                self._next_run = None
                logger = RecordingLogger(self.preset.name, self.env.name, self.logdir,
                                         verbose=self.verbose, wandb=self.wandb, run_name=label,
                                         run_info=self._run_json(info))
            self.experiment = make_experiment(
                self.preset, self.env, train_steps=train_steps, quiet=self.quiet, logger=logger,
                seed=self.seed, meta=meta, verbose=self.verbose,  # (not logged: no checkpoints)
                checkpoint_every=self.checkpoint_every if logged else None,
                checkpoint_replay=self.checkpoint_replay,
                keep_checkpoints=self.keep_checkpoints if logged else None,
                max_restarts=self.max_restarts, env_timeout=self.env_timeout)
        self.experiment.label = label

    def configure(self, values: dict[str, Any], train_steps: float = math.inf,
                  fresh: bool = True) -> None:
        """Apply ``values``: preset ones to a fresh agent (if ``fresh``), then the ``hp/*`` ones."""
        if fresh:
            self.new_agent({k: v for k, v in values.items() if not k.startswith("hp/")},
                           train_steps=train_steps)
        self.set_hyperparameters({k: v for k, v in values.items() if k.startswith("hp/")})

    def resume(self, path: str, run_name: str | None = None,
               run_info: dict[str, Any] | None = None) -> None:
        """Continue the experiment saved at ``path`` (in a new run directory ``run_name``); its
        checkpointing stays (another ``checkpoint_every``/``_replay``: one line, as --resume's)."""
        self.close()
        if run_name is not None:
            run_info = {**self.run_info, **(run_info or {})}
        experiment = load_checkpoint(path, run_name, run_info)
        if not isinstance(experiment, Experiment):  # (was: an AttributeError, of its preset)
            raise ValueError(f"{path} is the checkpoint of a Ray run ({a_type(experiment)}): "
                             "resume it with DistributedRun(..., resume_from=RUN_DIR) (looprl "
                             "run --resume RUN_DIR)")
        keys = () if self.checkpoint_every is None else ("checkpoint_every", "checkpoint_replay")
        differences = [f"{key}: {getattr(experiment, key)!r} -> {getattr(self, key)!r}"
                       for key in keys if getattr(experiment, key) != getattr(self, key)]
        if differences:
            self.close_experiment(experiment)
            check_same_config(path, differences)
        self.experiment = experiment
        experiment.keep_checkpoints = self.keep_checkpoints  # (a resumed run's own settings)
        experiment.quiet = self.quiet
        for logger in (experiment.logger, *getattr(experiment, "agent_loggers", {}).values()):
            logger.verbose = self.verbose
        self.preset = self.experiment.preset

    def label_next_run(self, name: str, **info: Any) -> None:
        """Name the run directory of the next agent, with ``info`` in its ``run.json``."""
        self._next_run = (name, info)

    def label_run(self, name: str, **info: Any) -> None:
        """The current agent goes on in the run directory ``name``, ``info`` in its ``run.json``."""
        self._require_agent()
        logger, self.experiment.label = self.experiment.logger, name
        if self.logdir is None:
            return
        if getattr(logger, "run_name", None) == name:
            logger.describe_run(self._run_json(info))
        else:
            logger.start_run(name, self._run_json(info))

    def _run_json(self, info: dict[str, Any]) -> dict[str, Any]:
        return {**self.run_info, **info, "hyperparameters": self.preset.hyperparameters}

    def _require_agent(self) -> None:
        if self.experiment is None:
            raise RuntimeError("No agent yet: call new_agent() or train() first")

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """The current agent's ``hp/*`` keys, each with a getter and a setter."""
        self._require_agent()
        return agent_hyperparameters(self.experiment.agent)

    def set_hyperparameters(self, values: dict[str, Any]) -> None:
        """Set ``hp/*`` keys of the current agent (``{"hp/lr": 1e-3}``), each checked."""
        found = self.hyperparameters()
        for key, value in values.items():
            if key not in found:
                raise unknown_hyperparameter(key, found)
            set_hyperparameter(found, key, value)

    def _model(self) -> torch.nn.Module:
        self._require_agent()
        model = getattr(self.preset, "model", None)
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"The {self.preset.name} preset has no single 'model' network whose "
                            "parameters to search (search_params=True: PPO, DQN, ...); search "
                            "its hyperparameters only (search_params=False)")
        return model

    def parameter_vector(self) -> np.ndarray:
        """The preset's network parameters as one flat float64 vector."""
        vector = torch.nn.utils.parameters_to_vector(self._model().parameters())
        return vector.detach().cpu().double().numpy()

    def apply_parameters(self, vector: Any) -> None:
        """Copy a flat vector (as ``parameter_vector`` returns) into the preset's network."""
        parameters = list(self._model().parameters())
        size = sum(p.numel() for p in parameters)
        vector = torch.as_tensor(np.asarray(vector), dtype=torch.float64).flatten()
        if vector.numel() != size:
            raise ValueError(f"The parameter vector has {vector.numel()} values; the network "
                             f"has {size} parameters")
        with torch.no_grad():
            for parameter, values in zip(parameters, vector.split([p.numel() for p in parameters])):
                parameter.copy_(values.view_as(parameter))

    def train(self, num_steps: int) -> dict[str, Any]:
        """``TRAIN_KEYS`` of ``num_steps`` more steps of the current agent (a fresh one if none,
        its schedules annealing over these steps; ``returns``: the episodes ended here)."""
        num_steps = whole(num_steps, "train(num_steps)")
        if self.experiment is None:
            self.new_agent(train_steps=num_steps)
        start, logger = time.perf_counter(), self.experiment.logger
        seen = len(logger.returns)
        if num_steps:  # (0: nothing to train, no progress line to show)
            self.experiment.train(frames=self.experiment.frame + num_steps)
        returns = logger.returns[seen:]
        return {"step": self.experiment.frame, "episodes": self.experiment.episode,
                "returns": returns, "mean_return": mean_return(returns),
                "wall_time": time.perf_counter() - start,  # (and the env faults so far)
                "restarts": [list(where) for where in self.experiment.restarts]}

    def evaluate(self, episodes: int | None = None) -> dict[str, Any]:
        """``EVAL_KEYS`` of ``episodes`` (default: ``eval_episodes``) seeded test episodes of the
        current agent (``final_evaluation``); none without a ``test_env``: ``ValueError``."""
        self._require_agent()
        given = "eval_episodes=0: no evaluation" if episodes is None else "episodes=0"
        episodes = (self.eval_episodes if episodes is None
                    else whole(episodes, "evaluate(episodes)"))
        if not episodes and self.test_env is None:
            raise ValueError(f"{type(self).__name__}.evaluate() of 0 episodes plays none "
                             f"({given}): give evaluate(episodes=N), or eval_episodes >= 1")
        return self._evaluation(episodes)

    def _evaluation(self, episodes: int) -> dict[str, Any]:  # (of no episode too)
        self.experiment.seeded_test = True  # (as a Ray run's evaluation is)
        return {**final_evaluation(self.experiment, episodes, self.env, self.test_env),
                "step": self.experiment.frame}

    def save_preset(self, directory: str) -> None:
        """Save the preset (and the current experiment's normalizers) to ``directory``."""
        current = self.experiment is not None and self.experiment.preset is self.preset
        save_preset(self.preset, self.experiment.vector_env if current else None, directory)

    def close_experiment(self, experiment: Any) -> None:
        """Close an experiment's logger and the environments it made (not ``self.env``)."""
        experiment.logger.close()
        if experiment.training_env is not self.env:
            experiment.training_env.close()

    def close(self) -> None:
        """Close the current agent's experiment (see ``close_experiment``)."""
        if self.experiment is not None:
            self.close_experiment(self.experiment)
        self.experiment = self.preset = None


class OnlineRunner(Runner):
    """Trains a fresh agent for ``num_steps`` steps, then evaluates it.

    Args:
        agent, env, **kwargs: ``Runner``'s.
        resume_from: a checkpoint (or its run directory) to continue up to ``num_steps``.
        eval_every: also evaluate every this many steps (``eval_results.csv``; train results'
            ``evaluations`` and ``best``), keeping the best agent (``best_preset(.pt)``).
    """

    name = "online"

    def __init__(self, agent: Any, env: Any, num_steps: int = 100_000,
                 resume_from: str | None = None, eval_every: int | None = None, **kwargs: Any):
        if eval_every is not None:  # (Runner's check: it needs evaluation episodes)
            self.scores = "agent that eval_every compares (best_preset)"
        super().__init__(agent, env, **kwargs)
        check_count(num_steps=num_steps)
        check_count(optional=True, eval_every=eval_every)
        self.num_steps = int(num_steps)
        self.resume_from = resume_from
        self.eval_every = None if eval_every is None else int(eval_every)
        self.best_preset: Any = None
        self.evaluations: list[list[float]] = []
        self._last_evaluation: dict[str, Any] | None = None  # (of eval_every)

    @one_run  # (its chunks of training and evaluations)
    def run(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """Train (or continue training), then evaluate: ``(train_results, eval_results)``."""
        returns: list[float] = []
        self.evaluations = []
        if self.resume_from is not None:
            self.resume(self.resume_from)
            if self.experiment.frame > self.num_steps:  # (as a Ray run's resume: one line)
                log_dir, frame = self.experiment.logger.log_dir, self.experiment.frame
                self.close()
                check_unfinished(log_dir, self.num_steps, frame)
            warn_budget_extended(self.num_steps, self.experiment.train_steps)
            self.evaluations = self._read_evaluations(self.experiment.frame)
            returns = list(getattr(self.experiment.logger, "returns", []))  # before the resume
        else:
            self.new_agent(train_steps=self.num_steps)
        start = time.perf_counter()
        chunk = self.eval_every or self.num_steps
        since = self.evaluations[-1][0] if self.evaluations else 0  # (the last evaluation's step)
        while True:
            target = min(since + chunk, self.num_steps)
            train_results = self.train(max(target - self.experiment.frame, 0))
            returns += train_results["returns"]
            if self.eval_every is None or since >= self.num_steps:
                break
            self._evaluate_and_keep_best()
            since = self.experiment.frame
        train_results.update(returns=returns, mean_return=mean_return(returns),
                             wall_time=time.perf_counter() - start)
        if self.eval_every is not None:
            train_results["evaluations"] = self.evaluations
            train_results["best"] = best_evaluation(self.evaluations)
        last = self._last_evaluation  # (at the final step already: the same, played once)
        return train_results, last if last and last["step"] == self.experiment.frame \
            else self._evaluation(self.eval_episodes)

    def _evaluate_and_keep_best(self) -> None:
        results = self._last_evaluation = self.evaluate()
        if record_evaluation(self.logdir, self.evaluations, results):
            self.best_preset = copy.deepcopy(self.preset)
            if self.logdir is not None:
                save_preset(self.preset, self.experiment.vector_env, self.logdir, "best_")

    def _read_evaluations(self, frame: float = math.inf) -> list[list[float]]:
        """``eval_results.csv``'s rows (the held-out set's) up to ``frame``; later ones dropped."""
        if self.logdir is None or not (path := Path(self.logdir) / "eval_results.csv").exists():
            return []
        keep_until(path, frame)
        rows = [line.split(",") for line in path.read_text().splitlines()[1:] if line]
        wanted = SETS[1] if any(row[4:] == [SETS[1]] for row in rows) else SETS[0]
        try:
            return [[int(row[0]), float(row[1])] for row in rows if row[4:] in ([], [wanted])]
        except (ValueError, IndexError):
            raise ValueError(f"{path} has a row without a step and a mean return (hand-edited?): "
                             "restore the file, or delete the row") from None
