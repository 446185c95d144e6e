"""Tests of ``looprl.experiments.progress.TrainingProgress``."""

from __future__ import annotations

import io
import math

import pytest
from rich.console import Console

from looprl.experiments.progress import TrainingProgress
from looprl.meta.hyperparameters import agent_hyperparameters


def test_quiet_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with TrainingProgress(1000, "dqn CartPole-v1", quiet=True) as bar:
        for frame in range(1000):
            bar.update(frame + 1, frame // 10, 12.5)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ""


def test_default_console_completes(capsys: pytest.CaptureFixture[str]) -> None:
    with TrainingProgress(500, "dqn CartPole-v1") as bar:
        for frame in range(500):
            bar.update(frame + 1, frame // 50, None if frame < 100 else 3.0)
    assert capsys.readouterr().out == ""  # rich writes to stderr, never stdout


def test_bar_shows_frames_episodes_and_return() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=200, color_system=None)
    with TrainingProgress(2000, "dqn CartPole-v1", console=console) as bar:
        for frame in range(2000):
            bar.update(frame + 1, 17, 123.456)
    text = buffer.getvalue()
    assert "dqn CartPole-v1" in text
    assert "2,000/2,000 frames" in text
    assert "fps" in text
    assert "episodes 17" in text
    assert "return(100) 123.5" in text


def test_nan_return_and_update_outside_context() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=200, color_system=None)
    bar = TrainingProgress(10, "ppo", console=console)
    bar.update(5, 1, 1.0)  # before start: ignored
    bar.start()
    bar.update(10, 2, math.nan)
    bar.close()
    bar.close()  # idempotent
    assert "return(100) -" in buffer.getvalue()


def _plain_console(buffer: io.StringIO) -> Console:
    return Console(file=buffer, force_terminal=False, width=80, color_system=None)


def test_plain_lines_at_every_tenth_when_not_a_terminal() -> None:
    buffer = io.StringIO()
    with TrainingProgress(2000, "ppo on CartPole-v1", console=_plain_console(buffer)) as bar:
        for frame in range(8, 2001, 8):  # 8 environments per step
            bar.update(frame, frame // 100, 50.0)
    lines = buffer.getvalue().splitlines()
    assert len(lines) == 10  # one per tenth, none cut to the console's 80 columns
    assert lines[0].startswith("ppo on CartPole-v1: 200/2,000 frames (10%), ")
    assert lines[-1].startswith("ppo on CartPole-v1: 2,000/2,000 frames (100%), ")
    assert lines[-1].endswith("episodes 20, return(100) 50")
    assert all(" fps, " in line and " elapsed" in line for line in lines)


def test_plain_lines_of_a_later_call_start_at_its_first_frame() -> None:
    """A second ``train(frames=...)`` (or a resumed run) began at frame 1,001 of 2,000: its
    first line, printed at once, read "1,001/2,000 frames (50%), 0 fps"."""
    buffer = io.StringIO()
    with TrainingProgress(2000, "dqn", console=_plain_console(buffer)) as bar:
        for frame in range(1001, 2001):
            bar.update(frame, 45, 21.0)
    lines = buffer.getvalue().splitlines()
    assert lines[0].startswith("dqn: 1,200/2,000 frames (60%), ")
    assert not any(" 0 fps" in line for line in lines)


def test_a_later_train_call_shows_the_experiments_frames_and_episodes(
        tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """A ``train(frames=N)`` with its N frames already done printed "0/N frames (0%), 0 fps,
    episodes 0, return(100) -"."""
    from looprl.environments import GymEnvironment
    from looprl.experiments import make_experiment
    from looprl.presets.classic_control import dqn

    env = GymEnvironment("CartPole-v1")
    preset = dqn.env(env).hyperparameters(hidden=16).device("cpu").build()
    experiment = make_experiment(preset, env, train_steps=200, logdir=str(tmp_path), seed=0)
    experiment.train(frames=200)
    capsys.readouterr()
    experiment.train(frames=200)
    experiment.close()
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"dqn on CartPole-v1: {experiment.frame}/200 frames (100%), ")
    assert f"episodes {experiment.episode}, " in line and experiment.episode > 0


def test_a_run_past_its_budget_has_no_time_left() -> None:
    """A run stops at a step (or, on Ray, a poll) after its budget: the frames go past it,
    the time left stays 0 (it read "-1:59:59 left")."""
    buffer = io.StringIO()
    with TrainingProgress(100, "ppo", console=_plain_console(buffer), line_interval=0.0) as bar:
        for frame in (60, 336):
            bar.update(frame, 1, None)
    lines = buffer.getvalue().splitlines()
    assert lines[-1].startswith("ppo: 336 frames (budget 100 reached), ")
    assert " 0:00:00 left" in lines[-1]


def test_the_bar_of_a_run_past_its_budget_shows_the_budget_reached() -> None:
    """A vector step's last frames go past the budget: the bar read "1,007/1,000 frames"
    (and the plain line "(101%)")."""
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=200, color_system=None)
    with TrainingProgress(1000, "ppo", console=console) as bar:
        bar.update(1007, 3, 20.0)
    assert "1,007 frames (budget 1,000 reached)" in buffer.getvalue()
    assert "1,007/1,000" not in buffer.getvalue()


def test_plain_lines_also_by_time_and_for_episode_budgets() -> None:
    buffer = io.StringIO()
    bar = TrainingProgress(0, "dqn", console=_plain_console(buffer), line_interval=0.0)
    with bar:  # no frame budget: every update is due by time alone
        for frame in (5, 10, 15):
            bar.update(frame, 1, None)
    lines = buffer.getvalue().splitlines()
    assert [line.split(",")[0] for line in lines] == ["dqn: 5 frames", "dqn: 10 frames",
                                                      "dqn: 15 frames"]
    assert lines[-1].endswith("episodes 1, return(100) -")


def test_narrow_terminal_gets_a_bar_that_fits() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=80, color_system=None)
    with TrainingProgress(60_000, "rainbow on Acrobot-v1", console=console) as bar:
        for frame in range(0, 60_001, 8):
            bar.update(frame, 1261, -123.25)
    text = buffer.getvalue()
    assert text.startswith("rainbow on Acrobot-v1\n")  # the description on its own line
    last = text.split("\r")[-1]  # the final redraw
    assert "60,000/60,000" in last and "episodes 1261" in last
    assert "return(100) -123.2" in last and "…" not in last


def test_dashboard_shows_the_status_lines_under_the_bar_and_in_plain_lines() -> None:
    calls: list[int] = []

    def status() -> list[str]:
        calls.append(1)
        return ["loss/q 0.5", "hp/lr 0.001  hp/epsilon 0.1"]

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=200, color_system=None)
    with TrainingProgress(100_000, "dqn", console=console, status=status) as bar:
        for frame in range(100_000):
            bar.update(frame + 1, 1, 1.0)
    lines = buffer.getvalue().splitlines()
    bar_line = next(i for i, line in enumerate(lines) if "100,000/100,000 frames" in line)
    assert lines[bar_line + 1:bar_line + 3] == ["loss/q 0.5", "hp/lr 0.001  hp/epsilon 0.1"]
    assert len(calls) < 1000  # computed at redraws only, not at every update
    plain = io.StringIO()
    with TrainingProgress(10, "dqn", console=_plain_console(plain), status=status) as bar:
        bar.update(10, 1, 1.0)
    assert plain.getvalue().strip().endswith("; loss/q 0.5; hp/lr 0.001  hp/epsilon 0.1")


def test_experiment_dashboard_reads_the_last_losses_and_current_hyperparameters(
    tmp_path,
) -> None:
    from looprl.environments import GymEnvironment
    from looprl.experiments import make_experiment
    from looprl.experiments.experiment import dashboard, seed_everything
    from looprl.presets.classic_control import dqn

    seed_everything(0)
    env = GymEnvironment("CartPole-v1")
    preset = dqn.env(env).hyperparameters(replay_start_size=50, update_frequency=16,
                                          gradient_steps=1, hidden=16).device("cpu").build()
    experiment = make_experiment(preset, env, train_steps=300, logdir=str(tmp_path), quiet=True)
    experiment.train(frames=300)
    hp = agent_hyperparameters(experiment.agent)
    losses, hyperparameters = dashboard(experiment.logger, hp)()
    last = float(experiment.logger.last_losses["q"])
    assert losses == f"loss/q {last:.4g}"
    epsilon = experiment.agent.policy.greedy.epsilon
    assert f"hp/epsilon {epsilon:.4g}" in hyperparameters and epsilon < 1.0
    assert "hp/lr 0.0023" in hyperparameters


def test_a_local_multiagent_run_shows_each_agents_return_as_a_ray_run(
        tmp_path, monkeypatch) -> None:
    """The progress line's ``return(100) by agent`` (the team's return of a zero-sum game is
    always 0), which only a Ray run showed."""
    pytest.importorskip("pettingzoo")
    from looprl.environments import MultiagentPettingZooEnv
    from looprl.experiments import MultiagentEnvExperiment, experiment
    from looprl.presets.multiagent import dqn as multiagent_dqn

    shown = []

    class Progress(experiment.TrainingProgress):
        def __exit__(self, *error):
            shown.append(self.status())  # (its lines at the end)
            return super().__exit__(*error)

    monkeypatch.setattr(experiment, "TrainingProgress", Progress)
    game = MultiagentPettingZooEnv("tictactoe_v3", seed=0)
    preset = multiagent_dqn.hyperparameters(replay_start_size=50).env(game).device("cpu").build()
    run = MultiagentEnvExperiment(preset, game, str(tmp_path), quiet=True, seed=0)
    run.train(frames=200)
    means = {agent: logger.mean_return100 for agent, logger in run.agent_loggers.items()}
    assert set(means) == {"player_1", "player_2"} and means["player_1"] == -means["player_2"]
    line = shown[0][-1]
    assert line == (f"return(100) by agent: player_1 {means['player_1']:.4g}  "
                    f"player_2 {means['player_2']:.4g}")
    run.close()


def test_an_evaluation_shows_its_progress_unless_quiet(tmp_path, capsys) -> None:
    """``test(episodes=N)`` (``--test-episodes``) showed nothing while it ran."""
    from looprl.environments import GymEnvironment
    from looprl.experiments import make_experiment
    from looprl.presets.classic_control import dqn

    env = GymEnvironment("CartPole-v1")
    preset = dqn.env(env).hyperparameters(hidden=8).device("cpu").build()
    experiment = make_experiment(preset, env, logdir=str(tmp_path), seed=0)
    returns = experiment.test(episodes=3)
    lines = capsys.readouterr().err.splitlines()  # (not a terminal: plain lines, but not
    assert len(lines) == 1  # one per tenth as training's: one at its end in this short one)
    assert lines[-1].startswith("dqn on CartPole-v1: evaluation: 3/3 episodes (100%), ")
    assert lines[-1].endswith(f"return(100) {sum(returns) / 3:.4g}")
    assert " episodes/s, " in lines[-1] and "fps" not in lines[-1]
    experiment.quiet = True
    experiment.test(episodes=2)
    assert capsys.readouterr().err == ""
    experiment.close()
