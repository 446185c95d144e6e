"""``keep_checkpoints=K``: beside the rolling ``checkpoint.pt``, the last K checkpoints stay
as ``checkpoint_<frame>.pt`` (Mighty keeps one per step); older ones are deleted."""

from __future__ import annotations

from pathlib import Path

import pytest

from looprl.experiments.checkpoint import load_checkpoint, numbered_checkpoints
from looprl.runners import OnlineRunner


def test_the_last_k_checkpoints_are_kept_by_frame(small_ppo, tmp_path: Path) -> None:
    runner = OnlineRunner(small_ppo, "CartPole-v1", num_steps=160, checkpoint_every=32,
                          keep_checkpoints=2, logdir=str(tmp_path), eval_episodes=1, seed=0,
                          quiet=True)
    runner.run()
    runner.close()
    run_dir = tmp_path / "ppo" / "CartPole-v1"
    kept = numbered_checkpoints(run_dir)
    first, last = kept
    assert 96 < first < last  # the last two of five (every 32 of 160 frames)
    assert sorted(p.name for p in run_dir.glob("checkpoint*")) == [
        "checkpoint.pt", f"checkpoint_{first}.pt", f"checkpoint_{last}.pt"]
    assert load_checkpoint(kept[first]).frame == first  # each the state at its frame
    assert load_checkpoint(run_dir / "checkpoint.pt").frame == last


def test_without_keep_checkpoints_one_rolling_file(small_ppo, tmp_path: Path) -> None:
    runner = OnlineRunner(small_ppo, "CartPole-v1", num_steps=64, checkpoint_every=32,
                          logdir=str(tmp_path), eval_episodes=1, seed=0, quiet=True)
    runner.run()
    runner.close()
    run_dir = tmp_path / "ppo" / "CartPole-v1"
    assert [p.name for p in run_dir.glob("checkpoint*")] == ["checkpoint.pt"]


@pytest.mark.parametrize("kwargs, message", [
    (dict(keep_checkpoints=3), "keep_checkpoints=3 keeps the checkpoints checkpoint_every"),
    (dict(keep_checkpoints=0, checkpoint_every=32), "keep_checkpoints must be positive"),
    (dict(keep_checkpoints=1.5, checkpoint_every=32), "keep_checkpoints must be positive"),
])
def test_bad_keep_checkpoints_are_one_line_errors(small_ppo, tmp_path, kwargs, message) -> None:
    with pytest.raises(ValueError, match=message) as info:
        OnlineRunner(small_ppo, "CartPole-v1", logdir=str(tmp_path), **kwargs)
    assert "\n" not in str(info.value)


def test_an_experiment_built_with_keep_checkpoints_keeps_them(tmp_path) -> None:
    from looprl.environments import GymEnvironment
    from looprl.experiments import make_experiment
    from looprl.presets.classic_control import dqn

    env = GymEnvironment("CartPole-v1")
    preset = dqn.hyperparameters(replay_start_size=10, hidden=8).env(env).device("cpu").build()
    experiment = make_experiment(preset, env, logdir=str(tmp_path), quiet=True, seed=0,
                                 checkpoint_every=20, keep_checkpoints=2)
    experiment.train(frames=100)
    experiment.close()
    kept = numbered_checkpoints(experiment.logger.log_dir)
    assert len(kept) == 2 and max(kept) >= 80
    with pytest.raises(ValueError, match="set checkpoint_every too"):
        make_experiment(preset, env, logdir=str(tmp_path), quiet=True, keep_checkpoints=2)
