"""Checkpoints: a run killed with SIGKILL and resumed ends exactly as an uninterrupted run."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from looprl.environments import GymEnvironment
from looprl.experiments import make_experiment
from looprl.experiments.checkpoint import CHECKPOINT, load_checkpoint, save_checkpoint
from looprl.experiments.experiment import seed_everything
from looprl.meta import MetaComponent

FRAMES, EVERY = 600, 200

# ``run(algorithm, mode, logdir, frames, every, kill_at)`` trains (mode "train") or resumes
# (mode "resume") a small run, writes the final parameters and returns the run directory; with
# ``kill_at`` > 0 the process kills itself with SIGKILL once the run has passed that frame.
RUN = """
import os, signal, sys, threading, time
import torch
from looprl.environments import GymEnvironment
from looprl.experiments import make_experiment
from looprl.experiments.checkpoint import load_checkpoint
from looprl.experiments.experiment import seed_everything
from looprl.meta import RND
from looprl.presets.classic_control import dqn, ppo
def kill_past(experiment, frame):
    def watch():
        while experiment.frame < frame:
            time.sleep(0.0005)
        os.kill(os.getpid(), signal.SIGKILL)
    sys.setswitchinterval(0.0005)
    threading.Thread(target=watch, daemon=True).start()
def run(algorithm, mode, logdir, frames, every, kill_at="0"):
    frames, every = int(frames), int(every)
    torch.set_num_threads(1)
    if mode == "train":
        seed_everything(0)
        env = GymEnvironment("CartPole-v1")
        builder = {
            "dqn": dqn.hyperparameters(replay_start_size=100, update_frequency=8,
                                       gradient_steps=2, hidden=32, final_exploration_step=2000),
            "ppo": ppo.hyperparameters(n_envs=4, n_steps=32, hidden=32, epochs=2),
        }[algorithm]
        preset = builder.env(env).device("cpu").build()
        experiment = make_experiment(preset, env, train_steps=frames, logdir=logdir, quiet=True,
                                     seed=0, checkpoint_every=every, meta=[RND(seed=1)])
    else:
        experiment = load_checkpoint(logdir)
    if int(kill_at):
        kill_past(experiment, int(kill_at))
    experiment.train(frames=frames)
    experiment.close()
    parameters = torch.nn.utils.parameters_to_vector(experiment.preset.model.parameters())
    torch.save(parameters, experiment.logger.log_dir + "/final_parameters.pt")
    return experiment.logger.log_dir
"""
SCRIPT = RUN + "print(run(*sys.argv[1:7]))\n"


def _run_here(*args: str) -> str:
    """``RUN``'s ``run`` in this process."""
    namespace: dict = {}
    exec(RUN, namespace)
    return namespace["run"](*args)


def _python(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    return subprocess.Popen([sys.executable, "-c", SCRIPT, *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("algorithm", ["dqn", "ppo"])
def test_a_run_killed_and_resumed_ends_as_an_uninterrupted_one(algorithm, tmp_path) -> None:
    # killed without warning half-way between its first and second checkpoints
    killed = _python(algorithm, "train", str(tmp_path / "killed"), str(FRAMES), str(EVERY),
                     str(EVERY + EVERY // 2))
    run_dir = tmp_path / "killed" / algorithm / "CartPole-v1"
    killed.wait(timeout=600)
    assert killed.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    assert (run_dir / "checkpoint.pt").exists(), "no checkpoint was written"
    # the resumed run, then the uninterrupted one, in this process (a process of its own for
    # the resume cost seconds of imports: of the killed one, only its files are left here)
    assert _run_here(algorithm, "resume", str(run_dir), str(FRAMES), str(EVERY)) == str(run_dir)
    full_dir = Path(_run_here(algorithm, "train", str(tmp_path / "full"), str(FRAMES),
                              str(EVERY)))
    assert (run_dir / "results.csv").read_text() == (full_dir / "results.csv").read_text()
    assert (run_dir / "returns100.csv").read_text() == (full_dir / "returns100.csv").read_text()
    assert torch.equal(torch.load(run_dir / "final_parameters.pt"),
                       torch.load(full_dir / "final_parameters.pt"))


def test_no_checkpoint_and_unpicklable_parts_give_clear_errors(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="No checkpoint at .*nothing to resume"):
        load_checkpoint(tmp_path)
    assert not list(tmp_path.iterdir())  # (no CSV headers left in a directory of no run)

    class Lambda(MetaComponent):
        def __init__(self):
            super().__init__()
            self.post_step_methods.append(lambda metrics: None)

    from looprl.presets.classic_control import dqn

    seed_everything(0)
    env = GymEnvironment("CartPole-v1")
    preset = dqn.env(env).hyperparameters(hidden=8).device("cpu").build()
    experiment = make_experiment(preset, env, logdir=str(tmp_path), quiet=True,
                                 meta=[Lambda()])
    with pytest.raises(TypeError, match="cannot be checkpointed.*bound methods"):
        save_checkpoint(experiment)
    with pytest.raises(FileNotFoundError, match=r"the directory .*no_such does not exist; "
                       r"create it"):  # (was: "This experiment cannot be checkpointed")
        save_checkpoint(experiment, tmp_path / "no_such" / "checkpoint.pt")
    preset.save(str(tmp_path / "preset.pt"))  # (was: "object is not subscriptable")
    with pytest.raises(ValueError, match=r"preset.pt holds a DQNClassicControlPreset, not a "
                       r"checkpoint .*load_preset\)$"):
        load_checkpoint(tmp_path / "preset.pt")
    assert not list(Path(experiment.logger.log_dir).glob("checkpoint.pt*"))
    with pytest.raises(ValueError, match="checkpoint_every must be positive"):
        make_experiment(preset, env, logdir=str(tmp_path), quiet=True, checkpoint_every=0)
    made = len(list(tmp_path.rglob("results.csv")))
    with pytest.raises(TypeError, match=r"^checkpoint_every is set, but the Lambda cannot be "
                       r"checkpointed: .*drop checkpoint_every"):
        make_experiment(preset, env, logdir=str(tmp_path), quiet=True, meta=[Lambda()],
                        checkpoint_every=100)  # (before training, not at its first checkpoint)
    wrapped = GymEnvironment("CartPole-v1", wrap_env=lambda e: e)
    with pytest.raises(TypeError, match="the GymEnvironment CartPole-v1 cannot be checkpointed"):
        make_experiment(preset, wrapped, logdir=str(tmp_path), quiet=True, checkpoint_every=100)
    assert len(list(tmp_path.rglob("results.csv"))) == made  # (no run directory made)


def test_resuming_drops_the_rows_written_after_the_checkpoint(tmp_path) -> None:
    from looprl.presets.classic_control import dqn

    seed_everything(0)
    env = GymEnvironment("CartPole-v1")
    # few gradient steps: the agent stays poor, its episodes short (~150 in the 3000 frames
    # after the checkpoint)
    preset = dqn.env(env).hyperparameters(hidden=8, replay_start_size=200, gradient_steps=8)
    experiment = make_experiment(preset.device("cpu").build(), env, logdir=str(tmp_path),
                                 quiet=True, seed=0, checkpoint_every=1000)
    experiment.train(frames=1000)
    run_dir = Path(experiment.logger.log_dir)
    saved = (run_dir / "checkpoint.pt").read_bytes()
    rows = (run_dir / "results.csv").read_text()
    frame = experiment.frame
    episodes = experiment.episode
    assert len(rows.splitlines()) == episodes + 1  # flushed when the checkpoint was taken
    experiment.train(frames=4000)  # on past the next checkpoints and 100-episode flushes
    experiment.close()
    assert len((run_dir / "results.csv").read_text().splitlines()) > episodes + 100
    (run_dir / "checkpoint.pt").write_bytes(saved)  # as if killed right after that one
    logs = {path.name: path.read_bytes() for path in run_dir.iterdir() if path.is_file()}
    looked_at = load_checkpoint(run_dir)  # (loaded to be looked at: the run stays as it is)
    assert looked_at.episode == episodes
    looked_at.close()
    assert {path.name: path.read_bytes() for path in run_dir.iterdir() if path.is_file()} == logs
    resumed = load_checkpoint(run_dir)
    resumed.train(frames=frame + 1)  # its first write cuts the logs back to the checkpoint
    resumed.close()
    kept = (run_dir / "results.csv").read_text()
    assert kept.startswith(rows) and len(kept.splitlines()) <= episodes + 2
    assert len((run_dir / "returns100.csv").read_text().splitlines()) == 1 + episodes // 100
    for table in ("losses.csv", "hyperparameters.csv"):  # rows up to the checkpoint's frame
        frames = [int(line.split(",")[0]) for line in
                  (run_dir / table).read_text().splitlines()[1:]]
        assert frames and max(frames) <= frame + 1, table


def test_a_resumed_run_writes_the_tables_of_an_uninterrupted_one(tmp_path) -> None:
    """The tables and events are cut back to the checkpoint's frame, not to the frame of the
    resumed run's first write (the dead run's rows in between were kept, then written again)."""
    import shutil

    from looprl.presets.classic_control import dqn

    seed_everything(0)
    env = GymEnvironment("CartPole-v1")
    preset = dqn.env(env).hyperparameters(hidden=8, replay_start_size=100, update_frequency=8,
                                          gradient_steps=2).device("cpu").build()
    experiment = make_experiment(preset, env, train_steps=600, logdir=str(tmp_path), quiet=True,
                                 seed=0, checkpoint_every=300, keep_checkpoints=2)
    experiment.train(frames=600)
    experiment.close()
    run_dir = Path(experiment.logger.log_dir)
    tables = ("results.csv", "losses.csv", "hyperparameters.csv")
    full = {name: (run_dir / name).read_text() for name in tables}
    saved = (run_dir / CHECKPOINT).read_bytes()
    (run_dir / CHECKPOINT).unlink()  # (left truncated by a crash: was "start the run anew")
    (run_dir / CHECKPOINT).write_bytes(saved[: len(saved) // 2])
    damaged = re.escape(str(run_dir / CHECKPOINT))
    for other in ("checkpoint_600.pt", "checkpoint_300.pt"):  # (not a hard link of it)
        with pytest.raises(ValueError, match=rf"^{damaged} is not a readable checkpoint: it is "
                           r"truncated.*central directory\); "
                           rf"{other} beside it is the run's latest other checkpoint: resume "
                           r"from it \(in place of checkpoint.pt, for looprl run --resume\)$"):
            load_checkpoint(run_dir)
        (run_dir / "checkpoint_600.pt").unlink()
        os.link(run_dir / CHECKPOINT, run_dir / "checkpoint_600.pt")
    shutil.copyfile(run_dir / "checkpoint_300.pt", run_dir / CHECKPOINT)  # (killed after it)
    resumed = load_checkpoint(run_dir)
    resumed.train(frames=600)
    resumed.close()
    assert {name: (run_dir / name).read_text() for name in tables} == full


def test_a_copied_run_directory_resumes_in_the_copy(tmp_path) -> None:
    import shutil

    from looprl.presets.classic_control import dqn

    env = GymEnvironment("CartPole-v1")
    preset = dqn.env(env).hyperparameters(hidden=8, replay_start_size=50, replay_buffer_size=500)
    preset = preset.device("cpu").build()
    experiment = make_experiment(preset, env, logdir=str(tmp_path / "runs"), quiet=True, seed=0,
                                 checkpoint_every=100)
    experiment.train(frames=100)
    experiment.close()
    original = Path(experiment.logger.log_dir)
    rows = (original / "results.csv").read_text()
    copy = shutil.copytree(original, tmp_path / "copy")
    resumed = load_checkpoint(copy)
    resumed.train(frames=200)
    resumed.close()
    assert Path(resumed.logger.log_dir) == copy
    assert (original / "results.csv").read_text() == rows  # the original is left alone
    assert len((copy / "results.csv").read_text().splitlines()) == 1 + resumed.episode
    (copy / "results.csv").unlink()  # (then a resumed run wrote its rows with no header)
    again = load_checkpoint(copy)
    again.train(frames=300)
    again.close()
    assert (copy / "results.csv").read_text().startswith(rows.splitlines()[0] + "\n")


def test_checkpoints_without_the_replay_buffer_restore_it_empty(tmp_path) -> None:
    from looprl.presets.classic_control import dqn

    seed_everything(0)
    env = GymEnvironment("CartPole-v1")
    builder = dqn.env(env).hyperparameters(hidden=8, replay_start_size=200, buffer="prioritized")
    experiment = make_experiment(builder.device("cpu").build(), env, logdir=str(tmp_path),
                                 quiet=True, seed=0)
    experiment.train(frames=800)  # (the replay takes segments of update_frequency=256 rows)
    buffer = experiment.agent.replay_buffer
    assert len(buffer) > 500
    full = save_checkpoint(experiment, tmp_path / "full.pt")
    empty = save_checkpoint(experiment, tmp_path / "empty.pt", replay=False)
    assert len(buffer) > 500  # saving leaves the running buffer alone
    assert empty.stat().st_size < full.stat().st_size / 2
    assert len(load_checkpoint(full).agent.replay_buffer) == len(buffer)
    resumed = load_checkpoint(empty)
    restored = resumed.agent.replay_buffer
    assert len(restored) == 0 and restored.tree.total == 0 and restored.size == buffer.size
    resumed.train(frames=1600)  # refills, then trains again
    assert len(restored) > 500
    experiment.close()
    resumed.close()


def test_a_run_resumed_without_its_replay_refills_it_before_it_trains_again(tmp_path) -> None:
    """Was: the resumed learner stepped on the first 3 transitions put (minibatches of 32 drawn
    from them), where experiments.md says it refills its buffer first."""
    from looprl.presets.classic_control import dqn

    seed_everything(0)
    env = GymEnvironment("CartPole-v1")
    builder = dqn.env(env).hyperparameters(hidden=8, replay_start_size=200, update_frequency=4,
                                           gradient_steps=1)  # (not 128: steps it times)
    experiment = make_experiment(builder.device("cpu").build(), env, logdir=str(tmp_path),
                                 quiet=True, seed=0)
    experiment.train(frames=400)
    learner = experiment.agent.unwrapped.learner
    assert learner.updates > 0
    full = load_checkpoint(save_checkpoint(experiment, tmp_path / "full.pt"))
    resumed = load_checkpoint(save_checkpoint(experiment, tmp_path / "empty.pt", replay=False))
    sizes: list[int] = []
    for run in (full, resumed):
        restored, sizes = run.agent.unwrapped.learner, []
        step = restored.trainer.step
        restored.trainer.step = lambda batch, r=restored, s=sizes, f=step: (
            s.append(len(r.buffer)), f(batch))[1]
        run.train(frames=700)
        assert sizes and restored.updates == learner.updates + len(sizes)
    assert min(sizes) > 150  # (200 observations, less the steps out of episode ends)
    experiment.close()
    full.close()
    resumed.close()


def test_atari_replay_buffers_are_saved_empty_on_request() -> None:
    import io

    from looprl.memory.atari_replay import PrioritizedAtariReplayBuffer
    from looprl.memory.replay import replay_contents_saved

    buffer = PrioritizedAtariReplayBuffer(64)
    buffer.frames, buffer._count = torch.ones(64, 84, 84, dtype=torch.uint8), 10
    for saved, count in ((True, 10), (False, 0)):
        stream = io.BytesIO()
        with replay_contents_saved(saved):
            torch.save(buffer, stream)
        stream.seek(0)
        restored = torch.load(stream, weights_only=False)
        assert len(restored) == count and (restored.frames is None) == (not saved)


_REPLAY = {"replay_start_size": 32, "minibatch_size": 16, "update_frequency": 4,
           "gradient_steps": 1, "final_exploration_step": 150}
_ON = {"n_envs": 2, "n_steps": 16, "epochs": 2, "minibatch_size": 16}
#: (family, preset, its hyperparameters (hidden=16 too), meta components): each trains before
#: and after its checkpoint at frame 100
_PRESETS = [
    ("classic_control", "a2c", {"n_envs": 4}, "rnd"), ("classic_control", "c51", _REPLAY, None),
    ("classic_control", "ddqn", {**_REPLAY, "buffer": "prioritized"}, None),
    ("classic_control", "dqn", {**_REPLAY, "buffer": "nstep"}, "cosine_lr"),
    ("classic_control", "ppg", {**_ON, "n_policy": 2, "aux_minibatch_size": 16}, None),
    ("classic_control", "ppo", _ON, "rnd"), ("classic_control", "rainbow", _REPLAY, None),
    ("classic_control", "vac", {"n_envs": 4}, None),
    ("classic_control", "vpg", {"min_batch_size": 40}, None),
    ("classic_control", "vqn", {"n_envs": 4, "final_exploration_step": 600}, None),
    ("classic_control", "vsarsa", {"n_envs": 4, "final_exploration_step": 600}, None),
    *[("continuous", name, {"replay_start_size": 32, "minibatch_size": 16}, None)
      for name in ("ddpg", "sac", "td3")],
    ("continuous", "ppo", _ON, None)]  # (in NormalizeObservation: its statistics are saved)


@pytest.mark.parametrize(("family", "name", "hyperparameters", "meta"), _PRESETS,
                         ids=[f"{family}.{name}" for family, name, *_ in _PRESETS])
def test_every_presets_run_resumes_as_it_would_have_gone_on(family, name, hyperparameters,
                                                            meta, tmp_path) -> None:
    """Each preset's run pickles whole (its env copies, its update rule, its schedules, replay,
    optimizer and normalizer statistics, the meta components) and, loaded from its checkpoint,
    writes the logs and ends with the parameters of the run that went on."""
    import importlib

    from looprl.environments.wrappers import Wrappers
    from looprl.meta.registry import make_component

    builder = getattr(importlib.import_module(f"looprl.presets.{family}"), name)
    seed_everything(0)
    env = GymEnvironment("CartPole-v1") if family == "classic_control" else GymEnvironment(
        "Pendulum-v1", wrap_env=Wrappers(["gymnasium.wrappers.NormalizeObservation"]),
        max_episode_steps=30)
    preset = builder.hyperparameters(hidden=16, **hyperparameters).env(env).device("cpu").build()
    experiment = make_experiment(preset, env, train_steps=200, logdir=str(tmp_path), quiet=True,
                                 seed=0, meta=[make_component(meta)] if meta else [])
    experiment.train(frames=100)
    save_checkpoint(experiment)
    updates = experiment.agent.unwrapped.learner.updates
    experiment.train(frames=200)
    experiment.close()
    assert 0 < updates < experiment.agent.unwrapped.learner.updates  # (on both sides)
    run_dir = Path(experiment.logger.log_dir)
    tables = ("results.csv", "losses.csv", "hyperparameters.csv")
    went_on = {table: (run_dir / table).read_text() for table in tables}
    resumed = load_checkpoint(run_dir)  # (its own random states restored)
    assert resumed.frame == 100
    resumed.train(frames=200)
    resumed.close()
    assert {table: (run_dir / table).read_text() for table in tables} == went_on
    for model, went_on_model in zip(_models(resumed.preset), _models(experiment.preset),
                                    strict=True):
        assert torch.equal(torch.nn.utils.parameters_to_vector(model.parameters()),
                           torch.nn.utils.parameters_to_vector(went_on_model.parameters()))


def _models(preset) -> list[torch.nn.Module]:
    """The networks of ``preset`` (``model``; an actor's and a critic's...)."""
    return [part for part in vars(preset).values() if isinstance(part, torch.nn.Module)]


def _resume_twice(run_dir: str, frames: int) -> list[str]:
    """``results.csv`` after each of two resumes of the checkpoint in ``run_dir``."""
    written, saved = [], (Path(run_dir) / "checkpoint.pt").read_bytes()
    for _ in range(2):
        (Path(run_dir) / "checkpoint.pt").write_bytes(saved)  # (a resumed run saves its own)
        resumed = load_checkpoint(run_dir)
        assert resumed.runner.needs_reset  # (its episodes were lost in the pickle)
        resumed.train(frames=frames)
        assert not resumed.runner.needs_reset
        resumed.close()
        written.append((Path(run_dir) / "results.csv").read_text())
    return written


def test_an_environment_made_anew_on_loading_starts_new_episodes_that_repeat(tmp_path) -> None:
    """MuJoCo's environments pickle as their constructor's arguments (``EzPickle``): a resumed
    run resets them (with a seed from the restored generators) instead of stepping a fresh
    simulation as if its episode went on."""
    from looprl.presets.continuous import sac

    seed_everything(0)
    env = GymEnvironment("InvertedPendulum-v5")
    preset = sac.hyperparameters(hidden=16, replay_start_size=50, minibatch_size=16) \
        .env(env).device("cpu").build()
    experiment = make_experiment(preset, env, train_steps=200, logdir=str(tmp_path), quiet=True,
                                 seed=0)
    experiment.train(frames=100)
    assert 0 < experiment.runner.running_returns[0]  # (an episode in progress)
    save_checkpoint(experiment)
    first, second = _resume_twice(experiment.logger.log_dir, 200)
    assert first == second


def test_a_multiagent_run_resumes_with_new_games(tmp_path) -> None:
    """PettingZoo's games come back from a checkpoint made anew, not reset: the resumed run
    starts new games (it failed in PettingZoo's ``last()`` before) and repeats itself. Each
    agent's loss rows are written once (a checkpoint held them unwritten: written again)."""
    from looprl.configs.app import main

    assert main(["algorithm=multiagent/dqn", "env=tictactoe_v3", "frames=200", "seed=0",
                 "test_episodes=1", "checkpoint_every=100", "logging.quiet=true",
                 "algorithm.replay_start_size=20", f"hydra.run.dir={tmp_path}"]) == 0
    run_dir = str(tmp_path / "independent_dqn" / "tictactoe_v3")
    first, second = _resume_twice(run_dir, 300)
    assert first == second and len(first.splitlines()) > 1
    for losses in Path(run_dir).glob("*/*/losses.csv"):
        rows = losses.read_text().splitlines()
        assert len(rows) > 1 and len(set(rows)) == len(rows), rows


def test_a_checkpoint_of_a_large_replay_says_so_once(tmp_path, caplog, monkeypatch) -> None:
    """A run's checkpoints wrote GiBs of replay at each save without a word; now its first
    checkpoint warns, with the size and ``checkpoint_replay=False`` (which leaves it out)."""
    import logging

    from looprl.memory import ExperienceReplayBuffer
    from looprl.presets.classic_control import dqn

    monkeypatch.setattr(ExperienceReplayBuffer, "nbytes", property(lambda self: 3 * 2**30))
    caplog.set_level(logging.WARNING, "looprl")
    env = GymEnvironment("CartPole-v1")
    for replay in (True, False):
        preset = dqn.env(env).hyperparameters(hidden=8, replay_start_size=50).device("cpu").build()
        experiment = make_experiment(preset, env, logdir=str(tmp_path / str(replay)), quiet=True,
                                     seed=0, checkpoint_every=100, checkpoint_replay=replay)
        experiment.train(frames=300)
        experiment.close()
    assert caplog.text.count("GiB of replay buffer") == 1, caplog.text
    assert ("A checkpoint holds 3.0 GiB of replay buffer, written at each checkpoint; "
            "checkpoint_replay=False saves the replay empty") in caplog.text


def test_checkpoint_replay_is_a_flag(tmp_path) -> None:
    # was: any value, "no" (true in Python) saving the replay
    from looprl.presets.classic_control import dqn

    env = GymEnvironment("CartPole-v1")
    preset = dqn.env(env).device("cpu").build()
    with pytest.raises(ValueError, match="^checkpoint_replay must be True or False, got 'no'$"):
        make_experiment(preset, env, logdir=str(tmp_path), checkpoint_every=100,
                        checkpoint_replay="no")


def test_a_checkpoint_saved_outside_its_run_leaves_its_folder_alone(tmp_path) -> None:
    # (PBT's Tune checkpoints: loading the best member's wrote empty results.csv and
    # returns100.csv there, which looprl plot then found as a run of no data)
    from looprl.presets.classic_control import dqn

    env = GymEnvironment("CartPole-v1")
    preset = dqn.env(env).hyperparameters(hidden=8, replay_start_size=50, replay_buffer_size=500)
    experiment = make_experiment(preset.device("cpu").build(), env, quiet=True, seed=0,
                                 logdir=str(tmp_path / "runs"))
    experiment.train(frames=100)
    (tmp_path / "saved").mkdir()
    save_checkpoint(experiment, tmp_path / "saved" / CHECKPOINT)
    experiment.close()
    run_dir = Path(experiment.logger.log_dir)
    (run_dir / "results.csv").unlink()
    loaded = load_checkpoint(tmp_path / "saved")
    loaded.close()
    assert sorted(path.name for path in (tmp_path / "saved").iterdir()) == [CHECKPOINT]
    assert (run_dir / "results.csv").read_text().startswith("frame,")


def test_a_checkpoint_into_a_removed_run_directory_says_it_was_removed(tmp_path: Path) -> None:
    """The run directory removed while the run goes on: its checkpoint says so in one line."""
    import shutil

    from looprl.presets.classic_control import dqn

    env = GymEnvironment("CartPole-v1")
    experiment = make_experiment(dqn.env(env).build(), env, logdir=str(tmp_path), quiet=True)
    shutil.rmtree(experiment.logger.log_dir)
    with pytest.raises(FileNotFoundError, match="was removed while the run wrote to it"):
        save_checkpoint(experiment)


def test_a_damaged_ray_checkpoint_names_the_kept_pair_to_resume_from(tmp_path) -> None:
    """A Ray run's ``controller_checkpoint.pt`` (or ``trainer_checkpoint.pt``) damaged, with
    ``keep_checkpoints``' numbered pairs beside it: the line names the latest pair (was
    "nothing to resume from it": only ``checkpoint_<N>.pt`` were looked for)."""
    from looprl.experiments.checkpoint import load_saved

    for name in ("controller_checkpoint", "trainer_checkpoint"):
        for frame in (300, 600):
            (tmp_path / f"{name}_{frame}.pt").write_bytes(b"kept")
        (tmp_path / f"{name}.pt").write_bytes(b"damaged")
    for name, pair in (("controller_checkpoint", "trainer_checkpoint"),
                       ("trainer_checkpoint", "controller_checkpoint")):
        with pytest.raises(ValueError, match=rf"; {name}_600.pt beside it is the run's latest "
                                             rf"other checkpoint: resume from it \(in place of "
                                             rf"{name}.pt, with {pair}_600.pt in place of "
                                             rf"{pair}.pt, for looprl run --resume\)$"):
            load_saved(tmp_path / f"{name}.pt")
