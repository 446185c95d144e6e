"""Checkpoints of Atari experiments: exact at the episode ends of one environment; vector
environments restart their running episodes and train on."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("ale_py")

import torch  # noqa: E402

from looprl.environments.atari import AtariEnvironment  # noqa: E402
from looprl.experiments import make_experiment  # noqa: E402
from looprl.experiments.checkpoint import load_checkpoint  # noqa: E402
from looprl.experiments.experiment import seed_everything  # noqa: E402
from looprl.presets.atari import dqn, ppo  # noqa: E402


def _experiment(builder, logdir: Path, frames: int, every: int, episode_frames: int):
    seed_everything(0)
    env = AtariEnvironment("Breakout", seed=0, max_episode_frames=episode_frames)
    preset = builder.env(env).device("cpu").build()
    return make_experiment(preset, env, train_steps=frames, logdir=str(logdir), quiet=True,
                           seed=0, checkpoint_every=every)


def _parameters(experiment) -> torch.Tensor:
    return torch.nn.utils.parameters_to_vector(experiment.preset.model.parameters())


def test_an_atari_dqn_resumed_at_a_checkpoint_ends_as_an_uninterrupted_run(tmp_path) -> None:
    # episodes of 50 steps: the checkpoints due at frames 70 and 140 wait for the episode ends
    # at 100 and 150 (was: taken mid-episode, whose resume played another run); the resumed
    # run trains 100 frames on, 25 updates (200 frames in all, not 300: a third less time)
    frames, every = 200, 70
    builder = dqn.hyperparameters(replay_start_size=30, replay_buffer_size=1000,
                                  minibatch_size=8, final_exploration_step=200,
                                  target_update_frequency=10)
    full = _experiment(builder, tmp_path / "full", frames, every, episode_frames=200)
    full.train(frames=frames)
    full.close()
    cut = _experiment(builder, tmp_path / "cut", frames, every, episode_frames=200)
    cut.train(frames=101)  # one step past the checkpoint, then dropped
    cut.close()
    run_dir = Path(cut.logger.log_dir)
    resumed = load_checkpoint(run_dir)
    assert (resumed.frame, resumed.episode) == (100, 2) and resumed.env.needs_reset
    resumed.train(frames=frames)  # resets with the seed fixed at the checkpoint
    resumed.close()
    full_dir = Path(full.logger.log_dir)
    assert (run_dir / "results.csv").read_text() == (full_dir / "results.csv").read_text()
    assert torch.equal(_parameters(resumed), _parameters(full))


def test_an_atari_ppo_resumed_restarts_its_episodes_and_trains_on(tmp_path) -> None:
    builder = ppo.hyperparameters(n_envs=2, n_steps=16, minibatch_size=16, epochs=1)
    # every episode is truncated after 40 steps (80 frames of the two copies)
    run = _experiment(builder, tmp_path, 200, 64, episode_frames=160)
    run.train(frames=100)  # on past the checkpoint at frame 64 and the episode ends at 80
    run.close()
    run_dir = Path(run.logger.log_dir)
    resumed = load_checkpoint(run_dir)
    updates = resumed.agent.agent.agent.trainer.updates
    assert (resumed.frame, resumed.episode) == (64, 0) and updates == 2
    assert resumed.vector_env.needs_reset
    resumed.train(frames=200)
    resumed.close()
    assert resumed.frame == 200 and resumed.agent.agent.agent.trainer.updates == 6
    # new episodes started at frame 64 and ended 40 steps later; the cut ones were not logged
    rows = (run_dir / "results.csv").read_text().splitlines()[1:]
    assert [row.split(",")[:2] for row in rows] == [["144", "1"], ["144", "2"]]
