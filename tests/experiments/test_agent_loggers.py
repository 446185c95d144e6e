"""``AgentLoggers``: a multi-agent run's returns, each agent's in its own run directory
``{run dir}/{name}.{agent}/{env}`` (the one unit both runtimes log them with: a local
``MultiagentEnvExperiment`` and a Ray run's ``RunMonitor`` and ``DistributedRun.test``), and
the runners' loggers that keep the returns in memory."""

from __future__ import annotations

import json
from pathlib import Path

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from looprl.experiments.agent_loggers import AgentLoggers
from looprl.experiments.logger import ExperimentLogger, MemoryLogger, RecordingLogger


def _rows(path: Path) -> list[str]:
    return path.read_text().splitlines()


def _scalars(run_dir: Path, tag: str) -> list[tuple[int, float]]:
    accumulator = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    accumulator.Reload()
    return [(event.step, event.value) for event in accumulator.Scalars(tag)]


def test_each_agents_returns_go_to_its_own_run_directory(tmp_path: Path) -> None:
    run = ExperimentLogger("ippo", "tictactoe_v3", str(tmp_path))
    logs = AgentLoggers(run)
    for episode in range(100):
        ret = 1.0 if episode % 4 else -1.0
        logs.add_episode({"player_1": ret, "player_2": -ret}, frame=5 * (episode + 1))
    logs.add_test_returns([0.0, 0.0], {"player_1": [1.0, -1.0], "player_2": [-1.0, 1.0]},
                          frame=600)
    logs.close()
    run.close()
    player_1 = Path(run.log_dir) / "ippo.player_1" / "tictactoe_v3"
    rows = _rows(player_1 / "results.csv")
    assert rows[0] == "frame,episode,return" and len(rows) == 101
    assert rows[1:4] == ["5,1,-1.0", "10,2,1.0", "15,3,1.0"]
    assert _rows(player_1 / "returns100.csv")[1] == "500,0.5,0.8660254037844386,1.0,-1.0"
    assert _rows(player_1 / "test_returns.csv") == ["return", "1.0", "-1.0"]
    player_2 = Path(run.log_dir) / "ippo.player_2" / "tictactoe_v3"
    assert _rows(player_2 / "results.csv")[1] == "5,1,1.0"
    assert json.loads((player_2 / "run.json").read_text())["agent"] == "ippo.player_2"
    assert (logs["player_2"].frame, logs["player_2"].episode) == (600, 100)
    assert _rows(Path(run.log_dir) / "test_returns.csv") == ["return", "0.0", "0.0"]  # the team's
    assert _rows(Path(run.log_dir) / "results.csv") == ["frame,episode,return"]  # (its loop's)
    assert _scalars(player_1, "train/returns/episode")[:2] == [(0, -1.0), (1, 1.0)]
    assert _scalars(player_1, "eval/returns/mean") == [(600, 0.0)]
    assert _scalars(Path(run.log_dir), "eval/returns/mean") == [(600, 0.0)]


def test_agents_loggers_are_made_once_named_as_asked_and_kept(tmp_path: Path) -> None:
    run = ExperimentLogger("ppo", "tictactoe_v3", str(tmp_path), verbose=False)
    kept: dict[str, ExperimentLogger] = {}
    logs = AgentLoggers(run, ["player_1"], name="mine", env_name="game", verbose=True,
                        loggers=kept)
    assert list(kept) == ["player_1"] and logs["player_1"] is kept["player_1"]  # made now
    assert (Path(run.log_dir) / "mine.player_1" / "game" / "run.json").is_file()
    assert kept["player_1"].verbose and not (Path(run.log_dir) / "mine.agent1").exists()
    logs.add_episode({"agent1": 2.0}, frame=7)  # (an agent first logged now)
    assert list(kept) == ["player_1", "agent1"] and kept["agent1"].frame == 7
    logs.add_test_returns([1.0], {"player_1": [1.0]}, frame=3)
    logs.close()
    run.close()
    rows = _rows(Path(run.log_dir) / "mine.agent1" / "game" / "results.csv")
    assert rows == ["frame,episode,return", "7,1,2.0"]
    assert _scalars(Path(run.log_dir) / "mine.player_1" / "game", "eval/returns/mean") == [
        (3, 1.0)]


def test_the_runners_loggers_keep_every_return(tmp_path: Path) -> None:
    from looprl.runners import base

    assert (base.MemoryLogger, base.RecordingLogger) == (MemoryLogger, RecordingLogger)
    memory = MemoryLogger()
    recording = RecordingLogger("dqn", "CartPole-v1", str(tmp_path), run_name="gen0")
    for ret in range(150):
        memory.add_episode_return(ret)
        recording.add_episode_return(ret)
    assert memory.returns == recording.returns == [float(r) for r in range(150)]
    assert memory.mean_return100 == recording.mean_return100 == 99.5
    assert memory.log_dir is None and recording.run_name == "gen0"
    recording.describe_run({"generation": 0})
    assert json.loads((Path(recording.log_dir) / "run.json").read_text())["generation"] == 0
    recording.start_run("gen1")
    assert recording.run_name == "gen1" and recording.log_dir.endswith("gen1")
    recording.close()
    assert len(_rows(tmp_path / "dqn" / "CartPole-v1" / "gen0" / "results.csv")) == 151


def test_a_run_that_writes_no_files_keeps_each_agents_returns_in_memory(
        tmp_path: Path, monkeypatch) -> None:
    # (a runner without a logdir, or ES's unlogged agent: OnlineRunner(multiagent.dqn, game))
    monkeypatch.chdir(tmp_path)
    logs = AgentLoggers(MemoryLogger(), ["player_1"], name="independent_dqn",
                        env_name="tictactoe_v3")
    logs.add_episode({"player_1": 1.0, "player_2": -1.0}, frame=5)
    logs.add_test_returns([0.0], {"player_1": [1.0], "player_2": [-1.0]}, frame=9)
    logs.close()
    assert all(isinstance(logger, MemoryLogger) for logger in logs.loggers.values())
    assert logs["player_1"].returns == [1.0] and logs["player_2"].mean_return100 == -1.0
    assert (logs["player_2"].frame, logs["player_2"].episode) == (9, 1)
    assert not any(tmp_path.iterdir())  # nothing written
