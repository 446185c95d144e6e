"""``SlurmExperiment`` as an ALL user calls it, run by submitit's local executors (no Slurm
here): the runs happen, with the run directories and returns ``run_experiment`` gives."""

from pathlib import Path
from typing import Any

import pytest

from looprl.environments import GymEnvironment
from looprl.experiments import SlurmExperiment
from looprl.presets import classic_control

submitit = pytest.importorskip("submitit")


def test_every_agent_on_every_env_in_process(tmp_path: Path) -> None:
    agents = [classic_control.dqn.device("cpu"), classic_control.vpg.device("cpu")]
    experiment = SlurmExperiment(agents, GymEnvironment("CartPole-v1"), 150, test_episodes=2,
                                 logdir=str(tmp_path / "runs"), outdir=str(tmp_path / "out"),
                                 executor=submitit.DebugExecutor(folder=tmp_path / "out"),
                                 seed=0)
    assert len(experiment.jobs) == 2
    results = experiment.results()
    assert [r.agent for r in results] == ["dqn", "vpg"]
    for result in results:
        assert result.env == "CartPole-v1" and result.frames >= 150
        assert len(result.test_returns) == 2 and result.test_mean >= 1
        assert Path(result.log_dir).is_dir()
        assert Path(result.log_dir).resolve().is_relative_to((tmp_path / "runs").resolve())


def test_jobs_run_in_other_processes(tmp_path: Path) -> None:
    executor = submitit.LocalExecutor(folder=tmp_path / "out")
    executor.update_parameters(timeout_min=5)
    experiment = SlurmExperiment(classic_control.dqn.device("cpu"), ["CartPole-v1"], 100,
                                 test_episodes=1, logdir=str(tmp_path / "runs"),
                                 outdir=str(tmp_path / "out"), executor=executor, seed=1)
    (result,) = experiment.results()
    assert result.agent == "dqn" and result.frames >= 100 and len(result.test_returns) == 1
    log_dir = Path(result.log_dir)
    assert log_dir.resolve().is_relative_to((tmp_path / "runs").resolve())
    assert any(log_dir.iterdir())  # the run's files, written by the job's process


class _FakeSlurm(submitit.SlurmExecutor):
    """A SlurmExecutor that records the array instead of calling sbatch."""

    submitted: list[Any] = []

    @classmethod
    def affinity(cls) -> int:
        return 1

    def map_array(self, fn: Any, *iterables: Any) -> list[Any]:
        self.submitted = list(zip(*iterables))
        return []


def test_sbatch_args_reach_the_slurm_executor(tmp_path: Path) -> None:
    executor = _FakeSlurm(folder=tmp_path / "out")
    experiment = SlurmExperiment([classic_control.dqn, classic_control.a2c],
                                 ["CartPole-v1", "Acrobot-v1"], 1000, job_name="bench",
                                 outdir=str(tmp_path / "out"), executor=executor,
                                 sbatch_args={"partition": "gpu", "gpus-per-node": 1})
    extra = executor.parameters["additional_parameters"]
    assert extra["partition"] == "gpu" and extra["gpus_per_node"] == 1
    assert extra["time"] == "7-0" and executor.parameters["job_name"] == "bench"
    runs = [(agent.default_name, env) for agent, env, _, _ in executor.submitted]
    assert runs == [("dqn", "CartPole-v1"), ("a2c", "CartPole-v1"), ("dqn", "Acrobot-v1"),
                    ("a2c", "Acrobot-v1")]  # ALL's order: environments outer
    assert experiment.runs()[1] == (classic_control.a2c, "CartPole-v1")


def test_bad_input_and_no_slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="frames must be a positive"):
        SlurmExperiment(classic_control.dqn, "CartPole-v1", 0, executor=object())
    with pytest.raises(ValueError, match="at least one agent"):
        SlurmExperiment([], "CartPole-v1", 10, executor=object())
    monkeypatch.setattr(submitit.SlurmExecutor, "affinity", classmethod(lambda cls: -1))
    with pytest.raises(RuntimeError, match="no Slurm here"):
        SlurmExperiment(classic_control.dqn, "CartPole-v1", 10, outdir=str(tmp_path / "o"))
