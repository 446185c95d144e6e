"""A Ray run logs what a local run logs: the final evaluation's returns, the ``hp/*``
trajectory (``hyperparameters.csv``) and the meta components' scalars, one series over all
actors, taken where episodes end (``RunMonitor``; ``looprl run runtime=ray``); its console
shows the losses and ``hp/*`` as a local run's does, and what only a Ray run has: throughput,
policy lag, restarts and the bottleneck, also in TensorBoard (``runtime/*``) and
``throughput.csv`` (a row for the trainer too)."""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("ray")
pytest.importorskip("hydra")

from tests.meta.test_log_scalars import _scalars  # noqa: E402


def test_looprl_run_on_ray_logs_as_a_local_run(local_ray, tmp_path: Path, capfd,
                                               monkeypatch) -> None:
    """(``meta=[rnd]``: the actors' bonuses and the trainer's predictor loss reach the results
    and the logs.) The workers of a large spec start without Ray's error: Ray logs one at the
    creation of a restartable actor whose arguments pass 100 KB (it stores them itself, and
    a restart could lose them), which a DQN run's spec does: the workers fetch the spec from
    the parameter server instead (``workers.run_spec``)."""
    from ray import cloudpickle

    from looprl.configs.app import main
    from looprl.distributed import pipeline
    from looprl.distributed.config import AlgorithmSpec
    from looprl.environments import GymEnvironment
    from looprl.presets.classic_control import dqn

    preset = dqn.env(GymEnvironment("CartPole-v1")).device("cpu").build()  # (its 256 hidden)
    spec, _ = AlgorithmSpec.of_preset(preset, 1000, 2, 1)
    assert len(cloudpickle.dumps(spec.portable())) > 100_000  # (the case Ray warns about)

    seeds = []  # the final evaluation's: seed + 10,000 as locally, not a training seed
    evaluation = pipeline.evaluation_episodes
    monkeypatch.setattr(pipeline, "evaluation_episodes", lambda *args, seed, **kwargs: (
        seeds.append(seed), evaluation(*args, seed=seed, **kwargs))[1])

    # (lockstep: the trainer has trained, and logged its loss, by the last progress line even
    # on a loaded machine; asynchronous actors could reach the budget before its first step;
    # the preset's 256 hidden units: a spec past 100 KB)
    wandb = importlib.util.find_spec("wandb") is not None  # (the wandb extra)
    monkeypatch.setenv("WANDB_SILENT", "true")
    code = main(["algorithm=dqn", "meta=[rnd]", "runtime=ray", "runtime.actors=2",
                 "runtime.sync=true", "runtime.envs_per_actor=2", "algorithm.replay_start_size=200",
                 "frames=1000", "test_episodes=2", f"hydra.run.dir={tmp_path}",
                 *(["logging.wandb={mode: offline, project: looprl-test}"] if wandb else [])])
    assert code == 0
    console = capfd.readouterr().err
    assert "constructor arguments in the object store" not in console
    _check_console(console)
    [run_dir] = {path.parent for path in tmp_path.glob("**/run.json")}
    info = json.loads((run_dir / "run.json").read_text())  # (what a local run records)
    assert (info["runner"], info["seed"], info["runtime"]) == ("online", 0, "ray")
    assert len(info["meta"]) == 1 and info["meta"][0].startswith("RND(")
    scalars = _scalars(str(run_dir))
    assert len(scalars["eval/returns/mean"]) == 1  # the final evaluation
    assert len(scalars["summary/test_returns/mean"]) == 1  # (its summary, as locally)
    assert len((run_dir / "test_returns.csv").read_text().split()) == 3  # header, 2 returns
    assert seeds == [10_000]
    # the actors' values in one series, at the ends of episodes (not one point per poll)
    episodes = len(scalars["train/returns/episode"])  # (numbered from 0, as locally)
    assert [step for step, _ in scalars["train/returns/episode"]] == list(range(episodes))
    series = scalars["log/transition/intrinsic_reward"]
    assert 10 <= len(series) <= episodes and len(scalars["log/rnd/intrinsic_reward_mean"]) \
        == len(series)
    assert [frame for frame, _ in series] == sorted(frame for frame, _ in series)
    assert not [tag for tag in scalars if tag.endswith(("/actor0", "/actor1"))]
    meta = results(tmp_path)["train"]["meta"]  # the actors' bonuses, the trainer's RND loss
    assert meta["actor0"]["log/rnd/intrinsic_reward_max"] > 0, meta
    assert meta["trainer"]["log/rnd/predictor_loss"] > 0, meta
    assert scalars["log/rnd/predictor_loss"]  # (the trainer's: under the same name as locally)
    with open(run_dir / "hyperparameters.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert rows and {"hp/epsilon", "hp/batch_size", "hp/discount", "hp/lr"} <= set(rows[0])
    # the acting policy's epsilon (actor 0's, about 500 of its 8,000 decaying steps in), not
    # the trainer's copy's, which never acts (was: 1 throughout)
    assert 0.9 < float(rows[-1]["hp/epsilon"]) < 1.0
    # a row at each training episode's end, as locally (was: one at each poll of the trainer)
    with open(run_dir / "results.csv", newline="") as file:
        ended = [int(row["frame"]) for row in csv.DictReader(file)]
    assert [int(row["frame"]) for row in rows] == ended
    for tag in ("env_steps_per_s", "trained_rows_per_s", "policy_lag", "restarts"):
        assert scalars[f"runtime/{tag}"], tag  # (each poll's)
    assert max(value for _, value in scalars["runtime/trained_rows_per_s"]) > 0
    with open(run_dir / "throughput.csv", newline="") as file:
        polls = list(csv.DictReader(file))
    trainer_rows = [row for row in polls if row["worker"] == "trainer"]
    assert trainer_rows and max(float(row["rows_per_s"]) for row in trainer_rows) > 0
    assert all(0 <= float(row["wait_share"]) <= 1 for row in polls)
    if wandb:  # the scalars mirrored to W&B, as a local run's (the offline run's records)
        # (the final evaluation, after the run's end, goes on in the same run: offline, a
        # second directory of the same run id, which `wandb sync` joins)
        records = list((run_dir / "wandb").glob("offline-run-*/run-*.wandb"))
        logged = b"".join(path.read_bytes() for path in records)
        assert len({path.stem for path in records}) == 1  # (run-ID.wandb)
        for tag in ("train/returns/episode", "loss/q", "log/rnd/predictor_loss",
                    "runtime/env_steps_per_s", "eval/returns/mean"):
            assert tag.encode() in logged, tag


def _check_console(console: str) -> None:
    """The progress lines: a local run's (losses, ``hp/*``) and the Ray run's facts (not the
    final evaluation's, ``dqn on CartPole-v1: evaluation: ...``)."""
    lines = [line for line in console.splitlines()
             if line.startswith("dqn on CartPole-v1 (2 actors): ")]
    assert lines, console[-2000:]
    last = lines[-1]
    assert " 0 fps" not in last, last  # (counted from the run's start, not its first report)
    # the last value of each loss, the approximation's ``loss/q`` among them, as locally
    assert "loss/q " in last and "hp/epsilon " in last and "hp/batch_size " in last, last
    ray_part = last.rpartition("; ")[2]
    assert ray_part.startswith("ray: ") and "trained rows/s, policy lag " in ray_part
    assert "restarts 0, bottleneck: " in ray_part, ray_part


def results(run_dir: Path) -> dict:
    return json.loads((run_dir / "results.json").read_text())


def test_a_ray_run_writes_the_loss_and_schedule_tags_of_a_local_run(local_ray, tmp_path: Path
                                                                     ) -> None:
    """The trainer's approximations log through the driver's logger (``loss/ppo``,
    ``schedule/ppo/lr``), at frames within the run, beside the trainer's statistics: the
    same ``loss/*`` and ``schedule/*`` tags as a local run of the same preset."""
    from looprl.configs.app import main

    tags = {}
    for runtime in ("local", "ray"):
        assert main(["algorithm=ppo", "algorithm.hidden=16", "frames=600", "test_episodes=1",
                     f"runtime={runtime}", "runtime.actors=1" if runtime == "ray" else "seed=0",
                     f"hydra.run.dir={tmp_path / runtime}"]) == 0
        [run_dir] = {path.parent for path in (tmp_path / runtime).glob("**/run.json")}
        scalars = _scalars(str(run_dir))
        tags[runtime] = {tag for tag in scalars if tag.startswith(("loss/", "schedule/"))}
    assert {"loss/ppo", "schedule/ppo/lr", "loss/policy"} <= tags["local"]
    assert tags["ray"] == tags["local"]
    frames = results(tmp_path / "ray")["train"]["frames"]
    assert all(0 < frame <= frames for frame, _ in scalars["loss/ppo"]), scalars["loss/ppo"]


def test_runner_eval_every_evaluates_a_ray_run_on_the_way(local_ray, tmp_path: Path,
                                                          capsys) -> None:
    """(Was: one line, 'runner.eval_every is for runtime=local'.) At the first poll past every
    1,000 frames the driver evaluates the policy the trainer published last, as a local
    ``OnlineRunner`` records it: ``eval_results.csv``, ``evaluations`` and ``best`` in
    ``results.json``'s ``train``, the evaluation's scalars at that frame, and the best policy
    kept as ``best_policy.pt``, which ``looprl watch --best`` plays."""
    import torch

    from looprl.cli import main as cli
    from looprl.configs.app import main

    assert main(["algorithm=ppo", "algorithm.hidden=16", "runtime=ray", "runtime.actors=1",
                 "frames=3000", "runner.eval_every=1000", "test_episodes=2",
                 f"hydra.run.dir={tmp_path}"]) == 0
    train = results(tmp_path)["train"]
    evaluations = train["evaluations"]
    steps = [step for step, _ in evaluations]
    assert evaluations and steps == sorted(set(steps)) and steps[0] >= 1000, evaluations
    assert steps[-1] <= train["frames"]
    assert train["best"] == max(evaluations, key=lambda e: e[1])
    rows = (tmp_path / "eval_results.csv").read_text().splitlines()
    assert rows[0] == "step,mean_eval_reward,std_eval_reward,episodes,set"
    assert [[int(r.split(",")[0]), float(r.split(",")[1])] for r in rows[1:]] == evaluations
    [run_dir] = {path.parent for path in tmp_path.glob("**/run.json")}
    logged = {tuple(pair) for pair in _scalars(str(run_dir))["eval/returns/mean"]}
    assert {tuple(e) for e in evaluations} <= logged, (logged, evaluations)  # (+ the final)
    best, final = (torch.load(run_dir / name) for name in ("best_policy.pt", "policy.pt"))
    assert best["version"] <= final["version"]  # (a published policy, then the final one)
    capsys.readouterr()
    assert cli(["watch", str(run_dir), "--best", "--episodes", "1", "--gif",
                str(tmp_path / "best.gif")]) == 0
    assert "episode 1: return " in capsys.readouterr().out


def test_checkpoint_every_and_keep_checkpoints_on_ray_as_locally(local_ray, tmp_path: Path
                                                                 ) -> None:
    """(Was: one line, 'checkpoint_every is for runtime=local'.) A Ray run writes its checkpoint
    at the first poll past every ``checkpoint_every`` frames, asking the trainer for its
    checkpoint then (``runtime.checkpoint_every=null``: it takes none on its own), keeps the
    ``keep_checkpoints`` latest numbered by frame, and ``--resume`` goes on from it."""
    from looprl.cli import main as cli
    from looprl.configs.app import main
    from looprl.experiments.checkpoint import numbered_checkpoints

    assert main(["algorithm=ppo", "algorithm.hidden=16", "runtime=ray", "runtime.actors=1",
                 "runtime.checkpoint_every=null", "frames=20000", "checkpoint_every=3000",
                 "keep_checkpoints=2", "test_episodes=1", f"hydra.run.dir={tmp_path}"]) == 0
    [run_dir] = {path.parent for path in tmp_path.glob("**/run.json")}
    controller = numbered_checkpoints(run_dir, "controller_checkpoint")
    trainer = numbered_checkpoints(run_dir, "trainer_checkpoint")
    frames = results(tmp_path)["train"]["frames"]
    assert list(controller) == list(trainer) and len(controller) == 2, controller
    assert 3000 <= list(controller)[0] < frames == list(controller)[-1]  # (past one, final)
    assert cli(["run", "--resume", str(tmp_path), "frames=26000"]) == 0
    assert results(tmp_path)["train"]["frames"] >= 26000
    assert len(numbered_checkpoints(run_dir, "controller_checkpoint")) == 2
    assert list(numbered_checkpoints(run_dir, "controller_checkpoint"))[-1] >= 26000


@pytest.mark.parametrize("replay", [True, False])
def test_a_ray_checkpoint_holds_the_replay_as_a_local_one(local_ray, tmp_path: Path,
                                                          replay: bool) -> None:
    """(Was: a Ray trainer's checkpoint held no replay, and a resumed run refilled it from
    empty.) ``checkpoint_replay`` (true by default) keeps the replay buffer's transitions in
    the trainer's checkpoint, which a trainer loaded from it goes on with; false saves none
    (the learner then refills it before its next step, as locally)."""
    import torch
    from tests.configs.test_run import _compose

    from looprl.configs import build_distributed
    from looprl.configs.app import main
    from looprl.distributed.pipeline import trainer_core
    from looprl.experiments.checkpoint import load_saved

    overrides = ["algorithm=dqn", "algorithm.hidden=16", "algorithm.replay_start_size=200",
                 "runtime=ray", "runtime.actors=1", "runtime.sync=true", "frames=1500",
                 "checkpoint_every=1000", f"checkpoint_replay={str(replay).lower()}",
                 "test_episodes=1"]
    assert main([*overrides, f"hydra.run.dir={tmp_path}"]) == 0
    [path] = tmp_path.glob("**/trainer_checkpoint.pt")
    state = load_saved(path)["core"]
    assert ("buffer" in state) == replay
    spec = build_distributed(_compose(overrides), str(tmp_path / "again")).spec
    core = trainer_core(spec, seed=0)
    core.load_state_dict(state)
    if replay:
        assert len(core.buffer) == len(state["buffer"]) >= 500  # (1,500 frames' rows)
        assert (core.refill_from, core.owed) == (0, state["owed"])  # (no refill: it trains on)
        index = torch.arange(len(core.buffer))
        assert torch.equal(core.buffer.gather(index).reward, state["buffer"].gather(index).reward)
    else:
        assert len(core.buffer) == 0 and core.refill_from == state["observed"]  # (refills)
