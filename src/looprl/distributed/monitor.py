"""What a distributed run logs: ``RunMonitor`` turns each poll of the workers' statistics into
the result so far, the run directory's logs (a local run's, plus ``Throughput``'s) and the
lines under the progress bar (``status``). No Ray import here."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from looprl.core import Hyperparameter
from looprl.distributed.config import AlgorithmSpec
from looprl.distributed.run_state import DistributedResult, SampleCounts
from looprl.distributed.throughput import THROUGHPUT_HEADER, Throughput
from looprl.distributed.watch import save_spec

__all__ = ["THROUGHPUT_HEADER", "RunMonitor", "open_run_log"]


def open_run_log(name: str, spec: AlgorithmSpec, logdir: str,
                 run_info: dict[str, Any] | None = None) -> Any:
    """A new run directory ``{logdir}/{name}/{env}``: its ``ExperimentLogger`` (``run_info``
    in its ``run.json``), the spec (for ``looprl watch``) and the header of
    ``throughput.csv``."""
    from looprl.experiments.logger import ExperimentLogger

    log = ExperimentLogger(name, spec.env_label, logdir, verbose=True, run_info=run_info)
    save_spec(spec, log.log_dir)
    (Path(log.log_dir) / "throughput.csv").write_text(THROUGHPUT_HEADER + "\n")
    return log


class RunMonitor:
    """Records each poll of the workers' ``stats()`` in ``result`` and ``log`` (the run's
    ``ExperimentLogger``; ``None``: nothing written); ``counts``: the sample counts of the
    ``trainers`` (rank 0 first); ``frames``: the budget (``None``: unknown); ``agents``: a
    multi-agent env's agent names, by index, whose loggers ``agent_logs`` holds."""

    def __init__(self, result: DistributedResult, counts: SampleCounts, log: Any,
                 trainers: list[str], frames: int | None = None, agents: Sequence[str] = (),
                 agent_logs: dict[str, Any] | None = None) -> None:
        self.result, self.counts, self.log, self.trainers = result, counts, log, trainers
        self.frames, self.agents = frames, list(agents)
        #: each agent's ``ExperimentLogger`` (multi-agent runs: ``{run}/{name}.{agent}/{env}``)
        self.agent_logs: dict[str, Any] = {} if agent_logs is None else agent_logs
        self.throughput = Throughput(
            Path(log.log_dir) / "throughput.csv" if log is not None else None, log)
        #: the latest value of each trainer statistic (the dashboard's losses)
        self.last_losses: dict[str, float] = {}
        #: the trainer's latest ``hp/*`` values, read as the dashboard reads an agent's
        self.hyperparameters: dict[str, Hyperparameter] = {}
        #: whether each actor that answered last has stepped its budget and sent every row
        self.actors_finished: dict[str, bool] = {}

    def record(self, stats: dict[str, dict[str, Any]], seconds: float) -> None:
        """Log one poll: ``stats`` by worker name (workers that did not answer left out),
        ``seconds`` since the last poll."""
        trainer = self._trainer_stats(stats)
        actors = {name: s for name, s in stats.items() if name.startswith("actor")}
        self._record_episodes(actors)
        self.actors_finished.update({name: s["finished"] for name, s in actors.items()})
        for name, s in stats.items():
            if name.startswith("eval"):
                self._record_evaluation(s)
        if trainer is not None:
            self._record_trainer(trainer)
        last = self.frames is not None and self.result.frames >= self.frames
        self.throughput.record(stats, {name: stats[name] for name in self.trainers
                                       if name in stats}, seconds, len(self.result.restarts), last)

    def status(self) -> list[str]:
        """The lines under the progress bar: a local run's (losses, ``hp/*``), then the
        throughput."""
        from looprl.experiments.episodes import dashboard

        each = "  ".join(f"{agent} {np.mean(returns[-100:]):.4g}"
                         for agent, returns in self.result.agent_returns.items())
        return [*dashboard(self, self.hyperparameters)(),
                *([f"return(100) by agent: {each}"] if each else []), self.throughput.line()]

    def close(self) -> None:
        """Close the agents' loggers (the run's own is the controller's to close)."""
        for log in self.agent_logs.values():
            log.close()

    def _trainer_stats(self, stats: dict[str, Any]) -> dict[str, Any] | None:
        """Trainer 0's statistics, with every trainer's sample lags and the whole run's
        sample counts."""
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
        """Log the training episodes of one poll in the order they ended, and the actors'
        meta-component values taken at their ends, each at an estimate of the run's frame
        then: one series over all actors, as a local run's over its env copies."""
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
                self.log.episode += 1
                self.log.add_episode_return(ret)
            if each and each[0]:  # (several agents: each one's return)
                self._record_agent_returns(each[0], round(frame_then))
        for frame_then, name, values in points:
            self._record_meta(name, values, round(frame_then))
        if self.log is not None:
            self.log.frame = self.result.frames

    def _record_agent_returns(self, returns: Sequence[float], frame: int) -> None:
        """Each agent's return of a multi-agent episode, in ``result.agent_returns`` and its
        own run directory ``{run}/{name}.{agent}/{env}``."""
        for index, ret in enumerate(returns):
            agent = self.agents[index] if index < len(self.agents) else f"agent{index}"
            self.result.agent_returns.setdefault(agent, []).append(ret)
            if self.log is None:
                continue
            log = self._agent_log(agent)
            log.frame = frame
            log.add_episode_return(ret)
            log.episode += 1

    def _agent_log(self, agent: str) -> Any:
        """Agent ``agent``'s ``ExperimentLogger`` (made at its first use)."""
        if agent not in self.agent_logs:
            from looprl.experiments.logger import ExperimentLogger

            self.agent_logs[agent] = ExperimentLogger(
                f"{self.log.agent_name}.{agent}", self.log.env_name, self.log.log_dir,
                self.log.verbose)
        return self.agent_logs[agent]

    def _record_logged(self, rows: list[tuple[str | None, str, str, float, int]]) -> None:
        """What the trainer's approximations logged (``trainer_worker.LossRecorder``), through
        the same ``add_loss``/``add_schedule`` calls as a local run, at the frame each row
        names (an independent learner's: in its agent's run directory)."""
        for agent, kind, name, value, frame in rows:
            log = self.log if agent is None else self._agent_log(agent)
            before, log.frame = log.frame, frame
            getattr(log, f"add_{kind}")(name, value)
            log.frame = before

    def _record_evaluation(self, stats: dict[str, Any]) -> None:
        """An evaluation actor's returns (``eval/returns/mean``, their mean)."""
        if stats["episodes"]:
            returns = [ret for ret, *_ in stats["episodes"]]
            self.result.eval_returns += returns
            if self.log is not None:
                self.log.add_eval("returns/mean", float(np.mean(returns)))

    def _record_meta(self, name: str, values: dict[str, float], frame: int) -> None:
        """``log/*`` values worker ``name``'s meta components wrote, logged at ``frame`` as a
        local run logs them; the latest kept in ``result.meta[name]``."""
        if not values:
            return
        self.result.meta.setdefault(name, {}).update(values)
        if self.log is not None:
            self.log.frame = frame
            for key, value in values.items():
                self.log.add_log(key[len("log/"):], value)

    def _record_trainer(self, stats: dict[str, Any]) -> None:
        """The trainer's step count, and the mean of each statistic of its latest steps."""
        self.result.train_steps = stats["steps"]
        self._record_meta(self.trainers[0], stats["meta"], self.result.frames)
        self.hyperparameters.update({key: _reading(value)
                                     for key, value in stats.get("hp", {}).items()})
        means = {key: float(np.mean([s[key] for s in stats["stats"] if key in s]))
                 for key in dict.fromkeys(key for step in stats["stats"] for key in step)}
        self.last_losses.update(means)
        if self.log is None:
            return
        self._record_logged(stats.get("logged", []))
        self.log.frame = self.result.frames
        if stats.get("hp"):  # the hp/* trajectory (hyperparameters.csv), as a local run's
            self.log.add_hyperparameters(stats["hp"])
        for key, mean in means.items():
            self.log.add_loss(key, mean)


def _reading(value: Any) -> Hyperparameter:
    """A polled ``hp/*`` value as a read-only ``Hyperparameter`` (for the dashboard)."""

    def refuse(_: Any) -> None:
        raise TypeError("a Ray run's hp/* values are set in its trainer, not the monitor")

    return Hyperparameter(lambda: value, refuse)
