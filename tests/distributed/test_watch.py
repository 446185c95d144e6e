"""``looprl watch`` of a distributed run: the policy in ``policy.pt``, rebuilt from the
run's ``algorithm.pt``, plays in the run's environment (a GIF without a display)."""

from __future__ import annotations

import os
from functools import partial

import numpy as np
import pytest
import torch

from looprl.cli import main as cli
from looprl.distributed import AlgorithmSpec
from looprl.distributed.pipeline import evaluation_episodes
from looprl.distributed.watch import save_spec, watch_run
from looprl.environments.srl import Environment, make, register, step_result
from looprl.experiments.watch import render_env

CARTPOLE = {"obs_dim": {"obs": 4}, "action_dim": 2}


def evaluate(spec: AlgorithmSpec, checkpoint, episodes: int, seed: int) -> list[float]:
    """The returns of Ray's final evaluation of the policy of ``checkpoint``."""
    return [episode.ret for episode in evaluation_episodes(spec, checkpoint, episodes, seed)]


def run_dir(tmp_path, spec: AlgorithmSpec, seed: int = 3):
    """What a distributed run leaves: its spec and a policy checkpoint (here: an untrained
    policy of ``seed``, unlike the one ``spec.make_policy()`` builds)."""
    save_spec(spec, tmp_path)
    policy = spec.make_policy() if seed is None else AlgorithmSpec(
        env=spec.env, policy=spec.policy, policy_args={**spec.policy_args, "seed": seed},
        trainer=spec.trainer).make_policy()
    torch.save(policy.get_checkpoint(), tmp_path / "policy.pt")
    return policy


def test_watching_a_run_plays_its_policy_into_a_gif(tmp_path, capsys, monkeypatch):
    pytest.importorskip("pygame")
    spec = AlgorithmSpec(env="CartPole-v1", policy="actor-critic-separate",
                         policy_args={**CARTPOLE, "seed": 0}, trainer="ppo")
    saved = run_dir(tmp_path, spec)
    monkeypatch.setenv("SDL_VIDEODRIVER", "")  # (unset here, and as it was after the test)
    monkeypatch.delenv("SDL_VIDEODRIVER")
    returns, path = watch_run(tmp_path, episodes=2, gif=tmp_path / "w.gif", seed=5)
    assert "SDL_VIDEODRIVER" not in os.environ  # (was: pygame's dummy driver from then on)
    # the saved policy, not the spec's own initial one, played: evaluate() agrees
    assert returns == evaluate(spec, saved.get_checkpoint(), 2, seed=5)
    assert returns != evaluate(spec, None, 2, seed=5)
    assert path == tmp_path / "w.gif" and path.stat().st_size > 1000
    assert cli(["watch", str(tmp_path), "--episodes", "1"]) == 0
    out = capsys.readouterr().out
    first = evaluate(spec, saved.get_checkpoint(), 1, seed=0)[0]  # the CLI's seed: 0
    assert f"episode 1: return {first:.1f}" in out and "watch.gif" in out
    assert cli(["watch", str(tmp_path), "--best"]) == 2  # (a run that never evaluated)
    assert capsys.readouterr().err.strip().endswith(
        "No best_policy.pt in " + str(tmp_path) + ": a distributed run writes algorithm.pt when "
        "it starts and policy.pt when it ends, best_policy.pt when it evaluates on the way "
        "(runner.eval_every=N)")
    (tmp_path / "best").mkdir()
    best = run_dir(tmp_path / "best", spec, seed=11)  # (another policy: the best so far)
    (tmp_path / "best" / "policy.pt").rename(tmp_path / "best_policy.pt")
    returns = evaluate(spec, best.get_checkpoint(), 1, seed=0)[0]
    assert returns != first  # (the two policies tell apart)
    assert cli(["watch", str(tmp_path), "--best", "--episodes", "1"]) == 0
    assert f"episode 1: return {returns:.1f}" in capsys.readouterr().out


def test_watching_the_directory_of_a_looprl_run_on_ray_finds_its_policy(tmp_path, capsys):
    """``looprl run runtime=ray`` writes the run into ``RUN_DIR/ALGORITHM/ENV/``, not a
    ``preset.pt`` at the top as a local run does (was: "No saved preset at RUN_DIR/preset.pt")."""
    pytest.importorskip("pygame")
    spec = AlgorithmSpec(env="CartPole-v1", policy="actor-critic-separate",
                         policy_args={**CARTPOLE, "seed": 0}, trainer="ppo")
    experiment = tmp_path / "ppo" / "CartPole-v1"
    experiment.mkdir(parents=True)
    saved = run_dir(experiment, spec)
    (tmp_path / "results.json").write_text("{}")
    assert cli(["watch", str(tmp_path), "--episodes", "1"]) == 0
    out = capsys.readouterr().out
    first = evaluate(spec, saved.get_checkpoint(), 1, seed=0)[0]
    assert f"episode 1: return {first:.1f}" in out and str(experiment / "watch.gif") in out


def test_an_atari_run_renders_its_preprocessed_frames(tmp_path):
    pytest.importorskip("ale_py")
    env = make("atari", game="Breakout", render_mode="rgb_array")
    with pytest.raises(RuntimeError, match="before reset"):
        env.render()
    env.reset()
    frame = env.render()
    assert frame.shape == (84, 84, 3) and frame.dtype == np.uint8
    env.close()
    with pytest.raises(ValueError, match="not render_mode='human'"):
        make("atari", game="Breakout", render_mode="human")


class Blind(Environment):
    """An environment that cannot render."""

    agent_count = 1

    def reset(self):
        return [step_result({"obs": np.zeros(4, np.float32)}, 0.0, False)]

    def step(self, actions):
        return [step_result({"obs": np.zeros(4, np.float32)}, 1.0, True)]


def test_watching_an_environment_that_cannot_render_is_one_line(tmp_path, capsys):
    register("tests-blind", Blind)
    run_dir(tmp_path, AlgorithmSpec(env="tests-blind", policy="actor-critic-separate",
                                    policy_args=CARTPOLE, trainer="ppo"))
    assert cli(["watch", str(tmp_path)]) == 2
    assert "Blind does not render: implement render()" in capsys.readouterr().err


def test_a_window_falls_back_to_frames_where_the_constructor_takes_no_render_mode():
    """(Not ``rendering(build, "human")``: that builds it without one and calls it a window.)"""
    register("tests-blind-window", Blind)
    spec = AlgorithmSpec(env="tests-blind-window", policy="actor-critic-separate",
                         policy_args=CARTPOLE, trainer="ppo")
    env, window = render_env(partial(make, spec.env, **spec.env_args), window=True)
    assert isinstance(env, Blind) and not window


def test_a_directory_without_a_run_is_one_line(tmp_path, capsys):
    assert cli(["watch", str(tmp_path)]) == 2
    assert "No saved preset at" in capsys.readouterr().err


def test_watching_a_ray_runs_policy_file_plays_its_run(tmp_path, capsys):
    """(was: "policy.pt holds a dict, not a looprl preset"; ``load_preset`` of the run's
    ``algorithm.pt``: "holds a AlgorithmSpec", with no word of what to do)"""
    pytest.importorskip("pygame")
    from looprl.presets import load_preset

    spec = AlgorithmSpec(env="CartPole-v1", policy="actor-critic-separate",
                         policy_args={**CARTPOLE, "seed": 0}, trainer="ppo")
    saved = run_dir(tmp_path, spec)
    assert cli(["watch", str(tmp_path / "policy.pt"), "--episodes", "1"]) == 0
    first = evaluate(spec, saved.get_checkpoint(), 1, seed=0)[0]
    assert f"episode 1: return {first:.1f}" in capsys.readouterr().out
    with pytest.raises(ValueError, match=f"holds an AlgorithmSpec, not a looprl preset "
                       rf"\(a distributed run's file: watch the run with looprl watch {tmp_path}"):
        load_preset(str(tmp_path / "algorithm.pt"))
