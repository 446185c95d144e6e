"""OnlineRunner and the Runner base: the documented keys of train and evaluate."""

from __future__ import annotations

import logging
import re

import numpy as np
import pytest

from helpers import leaves_global_random_numbers
from looprl.environments import GymEnvironment
from looprl.meta import HPSchedule
from looprl.presets.classic_control import ppo
from looprl.runners import EVAL_KEYS, TRAIN_KEYS, OnlineRunner, Runner


def test_run_returns_train_and_eval_results_with_the_documented_keys(small_ppo):
    runner = OnlineRunner(small_ppo, "CartPole-v1", num_steps=256, seed=0, eval_episodes=3,
                          quiet=True)
    train_results, eval_results = runner.run()
    assert tuple(train_results) == TRAIN_KEYS
    assert tuple(eval_results) == EVAL_KEYS
    assert train_results["step"] >= 256
    assert train_results["episodes"] == len(train_results["returns"]) > 0
    assert train_results["mean_return"] == pytest.approx(np.mean(train_results["returns"]))
    assert eval_results["episodes"] == len(eval_results["returns"]) == 3
    assert eval_results["mean_eval_reward"] == pytest.approx(np.mean(eval_results["returns"]))
    assert eval_results["std_eval_reward"] == pytest.approx(np.std(eval_results["returns"]))
    assert eval_results["step"] == train_results["step"]
    assert all(r >= 1 for r in eval_results["returns"])  # CartPole: >= 1 per episode


def test_train_continues_the_agent_and_reports_only_this_calls_episodes(small_ppo):
    runner = Runner(small_ppo, GymEnvironment("CartPole-v1"), seed=0, quiet=True)
    assert runner.agent is None  # (Mighty's ``self.agent``: none before the first agent)
    first = runner.train(128)
    agent = runner.agent
    assert agent is runner.experiment.agent and hasattr(agent, "act")
    second = runner.train(128)
    assert second["step"] >= first["step"] + 128
    assert second["episodes"] == first["episodes"] + len(second["returns"])


def test_train_and_evaluate_take_whole_counts_only(small_ppo):
    # was: train(1.5) trained 1 step and evaluate(2.5) played 2 episodes; text failed deep
    runner = Runner(small_ppo, "CartPole-v1", quiet=True)
    for bad in (1.5, "64", -1, True):
        with pytest.raises(ValueError, match=re.escape(
                f"train(num_steps) must be a whole number >= 0, got {bad!r}")):
            runner.train(bad)
    runner.new_agent()
    for bad in (2.5, "two", float("nan")):
        with pytest.raises(ValueError, match=r"^evaluate\(episodes\) must be a whole number"):
            runner.evaluate(bad)
    with pytest.raises(ValueError, match="eval_episodes .* must be a whole number >= 0, got 0.5"):
        Runner(small_ppo, "CartPole-v1", eval_episodes=0.5)


def test_a_seeded_run_is_reproducible(small_ppo):
    """... and leaves the caller's global random numbers as they were (was: reseeded, so a sweep
    drawing each trial's values between runs drew the same ones from the second trial on)."""
    results = [leaves_global_random_numbers(OnlineRunner(
        small_ppo, "CartPole-v1", num_steps=128, seed=3, quiet=True, eval_episodes=2).run)
        for _ in range(2)]
    assert results[0][0]["returns"] == results[1][0]["returns"]
    assert results[0][1]["returns"] == results[1][1]["returns"]


def test_logdir_writes_a_run_directory(small_ppo, tmp_path):
    OnlineRunner(small_ppo, "CartPole-v1", num_steps=64, logdir=str(tmp_path), quiet=True,
                 eval_episodes=1).run()
    assert (tmp_path / "ppo" / "CartPole-v1" / "results.csv").exists()


def test_evaluate_before_any_agent_and_bad_inputs_are_clear_errors(small_ppo):
    with pytest.raises(RuntimeError, match="No agent yet"):
        Runner(small_ppo, "CartPole-v1").evaluate()
    with pytest.raises(TypeError, match="preset builder"):
        Runner(ppo.env(GymEnvironment("CartPole-v1")).build(), "CartPole-v1")
    with pytest.raises(ValueError, match="num_steps must be positive"):
        OnlineRunner(small_ppo, "CartPole-v1", num_steps=0)
    for flag in ("quiet", "verbose"):  # (text such as 'maybe', true in Python, was taken)
        with pytest.raises(ValueError, match=f"^{flag} \\(looprl run's logging.{flag}\\) must "
                           "be True or False, got 'maybe'$"):
            OnlineRunner(small_ppo, "CartPole-v1", **{flag: "maybe"})


def test_meta_components_run_and_hp_keys_reach_the_trainer_under_them(small_ppo):
    schedule = HPSchedule("hp/entropy_coef", "linear", 0.01, 0.0, duration=100, per="step")
    runner = Runner(small_ppo.hyperparameters(linear_clip=False), "CartPole-v1",
                    meta=schedule, quiet=True)  # (one component, as Mighty's: was not iterable)
    assert runner.meta == (schedule,)
    runner.new_agent(train_steps=128)
    runner.set_hyperparameters({"hp/clip": 0.33})
    runner.train(64)
    metrics = runner.experiment.hub.metrics  # published from the trainer's own getters
    assert metrics["hp/clip"] == pytest.approx(0.33)
    assert 0.0 <= metrics["hp/entropy_coef"] < 0.01
    with pytest.raises(KeyError, match="'hp/nope' is not a hyperparameter.*hp/clip"):
        runner.set_hyperparameters({"hp/nope": 1})
    with pytest.raises(KeyError, match="'clip' is not a hyperparameter of this agent. Did you "
                                       "mean 'hp/clip'\\?"):
        runner.set_hyperparameters({"clip": 0.2})
    with pytest.raises(ValueError, match="hp/clip must be >= 0, got -0.1"):  # (as the hub's)
        runner.set_hyperparameters({"hp/clip": -0.1})


def test_eval_every_keeps_the_best_agent_so_far(small_ppo, tmp_path):
    import torch

    from looprl.cli import main as cli
    from looprl.presets import load_preset

    runner = OnlineRunner(small_ppo, "CartPole-v1", num_steps=640, seed=0, eval_episodes=2,
                          quiet=True, logdir=str(tmp_path), eval_every=128)
    snapshots = []
    keep = runner._evaluate_and_keep_best

    def evaluate_and_keep_best():
        keep()
        model = runner.preset.model.parameters()
        snapshots.append(torch.nn.utils.parameters_to_vector(model).detach().clone())

    runner._evaluate_and_keep_best = evaluate_and_keep_best
    played = []
    evaluate = runner.evaluate
    runner.evaluate = lambda: played.append(1) or evaluate()
    train_results, final = runner.run()
    assert len(played) == 5 and final["step"] == runner.experiment.frame  # (the last
    # evaluation, at the final step, is the final one: was played twice, logged twice)
    evaluations = train_results["evaluations"]
    assert [step // 128 for step, _ in evaluations] == [1, 2, 3, 4, 5]  # (at the first
    # batched step past each multiple of eval_every: a copy that resets takes no env step)
    rows = (tmp_path / "eval_results.csv").read_text().splitlines()
    assert rows[0] == "step,mean_eval_reward,std_eval_reward,episodes,set" and len(rows) == 6
    assert all(row.endswith(",train_set") for row in rows[1:])
    best = max(range(5), key=lambda i: evaluations[i][1])  # the first of equal bests
    assert train_results["best"] == evaluations[best]
    saved = load_preset(str(tmp_path / "best_preset.pt"), device="cpu").model.parameters()
    assert torch.equal(torch.nn.utils.parameters_to_vector(saved), snapshots[best])
    assert cli(["watch", str(tmp_path), "--best", "--env", "CartPole-v1", "--gif",
                str(tmp_path / "best.gif"), "--max-steps", "20"]) == 0


def test_eval_every_shows_no_progress_of_an_empty_last_chunk(small_ppo, capsys):
    """Its loop's last ``train(0)``, after the final evaluation, printed the final progress
    line again, at "0 fps"."""
    runner = OnlineRunner(small_ppo, "CartPole-v1", num_steps=128, seed=0, eval_episodes=1,
                          eval_every=64)
    runner.run()
    runner.close()
    lines = capsys.readouterr().err.splitlines()
    assert lines and not [line for line in lines if " 0 fps" in line]


def test_eval_every_without_evaluation_episodes_is_refused(small_ppo, tmp_path):
    # was: every evaluation a NaN row of eval_results.csv, no best_preset.pt ever saved, and
    # results' "best" the first NaN, silently
    with pytest.raises(ValueError, match="runner=online scores each agent that eval_every "
                                         "compares .* needs eval_episodes >= 1"):
        OnlineRunner(small_ppo, "CartPole-v1", num_steps=128, eval_every=64, eval_episodes=0,
                     logdir=str(tmp_path))
    OnlineRunner(small_ppo, "CartPole-v1", num_steps=128, eval_episodes=0)  # (no eval_every)


def test_evaluate_without_evaluation_episodes_says_so(small_ppo):
    """``eval_episodes=0`` (no evaluation): ``evaluate()`` gave ``mean_eval_reward=nan``;
    ``run()`` still reports its empty evaluation (``looprl run test_episodes=0``)."""
    runner = OnlineRunner(small_ppo, "CartPole-v1", num_steps=16, eval_episodes=0, quiet=True)
    _, evaluation = runner.run()
    assert evaluation["episodes"] == 0 and evaluation["step"] == 16
    for episodes, given in ((None, "eval_episodes=0: no evaluation"), (0, "episodes=0")):
        with pytest.raises(ValueError, match=r"OnlineRunner.evaluate\(\) of 0 episodes plays "
                                             rf"none \({given}\): give evaluate\(episodes=N\)"):
            runner.evaluate(episodes)
    assert runner.evaluate(1)["episodes"] == 1


def test_a_resumed_run_evaluates_again_what_it_evaluated_after_its_checkpoint(small_ppo,
                                                                             tmp_path):
    options = {"num_steps": 192, "seed": 0, "eval_episodes": 1, "quiet": True,
               "logdir": str(tmp_path), "eval_every": 64, "checkpoint_every": 128}
    first, _ = OnlineRunner(small_ppo, "CartPole-v1", **options).run()  # (as if killed after
    checkpoint = str(next(tmp_path.rglob("checkpoint.pt")))  # 192)
    resumed, _ = OnlineRunner(small_ppo, "CartPole-v1", resume_from=checkpoint, **options).run()
    assert resumed["evaluations"] == first["evaluations"]
    rows = (tmp_path / "eval_results.csv").read_text().splitlines()[1:]
    assert [int(row.split(",")[0]) for row in rows] == [s for s, _ in first["evaluations"]]


def test_a_blank_line_in_eval_results_does_not_stop_a_resume(small_ppo, tmp_path):
    options = {"num_steps": 128, "seed": 0, "eval_episodes": 1, "quiet": True,
               "logdir": str(tmp_path), "eval_every": 64, "checkpoint_every": 128}
    first, _ = OnlineRunner(small_ppo, "CartPole-v1", **options).run()
    with open(tmp_path / "eval_results.csv", "a") as file:
        file.write("\n")  # (as an editor leaves it)
    checkpoint = str(next(tmp_path.rglob("checkpoint.pt")))
    resumed, _ = OnlineRunner(small_ppo, "CartPole-v1", resume_from=checkpoint, **options).run()
    assert resumed["evaluations"] == first["evaluations"]
    with open(tmp_path / "eval_results.csv", "a") as file:
        file.write("64,abc,0,1,train_set\n")
    with pytest.raises(ValueError, match=r"eval_results.csv has a row without a step and a mean "
                       r"return \(hand-edited\?\): restore the file, or delete the row"):
        OnlineRunner(small_ppo, "CartPole-v1", resume_from=checkpoint, **options).run()


def test_a_new_run_in_the_same_logdir_starts_its_own_eval_results(small_ppo, tmp_path):
    runner = OnlineRunner(small_ppo, "CartPole-v1", num_steps=128, seed=0, eval_episodes=1,
                          quiet=True, logdir=str(tmp_path), eval_every=64)
    first, _ = runner.run()
    second, _ = OnlineRunner(small_ppo, "CartPole-v1", num_steps=128, seed=1, eval_episodes=1,
                             quiet=True, logdir=str(tmp_path), eval_every=64).run()
    rows = (tmp_path / "eval_results.csv").read_text().splitlines()
    assert len(rows) == 1 + len(second["evaluations"]) == 3  # (not the first run's too)
    assert runner.run()[0]["evaluations"] == first["evaluations"]  # run() again: anew


def test_a_resumed_run_takes_its_own_logging_settings(small_ppo, tmp_path):
    options = {"num_steps": 128, "seed": 0, "eval_episodes": 1, "logdir": str(tmp_path),
               "checkpoint_every": 64}
    OnlineRunner(small_ppo, "CartPole-v1", quiet=True, **options).run()
    checkpoint = str(next(tmp_path.rglob("checkpoint.pt")))
    runner = OnlineRunner(small_ppo, "CartPole-v1", quiet=False, verbose=False, **options)
    runner.resume(checkpoint)  # (looprl run --resume RUN logging.quiet=false ...)
    assert runner.experiment.quiet is False and runner.experiment.logger.verbose is False
    runner.close()


def test_each_new_agent_starts_its_meta_components_as_given(small_ppo):
    """(Was: every agent of a runner, and so every trial of a search, ran the same component
    objects: the second went on from the first's state, e.g. RND's networks and counts.)"""
    from tests.configs.user_parts import StepCounter

    given, on_builder = StepCounter(), StepCounter()
    runner = Runner(small_ppo.meta(on_builder), "CartPole-v1", meta=[given], quiet=True)
    for _ in range(2):
        runner.new_agent(train_steps=128)
        runner.train(64)
        first, second = runner.experiment.hub.components  # (the run's copies, documented)
        assert first.start == second.start == 0 and first.steps >= 16  # (4 copies a step)
    assert given.steps == on_builder.steps == 0 and first is not on_builder


def test_a_component_that_cannot_be_copied_is_one_line(small_ppo):
    """(Was: copy's "TypeError: cannot pickle '_thread.lock' object", a traceback from inside
    the copy, naming no component.)"""
    import threading

    from looprl.meta import MetaComponent

    class Locked(MetaComponent):
        def __init__(self) -> None:
            super().__init__()
            self.lock = threading.Lock()

    with pytest.raises(TypeError, match=r"^a new agent's runs start from copies of the meta "
                       r"components, and one of \[.*Locked\(\)\] cannot be copied \(TypeError: "
                       "cannot pickle '_thread.lock' object\\): make it picklable") as error:
        Runner(small_ppo, "CartPole-v1", meta=[Locked()])
    assert error.value.__cause__ is None and error.value.__suppress_context__


def test_an_evaluation_during_training_leaves_a_single_env_run_as_it_was(tmp_path) -> None:
    """A runner evaluates a single-environment preset (DQN) in a copy of its environment: the
    training that follows is the one without the evaluation (was: played in the training
    environment, reseeded, so Optuna's retrained best/ was not the winning trial's agent)."""
    import torch

    from looprl.presets.classic_control import dqn

    def trained(evaluate: bool) -> tuple[list[float], torch.Tensor]:
        runner = OnlineRunner(dqn.hyperparameters(replay_start_size=100), "CartPole-v1",
                              num_steps=1000, eval_episodes=2, seed=0,
                              logdir=str(tmp_path / str(evaluate)))
        runner.train(300)
        if evaluate:
            runner.evaluate()
        runner.train(300)
        returns = list(runner.experiment.logger._returns)
        weights = torch.cat([p.detach().flatten() for p in runner.preset.model.parameters()])
        runner.close()
        return returns, weights

    (plain, plain_weights), (evaluated, evaluated_weights) = trained(False), trained(True)
    assert evaluated == plain and len(plain) > 10
    assert torch.equal(evaluated_weights, plain_weights)


def test_a_resume_past_the_planned_budget_says_its_schedules_stay_at_their_end(
        small_ppo, tmp_path, caplog):
    """``looprl run --resume DIR frames=N`` past the run's budget: PPO's learning rate had
    annealed to 0 over the first budget, and the extension trained nothing, silently."""
    options = {"seed": 0, "eval_episodes": 0, "quiet": True, "logdir": str(tmp_path),
               "checkpoint_every": 128}
    OnlineRunner(small_ppo, "CartPole-v1", num_steps=128, **options).run()
    checkpoint = str(next(tmp_path.rglob("checkpoint.pt")))
    caplog.set_level(logging.WARNING, "looprl.runners")
    OnlineRunner(small_ppo, "CartPole-v1", num_steps=192, resume_from=checkpoint,
                 **options).run()
    assert ("Training to 192 frames goes past the 128 its schedules" in
            caplog.text and "start a new run with frames=192" in caplog.text), caplog.text
    # a budget below the checkpoint's frame (as if frames were more to train): one line, as on
    # Ray (was: trained nothing, evaluated, and reported the 128 frames as a run of 64)
    with pytest.raises(ValueError, match=r"^\S+'s checkpoint is at frame 128, past the 64 "
                       r"frames asked for: nothing to resume; give a larger budget \(frames=N\) "
                       r"to train it on"):
        OnlineRunner(small_ppo, "CartPole-v1", num_steps=64, resume_from=checkpoint,
                     **options).run()


def test_a_resume_with_other_checkpoint_settings_is_one_line(small_ppo, tmp_path,
                                                            monkeypatch):
    """As ``looprl run --resume``'s (was: the checkpoint's ``checkpoint_every`` and
    ``checkpoint_replay`` kept silently); ``keep_checkpoints`` may change, as there. A refused
    resume closes the experiment it loaded (its log files), as one below the checkpoint's
    frame does."""
    from looprl.experiments.checkpoint import load_checkpoint, numbered_checkpoints

    closed, close = [], OnlineRunner.close_experiment
    monkeypatch.setattr(OnlineRunner, "close_experiment",
                        lambda self, experiment: closed.append(experiment.frame) or close(
                            self, experiment))
    options = {"seed": 0, "eval_episodes": 0, "quiet": True, "logdir": str(tmp_path)}
    OnlineRunner(small_ppo, "CartPole-v1", num_steps=64, checkpoint_every=64, **options).run()
    checkpoint, closed[:] = next(tmp_path.rglob("checkpoint.pt")), []
    for changed, said in (({"checkpoint_every": 32}, "checkpoint_every: 64 -> 32"),
                          ({"checkpoint_every": 64, "checkpoint_replay": False},
                           "checkpoint_replay: True -> False")):
        with pytest.raises(ValueError, match=rf"^{re.escape(str(checkpoint))} was run with "
                           rf"another config \({said}\); resume it with its own, or start a "
                           r"new run$"):
            OnlineRunner(small_ppo, "CartPole-v1", num_steps=128, resume_from=str(checkpoint),
                         **options, **changed).run()
    with pytest.raises(ValueError, match="past the 32 frames asked for"):
        OnlineRunner(small_ppo, "CartPole-v1", num_steps=32, resume_from=str(checkpoint),
                     **options).run()
    assert len(closed) == 3  # (each refused resume's)
    OnlineRunner(small_ppo, "CartPole-v1", num_steps=128, resume_from=str(checkpoint),
                 checkpoint_every=64, keep_checkpoints=1, **options).run()
    assert list(numbered_checkpoints(checkpoint.parent)) == [128]
    OnlineRunner(small_ppo, "CartPole-v1", num_steps=192, resume_from=str(checkpoint),
                 **options).run()  # (none asked for: the checkpoint's own kept)
    assert load_checkpoint(str(checkpoint)).frame >= 192


def test_a_ray_runs_checkpoint_resumed_here_says_how_to_resume_it(small_ppo, tmp_path):
    """``resume_from`` a Ray run's ``controller_checkpoint.pt``: one line (was: an
    ``AttributeError`` on its ``preset``)."""
    from looprl.distributed.run_state import ControllerState, DistributedResult
    from looprl.experiments.checkpoint import save_checkpoint
    from looprl.experiments.logger import MemoryLogger

    path = save_checkpoint(ControllerState(MemoryLogger(), DistributedResult()),
                           tmp_path / "controller_checkpoint.pt")
    with pytest.raises(ValueError, match=r"controller_checkpoint.pt is the checkpoint of a Ray "
                       r"run \(a ControllerState\): resume it with DistributedRun\(\.\.\., "
                       r"resume_from=RUN_DIR\) \(looprl run --resume RUN_DIR\)$"):
        OnlineRunner(small_ppo, "CartPole-v1", num_steps=64, resume_from=str(path),
                     quiet=True).run()
