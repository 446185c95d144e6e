"""PBTRunner on Ray Tune: a population trains, exploits and explores through hp/* keys."""

from __future__ import annotations

import gc
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

ray = pytest.importorskip("ray")
pytest.importorskip("ray.tune")

from looprl.runners import PBTRunner  # noqa: E402


def test_a_population_from_given_starts_trains_and_the_best_member_holds_its_values(
    small_ppo, tmp_path, local_ray, caplog, capfd
) -> None:
    """``initial``: member ``i`` starts from the ``i``-th values given, through Tune's current
    ``sample_from`` form (the spec-dict form logs a deprecation); Tune reuses its actors for
    the exploits (else it warns that PBT runs slower without ``reuse_actors``). The best
    member's agent holds its explored values. The run logs a line per member's evaluation and
    the best member, and Tune prints nothing of its own; the members' warnings are logged on
    the driver, once in the run (were: in Ray's session logs only). (One population: its
    Tune run and member processes cost seconds.)"""
    import logging
    import warnings

    from tests.distributed.user_components import Warns

    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    sampler = logging.getLogger("ray.tune.search.sample")
    sampler.addHandler(handler)
    level = sampler.level
    sampler.setLevel(logging.WARNING)  # (Tune's verbose=0 quiets its parent logger)
    starts = [{"hp/lr": 2e-4}, {"hp/lr": 4e-3}]
    caplog.set_level(logging.WARNING)
    caplog.set_level(logging.INFO, logger="looprl.runners.pbt")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            runner = PBTRunner(small_ppo, "CartPole-v1", {"hp/lr": (1e-4, 1e-2, "log")},
                               initial=starts, num_steps=192, perturbation_interval=64,
                               quantile_fraction=0.5, eval_episodes=2, logdir=str(tmp_path),
                               seed=0, meta=[Warns()])
            train_results, eval_results = runner.run()
    finally:
        sampler.removeHandler(handler)
        sampler.setLevel(level)
    warned = sorted(r.name for r in caplog.records if "hook warns" in r.getMessage())
    assert warned == ["py.warnings", "user.component"], caplog.text  # (once each)
    root = tmp_path / "ppo" / "CartPole-v1"
    for index, values in enumerate(starts):
        run = json.loads((root / f"member{index:03d}_gen000" / "run.json").read_text())
        assert run["values"] == pytest.approx(values)
        assert run["seed"] == index  # (its own, seed + index; was: the driver's 0)
    assert not [r for r in records if "deprecated" in r.getMessage()]
    assert not [w for w in caught if "reuse_actors" in str(w.message)]
    lines = [r.getMessage() for r in caplog.records if r.name == "looprl.runners.pbt"]
    indices = [int(line.split()[2].rstrip(",")) for line in lines[:-1]]
    # each member's evaluations, at steps 64, 128 and 192 (one that exploits a slower donor's
    # checkpoint of a round it played plays that round again: then more)
    assert sorted(set(indices)) == [0, 1] and min(map(indices.count, (0, 1))) >= 2, lines
    assert lines[-1].startswith("PBT: best member ")
    out, err = capfd.readouterr()
    assert "Configuration for experiment" not in out + err and "View detailed" not in out + err
    members = train_results["members"]
    assert len(members) == 2
    best = train_results["best"]
    assert best["mean_eval_reward"] == max(m["mean_eval_reward"] for m in members)
    # the best member's agent is restored, trained to the end, with the lr its trial ended
    # with applied through the hp/lr setter (not the preset's 1e-3)
    assert runner.experiment.frame >= 192
    lr = runner.hyperparameters()["hp/lr"].get()
    assert lr == pytest.approx(best["hp"]["hp/lr"]) and lr != pytest.approx(1e-3)
    assert eval_results["episodes"] == 2
    _check_member_runs(root, members, interval=64)


def test_members_make_a_gymnasium_id_registered_in_the_notebook(small_ppo, tmp_path,
                                                                 local_ray) -> None:
    """``gymnasium.register`` in the driver only: a member's process registers it too (was:
    ``Unknown environment 'tests/NotebookCart-v2'`` from every member; one member, in a
    process of its own, shows it)."""
    import gymnasium

    gymnasium.register("tests/NotebookCart-v2", max_episode_steps=50,
                       entry_point="gymnasium.envs.classic_control:CartPoleEnv")
    try:
        runner = PBTRunner(small_ppo, "tests/NotebookCart-v2", {"hp/lr": (1e-4, 1e-2)},
                           population=1, exploit=False, num_steps=64,
                           perturbation_interval=64, eval_episodes=1, logdir=str(tmp_path))
        train_results, _ = runner.run()
    finally:
        del gymnasium.registry["tests/NotebookCart-v2"]
    assert len(train_results["members"]) == 1


def _check_member_runs(root, members, interval: int) -> None:
    """Each member starts in ``member00I_gen000``; an exploit goes on in a new run directory
    named by the perturbation round (``test_a_member_that_exploits_...``). Each run.json
    names the member, round, step and the hp/* values; a member ends with its last run's."""
    runs = {path.parent.name: json.loads(path.read_text()) for path in root.glob("*/run.json")}
    ended = {member["member"]: member["hp"] for member in members}
    assert sorted(ended) == list(range(len(members)))  # (Tune's trial numbers)
    last = {}
    # (a member that exploits a donor's checkpoint of a round it has already played, which a
    # slower donor's can be, goes on in a second directory of that round: _2, and on a loaded
    # machine in a tenth, _10, which comes after _9)
    for name, run in sorted(runs.items(), key=lambda item: [
            int(number) for number in re.findall("[0-9]+", item[0])]):
        assert re.fullmatch(f"member{run['member']:03d}_gen{run['generation']:03d}(_[0-9]+)?",
                            name), name
        assert run["generation"] == run["step"] // interval and set(run["values"]) == {"hp/lr"}
        assert (run["exploited"] is None) == (run["step"] == 0)
        last[run["member"]] = run["values"]
    for index in ended:
        start = runs[f"member{index:03d}_gen000"]
        assert start["hyperparameters"]["lr"] == 1e-3  # the preset's; hp/lr explores
        assert ended[index] == pytest.approx(last[index])


class _Checkpoint:
    """Tune's ``Checkpoint``: a copy of the reported directory (under ``root``, pytest's)."""

    root: Path | None = None

    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def from_directory(cls, directory: str) -> _Checkpoint:
        copy = Path(tempfile.mkdtemp(dir=cls.root))
        shutil.copytree(directory, copy, dirs_exist_ok=True)
        return cls(copy)

    @contextmanager
    def as_directory(self):
        yield str(self.path)


@pytest.fixture(autouse=True)
def _checkpoints_in_pytests_folder(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The stand-in Tune's checkpoints go where pytest removes them (were left in /tmp)."""
    _Checkpoint.root = tmp_path_factory.mktemp("tune")


class _Tune:
    """What a member sees of Ray Tune: its trial, the checkpoint it starts from, reports."""

    Checkpoint = _Checkpoint

    def __init__(self, member: int, checkpoint: _Checkpoint | None = None):
        self.member, self.checkpoint, self.reports = member, checkpoint, []

    def get_checkpoint(self) -> _Checkpoint | None:
        return self.checkpoint

    def get_context(self) -> SimpleNamespace:
        return SimpleNamespace(get_trial_id=lambda: f"member_{self.member:05d}")

    def report(self, metrics: dict, checkpoint: _Checkpoint | None = None) -> None:
        self.reports.append((metrics, checkpoint))


def _member_zero(small_ppo, tmp_path, monkeypatch) -> tuple[dict, _Tune]:
    """Member 0 trained to its first evaluation (step 64) under ``tmp_path``: the members'
    spec and member 0's Tune (its reports, with their checkpoints)."""
    from looprl.runners import pbt

    parent = PBTRunner(small_ppo, "CartPole-v1", {"hp/lr": (1e-4, 1e-2)}, eval_episodes=1,
                       logdir=str(tmp_path))
    spec = {**parent.member_spec(), "num_steps": 64, "interval": 64}
    tune = _Tune(0)
    monkeypatch.setattr(pbt, "import_tune", lambda: tune)
    pbt._member({"hp_lr": 1e-3}, spec)
    gc.collect()
    return spec, tune


def test_a_member_that_exploits_goes_on_in_a_run_directory_of_its_own(
        small_ppo, tmp_path, monkeypatch) -> None:
    """Member 1 takes member 0's checkpoint at step 64 (perturbation round 1): its logs go to
    ``member001_gen001``, whose run.json says so, and member 0's directory stays as it was."""
    from looprl.runners import pbt

    spec, donor = _member_zero(small_ppo, tmp_path, monkeypatch)
    root = tmp_path / "ppo" / "CartPole-v1"
    before = {path.name: path.read_bytes() for path in (root / "member000_gen000").iterdir()}
    exploiter = _Tune(1, donor.reports[-1][1])
    monkeypatch.setattr(pbt, "import_tune", lambda: exploiter)
    pbt._member({"hp_lr": 2e-3}, {**spec, "num_steps": 192})
    run = json.loads((root / "member001_gen001" / "run.json").read_text())
    assert (run["member"], run["generation"], run["exploited"]) == (1, 1, 0)
    assert 64 <= run["step"] < 64 + 8  # (env steps: the first batched step past 64)
    assert run["values"] == {"hp/lr": 2e-3} and run["hyperparameters"]["hidden"] == 8
    rows = (root / "member001_gen001" / "results.csv").read_text().splitlines()[1:]
    assert rows and all(int(row.split(",")[0]) > 64 for row in rows)  # trained on from 64
    after = {path.name: path.read_bytes() for path in (root / "member000_gen000").iterdir()}
    assert after.keys() == before.keys()  # no event file of the exploiter there
    assert after["results.csv"] == before["results.csv"]  # no row dropped or added


def test_a_member_runs_with_the_runners_meta_components_and_options(
        small_ppo, tmp_path, monkeypatch) -> None:
    """A member is the runner's replica: its meta components, logging and checkpoint options
    (as a trial of ES or Optuna on Ray), not a bare runner."""
    from looprl.meta import RND
    from looprl.runners import pbt

    parent = PBTRunner(small_ppo, "CartPole-v1", {"hp/lr": (1e-4, 1e-2)}, meta=[RND(seed=0)],
                       verbose=False, checkpoint_every=32, logdir=str(tmp_path))
    spec = {**parent.member_spec(), "num_steps": 64, "interval": 64}
    spec["runner"]["eval_episodes"] = 1
    monkeypatch.setattr(pbt, "import_tune", lambda: _Tune(0))
    pbt._member({"hp_lr": 1e-3}, spec)
    run_dir = tmp_path / "ppo" / "CartPole-v1" / "member000_gen000"
    run = json.loads((run_dir / "run.json").read_text())
    assert run["runner"] == "pbt" and [m.split("(")[0] for m in run["meta"]] == ["RND"]
    assert (run_dir / "checkpoint.pt").exists()  # (checkpoint_every)


def test_a_members_evaluations_leave_its_training_as_it_was(tmp_path, monkeypatch) -> None:
    """A member evaluated with ``experiment.test``: a DQN member (one environment) played its
    evaluation episodes, unseeded, in its training environment, cutting the episode it was
    training on; it evaluates as every runner does (``Runner.evaluate``)."""
    from looprl.presets.classic_control import dqn
    from looprl.runners import pbt

    builder = dqn.hyperparameters(hidden=8, replay_start_size=32, update_frequency=16,
                                  gradient_steps=1).device("cpu")
    parent = PBTRunner(builder, "CartPole-v1", {"hp/lr": (1e-4, 1e-2)}, eval_episodes=2,
                       logdir=str(tmp_path))

    def returns(interval: int) -> list[float]:
        logdir = tmp_path / str(interval)
        spec = {**parent.member_spec(), "num_steps": 300, "interval": interval}
        spec["runner"]["logdir"] = str(logdir)
        monkeypatch.setattr(pbt, "import_tune", lambda: _Tune(0))
        pbt._member({"hp_lr": 1e-3}, spec)
        run_dir = logdir / "dqn" / "CartPole-v1" / "member000_gen000"
        rows = (run_dir / "results.csv").read_text().splitlines()[1:]
        return [row.split(",", 1)[1] for row in rows]

    assert returns(100) == returns(300)  # (evaluated at 100 and 200 too, or not)


def test_a_members_large_replay_warns_once_and_checkpoint_replay_false_leaves_it_out(
        tmp_path, monkeypatch, caplog) -> None:
    """(Was: a member's checkpoint at each interval, in a new temporary directory, warned anew,
    its path in the line; and saved the replay with checkpoint_replay=False, as advised.)"""
    import logging

    from looprl.memory import ExperienceReplayBuffer
    from looprl.presets.classic_control import dqn
    from looprl.runners import pbt

    monkeypatch.setattr(ExperienceReplayBuffer, "nbytes", property(lambda self: 3 * 2**30))
    caplog.set_level(logging.WARNING, "looprl")
    builder = dqn.hyperparameters(hidden=8, replay_start_size=32, update_frequency=16
                                  ).device("cpu")
    for replay in (False, True):
        parent = PBTRunner(builder, "CartPole-v1", {"hp/lr": (1e-4, 1e-2)}, eval_episodes=1,
                           logdir=str(tmp_path / str(replay)), checkpoint_replay=replay)
        spec = {**parent.member_spec(), "num_steps": 150, "interval": 50}
        monkeypatch.setattr(pbt, "import_tune", lambda: _Tune(0))
        pbt._member({"hp_lr": 1e-3}, spec)
        assert caplog.text.count("GiB of replay buffer") == replay, caplog.text


def test_a_runner_that_starts_its_own_ray_starts_the_reaper_first(small_ppo, monkeypatch
                                                                 ) -> None:
    """``PBTRunner(...).run()`` (no ``trials``) starts a local Ray instance: as every other
    one, the reaper watches it, or a ``kill -9`` of the driver leaves Ray's agents behind."""
    from looprl.core import reaper

    calls = []

    def init(**kwargs) -> None:
        calls.append("ray.init")
        raise RuntimeError("stop here")

    monkeypatch.setattr(reaper, "start_reaper", lambda: calls.append("reaper"))
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    runner = PBTRunner(small_ppo, "CartPole-v1", {"hp/lr": (1e-4, 1e-2)}, population=2)
    with pytest.raises(RuntimeError, match="stop here"):
        runner.run()
    assert calls == ["reaper", "ray.init"]


def test_bad_mutations_are_clear_errors(small_ppo) -> None:
    with pytest.raises(KeyError, match="'hp/lrr' is not a hyperparameter"):
        PBTRunner(small_ppo, "CartPole-v1", {"hp/lrr": (1e-4, 1e-2)})
    with pytest.raises(ValueError, match="empty range"):
        PBTRunner(small_ppo, "CartPole-v1", {"hp/lr": (1e-2, 1e-4)})
    with pytest.raises(ValueError, match="needs hp/\\* mutations"):
        PBTRunner(small_ppo, "CartPole-v1", {})


def test_a_population_of_one_is_refused_unless_it_does_not_exploit(small_ppo) -> None:
    # was a run in which the one member never exploited (Tune's quantiles of one are empty)
    mutations = {"hp/lr": (1e-4, 1e-2)}
    for options in ({"population": 1}, {"initial": [{"hp/lr": 1e-3}]}):
        with pytest.raises(ValueError, match="population must be >= 2 .*got 1$"):
            PBTRunner(small_ppo, "CartPole-v1", mutations, **options)
    assert PBTRunner(small_ppo, "CartPole-v1", mutations, population=1,
                     exploit=False).population == 1


def test_bad_initial_values_are_clear_errors(small_ppo) -> None:
    # [] was an IndexError from Tune, after Ray started; a value the agent cannot take failed
    # the member on Ray (and the run with KeyError: 'mean_eval_reward')
    mutations = {"hp/lr": (1e-4, 1e-2, "log")}
    for initial, message in (([], "initial needs one dict per member"),
                             ([{"hp/clip": 0.1}], "exactly the keys \\['hp/lr'\\]"),
                             ({"hp/lr": 1e-3}, "one dict per member"),
                             ([{"hp/lr": 1e-3}, {"hp/lr": -1e-3}], "hp/lr must be >= 0"),
                             ([{"hp/lr": "x"}], "hp/lr must be >= 0, got 'x'")):
        with pytest.raises(ValueError, match=message):
            PBTRunner(small_ppo, "CartPole-v1", mutations, initial=initial)
    # (a quantile_fraction above 0.5 was Tune's error after Ray started; a resample
    # probability of 2 or -1 was taken)
    for options, message in (({"quantile_fraction": 0.9}, "quantile_fraction must be a number "
                               "in \\[0, 0.5\\], got 0.9"),
                             ({"resample_probability": 2}, "resample_probability must be a "
                              "number in \\[0, 1\\], got 2"),
                             ({"resample_probability": "x"}, "got 'x'")):
        with pytest.raises(ValueError, match=message):
            PBTRunner(small_ppo, "CartPole-v1", mutations, **options)


def test_a_member_that_fails_raises_its_own_error(small_ppo, monkeypatch) -> None:
    """A member whose trial failed on Tune was read for metrics it never reported: the run
    ended with ``KeyError: 'mean_eval_reward'`` instead of the member's error."""
    tune = pytest.importorskip("ray.tune")
    failed = RuntimeError("Ray task failed")
    failed.cause = ValueError("hp/lr must be >= 0, got -0.001")
    results = [SimpleNamespace(error=None, config={"hp_lr": 1e-3}, checkpoint=None,
                               metrics={"trial_id": "x_00000", "mean_eval_reward": 9.0}),
               SimpleNamespace(error=failed, config={"hp_lr": 1e-3}, checkpoint=None,
                               metrics={"trial_id": "x_00001"})]
    monkeypatch.setattr(ray, "is_initialized", lambda: True)
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 2})
    monkeypatch.setattr(tune, "with_parameters", lambda trainable, **kwargs: trainable)
    monkeypatch.setattr(tune, "with_resources", lambda trainable, resources: trainable)
    monkeypatch.setattr(tune, "Tuner", lambda *args, **kwargs: SimpleNamespace(
        fit=lambda: results))
    runner = PBTRunner(small_ppo, "CartPole-v1", {"hp/lr": (1e-4, 1e-2, "log")},
                       population=2, num_steps=64, perturbation_interval=32)
    with pytest.raises(ValueError, match="hp/lr must be >= 0"):
        runner.run()


def _diverging_dqn():
    """A small DQN whose hp/lr 1e20 makes its first update's loss NaN."""
    from looprl.presets.classic_control import dqn

    return dqn.hyperparameters(hidden=8, replay_start_size=32, update_frequency=4,
                               gradient_steps=1).device("cpu")


def test_a_diverging_member_reports_the_worst_score_and_stops(tmp_path, monkeypatch) -> None:
    """A member whose training diverged raised its ``FloatingPointError`` out of the trial,
    and the runner re-raised it: one member ended the whole population. It scores ``-inf``
    at the round's evaluation step (exploit replaces it), with its message, and stops."""
    from looprl.runners import pbt

    parent = PBTRunner(_diverging_dqn(), "CartPole-v1", {"hp/lr": (1e-4, 1e20, "log")},
                       eval_episodes=1, logdir=str(tmp_path))
    spec = {**parent.member_spec(), "num_steps": 300, "interval": 100}
    tune = _Tune(0)
    monkeypatch.setattr(pbt, "import_tune", lambda: tune)
    pbt._member({"hp_lr": 1e20}, spec)
    [(metrics, checkpoint)] = tune.reports
    assert checkpoint is None and metrics["mean_eval_reward"] == float("-inf")
    assert metrics["step"] == 100
    assert re.match(r"dqn: Training diverged at frame \d+ on CartPole-v1", metrics["diverged"])


def test_a_diverged_member_is_the_worst_and_the_population_goes_on(tmp_path, local_ray
                                                                   ) -> None:
    """(Was: the member's ``FloatingPointError``, raised by ``run``, where ES and Optuna count
    a diverged individual or trial as the worst.) The results name the member that diverged.
    One member at a time (``RayTrials(parallel=1)``): both train in one Ray worker, started
    once (Tune reuses it). Explore perturbs the donor's lr: resampled from the range, up to
    1e20, it diverged again at times (a second message)."""
    from looprl.distributed.trials import RayTrials

    runner = PBTRunner(_diverging_dqn(), "CartPole-v1", {"hp/lr": (1e-4, 1e20, "log")},
                       initial=[{"hp/lr": 1e-3}, {"hp/lr": 1e20}], num_steps=200,
                       perturbation_interval=100, quantile_fraction=0.5, eval_episodes=1,
                       resample_probability=0.0, logdir=str(tmp_path), seed=0,
                       trials=RayTrials(parallel=1))
    train_results, eval_results = runner.run()
    members = {member["member"]: member for member in train_results["members"]}
    assert members[1]["mean_eval_reward"] == float("-inf")
    [message] = members[1]["diverged"]
    assert message.startswith("dqn: Training diverged at frame ")
    assert members[0]["diverged"] == [] and train_results["best"]["member"] == 0
    assert eval_results["episodes"] == 1 and runner.experiment.frame >= 200


def test_a_member_trains_num_steps_not_a_whole_interval_more(small_ppo, tmp_path,
                                                            monkeypatch) -> None:
    """A member trained in whole ``perturbation_interval`` steps: ``num_steps=64`` with an
    interval of 1000 trained (and reported) 1000 steps."""
    from ray import tune

    from looprl.runners.pbt import _member
    reports = []
    monkeypatch.setattr(tune, "get_checkpoint", lambda: None)
    monkeypatch.setattr(tune, "get_context", lambda: SimpleNamespace(
        get_trial_id=lambda: "member_00000"))
    monkeypatch.setattr(tune, "report", lambda metrics, checkpoint: reports.append(metrics))
    monkeypatch.setattr(tune.Checkpoint, "from_directory", lambda directory: directory)
    runner = PBTRunner(small_ppo, "CartPole-v1", {"hp/lr": (1e-4, 1e-2, "log")}, population=2,
                       num_steps=64, perturbation_interval=1000, eval_episodes=1,
                       logdir=str(tmp_path))
    _member({"hp_lr": 1e-3}, runner.member_spec())
    assert len(reports) == 1 and 64 <= reports[0]["step"] < 128


def test_members_train_on_the_gpus_ray_reserves_for_them(small_ppo, local_ray) -> None:
    with pytest.raises(ValueError, match=r"device='cuda' with gpus_per_member=0: PBT members "
                                         r"train on the GPUs Ray reserves"):
        PBTRunner(small_ppo, "CartPole-v1", {"hp/lr": (1e-4, 1e-2)}, device="cuda")
    # the runner's own checks build the agent on the CPU, whatever its members reserve
    runner = PBTRunner(small_ppo, "CartPole-v1", {"hp/lr": (1e-4, 1e-2)}, gpus_per_member=1)
    if ray.cluster_resources().get("GPU", 0) < 1:
        with pytest.raises(ValueError, match="gpus_per_member=1 but the Ray cluster has 0 GPUs"):
            runner.run()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_population_shares_a_gpu(small_ppo, tmp_path, local_ray) -> None:
    runner = PBTRunner(small_ppo, "CartPole-v1", {"hp/lr": (1e-4, 1e-2, "log")},
                       population=2, num_steps=128, perturbation_interval=64,
                       gpus_per_member=0.5, eval_episodes=1, logdir=str(tmp_path), seed=0)
    train_results, _ = runner.run()
    assert len(train_results["members"]) == 2
    assert str(runner.experiment.preset.device).startswith("cuda")


def test_without_trials_it_starts_a_local_instance_and_joins_no_other_ray(
        small_ppo, monkeypatch) -> None:
    # was: ray.init(num_cpus=...), which joins a Ray instance another session started on the
    # machine (or fails there: num_cpus cannot be given to a cluster it joins); and without
    # local_instance_settings (not on loopback only, Ray's token and worker niceness), which
    # every other local start sets
    from looprl.core import reaper

    names = (reaper.LOOPBACK, "RAY_AUTH_MODE", "RAY_worker_niceness")
    for name in names:
        monkeypatch.delenv(name, raising=False)
    seen = {}

    class Stop(Exception):
        pass

    def init(*args, **kwargs):
        seen.update(kwargs, environment={name: os.environ.get(name) for name in names})
        raise Stop

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    runner = PBTRunner(small_ppo, "CartPole-v1", {"hp/lr": (1e-4, 1e-2, "log")}, population=2,
                       num_steps=64, perturbation_interval=32, num_cpus=2)
    with pytest.raises(Stop):
        runner.run()
    assert seen["address"] == "local" and seen["num_cpus"] == 2
    assert not seen["include_dashboard"]
    assert seen["environment"] == {reaper.LOOPBACK: "0", "RAY_AUTH_MODE": "disabled",
                                   "RAY_worker_niceness": "0"}


def _scheduler_arguments(runner: PBTRunner, monkeypatch, resources: dict | None = None
                         ) -> dict:
    """The keyword arguments ``runner.run()`` gives Tune's ``PopulationBasedTraining`` (the run
    stops there, on a Ray instance it takes as started, with 2 CPUs and ``resources``)."""
    import ray.tune.schedulers

    given = {}

    class Stop(Exception):
        pass

    def scheduler(**kwargs):
        given.update(kwargs)
        raise Stop

    monkeypatch.setattr(ray, "is_initialized", lambda: True)
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 2, **(resources or {})})
    monkeypatch.setattr(ray.tune.schedulers, "PopulationBasedTraining", scheduler)
    with pytest.raises(Stop):
        runner.run()
    return given


def test_a_population_on_several_nodes_says_where_its_members_write(small_ppo, tmp_path,
                                                                   monkeypatch, caplog) -> None:
    """A member writes its run directory and Tune's checkpoints under ``folder()`` on its own
    node (Tune's storage_path: no public way to hand them to the driver): on a cluster of
    several nodes the run says so, and that the logdir must be one every node shares."""
    import logging

    runner = PBTRunner(small_ppo, "CartPole-v1", {"hp/lr": (1e-4, 1e-2, "log")}, population=2,
                       num_steps=64, perturbation_interval=32, logdir=str(tmp_path))
    caplog.set_level(logging.WARNING, "looprl.runners.pbt")
    _scheduler_arguments(runner, monkeypatch, {"node:10.0.0.1": 1.0, "node:10.0.0.2": 1.0,
                                               "node:__internal_head__": 1.0})
    assert (f"PBT members write their run directories and Tune's checkpoints in {tmp_path} on "
            "the node that runs each" in caplog.text), caplog.text
    assert "on a cluster of 2 nodes give a logdir every node shares (NFS)" in caplog.text


def test_explore_keeps_perturbed_values_in_the_mutations_ranges(small_ppo, monkeypatch) -> None:
    """Tune's explore multiplies a value by 0.8 or 1.2 regardless of its range: a member at
    ``hp/epsilon`` 0.9 went on at 1.08, an exploration rate the agent cannot take. The runner
    gives the scheduler ``within_ranges``, which clips into each mutation's range."""
    from looprl.runners.pbt import within_ranges

    runner = PBTRunner(small_ppo, "CartPole-v1", {"hp/clip": (0.1, 0.3), "hp/lr": (1e-4, 1e-2,
                       "log")}, population=2, num_steps=64, perturbation_interval=32)
    given = _scheduler_arguments(runner, monkeypatch)
    explore = given["custom_explore_fn"]
    assert explore({"hp_clip": 0.36, "hp_lr": 1e-4 * 0.8}) == {"hp_clip": 0.3, "hp_lr": 1e-4}
    assert explore({"hp_clip": 0.2 * 1.2, "hp_lr": 1e-3}) == {"hp_clip": 0.24, "hp_lr": 1e-3}
    assert within_ranges({"a": 2.0, "b": 5}, {"a": (0.0, 1.0)}) == {"a": 1.0, "b": 5}


def test_an_int_key_is_sampled_and_explored_as_whole_numbers(small_ppo, monkeypatch) -> None:
    """A mutation of an int ``hp/*`` key (``hp/batch_size``) was a float range: Tune drew 45.7
    and each member failed on Ray (``hp/batch_size must be a whole number >= 1``)."""
    mutations = {"hp/batch_size": (16, 64), "hp/epochs": (1, 8, "log"), "hp/clip": (0, 1)}
    runner = PBTRunner(small_ppo, "CartPole-v1", mutations, population=2, num_steps=64,
                       perturbation_interval=32)
    given = _scheduler_arguments(runner, monkeypatch)
    spaces, explore = given["hyperparam_mutations"], given["custom_explore_fn"]
    runner.new_agent(logged=False)
    for seed in range(20):
        config = {name: space.sample(random_state=seed) for name, space in spaces.items()}
        assert isinstance(config["hp_batch_size"], int) and isinstance(config["hp_epochs"], int)
        assert 16 <= config["hp_batch_size"] <= 64 and 1 <= config["hp_epochs"] <= 8
        assert isinstance(config["hp_clip"], float)
        runner.set_hyperparameters({"hp/batch_size": config["hp_batch_size"],
                                    "hp/epochs": config["hp_epochs"]})
    assert explore({"hp_batch_size": 77, "hp_epochs": 0, "hp_clip": 0.5}) == {
        "hp_batch_size": 64, "hp_epochs": 1, "hp_clip": 0.5}  # (a perturbed value, clipped)
    runner.close()
    with pytest.raises(ValueError, match="an int range needs int bounds"):
        PBTRunner(small_ppo, "CartPole-v1", {"hp/epochs": (1.5, 8)})


def test_without_trials_it_shuts_down_the_instance_it_started(small_ppo, monkeypatch) -> None:
    # was: the local Ray instance the runner started stayed up after run() (a user's stays)
    import ray.tune

    class Stop(Exception):
        pass

    def fail(*args, **kwargs):
        raise Stop

    calls = []
    initialized = [False]
    monkeypatch.setattr(ray, "is_initialized", lambda: initialized[0])
    monkeypatch.setattr(ray, "init", lambda **kwargs: calls.append("init"))
    monkeypatch.setattr(ray, "shutdown", lambda: calls.append("shutdown"))
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 2})
    monkeypatch.setattr(ray.tune, "with_parameters", lambda trainable, **kwargs: trainable)
    monkeypatch.setattr(ray.tune, "with_resources", lambda trainable, resources: trainable)
    monkeypatch.setattr(ray.tune, "Tuner", fail)
    runner = PBTRunner(small_ppo, "CartPole-v1", {"hp/lr": (1e-4, 1e-2, "log")}, population=2,
                       num_steps=64, perturbation_interval=32, num_cpus=2)
    with pytest.raises(Stop):
        runner.run()
    assert calls == ["init", "shutdown"]
    initialized[0] = True  # a Ray this process already runs: left as it is
    calls.clear()
    with pytest.raises(Stop):
        runner.run()
    assert calls == []


def test_without_a_logdir_close_removes_the_members_temporary_folder(small_ppo, tmp_path,
                                                                     monkeypatch) -> None:
    # was: each run() left two temporary folders (the members' logs, Tune's checkpoints)
    import ray.tune

    class Stop(Exception):
        pass

    def fail(*args, **kwargs):
        raise Stop

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(ray, "is_initialized", lambda: True)  # (a Ray of the user's)
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 2})
    monkeypatch.setattr(ray.tune, "with_parameters", lambda trainable, **kwargs: trainable)
    monkeypatch.setattr(ray.tune, "with_resources", lambda trainable, resources: trainable)
    monkeypatch.setattr(ray.tune, "Tuner", fail)
    runner = PBTRunner(small_ppo, "CartPole-v1", {"hp/lr": (1e-4, 1e-2, "log")}, population=2,
                       num_steps=64, perturbation_interval=32)
    for _ in range(2):
        with pytest.raises(Stop):
            runner.run()
    assert runner.member_arguments()["logdir"].startswith(str(tmp_path))
    runner.close()
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith("torchinductor")] == []


def test_ctrl_c_stops_a_pbt_run_in_one_line(tmp_path) -> None:
    """Ctrl-C is ``looprl: interrupted`` (130), not Tune's handler ending the population
    there and the run reported as finished (its best member, results.json, exit 0)."""
    run_dir, log = tmp_path / "r", tmp_path / "out.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            # (one CPU: one member trains at a time, and its first evaluation comes soon)
            [sys.executable, "-m", "looprl.cli", "run", "runner=pbt", "runner.population=2",
             "runner.num_cpus=1", "runner.perturbation_interval=256",
             "runner.mutations={hp/lr: [1e-5, 1e-2, log]}", "frames=10000000",
             f"hydra.run.dir={run_dir}"], cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT,
            env={**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"},
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            deadline = time.monotonic() + 600
            while process.poll() is None and time.monotonic() < deadline and (
                    "PBT member" not in log.read_text()):
                time.sleep(0.5)
            process.send_signal(signal.SIGINT)
            process.wait(timeout=300)
        finally:
            process.kill()
    output = log.read_text()
    assert process.returncode == 130, output[-2000:]
    assert output.splitlines()[-1] == f"looprl: interrupted; the run is in {run_dir}", \
        output[-2000:]
    assert not (run_dir / "results.json").exists()


def test_a_member_that_tune_paused_goes_on_in_its_own_run_directory(
        small_ppo, tmp_path, monkeypatch) -> None:
    """With more members than CPUs, Tune pauses a member at each evaluation and later resumes
    it from its own checkpoint: that is no exploit (Tune never clones a member into itself),
    and its logs go on in its run directory (a new one split its curve in looprl plot)."""
    from looprl.runners import pbt

    spec, first = _member_zero(small_ppo, tmp_path, monkeypatch)
    monkeypatch.setattr(pbt, "import_tune", lambda: _Tune(0, first.reports[-1][1]))
    pbt._member({"hp_lr": 1e-3}, {**spec, "num_steps": 192})
    root = tmp_path / "ppo" / "CartPole-v1"
    assert [path.name for path in root.iterdir()] == ["member000_gen000"]
    frames = [int(row.split(",")[0]) for row in
              (root / "member000_gen000" / "results.csv").read_text().splitlines()[1:]]
    assert frames == sorted(frames) and frames[-1] > 64  # (trained on from 64, in order)


def test_a_member_that_fails_is_the_runs_one_line_without_tunes_traceback(
        small_ppo, tmp_path, local_ray, capfd, caplog, monkeypatch) -> None:
    """(Was: Tune's 'Trial task failed', the member's whole remote traceback and 'Trials did
    not complete', 130-160 lines, before the run's one line.)"""
    import logging

    from tests.distributed.faulty_env import PATH

    from looprl.environments import GymEnvironment

    monkeypatch.delenv("LOOPRL_DEBUG", raising=False)
    env = GymEnvironment(PATH, broken="actor")  # (its constructor raises in Ray actors)
    runner = PBTRunner(small_ppo, env, {"hp/lr": (1e-4, 1e-2, "log")}, population=2,
                       num_steps=128, perturbation_interval=64, eval_episodes=1,
                       logdir=str(tmp_path), seed=0)
    with caplog.at_level(logging.DEBUG, "ray.tune"), pytest.raises(
            Exception, match="constructor fault injected"):
        runner.run()
    out, err = capfd.readouterr()
    told = out + err + "".join(r.getMessage() for r in caplog.records if r.name.startswith("ray"))
    assert "Trial task failed" not in told and "Traceback" not in told, told[-2000:]


def test_a_member_whose_env_call_hangs_ends_the_run_in_one_line(small_ppo, tmp_path,
                                                                local_ray, capfd) -> None:
    """(Was: the run waited forever. ``EnvWatch`` interrupts the main thread only; Tune
    trains a member in a thread of its own, so the member's process ends, leaving its line.)"""
    from tests.distributed.faulty_env import PATH

    from looprl.environments import GymEnvironment
    from looprl.environments.faults import EnvironmentTimeout

    env = GymEnvironment(PATH, every="hang", hang=60)  # (its third step sleeps a minute)
    runner = PBTRunner(small_ppo, env, {"hp/lr": (1e-4, 1e-2, "log")}, population=2,
                       num_steps=128, perturbation_interval=64, eval_episodes=1,
                       logdir=str(tmp_path), seed=0, env_timeout=2)
    started = time.monotonic()
    with pytest.raises(EnvironmentTimeout, match=(
            r"^PBT member \d: \S+:FaultyCartPole has been in step for \d+ s, longer than "
            r"env_timeout=2 s .*: its process was stopped")):
        runner.run()
    assert time.monotonic() - started < 50
    out, err = capfd.readouterr()
    assert "worker died" not in out + err, (out + err)[-2000:]
