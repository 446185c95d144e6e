"""ALL's console scripts as ``looprl-*`` (looprl.scripts): ALL's arguments, looprl's commands."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest
import torch

from looprl import cli
from looprl.scripts import (
    plot,
    train_atari,
    train_classic,
    train_continuous,
    train_mujoco,
    train_multiagent_atari,
    watch_classic,
    watch_multiagent_atari,
)

SCRIPTS = ["plot", "atari", "classic", "continuous", "mujoco", "multiagent-atari",
           *(f"watch-{name}" for name in ("atari", "classic", "continuous", "mujoco",
                                          "multiagent-atari"))]


@pytest.fixture(autouse=True)
def _no_display(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("LOOPRL_DEBUG", raising=False)
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def classic_process(tmp_path_factory: pytest.TempPathFactory
                    ) -> tuple[subprocess.CompletedProcess, Path]:
    """``looprl-classic`` with ALL's options, as a user runs it (a process of its own, headless);
    the process and its run directory."""
    logdir = tmp_path_factory.mktemp("all_scripts")
    script = Path(sys.executable).with_name("looprl-classic")
    command = [str(script)] if script.exists() else [sys.executable, "-m",
                                                     "looprl.scripts.train_classic"]
    env = {key: value for key, value in os.environ.items()
           if key not in ("DISPLAY", "WAYLAND_DISPLAY", "LOOPRL_DEBUG")}
    done = subprocess.run([*command, "CartPole-v1", "dqn", "--frames", "200", "--logdir",
                           str(logdir), "--device", "cpu", "--save_freq", "2",
                           "--hyperparameters", "lr=0.01", "hidden=16"], capture_output=True,
                          text=True, timeout=600, env={**env, "SDL_VIDEODRIVER": "dummy"})
    return done, logdir / "dqn" / "CartPole-v1"


@pytest.fixture(scope="module")
def classic_run(classic_process: tuple[subprocess.CompletedProcess, Path]) -> Path:
    """The run directory of ``classic_process``, which succeeded."""
    done, run_dir = classic_process
    assert done.returncode == 0, done.stderr
    return run_dir


def test_every_script_is_installed() -> None:
    found = {e.name: e for e in entry_points(group="console_scripts") if e.name in
             {f"looprl-{name}" for name in SCRIPTS}}
    assert sorted(found) == sorted(f"looprl-{name}" for name in SCRIPTS)
    assert all(callable(e.load()) for e in found.values())


def test_classic_trains_with_alls_arguments(classic_run: Path) -> None:
    for name in ("preset.pt", "returns100.png", "results.csv", "test_returns.csv"):
        assert (classic_run / name).exists(), name
    hyperparameters = json.loads((classic_run / "run.json").read_text())["hyperparameters"]
    assert (hyperparameters["lr"], hyperparameters["hidden"]) == (0.01, 16)
    assert len((classic_run / "test_returns.csv").read_text().splitlines()) > 100  # ALL's 100


def test_render_trains_in_a_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--render``: the environment is made with ``render_mode='human'`` (it was made
    without, and every run with ``--render`` was refused)."""
    import looprl.experiments

    class Stop(Exception):
        pass

    def run_experiment(preset: object, env: object, frames: float, **options: object) -> None:
        raise Stop(options["render"], env.env.render_mode)  # type: ignore[attr-defined]

    monkeypatch.setattr(looprl.experiments, "run_experiment", run_experiment)
    with pytest.raises(Stop) as stop:
        train_classic.main(["CartPole-v1", "dqn", "--render"])
    assert stop.value.args == (True, "human")


def test_mujoco_takes_a_name_without_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """``looprl-mujoco InvertedPendulum sac`` trains ``InvertedPendulum-v5``, as ALL's
    ``MujocoEnvironment(name)`` does (was: "Unknown environment 'InvertedPendulum'")."""
    import looprl.experiments
    from looprl.environments import MujocoEnvironment

    class Stop(Exception):
        pass

    def run_experiment(preset: object, env: object, frames: float, **options: object) -> None:
        raise Stop(type(env), env.name)  # type: ignore[attr-defined]

    monkeypatch.setattr(looprl.experiments, "run_experiment", run_experiment)
    with pytest.raises(Stop) as stop:
        train_mujoco.main(["InvertedPendulum", "sac", "--device", "cpu"])
    assert stop.value.args == (MujocoEnvironment, "InvertedPendulum-v5")


@pytest.mark.parametrize(("module", "argv", "agent", "frames"), [
    (train_atari, ["Pong", "dqn"], "atari.dqn", 40e6),
    (train_continuous, ["Pendulum-v1", "ddpg", "--frames", "300"], "continuous.ddpg", 300),
    (train_mujoco, ["Ant-v4", "sac", "--save_freq", "5"], "continuous.sac", 10e6),
])
def test_train_scripts_pass_alls_arguments(monkeypatch: pytest.MonkeyPatch, module: object,
                                           argv: list[str], agent: str, frames: float) -> None:
    seen: list[argparse.Namespace] = []
    monkeypatch.setattr(cli, "cmd_train", lambda args: seen.append(args) or 0)
    assert module.main(argv) == 0  # type: ignore[attr-defined]
    (args,) = seen
    assert (args.agent, args.env, args.frames, args.device) == (agent, argv[0], frames, None)
    assert (args.logdir, args.test_episodes, args.render) == ("runs", 100, False)
    assert args.save_freq == (5 if "--save_freq" in argv else 100)


@pytest.mark.parametrize(("module", "argv", "expected"), [
    (train_classic, ["CartPole-v1", "ddpg"], "Unknown agent 'ddpg'. The classic_control presets"),
    (train_classic, ["CartPole-v1", "dqn", "--frames", "abc"], "--frames: must be a whole"),
    (train_classic, ["CartPole-v1", "dqn", "--hyperparameters", "nope=1"], "'nope'"),
    (train_multiagent_atari, ["tictactoe_v3", "dqn"], "Must specify 2 agents"),
    (train_multiagent_atari, ["tictactoe_v3", "dqn", "sac"], "Unknown agent 'sac'. The "
                                                              "multiagent presets: dqn, ppo"),
    (watch_classic, ["CartPole-v1", "missing/preset.pt"], "No saved preset"),
    (plot, ["--timesteps", "0"], "--timesteps: must be a whole number >= 1"),
    (plot, ["--logdir", "missing"], "no directory missing"),
])
def test_bad_input_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                               monkeypatch: pytest.MonkeyPatch, module: object,
                               argv: list[str], expected: str) -> None:
    """One line, named after the script as its argparse errors are (``looprl-classic: error:
    Unknown agent``, was ``looprl: error:`` for the errors after parsing)."""
    monkeypatch.chdir(tmp_path)
    try:
        code = module.main(argv)  # type: ignore[attr-defined]
    except SystemExit as stop:  # (argparse's errors)
        code = stop.code
    out, err = capsys.readouterr()
    prog = "looprl-" + module.__name__.rpartition(".")[2].removeprefix(  # type: ignore[attr-defined]
        "train_").replace("_", "-")
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and expected in err, err
    assert err.startswith(f"{prog}: error: "), err
    assert not list(tmp_path.iterdir())


def test_watch_and_plot(classic_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Headless: one episode (ALL's watch plays forever, in a window) into a GIF."""
    code = watch_classic.main(["CartPole-v1", str(classic_run / "preset.pt"), "--device", "cpu"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.count("episode ") == 1 and (classic_run / "watch.gif").exists()
    assert plot.main(["--logdir", str(classic_run.parent), "--timesteps", "100"]) == 0
    assert (classic_run.parent / "returns100.png").exists()


def test_multiagent_trains_and_watches_with_reload(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A PettingZoo game (ALL's pong_v3 needs multi_agent_ale_py), in ./runs as ALL's."""
    monkeypatch.chdir(tmp_path)
    assert train_multiagent_atari.main(["tictactoe_v3", "dqn", "dqn", "--frames", "200",
                                        "--replay_buffer_size", "1000"]) == 0
    run = Path("runs") / "independent_dqn" / "tictactoe_v3"
    assert json.loads((run / "run.json").read_text())["hyperparameters"][
        "replay_buffer_size"] == 1000
    capsys.readouterr()
    assert watch_multiagent_atari.main(["tictactoe_v3", str(run), "--reload",
                                        "--episodes", "2"]) == 0
    assert capsys.readouterr().out.count("returns player_1") == 2
    # without --episodes and without a display: one round into watch.gif (it replayed forever)
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    rounds = []
    watched = cli.watch_saved

    def counted(args: Any) -> Path | None:
        rounds.append(1)
        if len(rounds) > 2:
            raise RuntimeError("watched on and on")
        return watched(args)

    monkeypatch.setattr(cli, "watch_saved", counted)
    assert watch_multiagent_atari.main(["tictactoe_v3", str(run), "--reload"]) == 0
    assert len(rounds) == 1 and (run / "watch.gif").exists()


def test_multiagent_atari_plays_an_atari_preset_per_agent_as_alls(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """ALL's ``all-multiagent-atari pong_v3 dqn rainbow``: ``MultiagentAtariEnv`` and the Atari
    preset each agent names (was: one multiagent MLP preset for all, on raw frames); the saved
    preset's watch rebuilds the same environment."""
    pytest.importorskip("supersuit")
    pytest.importorskip("multi_agent_ale_py")
    from looprl.environments import MultiagentAtariEnv
    from looprl.experiments.watch import watch_env

    seen: list[tuple[Any, Any, argparse.Namespace]] = []
    monkeypatch.setattr(cli, "train_built", lambda *given: seen.append(given) or 0)
    assert train_multiagent_atari.main(["pong_v3", "dqn", "rainbow", "--frames", "400",
                                        "--replay_buffer_size", "500"]) == 0
    ((builder, env, args),) = seen
    assert isinstance(env, MultiagentAtariEnv) and env.possible_agents == ["first_0", "second_0"]
    assert (args.frames, args.logdir, args.test_episodes, args.agent) == (
        400, "runs", 100, "atari.independent")
    preset = builder.env(env).build()
    assert preset.name == "independent_dqn_rainbow"
    assert {agent: (type(p).__name__, p.hyperparameters["replay_buffer_size"])
            for agent, p in preset.presets.items()} == {
        "first_0": ("DQNAtariPreset", 500), "second_0": ("RainbowAtariPreset", 500)}
    watched, _ = watch_env(preset, "pong_v3", window=False)
    assert isinstance(watched, MultiagentAtariEnv)
    assert watched.observation_space("first_0").shape == (1, 84, 84)
    watched.close()
    env.close()


def test_classic_as_a_subprocess(classic_process: tuple[subprocess.CompletedProcess, Path]
                                 ) -> None:
    done, run_dir = classic_process
    assert done.returncode == 0, done.stderr
    assert "evaluation: mean return" in done.stdout
    assert (run_dir / "preset.pt").exists()
