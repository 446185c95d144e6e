"""Tests of ``looprl.experiments.logger.ExperimentLogger``."""

from __future__ import annotations

import csv
import gc
import json
import math
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from looprl.core.logger import Logger
from looprl.experiments.logger import ExperimentLogger


def _scalars(log_dir: str) -> dict[str, list[tuple[int, float]]]:
    """Read every scalar of a run directory as ``{tag: [(step, value), ...]}``."""
    acc = EventAccumulator(log_dir, size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def test_is_a_logger(tmp_path: Path) -> None:
    with ExperimentLogger("dqn", "CartPole-v1", logdir=str(tmp_path)) as logger:
        assert isinstance(logger, Logger)
        assert logger.verbose is True
        assert (logger.frame, logger.episode) == (0, 0)


def test_run_dir_naming_with_collisions(tmp_path: Path) -> None:
    loggers = [ExperimentLogger("dqn", "CartPole-v1", logdir=str(tmp_path)) for _ in range(3)]
    try:
        names = [Path(lg.log_dir) for lg in loggers]
        assert names == [
            tmp_path / "dqn" / "CartPole-v1",
            tmp_path / "dqn" / "CartPole-v1_2",
            tmp_path / "dqn" / "CartPole-v1_3",
        ]
        other = ExperimentLogger("ppo", "CartPole-v1", logdir=str(tmp_path))
        assert Path(other.log_dir) == tmp_path / "ppo" / "CartPole-v1"
        other.close()
    finally:
        for lg in loggers:
            lg.close()


def test_existing_empty_dir_is_reused(tmp_path: Path) -> None:
    (tmp_path / "a2c" / "Pong").mkdir(parents=True)
    with ExperimentLogger("a2c", "Pong", logdir=str(tmp_path)) as logger:
        assert Path(logger.log_dir) == tmp_path / "a2c" / "Pong"


def test_two_runs_starting_together_claim_two_directories(tmp_path: Path) -> None:
    from looprl.experiments.run_files import claim_run_dir
    # (the second claim comes before the first run wrote anything: its directory is empty)
    first, second = (claim_run_dir(tmp_path / "dqn", "CartPole-v1") for _ in range(2))
    assert (first.name, second.name) == ("CartPole-v1", "CartPole-v1_2")


def test_slashes_in_names_stay_one_directory(tmp_path: Path) -> None:
    with ExperimentLogger("dqn", "ALE/Pong-v5", logdir=str(tmp_path)) as logger:
        assert Path(logger.log_dir) == tmp_path / "dqn" / "ALE_Pong-v5"
        meta = json.loads((Path(logger.log_dir) / "run.json").read_text())
    assert meta["env"] == "ALE/Pong-v5"


def test_a_tilde_logdir_is_the_home_directory_and_a_chdir_moves_no_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    with ExperimentLogger("dqn", "CartPole-v1", logdir="~/runs") as logger:
        monkeypatch.chdir(tmp_path / "home")  # (a relative run directory would move here)
        logger.add_episode_return(10.0)
    assert not (tmp_path / "~").exists()
    results = tmp_path / "home" / "runs" / "dqn" / "CartPole-v1" / "results.csv"
    assert Path(logger.log_dir) == results.parent
    assert results.read_text().splitlines()[1:] == ["0,1,10.0"]


def test_run_json_contents(tmp_path: Path) -> None:
    before = datetime.now().astimezone().replace(microsecond=0)
    with ExperimentLogger("dqn", "CartPole-v1", logdir=str(tmp_path)) as logger:
        meta = json.loads((Path(logger.log_dir) / "run.json").read_text())
    assert set(meta) == {"agent", "env", "started"}
    assert (meta["agent"], meta["env"]) == ("dqn", "CartPole-v1")
    started = datetime.fromisoformat(meta["started"])
    assert abs((started - before).total_seconds()) < 60


def test_returns100_csv_after_250_episodes(tmp_path: Path) -> None:
    logger = ExperimentLogger("dqn", "CartPole-v1", logdir=str(tmp_path))
    csv_path = Path(logger.log_dir) / "returns100.csv"
    assert csv_path.read_text() == "frame,mean,std,max,min\n"
    returns = [float((i * 7) % 23) for i in range(250)]
    for i, ret in enumerate(returns):
        logger.frame, logger.episode = 10 * (i + 1), i + 1
        logger.add_episode_return(ret)
        if i == 99:  # flushed right away, before close()
            assert len(csv_path.read_text().splitlines()) == 2
    assert logger.mean_return100 == pytest.approx(np.mean(returns[150:]))
    logger.close()

    with open(csv_path, newline="") as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == 2
    for row, window, frame in zip(rows, (returns[:100], returns[100:200]), (1000, 2000)):
        assert int(row["frame"]) == frame
        assert float(row["mean"]) == pytest.approx(np.mean(window))
        assert float(row["std"]) == pytest.approx(np.std(window))
        assert float(row["max"]) == max(window)
        assert float(row["min"]) == min(window)

    scalars = _scalars(logger.log_dir)
    assert len(scalars["train/returns/episode"]) == 250
    assert scalars["train/returns/episode"][-1] == (250, returns[-1])
    assert scalars["train/returns/frame"][-1] == (2500, returns[-1])
    assert [s for s, _ in scalars["summary/returns100/mean"]] == [1000, 2000]


def test_mean_return100_is_nan_when_empty(tmp_path: Path) -> None:
    with ExperimentLogger("dqn", "CartPole-v1", logdir=str(tmp_path)) as logger:
        assert math.isnan(logger.mean_return100)
        logger.add_episode_return(torch.tensor(3.0))
        logger.add_episode_return(5)
        assert logger.mean_return100 == 4.0


def test_verbose_false_writes_no_loss_events(tmp_path: Path) -> None:
    logger = ExperimentLogger("dqn", "CartPole-v1", logdir=str(tmp_path), verbose=False)
    for frame in range(20):
        logger.frame = frame
        logger.add_loss("q", torch.tensor(1.0, requires_grad=True) * 2)
        logger.add_info("grad_norm", 0.5)
        logger.add_schedule("epsilon", 0.1)
    logger.add_eval("returns/test", 1.0)
    logger.close()
    tags = set(_scalars(logger.log_dir))
    assert tags == {"eval/returns/test"}


def test_verbose_writes_losses_with_frame_and_episode_steps(tmp_path: Path) -> None:
    logger = ExperimentLogger("dqn", "CartPole-v1", logdir=str(tmp_path))
    logger.frame, logger.episode = 7, 2
    logger.add_loss("q", torch.tensor(0.25))
    logger.add_info("grad_norm", np.float32(1.5), step="episode")
    logger.add_schedule("epsilon", 0.5)
    logger.close()
    scalars = _scalars(logger.log_dir)
    assert scalars["loss/q"] == [(7, 0.25)]
    assert scalars["info/grad_norm"] == [(2, 1.5)]
    assert scalars["schedule/epsilon"] == [(7, 0.5)]


def test_loss_every_counts_calls_per_name(tmp_path: Path) -> None:
    logger = ExperimentLogger("dqn", "CartPole-v1", logdir=str(tmp_path), loss_every=3)
    for frame in range(10):
        logger.frame = frame
        logger.add_loss("q", float(frame))
        if frame % 2 == 0:
            logger.add_loss("pi", float(frame))
    logger.close()
    scalars = _scalars(logger.log_dir)
    assert [s for s, _ in scalars["loss/q"]] == [0, 3, 6, 9]
    assert [s for s, _ in scalars["loss/pi"]] == [0, 6]


def test_add_summary_and_test_returns(tmp_path: Path) -> None:
    logger = ExperimentLogger("dqn", "CartPole-v1", logdir=str(tmp_path))
    logger.frame = 42
    logger.add_summary("batch", torch.tensor([1.0, 2.0, 3.0]))
    logger.add_summary("empty", [])
    logger.add_test_returns([10.0, 20.0, 30.0, 40.0])
    logger.close()
    lines = (Path(logger.log_dir) / "test_returns.csv").read_text().splitlines()
    assert lines == ["return", "10.0", "20.0", "30.0", "40.0"]
    scalars = _scalars(logger.log_dir)
    assert scalars["summary/batch/mean"] == [(42, 2.0)]
    assert scalars["summary/batch/max"] == [(42, 3.0)]
    assert scalars["summary/test_returns/mean"] == [(42, 25.0)]
    assert scalars["summary/test_returns/std"][0][1] == pytest.approx(np.std([10, 20, 30, 40]))
    assert scalars["summary/test_returns/min"] == [(42, 10.0)]
    assert not any(tag.startswith("summary/empty") for tag in scalars)


def test_alls_add_hparams_writes_the_metrics(tmp_path: Path) -> None:
    """(was: ``logger.add_hparams(...)``, part of ALL's ``Logger`` interface that ALL's
    experiments call after testing, was an ``AttributeError``)"""
    Logger().add_hparams({"lr": 1e-3}, {"test/returns/mean": 1.0})
    logger = ExperimentLogger("dqn", "CartPole-v1", logdir=str(tmp_path))
    logger.frame = 42
    logger.add_hparams({"lr": 1e-3, "model": object()}, {"test/returns/mean": np.float64(5.0)})
    logger.close()
    assert _scalars(logger.log_dir)["test/returns/mean"] == [(42, 5.0)]


def test_training_and_evaluation_returns_have_their_own_tags(tmp_path: Path) -> None:
    logger = ExperimentLogger("dqn", "CartPole-v1", logdir=str(tmp_path))
    logger.frame, logger.episode = 10, 1
    logger.add_episode_return(5.0)
    logger.add_test_returns([10.0, 30.0])
    logger.close()
    returns = {tag: values for tag, values in _scalars(logger.log_dir).items()
               if "/returns/" in tag}
    assert returns == {"train/returns/episode": [(1, 5.0)], "train/returns/frame": [(10, 5.0)],
                       "eval/returns/mean": [(10, 20.0)]}


def test_invalid_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="loss_every"):
        ExperimentLogger("dqn", "CartPole-v1", logdir=str(tmp_path), loss_every=0)
    with ExperimentLogger("dqn", "CartPole-v1", logdir=str(tmp_path)) as logger:
        with pytest.raises(ValueError, match="step"):
            logger.add_eval("x", 1.0, step="epoch")
        with pytest.raises(ValueError, match="a whole number >= 0, got -1"):
            logger.add_eval("x", 1.0, step=-1)


def test_alls_whole_number_step(tmp_path: Path) -> None:
    """ALL's loggers take a number as the step (was: a ValueError)."""
    logger = ExperimentLogger("dqn", "CartPole-v1", logdir=str(tmp_path))
    logger.add_eval("returns", 2.0, step=1000)
    logger.close()
    assert _scalars(logger.log_dir)["eval/returns"] == [(1000, 2.0)]


def test_alls_experiment_first_argument_is_one_line(tmp_path: Path) -> None:
    """(was: ALL's ``ExperimentLogger(experiment, agent_name, env_name)`` silently logged into
    ``{env_name}/{experiment!r}/{agent_name}`` under the working directory)"""
    with pytest.raises(TypeError, match="takes the names as text, got agent_name="):
        ExperimentLogger(object(), "dqn", str(tmp_path))
    assert list(tmp_path.iterdir()) == []


def _returns_rows(log_dir: str) -> list[dict[str, str]]:
    with open(Path(log_dir) / "results.csv", newline="") as file:
        return list(csv.DictReader(file))


def _expected_rows(returns: list[float], frames: list[int]) -> list[dict[str, str]]:
    return [
        {"frame": str(f), "episode": str(i + 1), "return": repr(r)}
        for i, (f, r) in enumerate(zip(frames, returns))
    ]


def test_returns_csv_buffered_every_100_and_written_by_close(tmp_path: Path) -> None:
    logger = ExperimentLogger("dqn", "CartPole-v1", logdir=str(tmp_path))
    path = Path(logger.log_dir) / "results.csv"
    assert path.read_text() == "frame,episode,return\n"
    returns = [float(i % 7) - 0.5 for i in range(150)]
    frames = [13 * (i + 1) for i in range(150)]
    for ret, frame in zip(returns, frames):
        logger.frame = frame
        logger.add_episode_return(ret)
        logger.episode += 1  # the experiment loop counts the episode after logging it
    expected = _expected_rows(returns, frames)
    assert _returns_rows(logger.log_dir) == expected[:100]  # 50 rows still buffered
    logger.close()
    assert _returns_rows(logger.log_dir) == expected
    logger.close()  # idempotent: nothing written twice
    assert _returns_rows(logger.log_dir) == expected
    assert path.read_text().count("\n") == 151


def test_returns_csv_written_when_logger_is_garbage_collected(tmp_path: Path) -> None:
    logger = ExperimentLogger("dqn", "CartPole-v1", logdir=str(tmp_path))
    log_dir = logger.log_dir
    for i in range(30):
        logger.frame = i
        logger.add_episode_return(float(i))
    assert _returns_rows(log_dir) == []
    del logger
    gc.collect()
    assert _returns_rows(log_dir) == _expected_rows([float(i) for i in range(30)], list(range(30)))
    assert _scalars(log_dir)["train/returns/frame"] == [(i, float(i)) for i in range(30)]


def test_unclosed_loggers_write_their_rows_at_exit_or_say_why_they_cannot(
        tmp_path: Path) -> None:
    """At a normal exit an unclosed logger writes what it buffers; one whose run directory is
    gone says so in warning lines, not a traceback from the finalizer (one process for both)."""
    script = (
        "import shutil, sys\n"
        "from looprl.experiments.logger import ExperimentLogger\n"
        "kept = ExperimentLogger('ppo', 'CartPole-v1', logdir=sys.argv[1])\n"
        "for i in range(120):\n"
        "    kept.frame = 2 * i\n"
        "    kept.add_episode_return(i / 4)\n"
        "gone = ExperimentLogger('ppo', 'CartPole-v1', logdir=sys.argv[2])\n"
        "for i in range(20):\n"
        "    gone.frame = i\n"
        "    gone.add_episode_return(float(i))\n"
        "shutil.rmtree(sys.argv[2])\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "kept"),
                           str(tmp_path / "gone")], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    rows = _returns_rows(str(tmp_path / "kept" / "ppo" / "CartPole-v1"))
    assert rows == _expected_rows([i / 4 for i in range(120)], [2 * i for i in range(120)])
    scalars = _scalars(str(tmp_path / "kept" / "ppo" / "CartPole-v1"))["train/returns/frame"]
    assert scalars == [(2 * i, i / 4) for i in range(120)]
    assert "could not write 20 buffered rows" in done.stderr
    assert "could not write 40 buffered TensorBoard values" in done.stderr  # (2 tags each)
    assert "could not write 120" not in done.stderr  # (the kept logger's were written)
    assert "Traceback" not in done.stderr, done.stderr


def test_a_run_directory_removed_while_the_run_writes_is_one_line(tmp_path: Path,
                                                                  monkeypatch) -> None:
    """A run directory removed under a running logger: one line saying so at its next write
    (scalars or rows), once (``close`` then has nothing to write), not ``[Errno 2]`` of one of
    its files, nor a traceback from the event writer's thread."""
    import shutil

    thread_errors: list[object] = []
    monkeypatch.setattr(threading, "excepthook", thread_errors.append)
    monkeypatch.setattr("looprl.experiments.logger._SCALAR_SECONDS", 0.0)  # (each hands over)
    logger = ExperimentLogger("dqn", "CartPole-v1", logdir=str(tmp_path))
    logger.add_episode_return(1.0)
    logger.flush()
    shutil.rmtree(logger.log_dir)
    removed = f"run directory {logger.log_dir} was removed while the run wrote to it"
    with pytest.raises(FileNotFoundError, match=removed):
        logger.add_episode_return(2.0)
    logger.close()
    assert not thread_errors


def test_scalars_reach_the_event_file_in_batches_with_their_own_times(tmp_path: Path,
                                                                      monkeypatch) -> None:
    """TensorBoard scalars wait in the logger (one hand-over to the writer's thread per batch,
    not per episode) and keep the wall-clock time at which they were logged."""
    monkeypatch.setattr("looprl.experiments.logger._SCALAR_SECONDS", 600.0)  # (a loaded CI)
    logger = ExperimentLogger("ppo", "CartPole-v1", logdir=str(tmp_path))
    before = time.time()
    for i in range(10):
        logger.frame = i
        logger.add_eval("score", float(i))
    after = time.time()
    logger._writer.flush()
    assert "eval/score" not in _scalars(logger.log_dir)  # still in the logger
    time.sleep(0.05)
    logger.flush()
    events = EventAccumulator(logger.log_dir).Reload().Scalars("eval/score")
    assert [(e.step, e.value) for e in events] == [(i, float(i)) for i in range(10)]
    assert all(before <= e.wall_time <= after for e in events)  # not the flush's time
    for i in range(10, 10 + 256):  # a full batch goes without a flush
        logger.frame = i
        logger.add_eval("score", float(i))
    logger._writer.flush()
    assert len(_scalars(logger.log_dir)["eval/score"]) == 10 + 256
    logger.close()


def test_verbose_experiments_write_the_losses_and_the_hp_trajectory(tmp_path) -> None:
    from looprl.environments import GymEnvironment
    from looprl.experiments import make_experiment
    from looprl.experiments.experiment import seed_everything
    from looprl.presets.classic_control import dqn

    seed_everything(0)
    env = GymEnvironment("CartPole-v1")
    builder = dqn.hyperparameters(hidden=8, replay_start_size=100, update_frequency=4,
                                  gradient_steps=1, final_exploration_step=1000)
    for verbose in (True, False):
        experiment = make_experiment(builder.env(env).device("cpu").build(), env,
                                     logdir=str(tmp_path / str(verbose)), quiet=True,
                                     verbose=verbose)
        experiment.train(frames=600)
        experiment.close()
        run_dir = Path(experiment.logger.log_dir)
        if not verbose:
            assert not (run_dir / "losses.csv").exists()
            assert not (run_dir / "hyperparameters.csv").exists()
            continue
        losses = (run_dir / "losses.csv").read_text().splitlines()
        # the Q-network logs every 100th update (log_every): here updates 1 and 101
        assert losses[0] == "frame,name,value" and len(losses) == 3
        assert [line.split(",")[1] for line in losses[1:]] == ["q", "q"]
        table = (run_dir / "hyperparameters.csv").read_text().splitlines()
        header = table[0].split(",")
        assert header[0] == "frame" and "hp/epsilon" in header and "hp/lr" in header
        epsilons = [float(row.split(",")[header.index("hp/epsilon")]) for row in table[1:]]
        assert len(epsilons) == experiment.episode  # one row per training episode
        assert epsilons == sorted(epsilons, reverse=True) and epsilons[-1] < 0.6


def test_wandb_mirrors_every_scalar_in_offline_mode(tmp_path, monkeypatch) -> None:
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_SILENT", "true")
    logger = ExperimentLogger("ppo", "CartPole-v1", str(tmp_path), wandb={"mode": "offline"})
    logger.frame = 10
    logger.add_loss("q", 0.5)
    logger.frame = 20
    logger.add_episode_return(12.0)
    summary = dict(logger._wandb.summary)
    assert summary["loss/q"] == 0.5 and summary["train/returns/episode"] == 12.0
    assert summary["frame"] == 20  # the x-axis of every metric
    logger.close()
    assert list((Path(logger.log_dir) / "wandb").glob("offline-run-*/run-*.wandb"))


def test_a_write_after_close_goes_on_in_the_same_wandb_run(tmp_path, monkeypatch) -> None:
    """As TensorBoard's files do: a Ray run closes its logs when it ends, then its final
    evaluation writes (was: the evaluation's scalars never reached W&B)."""
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_SILENT", "true")
    logger = ExperimentLogger("ppo", "CartPole-v1", str(tmp_path), wandb={"mode": "offline"})
    run_id = logger._wandb.id
    logger.add_episode_return(12.0)
    logger.close()
    logger.frame = 30
    logger.add_test_returns([7.0, 9.0])
    assert logger._wandb.id == run_id and dict(logger._wandb.summary)["eval/returns/mean"] == 8.0
    logger.close()
    records = list((Path(logger.log_dir) / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(records) == 2 and {path.stem for path in records} == {f"run-{run_id}"}


def test_summaries_reach_wandb_and_episode_summaries_are_episode_tags(tmp_path) -> None:
    class Run:  # (a W&B run that records what it is given)
        logged: list[dict] = []
        id = "run0"

        def log(self, values: dict) -> None:
            self.logged.append(values)

        def finish(self) -> None:
            pass

    logger = ExperimentLogger("ppo", "CartPole-v1", str(tmp_path))
    logger._wandb = run = Run()
    logger.frame = 30
    logger.add_test_returns([1.0, 3.0])
    logger.add_summary("batch", [2.0], step="episode")
    logger.close()
    keys = {key for values in run.logged for key in values}
    assert {"summary/test_returns/mean", "summary/test_returns/std"} <= keys
    assert "summary/batch/mean" in logger._episode_tags  # (kept by episode on resume)


def _died_and_resumed(tmp_path: Path, name: str, values: tuple[float, float, float],
                      resumed_frame: int = 10) -> Path:
    """A logger that logged ``name`` at frames 10 (checkpointed) and 20 (then died), resumed
    from the checkpoint at ``resumed_frame`` with its third value; its log directory."""
    import pickle

    logger = ExperimentLogger("ppo", "CartPole-v1", logdir=str(tmp_path))
    logger.frame = 10
    logger.add_log(name, values[0])
    logger.flush()
    saved = pickle.dumps(logger)  # as a checkpoint at frame 10
    logger.frame = 20
    logger.add_log(name, values[1])  # the run went on, then died
    logger.close()
    resumed = pickle.loads(saved)
    resumed.frame = resumed_frame
    # (an events file is named by its second, then by a per-process count compared as text: in
    # the same second the resumed file's count 10 would sort before the first file's 9)
    time.sleep(1.0 - time.time() % 1.0)
    resumed.add_log(name, values[2])  # (its first write after the checkpoint cuts)
    resumed.close()
    return Path(logger.log_dir)


def test_log_rows_after_a_checkpoint_are_dropped_on_resume(tmp_path: Path) -> None:
    rows = (_died_and_resumed(tmp_path, "my_bonus", (0.5, 0.7, 0.6)) / "log.csv"
            ).read_text().splitlines()
    assert rows == ["frame,name,value", "10,my_bonus,0.5", "10,my_bonus,0.6"]


def test_a_log_name_with_a_comma_a_quote_or_a_line_break_is_one_csv_cell(tmp_path: Path) -> None:
    """(was: ``log/a,b`` wrote a row of four columns; a line break, two rows)"""
    import csv

    logger = ExperimentLogger("ppo", "CartPole-v1", logdir=str(tmp_path))
    for name in ("a,b", 'say "hi"', "two\nlines"):
        logger.add_log(name, 1.0)
    logger.close()
    with open(Path(logger.log_dir) / "log.csv", newline="") as file:
        rows = list(csv.reader(file))
    assert rows == [["frame", "name", "value"], ["0", "a,b", "1.0"], ["0", 'say "hi"', "1.0"],
                    ["0", "two lines", "1.0"]]


def test_a_resumed_runs_scalars_read_back_whole_in_wall_clock_order(tmp_path: Path) -> None:
    """The events cut back to the checkpoint keep their scalars as written, wall-clock times
    included (was: rewritten as TensorBoard's tensors, which ``EventAccumulator.Scalars``
    skips: the values before the resume were gone from it); those after it come later."""
    log_dir = _died_and_resumed(tmp_path, "bonus", (0.5, 0.75, 0.25), resumed_frame=20)
    acc = EventAccumulator(str(log_dir), size_guidance={"scalars": 0}).Reload()
    events = acc.Scalars("log/bonus")
    assert [(e.step, e.value) for e in events] == [(10, 0.5), (20, 0.25)]
    assert events[0].wall_time <= events[1].wall_time


def test_hand_edited_rows_are_cut_back_to_the_checkpoint_by_their_episode_and_frame(
        tmp_path: Path) -> None:
    """A row deleted from ``results.csv`` keeps none written after the checkpoint (it is cut by
    its episode, not its line), and a blank or hand-written line is no damaged checkpoint."""
    import pickle

    logger = ExperimentLogger("ppo", "CartPole-v1", logdir=str(tmp_path))
    for episode in range(1, 5):
        logger.frame = 10 * episode
        logger.add_episode_return(float(episode))
        logger.add_log("bonus", 0.5)
    logger.flush()
    saved = pickle.dumps(logger)  # as a checkpoint at frame 40, after 4 episodes
    logger.frame = 50
    logger.add_episode_return(5.0)  # the run went on, then died
    logger.close()
    run_dir = Path(logger.log_dir)
    results = (run_dir / "results.csv").read_text().splitlines(keepends=True)
    (run_dir / "results.csv").write_text("".join(results[:2] + results[3:]) + "\n")
    with open(run_dir / "log.csv", "a") as file:
        file.write("\nnote,by,hand\n")
    resumed = pickle.loads(saved)
    resumed.add_log("bonus", 0.5)  # (its first write after the checkpoint cuts)
    resumed.close()
    assert (run_dir / "results.csv").read_text().splitlines() == [
        "frame,episode,return", "10,1,1.0", "30,3,3.0", "40,4,4.0"]
    assert len((run_dir / "log.csv").read_text().splitlines()) == 1 + 4 + 1


def test_a_local_dqn_run_logs_its_trainers_statistics(tmp_path: Path) -> None:
    """The learner of a DQN-family preset logs the trainer's statistics (``loss/td``) as a
    Ray run's trainer does, beside its approximation's ``loss/q``."""
    from looprl.environments import GymEnvironment
    from looprl.experiments import make_experiment
    from looprl.presets.classic_control import dqn

    env = GymEnvironment("CartPole-v1")
    preset = dqn.env(env).hyperparameters(replay_start_size=64, update_frequency=1,
                                          gradient_steps=1, minibatch_size=8).build()
    run = make_experiment(preset, env, train_steps=1100, logdir=str(tmp_path), quiet=True,
                          seed=0)
    run.train(frames=1100)  # (the learner logs every 1,000th step)
    run.close()
    accumulator = EventAccumulator(run.logger.log_dir, size_guidance={"scalars": 0})
    accumulator.Reload()
    assert {"loss/q", "loss/td", "loss/loss"} <= set(accumulator.Tags()["scalars"])


def test_every_report_of_the_last_100_returns_is_one_mean(tmp_path: Path) -> None:
    """The progress line's mean (local and runner loggers) and a Ray run's agree bit for bit."""
    from looprl.distributed.run_state import DistributedResult
    from looprl.runners.base import MemoryLogger

    # (fsum and np.mean differ on these: one way of computing it, not two)
    returns = [0.2 * ((i * 37) % 101) + 1e6 * (i % 3 == 0) - 3.3 for i in range(250)]
    memory, ray = MemoryLogger(), DistributedResult(returns=list(returns))
    with ExperimentLogger("dqn", "CartPole-v1", logdir=str(tmp_path)) as logger:
        for i, ret in enumerate(returns):
            logger.add_episode_return(ret)
            memory.add_episode_return(ret)  # (read after every return: a cached mean moves on)
            assert logger.mean_return100 == memory.mean_return100 == np.mean(returns[:i + 1][-100:])
        assert logger.mean_return100 == memory.mean_return100 == ray.mean_return()
        assert logger.mean_return100 == float(np.mean(returns[-100:]))


def test_a_loaded_logger_in_a_new_run_directory_forgets_the_checkpoint_it_came_from(
        tmp_path: Path) -> None:
    """A logger loaded from a checkpoint at frame 10 that goes on in a new run directory (a PBT
    exploit) and is saved again at frame 500 cuts back to 500 when that is resumed (was: 10,
    its rows in between deleted)."""
    import pickle

    logger = ExperimentLogger("dqn", "CartPole-v1", str(tmp_path))
    logger.frame, logger.episode = 10, 1
    loaded = pickle.loads(pickle.dumps(logger))
    assert loaded._saved_at == (10, 1)
    loaded.start_run("member001_gen001")
    loaded.frame, loaded.episode = 500, 7
    assert pickle.loads(pickle.dumps(loaded))._saved_at == (500, 7)
    resumed = pickle.loads(pickle.dumps(loaded))  # (saved again before its first write:
    assert pickle.loads(pickle.dumps(resumed))._saved_at == (500, 7)  # the first one's frame)
    for each in (logger, loaded):
        each.close()


def test_an_unclosed_logger_garbage_collected_stops_its_event_writer_thread(
        tmp_path: Path) -> None:
    """A notebook's experiments and runners that are dropped without ``close()`` leave no
    TensorBoard writer thread behind, one per run."""
    before = threading.active_count()
    for _ in range(3):
        logger = ExperimentLogger("ppo", "CartPole-v1", logdir=str(tmp_path))
        logger.add_episode_return(1.0)
        del logger
        gc.collect()
    assert threading.active_count() <= before  # (another test's thread may end meanwhile)


def test_losses_of_a_run_whose_episodes_never_end_are_written_in_batches(tmp_path: Path) -> None:
    # was: every loss row stayed in memory until the 100th episode ended (a continuing task:
    # never)
    logger = ExperimentLogger("ddpg", "Pendulum-v1", logdir=str(tmp_path))
    for frame in range(12_000):
        logger.frame = frame
        logger.add_loss("q", torch.tensor(0.5))
    path = Path(logger.log_dir) / "losses.csv"
    written = len(path.read_text().splitlines()) - 1 if path.exists() else 0
    assert written >= 8_000
    logger.close()
    assert len(path.read_text().splitlines()) == 1 + 12_000
