"""``RunMonitor``: turns each poll of the workers' statistics into the result so far, the run
directory's logs and the lines under the progress bar. No Ray import here."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from looprl.core import Hyperparameter
from looprl.core.suggest import log_worker_warnings
from looprl.distributed.config import AlgorithmSpec
from looprl.distributed.run_state import DistributedResult, SampleCounts
from looprl.distributed.throughput import THROUGHPUT_HEADER, Throughput
from looprl.distributed.watch import save_spec
from looprl.experiments.agent_loggers import AgentLoggers
from looprl.experiments.logger import mean_return

__all__ = ["THROUGHPUT_HEADER", "RunMonitor", "open_run_log"]


def open_run_log(name: str, spec: AlgorithmSpec, logdir: str, verbose: bool = True,
                 run_info: dict[str, Any] | None = None) -> Any:
    """The ``ExperimentLogger`` of a new run directory ``{logdir}/{name}/{env}``."""
    from looprl.experiments.logger import ExperimentLogger
    log = ExperimentLogger(name, spec.env_label, logdir, verbose=verbose, run_info=run_info)
    save_spec(spec, log.log_dir)
    (Path(log.log_dir) / "throughput.csv").write_text(THROUGHPUT_HEADER + "\n")
    return log


class RunMonitor:
    """Records each poll of the workers' ``stats()`` in ``result`` and ``log`` (``None``:
    nothing written); ``trainers``: rank 0 first; ``frames``: the budget (``None``: unknown);
    ``agents``: a multi-agent env's agents, each logged in its own run directory."""

    def __init__(self, result: DistributedResult, counts: SampleCounts, log: Any,
                 trainers: list[str], frames: int | None = None, agents: Sequence[str] = (),
                 agent_logs: dict[str, Any] | None = None) -> None:
        self.result, self.counts, self.log, self.trainers = result, counts, log, trainers
        self.frames, self.agents = frames, list(agents)
        self.agent_logs = None if log is None else AgentLoggers(log, loggers=agent_logs)
        self.throughput = Throughput(
            Path(log.log_dir) / "throughput.csv" if log is not None else None, log)
        self.last_losses: dict[str, float] = {}
        self.hyperparameters: dict[str, Hyperparameter] = {}
        self.actors_finished: dict[str, bool] = {}
        self._acting: dict[str, Any] = {}  # actor 0's exploration ``hp/*`` (``acting_values``)
        self.cuts: tuple[int, str, int | None] = (0, "", None)  # (``log_cuts``' arguments)

    def record(self, stats: dict[str, dict[str, Any]], seconds: float) -> None:
        """Log one poll's ``stats`` by worker name, ``seconds`` after the last."""
        self.record_warnings(stats)
        trainer = self._trainer_stats(stats)
        actors = {name: s for name, s in stats.items() if name.startswith("actor")}
        self._record_episodes(actors)
        self.actors_finished.update({name: s["finished"] for name, s in actors.items()})
        for cut, *where in (s.get("cuts", (0,)) for s in actors.values()):
            if cut:  # (the actors' episodes cut at their cap: each warned at its first)
                self.cuts = (self.cuts[0] + cut, *where)
        self._acting.update(actors.get("actor0", {}).get("hp", {}))
        for name, s in stats.items():
            if name.startswith("eval") and s["episodes"]:
                returns = [ret for ret, *_ in s["episodes"]]
                self.result.eval_returns += returns
                if self.log is not None:
                    self.log.add_eval("returns/mean", float(np.mean(returns)))
        if trainer is not None:
            self._record_trainer(trainer)
        last = self.frames is not None and self.result.frames >= self.frames
        self.throughput.record(stats, {name: stats[name] for name in self.trainers
                                       if name in stats}, seconds, len(self.result.restarts), last)

    def record_warnings(self, stats: dict[str, dict[str, Any]]) -> None:
        """Log the workers' warnings of a poll's ``stats`` here, each line once in the run."""
        for s in stats.values():
            log_worker_warnings(s.get("warnings", ()))

    def status(self) -> list[str]:
        """The lines under the progress bar."""
        from looprl.experiments.episodes import dashboard
        agents = self.result.agent_returns
        return [*dashboard(self, self.hyperparameters, lambda: {
            agent: mean_return(returns, 100) for agent, returns in agents.items()})(),
            self.throughput.line()]

    def close(self) -> None:
        """Close the agents' loggers (the controller closes the run's)."""
        if self.agent_logs is not None:
            self.agent_logs.close()

    def _trainer_stats(self, stats: dict[str, Any]) -> dict[str, Any] | None:
        """Trainer 0's statistics, with every trainer's lags and the run's sample counts."""
        for name in self.trainers:
            if name in stats:
                self.counts.polled(name, stats[name]["received"], stats[name]["dropped"])
        trainer = stats.get(self.trainers[0])
        if trainer is None:
            return None
        for name in self.trainers[1:]:
            trainer["lags"] = trainer["lags"] + stats.get(name, {}).get("lags", [])
        trainer["received"], trainer["dropped"] = self.counts.total(self.trainers)
        return trainer

    def _record_episodes(self, actors: dict[str, dict[str, Any]]) -> None:
        """Log one poll's training episodes and the actors' meta values at their frames."""
        base = self.result.frames
        total = sum(s["frames"] for s in actors.values())

        def frame(s: dict[str, Any], at: int) -> float:
            return base + total * at / max(s["frames"], 1)

        ended = sorted(((frame(s, at), ret, tuple(each)) for s in actors.values()
                        for ret, _, at, *each in s["episodes"]), key=lambda e: e[0])
        points = sorted(((frame(s, at), name, values) for name, s in actors.items()
                         for at, values in s.get("meta", ())), key=lambda p: p[0])
        self.result.frames = base + total
        for frame_then, ret, each in ended:
            self.result.returns.append(ret)
            if self.log is not None:
                self.log.frame = round(frame_then)
                self.log.add_episode_return(ret)
                self.log.episode += 1
            if each and each[0]:  # (several agents: each one's return)
                self._record_agent_returns(each[0], round(frame_then))
        for frame_then, name, values in points:
            self._record_meta(name, values, round(frame_then))
        if self.log is not None:
            self.log.frame = self.result.frames

    def _record_agent_returns(self, returns: Sequence[float], frame: int) -> None:
        """Each agent's return of a multi-agent episode, also in its own run directory."""
        named = {self.agents[index] if index < len(self.agents) else f"agent{index}": ret
                 for index, ret in enumerate(returns)}
        for agent, ret in named.items():
            self.result.agent_returns.setdefault(agent, []).append(ret)
        if self.agent_logs is not None:
            self.agent_logs.add_episode(named, frame)

    def _record_meta(self, name: str, values: dict[str, float], frame: int) -> None:
        """Log the ``log/*`` values of worker ``name``'s meta components at ``frame``."""
        if not values:
            return
        self.result.meta.setdefault(name, {}).update(values)
        if self.log is None:
            return
        for key, value in values.items():
            tag, _, agent = key.rpartition("/")
            log = self.agent_logs[agent] if agent in self.agents else self.log
            log.frame = frame
            log.add_log((tag if log is not self.log else key)[len("log/"):], value)

    def _record_trainer(self, stats: dict[str, Any]) -> None:
        """The trainer's step count, its ``hp/*`` values and what its learners logged."""
        self.result.train_steps = stats["steps"]
        self._record_meta(self.trainers[0], stats["meta"], self.result.frames)
        # the exploration's values are actor 0's: the trainer's copy of the policy never acts
        values = stats.get("hp", {})
        values = {**values, **{k: v for k, v in self._acting.items() if k in values}}
        self.hyperparameters.update({key: _reading(value) for key, value in values.items()})
        logged = stats.get("logged", [])  # ``LossRecorder``'s
        self.last_losses.update((name, value) for agent, kind, name, value, _ in logged
                                if kind == "loss" and agent is None)  # (an agent's: its logs)
        if self.log is None:
            return
        for agent, kind, name, value, frame in logged:
            log = self.log if agent is None else self.agent_logs[agent]
            before, log.frame = log.frame, frame
            getattr(log, f"add_{kind}")(name, value)
            log.frame = before
        self.log.frame = self.result.frames
        if values:
            self.log.add_hyperparameters(values)


def _reading(value: Any) -> Hyperparameter:
    """A polled ``hp/*`` value as a read-only ``Hyperparameter`` (for the dashboard)."""

    def refuse(_: Any) -> None:
        raise TypeError("a Ray run's hp/* values are set in its trainer, not the monitor")

    return Hyperparameter(lambda: value, refuse)
