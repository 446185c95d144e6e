"""A multi-agent Ray run logs each agent's return, not only their sum (always 0 in a zero-sum
game; issue 44, 4): the collector reports them with each episode (``Episode.returns``:
tests/distributed/test_collector_copies.py) and the
controller's ``RunMonitor`` writes them as a local multi-agent run does, each agent in its own
run directory ``{run}/{name}.{agent}/{env}``, and shows them on the progress line. No Ray."""

from __future__ import annotations

from pathlib import Path

from looprl.distributed.run_state import DistributedResult, RunMonitor, SampleCounts
from looprl.experiments.logger import ExperimentLogger


def _actor(episodes: list[tuple]) -> dict:
    return {"frames": 20, "episodes": episodes, "env_seconds": 0.1, "inference_seconds": 0.1,
            "put_seconds": 0.0, "meta": [], "finished": False}


def test_the_monitor_logs_each_agents_return_as_a_local_run(tmp_path: Path) -> None:
    log = ExperimentLogger("ppo", "tictactoe_v3", str(tmp_path))
    result = DistributedResult()
    monitor = RunMonitor(result, SampleCounts(), log, ["trainer"],
                         agents=["player_1", "player_2"])
    monitor.record({"actor0": _actor([(0.0, 5, 10, (1.0, -1.0)), (0.0, 7, 20, (-1.0, 1.0))]),
                    "actor1": _actor([(0.0, 9, 15, (1.0, -1.0))])}, seconds=0.5)
    assert result.returns == [0.0, 0.0, 0.0]  # the sums
    assert result.agent_returns == {"player_1": [1.0, 1.0, -1.0], "player_2": [-1.0, -1.0, 1.0]}
    assert "return(100) by agent: player_1 0.3333  player_2 -0.3333" in monitor.status()
    monitor.close()
    log.close()
    run = Path(log.log_dir)
    rows = (run / "ppo.player_1" / "tictactoe_v3" / "results.csv").read_text().splitlines()
    assert rows[0] == "frame,episode,return" and [row.split(",")[2] for row in rows[1:]] == [
        "1.0", "1.0", "-1.0"]  # in the order the episodes ended over both actors
    assert [int(row.split(",")[0]) for row in rows[1:]] == [20, 30, 40]
    assert (run / "ppo.player_2" / "tictactoe_v3" / "results.csv").read_text().splitlines()[
        1].endswith(",-1.0")
    assert (run / "results.csv").read_text().count("\n") == 4  # the sums, as before


def test_one_agents_run_has_no_per_agent_logs(tmp_path: Path) -> None:
    log = ExperimentLogger("dqn", "CartPole-v1", str(tmp_path))
    monitor = RunMonitor(DistributedResult(), SampleCounts(), log, ["trainer"])
    monitor.record({"actor0": _actor([(12.0, 12, 12, ())])}, seconds=0.5)
    assert monitor.result.agent_returns == {} and monitor.agent_logs.loggers == {}
    assert not [line for line in monitor.status() if "by agent" in line]
    log.close()


def test_the_monitor_totals_the_episodes_the_actors_cut_at_their_cap() -> None:
    """Each actor warns at its first cut; the controller logs the total at the end of the run
    from this sum, as a local run's ``report_cuts`` (was: no total on Ray)."""
    monitor = RunMonitor(DistributedResult(), SampleCounts(), None, ["trainer"])
    for cut in (2, 0):
        monitor.record({"actor0": {**_actor([]), "cuts": (cut, "endless", 5)},
                        "actor1": {**_actor([]), "cuts": (1, "endless", 5)}}, seconds=0.5)
    assert monitor.cuts == (4, "endless", 5)
