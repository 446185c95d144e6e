"""Tests of ``run_experiment`` and the experiment loops (looprl.experiments)."""

from __future__ import annotations

import contextlib
import csv
import json
import math
import re
from functools import partial
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from helpers import replay_first_episodes
from looprl.agents.shell import seed_units
from looprl.environments import GymEnvironment, GymVectorEnvironment
from looprl.experiments import (
    ExperimentResult,
    ParallelEnvExperiment,
    SingleEnvExperiment,
    TrainingInterrupted,
    make_experiment,
    run_experiment,
)
from looprl.experiments.checkpoint import save_checkpoint
from looprl.experiments.experiment import seed_everything
from looprl.meta import MetaComponent
from looprl.presets.classic_control import a2c, dqn, ppo
from looprl.runners import Runner

HEADER = ["frame", "mean", "std", "max", "min"]
SMALL_DQN = dqn.hyperparameters(
    replay_start_size=200, update_frequency=16, gradient_steps=4, hidden=32
)
# a tiny learning rate keeps CartPole episodes short, so 3000 frames hold >= 100 episodes
SLOW_PPO = ppo.hyperparameters(lr=1e-6)


def _scalar_tags(log_dir: str) -> set[str]:
    accumulator = EventAccumulator(log_dir, size_guidance={"scalars": 0})
    accumulator.Reload()
    return set(accumulator.Tags()["scalars"])


def _returns100(run_dir: Path) -> list[list[float]]:
    with open(run_dir / "returns100.csv", newline="") as file:
        rows = list(csv.reader(file))
    assert rows[0] == HEADER
    return [[float(v) for v in row] for row in rows[1:]]


def test_run_experiment_ppo_writes_logs(tmp_path: Path) -> None:
    results = run_experiment(
        SLOW_PPO, GymEnvironment("CartPole-v1"), 3000,
        logdir=str(tmp_path), quiet=True, test_episodes=5, seed=0,
    )
    assert len(results) == 1
    result = results[0]
    assert isinstance(result, ExperimentResult)
    assert (result.agent, result.env) == ("ppo", "CartPole-v1")
    assert 3000 <= result.frames < 3008  # env steps (a copy that resets takes none)
    assert result.episodes >= 100
    assert len(result.test_returns) == 5
    assert all(1.0 <= r <= 500.0 for r in result.test_returns)
    assert result.test_mean == pytest.approx(sum(result.test_returns) / 5)
    run_dir = Path(result.log_dir)
    assert run_dir == tmp_path / "ppo" / "CartPole-v1"
    rows = _returns100(run_dir)
    assert len(rows) == result.episodes // 100
    for frame, mean, std, high, low in rows:
        assert 0 < frame <= result.frames
        assert low <= mean <= high and std >= 0
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["agent"] == "ppo" and meta["env"] == "CartPole-v1"
    assert list(run_dir.glob("events.out.tfevents.*"))
    test_csv = (run_dir / "test_returns.csv").read_text().split()
    assert test_csv[0] == "return" and len(test_csv) == 6
    tags = _scalar_tags(str(run_dir))
    assert "train/returns/episode" in tags
    assert "loss/policy" in tags and "loss/value" in tags
    assert "summary/test_returns/mean" in tags


def test_run_experiment_dqn_small_budget(tmp_path: Path) -> None:
    (result,) = run_experiment(
        SMALL_DQN, GymEnvironment("CartPole-v1"), 2000,
        logdir=str(tmp_path), quiet=True, test_episodes=3, seed=0,
    )
    assert (result.agent, result.env) == ("dqn", "CartPole-v1")
    assert 2000 <= result.frames < 2000 + 500  # the last episode is finished
    assert len(result.test_returns) == 3
    run_dir = Path(result.log_dir)
    assert len(_returns100(run_dir)) == result.episodes // 100
    assert (run_dir / "run.json").exists()
    assert list(run_dir.glob("events.out.tfevents.*"))
    assert "loss/q" in _scalar_tags(str(run_dir))


def test_a_run_that_never_trained_says_so(tmp_path: Path,
                                         caplog: pytest.LogCaptureFixture) -> None:
    """``replay_start_size`` beyond the budget: the run evaluated and saved the untrained
    agent without a word."""
    for start, warned in ((500, True), (50, False)):
        preset = SMALL_DQN.hyperparameters(replay_start_size=start).env("CartPole-v1").build()
        experiment = make_experiment(preset, GymEnvironment("CartPole-v1"), train_steps=100,
                                     logdir=str(tmp_path), quiet=True, seed=0)
        with caplog.at_level("WARNING"):
            experiment.train(frames=100)
        experiment.close()
        assert ("dqn on CartPole-v1: the agent never trained in its 100 frames"
                in caplog.text) == warned
        caplog.clear()


def test_training_past_the_planned_budget_says_so(tmp_path: Path,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    """PPO's learning rate reaches 0 at ``train_steps``: a later ``train`` (or a runner's
    ``train(n)`` again, its fresh agent planned over the first ``n``) trained nothing more,
    without a word. A run in chunks that add up to the budget, a step past it, says nothing."""
    preset = ppo.hyperparameters(n_envs=4, n_steps=16, hidden=8, epochs=1, minibatch_size=64)
    for chunks, warned in (((30, 64), False), ((64, 128), True), ((200,), True)):
        experiment = make_experiment(preset.env("CartPole-v1").build(),
                                     GymEnvironment("CartPole-v1"), train_steps=64,
                                     logdir=str(tmp_path), quiet=True, seed=0)
        with caplog.at_level("WARNING"):
            for frames in chunks:
                experiment.train(frames=frames)
        experiment.close()
        past = f"Training to {chunks[-1]} frames goes past the 64 its schedules were planned"
        assert (past in caplog.text) == warned, (chunks, caplog.text)
        caplog.clear()
    runner = Runner(preset, "CartPole-v1", seed=0, quiet=True)
    with caplog.at_level("WARNING"):
        runner.train(64)
        assert "goes past" not in caplog.text
        runner.train(64)
    runner.close()
    assert "goes past the 64 its schedules were planned over" in caplog.text


def test_a_run_scope_says_its_warnings_once_and_keeps_the_callers_random_numbers(
        caplog: pytest.LogCaptureFixture) -> None:
    """``run_scope``, the one scope of a run on every runtime (was two decorators on each
    runner's ``run``): a run inside it is part of it (a search's trials), and with ``keep``
    the caller's random numbers go on as if it had drawn none (``keep=False``: as it left
    them, an ``Experiment.train`` call's)."""
    import logging

    from helpers import leaves_global_random_numbers
    from looprl.core.suggest import warn_once
    from looprl.experiments.episodes import run_scope

    log = logging.getLogger("tests.run_scope")

    @run_scope()
    def run() -> None:
        seed_everything(3)
        for _ in range(2):
            with run_scope(keep=False):
                warn_once(log, "a line of its run")

    with caplog.at_level("WARNING"):
        for _ in range(2):
            leaves_global_random_numbers(run)
    assert caplog.messages == 2 * ["a line of its run"]
    with run_scope(keep=False):
        seed_everything(3)
    first = float(torch.rand(()))
    seed_everything(3)
    assert float(torch.rand(())) == first


def test_training_in_chunks_says_each_budget_warning_once(tmp_path: Path,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    """An ``Experiment``'s ``train`` calls are one run: each chunk past the budget that had
    still not trained said both warnings again (each call was a run of its own, and their
    frames differ). ``train(episodes=...)`` past the budget was not warned at all; a loaded
    experiment says them anew (its warnings said are not saved)."""
    import pickle

    preset = SMALL_DQN.hyperparameters(replay_start_size=500).env("CartPole-v1").build()
    experiment = make_experiment(preset, GymEnvironment("CartPole-v1"), train_steps=50,
                                 logdir=str(tmp_path), quiet=True, seed=0)
    with caplog.at_level("WARNING"):
        for frames in (50, 100, 150):
            experiment.train(frames=frames)
        experiment.train(episodes=experiment.episode + 2)
        assert caplog.text.count("the agent never trained in its 50 frames") == 1
        assert caplog.text.count("never trained") == 1
        assert caplog.text.count("Training to 100 frames goes past the 50") == 1
        assert caplog.text.count("goes past") == 1
        caplog.clear()
        pickle.loads(pickle.dumps(experiment)).train(frames=experiment.frame + 50)
        assert "never trained" in caplog.text and "goes past" in caplog.text
    experiment.close()
    for train_steps, warned in ((100, True), (100_000, False)):
        experiment = make_experiment(preset, GymEnvironment("CartPole-v1"),
                                     train_steps=train_steps, logdir=str(tmp_path), quiet=True,
                                     seed=0)
        caplog.clear()
        with caplog.at_level("WARNING"):
            experiment.train(episodes=20)  # (CartPole's episodes: 8 frames at least)
            trained = experiment.frame
            experiment.train(episodes=25)
        assert caplog.text.count("goes past the 100 its schedules") == warned, caplog.text
        assert (f"Training to {trained} frames goes past" in caplog.text) == warned
        experiment.close()


@pytest.mark.parametrize("builder", [
    dqn.hyperparameters(replay_start_size=100, update_frequency=16, gradient_steps=2, hidden=8),
    ppo.hyperparameters(n_envs=4, n_steps=16, hidden=8, epochs=1, minibatch_size=64)],
    ids=["single", "parallel"])
def test_training_in_pieces_is_the_run_at_once(builder: Any, tmp_path: Path) -> None:
    """docs/experiments.md's "Training in pieces": chunks, ``save()``, a checkpoint and an
    evaluation in copies of its own between them leave the run as one ``train`` call makes it
    (a single-environment preset's evaluation given an environment of its own)."""
    def trained(pieces: bool) -> tuple[str, torch.Tensor]:
        env = GymEnvironment("CartPole-v1")
        seed_everything(0)
        experiment = make_experiment(builder.env(env).build(), env, quiet=True, seed=0,
                                     logdir=str(tmp_path / str(pieces)))
        if pieces:
            experiment.train(frames=301)
            experiment.save()
            save_checkpoint(experiment)
            separate = isinstance(experiment, SingleEnvExperiment)
            experiment.test(2, env=GymEnvironment("CartPole-v1") if separate else None)
            experiment.train(episodes=experiment.episode + 2)
        experiment.train(frames=600)
        experiment.close()
        rows = (Path(experiment.logger.log_dir) / "results.csv").read_text()
        return rows, torch.nn.utils.parameters_to_vector(experiment.preset.model.parameters())

    (once, weights), (pieces, pieces_weights) = trained(False), trained(True)
    assert pieces == once and once.count("\n") > 10
    assert torch.equal(pieces_weights, weights)


def test_each_run_says_it_never_trained_and_a_search_says_it_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A sweep's runs in one process (a notebook): the second run that never trained said
    nothing (the warning was once per process). A search's individuals (an ES generation,
    Optuna's trials, in their runner's ``run``) share their budget: one line for the search
    (was: 4 lines for 2 generations of 2)."""
    from looprl.core.suggest import warnings_per_run

    preset = SMALL_DQN.hyperparameters(replay_start_size=500).env("CartPole-v1").build()

    def run() -> None:
        experiment = make_experiment(preset, GymEnvironment("CartPole-v1"), train_steps=50,
                                     logdir=str(tmp_path), quiet=True, seed=0)
        experiment.train(frames=50)
        experiment.close()

    for search, said in ((contextlib.nullcontext, 2), (warnings_per_run, 1)):
        with caplog.at_level("WARNING"), search():
            for _ in range(2):
                run()
        assert caplog.text.count("the agent never trained in its 50 frames") == said
        caplog.clear()


def test_run_experiment_verbose_false_writes_no_losses(tmp_path: Path) -> None:
    (result,) = run_experiment(
        SMALL_DQN, GymEnvironment("CartPole-v1"), 500,
        logdir=str(tmp_path), quiet=True, test_episodes=1, verbose=False,
        seed=0,
    )
    tags = _scalar_tags(result.log_dir)
    assert "train/returns/episode" in tags
    assert not any(tag.startswith("loss/") for tag in tags)


def test_run_experiment_zero_test_episodes(tmp_path: Path) -> None:
    (result,) = run_experiment(
        SMALL_DQN, GymEnvironment("CartPole-v1"), 100,
        logdir=str(tmp_path), quiet=True, test_episodes=0,
    )
    assert result.test_returns == []
    assert not (Path(result.log_dir) / "test_returns.csv").exists()


def test_quiet_prints_nothing(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    run_experiment(
        [SMALL_DQN, SLOW_PPO], GymEnvironment("CartPole-v1"), 300,
        logdir=str(tmp_path), quiet=True, test_episodes=2,
    )
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_not_quiet_draws_progress(tmp_path: Path, capfd: pytest.CaptureFixture[str],
                                  caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO", logger="looprl"):
        run_experiment(
            SMALL_DQN, GymEnvironment("CartPole-v1"), 300,
            logdir=str(tmp_path), quiet=False, test_episodes=1,
        )
    out, err = capfd.readouterr()
    assert "frames" in out + err
    # the summary (ALL printed its test returns unless quiet)
    assert re.search(r"^evaluation: mean return \S+ \+/- 0\.0 over 1 episode$", caplog.text, re.M)


def test_single_env_experiment_train_twice_continues(tmp_path: Path) -> None:
    preset = SMALL_DQN.env(GymEnvironment("CartPole-v1")).build()
    experiment = make_experiment(
        preset, GymEnvironment("CartPole-v1"), logdir=str(tmp_path), quiet=True, seed=1
    )
    assert isinstance(experiment, SingleEnvExperiment)
    experiment.train(frames=300)
    frame, episode = experiment.frame, experiment.episode
    assert frame >= 300 and episode >= 1
    experiment.train(frames=600)
    assert experiment.frame >= 600 and experiment.frame > frame
    assert experiment.episode > episode
    episode = experiment.episode
    experiment.train(episodes=episode + 2)
    assert experiment.episode == episode + 2
    returns = experiment.test(episodes=3)
    assert len(returns) == 3 and experiment.test_returns == returns
    with pytest.raises(ValueError, match="budget"):
        experiment.train()
    experiment.close()


def test_parallel_env_experiment_train_twice_continues(tmp_path: Path) -> None:
    preset = ppo.hyperparameters(n_envs=4, n_steps=16).env(GymEnvironment("CartPole-v1")).build()
    experiment = make_experiment(
        preset, GymEnvironment("CartPole-v1"), logdir=str(tmp_path), quiet=True, train_steps=1000
    )
    assert isinstance(experiment, ParallelEnvExperiment)
    experiment.train(frames=300)
    assert 300 <= experiment.frame < 304
    episodes = experiment.episode
    experiment.train(frames=600)
    assert 600 <= experiment.frame < 604
    assert experiment.episode >= episodes
    experiment.close()


@pytest.mark.parametrize("builder", [SMALL_DQN, SLOW_PPO], ids=["single", "parallel"])
def test_the_run_files_are_whole_once_train_returns(builder: Any, tmp_path: Path) -> None:
    # was: results.csv lacked the episodes since the last hundredth until close() (a
    # notebook reading it after train() saw none of a short run's)
    env = GymEnvironment("CartPole-v1")
    experiment = make_experiment(builder.env(env).build(), env, logdir=str(tmp_path),
                                 quiet=True, seed=0, train_steps=1000)
    experiment.train(frames=1000)
    log_dir = Path(experiment.logger.log_dir)
    rows = list(csv.DictReader(open(log_dir / "results.csv")))
    assert len(rows) == experiment.episode > 0 and experiment.episode % 100 != 0
    assert _scalar_tags(str(log_dir)) >= {"train/returns/episode", "train/returns/frame"}
    experiment.close()


class _CtrlC(MetaComponent):
    """Raises ``KeyboardInterrupt`` once, at the ``at``-th call of ``hook`` (a notebook's
    Ctrl-C while the envs step or the agent acts)."""

    def __init__(self, hook: str, at: int):
        super().__init__()
        self.calls, self.at = 0, at
        getattr(self, f"{hook}_methods").append(self._tick)

    def _tick(self, metrics: dict[str, Any]) -> None:
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt


@pytest.mark.parametrize("builder", [SMALL_DQN, SLOW_PPO], ids=["single", "parallel"])
@pytest.mark.parametrize("hook", ["pre_step", "post_step"])
def test_an_experiment_interrupted_mid_step_trains_on(builder: Any, hook: str,
                                                      tmp_path: Path) -> None:
    env = GymEnvironment("CartPole-v1")
    experiment = make_experiment(builder.env(env).build(), env, logdir=str(tmp_path), quiet=True,
                                 seed=0, train_steps=1000, meta=[_CtrlC(hook, 30)])
    with pytest.raises(KeyboardInterrupt):
        experiment.train(frames=1000)
    experiment.train(frames=1000)  # (the cell run again)
    assert experiment.frame >= 1000
    experiment.close()
    rows = list(csv.DictReader(open(Path(experiment.logger.log_dir) / "results.csv")))
    assert [int(row["episode"]) for row in rows] == list(range(1, experiment.episode + 1))


@pytest.mark.parametrize("episodes", [1, 3, 4, 9])
def test_parallel_env_experiment_test_returns_exactly_episodes(
    tmp_path: Path, episodes: int
) -> None:
    seed_everything(0)
    preset = ppo.hyperparameters(n_envs=4).env(GymEnvironment("CartPole-v1")).build()
    with torch.no_grad():  # large random weights: episodes of varied lengths (the untrained
        for parameter in preset.model.parameters():  # policy always pushes the same way)
            parameter.normal_()
    experiment = ParallelEnvExperiment(
        preset, GymEnvironment("CartPole-v1"), logdir=str(tmp_path), quiet=True, seed=3
    )
    assert experiment.vector_env.n_envs == 4
    returns = experiment.test(episodes=episodes)
    assert len(returns) == episodes
    # copy i runs the first quota[i] episodes of min(n_envs, episodes) copies of the
    # environment reset with seed + 10,000 (copies left without an episode would be stepped
    # for nothing); replayed here with the (greedy, deterministic) test agent
    copies = min(4, episodes)
    quota = [episodes // copies + (i < episodes % copies) for i in range(copies)]
    assert returns == replay_first_episodes(preset.test_agent(), "CartPole-v1", copies, 10_003,
                                            quota)
    experiment.close()


def test_parallel_env_experiment_accepts_vector_env(tmp_path: Path) -> None:
    vector_env = GymVectorEnvironment("CartPole-v1", 2)
    preset = ppo.hyperparameters(n_envs=2, n_steps=8).env(vector_env).build()
    experiment = ParallelEnvExperiment(preset, vector_env, logdir=str(tmp_path), quiet=True)
    assert experiment.vector_env is vector_env
    experiment.train(frames=40)
    assert 40 <= experiment.frame <= 41  # (env steps: a copy that resets takes none)
    state = vector_env.state
    assert len(experiment.test(episodes=3)) == 3
    # evaluation ran in a copy: the training episodes go on where they were
    assert vector_env.state is state and not experiment.runner._restart
    experiment.train(frames=48)
    assert 48 <= experiment.frame <= 49
    with pytest.raises(TypeError):
        ParallelEnvExperiment(preset, "CartPole-v1", logdir=str(tmp_path))


def test_a_vector_env_of_another_width_than_the_presets_n_envs_is_one_line(tmp_path: Path) -> None:
    """A 3-copy vector environment under an ``n_envs=8`` preset trained without a word on
    batches of 8 streams mixed from several segments (older policy versions among them), with
    the learning-rate schedule and minibatches sized for 8 copies; ALL's asserted the widths."""
    vector_env = GymVectorEnvironment(gymnasium.make_vec("CartPole-v1", 3), "CartPole-v1")
    with pytest.raises(ValueError, match=r"^ParallelEnvExperiment: a2c was built for n_envs=8 "
                                         r"copies, got the vector environment CartPole-v1 of 3: "
                                         r"build the preset with \.hyperparameters\(n_envs=3\)"):
        run_experiment(a2c, vector_env, 100, logdir=str(tmp_path), quiet=True)
    vector_env.close()


def test_vector_env_copies_are_independent() -> None:
    env = GymVectorEnvironment("CartPole-v1", 3, seed=1)
    copy = env.copy()
    assert (copy.n_envs, copy.name, copy.action_space) == (3, env.name, env.action_space)
    first = env.reset().observation.clone()
    copy.reset(seed=5)
    copy.step(torch.zeros(3, dtype=torch.long))
    assert torch.equal(env.state.observation, first)
    env.close()
    copy.close()


def _episode_returns(log_dir: str) -> list[float]:
    accumulator = EventAccumulator(log_dir, size_guidance={"scalars": 0})
    accumulator.Reload()
    return [event.value for event in accumulator.Scalars("train/returns/episode")]


def test_seeded_run_experiment_is_reproducible(tmp_path: Path) -> None:
    runs = [
        run_experiment(
            SMALL_DQN, GymEnvironment("CartPole-v1"), 1000,
            logdir=str(tmp_path), quiet=True, test_episodes=3, seed=0,
        )[0]
        for _ in range(2)
    ]
    assert runs[0].log_dir != runs[1].log_dir
    assert _episode_returns(runs[0].log_dir) == _episode_returns(runs[1].log_dir)
    assert runs[0].test_returns == runs[1].test_returns


def test_run_experiment_needs_a_positive_budget(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="^run_experiment's frames must be a positive number"):
        run_experiment(SMALL_DQN, GymEnvironment("CartPole-v1"), 0, logdir=str(tmp_path))
    # (was: "train() needs a budget: frames=... or episodes=...", a function not called)
    with pytest.raises(ValueError, match=r"^run_experiment's frames must be a positive number "
                                         r"of environment steps, a finite one \(math.inf is no "
                                         r"budget\), got inf$"):
        run_experiment(SMALL_DQN, GymEnvironment("CartPole-v1"), math.inf, logdir=str(tmp_path))


def test_a_meta_name_is_one_line_before_anything_is_built(tmp_path: Path, monkeypatch) -> None:
    from looprl.experiments import run

    monkeypatch.setattr(run, "build_preset", None)  # (was a TypeError after the build)
    with pytest.raises(TypeError, match="'rnd' is not a MetaComponent: attach instances"):
        run_experiment(dqn, "CartPole-v1", 100, logdir=str(tmp_path), meta=["rnd"])


class _Steps(MetaComponent):
    """Counts the steps it saw; its ``runs`` list has one count per run it took part in."""

    def __init__(self) -> None:
        super().__init__()
        self.steps, self.runs = 0, []
        self.pre_episode_methods.append(self.start)
        self.post_step_methods.append(self.count)

    def start(self, metrics: dict[str, Any]) -> None:
        if metrics.get("episode", 0) == 0:
            self.runs.append(self.steps)

    def count(self, metrics: dict[str, Any]) -> None:
        self.steps += 1


def test_each_run_of_run_experiment_starts_with_fresh_components(tmp_path: Path) -> None:
    """Several agents or environments: each run after the first gets fresh copies of the
    components, the preset builder's too (was: the first run's went on in the next, an RND
    built for CartPole's observations failed on Acrobot's)."""
    from looprl.meta import RND

    mine, builders = _Steps(), _Steps()
    builder = dqn.hyperparameters(hidden=8).meta(builders)
    run_experiment(builder, ["CartPole-v1", "Acrobot-v1"], 50, logdir=str(tmp_path),
                   quiet=True, test_episodes=0, meta=[mine, RND(seed=0)])
    assert mine.runs == builders.runs == [0]  # the first run's: the given instances
    assert mine.steps == builders.steps == 50


def test_components_an_earlier_call_trained_are_one_warning_and_random_numbers_go_on(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The README's ``meta=[epsilon]`` in a loop over seeds: from the second call on, a warning
    that it goes on from where the first left it (was: silent, the second run greedy from its
    first step); a new one, or a built preset's second run, says nothing. A seeded call leaves
    the caller's global random numbers as they were (was: reseeded, so a sweep drawing each
    trial's values between runs drew the same ones from the second trial on)."""
    from helpers import leaves_global_random_numbers
    from looprl.meta import HPSchedule

    def schedule() -> HPSchedule:
        return HPSchedule("hp/epsilon", "linear", 1.0, 0.0, duration=50, per="step")

    epsilon, preset = schedule(), SMALL_DQN.env(GymEnvironment("CartPole-v1")).build()
    said = []
    for agent, components in ((SMALL_DQN, [epsilon]), (SMALL_DQN, [schedule()]),
                              (preset, [epsilon]), (SMALL_DQN, [epsilon])):
        caplog.clear()
        with caplog.at_level("WARNING", logger="looprl.experiments.run"):
            leaves_global_random_numbers(partial(
                run_experiment, agent, "CartPole-v1", 50, logdir=str(tmp_path), quiet=True,
                test_episodes=1, seed=0, meta=components))
        said.append([r.message for r in caplog.records if "in an earlier run" in r.message])
    assert [len(lines) for lines in said] == [0, 0, 0, 1]
    assert said[-1][0].startswith("run_experiment: the meta components HPSchedule(key=")
    assert epsilon.calls > 0  # (the given instance trains: it can be read after the run)


def test_an_experiment_given_a_builder_says_to_build_it(tmp_path: Path) -> None:
    """A preset builder (not built) is one line, not a traceback from inside the loop."""
    env = GymEnvironment("CartPole-v1")
    for experiment in (SingleEnvExperiment, ParallelEnvExperiment, make_experiment):
        with pytest.raises(TypeError, match=r"takes a built Preset, got a PresetBuilder: build"):
            experiment(ppo, env, logdir=str(tmp_path), quiet=True)
    with pytest.raises(TypeError, match=r"build it first \(a2c\.env\(env\)\.build\(\)\)$"):
        make_experiment(a2c, env, logdir=str(tmp_path), quiet=True)  # (was: "ppo.env(env)")


def test_wrapped_environment_with_integer_observations_trains(tmp_path: Path) -> None:
    import gymnasium

    env = GymEnvironment(gymnasium.wrappers.FlattenObservation(gymnasium.make("FrozenLake-v1")))
    results = run_experiment(
        [SMALL_DQN, ppo.hyperparameters(n_envs=2, n_steps=16, minibatch_size=16)], env, 600,
        logdir=str(tmp_path), quiet=True, test_episodes=2,
    )
    assert [r.frames >= 600 for r in results] == [True, True]
    assert all(len(r.test_returns) == 2 for r in results)


def test_render_needs_an_environment_that_shows_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(ValueError, match="render_mode='human'"):
        run_experiment(SMALL_DQN, GymEnvironment("CartPole-v1"), 100, logdir=str(tmp_path),
                       quiet=True, render=True)
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")  # a window without a screen
    pytest.importorskip("pygame")
    env = GymEnvironment("CartPole-v1", render_mode="human")
    (result,) = run_experiment(SMALL_DQN, env, 100, logdir=str(tmp_path), quiet=True,
                               render=True, test_episodes=0)
    assert result.frames >= 100
    small_ppo = ppo.hyperparameters(n_envs=2, n_steps=16, minibatch_size=16)
    with caplog.at_level("WARNING"):
        run_experiment(small_ppo, GymEnvironment("CartPole-v1"), 64, logdir=str(tmp_path),
                       quiet=True, render=True, test_episodes=0)
    assert "render=True is ignored" in caplog.text


def test_render_in_an_atari_game_is_one_line_that_does_not_offer_gym_environment(
        tmp_path: Path) -> None:
    """Was: "create it with render_mode='human' (GymEnvironment('Pong', ...)", which refuses
    an Atari game."""
    pytest.importorskip("ale_py")
    from looprl.environments import AtariEnvironment
    from looprl.presets import atari

    small = atari.dqn.hyperparameters(replay_start_size=40, replay_buffer_size=400)
    with pytest.raises(ValueError, match=r"^render=True needs an environment that shows itself, "
                       r"and Pong shows no window \(an Atari game\): leave render out, and "
                       "watch the saved preset with looprl watch") as info:
        run_experiment(small, AtariEnvironment("Pong"), 100, logdir=str(tmp_path), quiet=True,
                       render=True)
    assert "GymEnvironment" not in str(info.value)


class CounterEnv(gymnasium.Env):
    """Observation = steps since reset; the episode terminates after ``length`` steps."""

    observation_space = gymnasium.spaces.Box(0.0, 100.0, (1,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)
    length = 7

    def reset(self, seed: int | None = None, options: Any = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return np.array([0.0], np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        return np.array([self.t], np.float32), 1.0, self.t >= self.length, False, {}


class UncopyableVectorEnv(GymVectorEnvironment):
    def copy(self) -> GymVectorEnvironment:
        raise NotImplementedError


def _assert_only_real_transitions(observations, dones) -> None:
    """Out of a state that is not done, the next observation is the env's successor (+1)."""
    for prev, nxt, prev_done in zip(observations[:-1], observations[1:], dones[:-1]):
        real = ~prev_done
        torch.testing.assert_close(nxt[real], prev[real] + 1)


def test_evaluating_in_the_training_envs_feeds_no_transition_that_did_not_happen(
    tmp_path: Path,
) -> None:
    """An uncopyable vector env is evaluated in place: the cut episodes end as truncated."""
    env = UncopyableVectorEnv(CounterEnv, 2)
    preset = ppo.hyperparameters(n_envs=2, n_steps=64, hidden=8).env(env).build()
    experiment = ParallelEnvExperiment(preset, env, logdir=str(tmp_path), quiet=True, seed=0)
    experiment.train(frames=2 * 10)
    cut = int(experiment.runner.buffer.t[0]) - 1  # the row of the latest observations
    assert len(experiment.test(episodes=2)) == 2
    assert experiment.frame == 2 * 10  # the episodes were cut there: no step taken
    experiment.train(frames=2 * 30)
    runner = experiment.runner  # below n_steps + 1 rows: nothing trained yet
    t = int(runner.buffer.t[0])
    rows = runner.buffer.rows[:t].to_torch()
    observations = rows.obs
    # out of each state that is not done, the next stored state is the env's successor
    _assert_only_real_transitions(observations, rows.done | rows.truncated)
    # the cut observations end in a truncation (bootstrapped from); the next row starts over
    assert rows.truncated[cut].all() and not rows.done[cut].any()
    assert (observations[cut + 1] == 0).all()
    resets = int((rows.done | rows.truncated)[cut + 1:t - 1, 0].sum())  # steps of no frame
    assert t == cut + 2 + 20 + resets
    experiment.close()


@pytest.mark.parametrize("name", ["ppo", "vsarsa"])
def test_the_collector_trains_as_the_agents_own_act_loop(name: str, tmp_path: Path) -> None:
    """``ParallelEnvExperiment`` runs the collector (``EnvRunner``) over the vector env and
    hands its segments to the agent: the parameters end where a loop of the agent's own
    ``act`` (seed 003) takes them, over several updates and episode ends. Bit for bit on an
    AVX2 CPU; on AVX512 the two paths' arrays (NumPy's and torch's) sit at other alignments,
    and the matrix kernels' results move by 1 ulp (seen: 6e-8 after one update, 5e-6 after
    100 frames), so the check allows 1e-4."""
    from looprl.presets.classic_control import vsarsa

    builder = {"ppo": ppo.hyperparameters(n_envs=4, n_steps=8, minibatch_size=16, hidden=16),
               "vsarsa": vsarsa.hyperparameters(n_envs=4, hidden=16)}[name]
    env = GymEnvironment("CartPole-v1")

    def trained(loop: str) -> list[torch.Tensor]:
        seed_everything(0)
        preset = builder.env(env).device("cpu").build()
        if loop == "collector":
            experiment = ParallelEnvExperiment(preset, env, logdir=str(tmp_path), quiet=True,
                                               seed=0, verbose=False)
            experiment.train(frames=4 * 100)
            assert experiment.episode > 4  # episodes ended (and reset) on the way
        else:
            seed_everything(0)
            agent, vector = preset.agent(), env.duplicate(4)
            seed_units(0, agent.unwrapped.actor, agent.unwrapped.learner)  # (as a seeded run)
            state, frames = vector.reset(seed=0), 0
            while frames < 4 * 100:  # env steps: a copy that resets takes none
                frames += int((~state.done).sum())
                state = vector.step(agent.act(state))
            agent.act(state)
        return [p.detach().clone() for p in preset.model.parameters()]

    collector, act = trained("collector"), trained("act")
    seed_everything(0)
    untrained = list(builder.env(env).device("cpu").build().model.parameters())
    assert not all(torch.equal(a, b) for a, b in zip(collector, untrained))  # it trained
    for a, b in zip(collector, act):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-4)


def test_run_experiment_interrupted_keeps_the_runs_it_completed(tmp_path: Path) -> None:
    """Ctrl-C in the second of two runs: the first one's result was lost."""
    with pytest.raises(TrainingInterrupted) as stop:
        run_experiment([SMALL_DQN, SMALL_DQN.meta(_CtrlC("post_step", 100))], "CartPole-v1",
                       200, logdir=str(tmp_path), quiet=True, test_episodes=2)
    (first,) = stop.value.results
    assert str(TrainingInterrupted(None, 5)) == (  # (a run without a directory: no "in None")
        "Training interrupted at frame 5; no logs (logdir=None)")
    assert first.frames >= 200 and len(first.test_returns) == 2
    assert stop.value.log_dir != first.log_dir
    assert (Path(stop.value.log_dir) / "preset.pt").is_file()  # (as trained so far: was only
    # looprl train's to save, and without the normalizers' statistics beside it)


def test_an_interrupted_test_closes_its_environment_copies(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    closed = []

    def close(self: Any) -> None:  # (one that fails too: the interruption is what is reported)
        closed.append(self)
        raise RuntimeError("boom in close")

    monkeypatch.setattr(GymVectorEnvironment, "close", close)
    env = GymEnvironment("CartPole-v1")
    experiment = make_experiment(SMALL_DQN.env(env).build(), env, logdir=str(tmp_path),
                                 quiet=True, seed=0)

    def interrupted(*_: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(experiment, "_acts", interrupted)
    with pytest.raises(KeyboardInterrupt):
        experiment.test(episodes=2, env=GymEnvironment("CartPole-v1"))
    assert len(closed) == 1  # (the evaluation's copies)


@pytest.mark.parametrize("env", ["CartPole-v1", GymVectorEnvironment("CartPole-v1", 2)])
def test_test_in_an_id_or_a_vector_environment_is_one_line(tmp_path: Path, env: Any) -> None:
    """``test(env=...)`` of an id or a vector environment was an AttributeError ('duplicate')."""
    cartpole = GymEnvironment("CartPole-v1")
    experiment = make_experiment(SMALL_DQN.env(cartpole).build(), cartpole,
                                 logdir=str(tmp_path), quiet=True, seed=0)
    with pytest.raises(TypeError, match=r"^SingleEnvExperiment.test's env is one looprl "
                                        r"environment \(Environment\).*e.g. GymEnvironment"):
        experiment.test(episodes=1, env=env)


@pytest.mark.parametrize("vector", [False, True])
def test_a_bare_gymnasium_env_is_one_line_naming_the_looprl_wrapper(tmp_path: Path,
                                                                    vector: bool) -> None:
    """A ``gymnasium.Env`` (or a vector env) where a looprl one goes was an AttributeError
    ('name') or a line offering ParallelEnvExperiment; it names the wrapper to use."""
    env = (gymnasium.vector.SyncVectorEnv([lambda: gymnasium.make("CartPole-v1")] * 2)
           if vector else gymnasium.make("CartPole-v1"))
    wrapper = r"GymVectorEnvironment\(vec_env, name\)$" if vector else r"GymEnvironment\(env\)$"
    built = SMALL_DQN.env(GymEnvironment("CartPole-v1")).build()
    calls = {"run_experiment": lambda: run_experiment(SMALL_DQN, env, 10, logdir=str(tmp_path)),
             "SingleEnvExperiment": lambda: SingleEnvExperiment(built, env, quiet=True),
             "ppo.env()": lambda: ppo.env(env).build()}
    for where, call in calls.items():
        with pytest.raises(TypeError, match=rf"^{re.escape(where)} takes a looprl "
                                            rf"environment, .*{wrapper}"):
            call()


def test_a_single_environment_preset_given_a_vector_env_is_told_to_give_one_env(
        tmp_path: Path) -> None:
    """Was "give a VectorEnvironment to ParallelEnvExperiment", which refuses DQN in turn."""
    vector_env = GymVectorEnvironment("CartPole-v1", 2)
    with pytest.raises(TypeError, match=r"^SingleEnvExperiment trains in one Environment, got "
                                        r"the vector environment CartPole-v1: give it one "
                                        r"\(e.g. GymEnvironment\(id\)\); a VectorEnvironment "
                                        r"trains a parallel preset"):
        run_experiment(SMALL_DQN, vector_env, 10, logdir=str(tmp_path))
