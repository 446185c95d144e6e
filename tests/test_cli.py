"""Tests of the ``looprl`` command (looprl.cli), in-process and as a subprocess."""

from __future__ import annotations

import contextlib
import errno
import importlib.util
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import looprl
import looprl.environments
from looprl.cli import build_parser, guarded, main, parse_hyperparameters, watch_saved
from looprl.environments import GymEnvironment
from looprl.presets import load_preset
from looprl.presets.catalog import available_agents

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# A tiny learning rate keeps CartPole episodes short (~20 steps) and the run fast.
TRAIN = ["train", "ppo", "CartPole-v1", "lr=1e-6", "--frames", "3000", "--test-episodes", "3"]


@pytest.fixture(autouse=True)
def _no_display(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("LOOPRL_DEBUG", raising=False)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One in-process ``looprl train`` run: (logdir, its stdout)."""
    logdir = tmp_path_factory.mktemp("cli_runs")
    threads = torch.get_num_threads()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([*TRAIN, "--logdir", str(logdir), "--quiet", "--seed", "0"])
    torch.set_num_threads(threads)
    assert code == 0
    return logdir, out.getvalue()


def _error_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("looprl: error: ")
    return lines[0]


# -- train ---------------------------------------------------------------------------------
def test_train_writes_run_directory(trained: tuple[Path, str]) -> None:
    logdir, stdout = trained
    run_dir = logdir / "ppo" / "CartPole-v1"
    assert (run_dir / "preset.pt").stat().st_size > 0
    assert (run_dir / "returns100.png").read_bytes().startswith(PNG_SIGNATURE)
    assert (run_dir / "returns100.csv").read_text().startswith("frame,mean,std,max,min\n")
    assert (run_dir / "run.json").exists()
    assert list(run_dir.glob("events.out.tfevents.*"))
    lines = stdout.splitlines()
    assert re.match(r"ppo on CartPole-v1: 3,00\d frames, ", lines[0])  # (env steps)
    assert any(line.startswith("evaluation: mean return ") and "over 3 episodes" in line
               for line in lines)
    assert any(line.startswith("logs:") and str(run_dir) in line for line in lines)
    assert any(line.startswith("plot:") and str(run_dir / "returns100.png") in line
               for line in lines)
    assert any(line.startswith("preset:") and "preset.pt" in line for line in lines)


def test_train_quiet_prints_only_the_summary(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # never trains and always explores: a fast agent with ~22-step episodes
    argv = ["train", "dqn", "CartPole-v1", "hidden=16", "replay_start_size=1000000",
            "final_exploration=1.0", "--frames", "300", "--test-episodes", "1",
            "--logdir", str(tmp_path), "--quiet"]
    assert main(argv) == 0
    out, err = capfd.readouterr()
    assert err == ""
    lines = out.splitlines()
    assert lines[0].startswith("dqn on CartPole-v1: ")
    assert [line.split(":")[0] for line in lines[1:]] == ["evaluation", "logs", "plot", "preset"]
    assert (tmp_path / "dqn" / "CartPole-v1" / "preset.pt").exists()


def test_hyperparameters_after_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["train", "dqn", "CartPole-v1", "--frames", "200", "--test-episodes", "1",
            "--logdir", str(tmp_path), "--quiet", "hidden=16", "replay_start_size=1000000"]
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    assert code == 0
    preset = load_preset(str(tmp_path / "dqn" / "CartPole-v1" / "preset.pt"), device="cpu")
    assert preset.hyperparameters["hidden"] == 16  # (taken, not dropped)
    assert preset.hyperparameters["replay_start_size"] == 1000000


def test_train_as_a_subprocess(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("looprl")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "looprl.cli"]
    done = subprocess.run(
        [*command, "train", "ppo", "CartPole-v1", "lr=1e-6", "--frames", "400",
         "--test-episodes", "1", "--logdir", str(tmp_path), "--quiet"],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "LOOPRL_DEBUG": ""},
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "evaluation: mean return" in done.stdout
    assert (tmp_path / "ppo" / "CartPole-v1" / "preset.pt").exists()
    assert (tmp_path / "ppo" / "CartPole-v1" / "returns100.png").exists()


def test_only_looprls_own_console_scripts_get_its_ctrl_c_handling(tmp_path: Path) -> None:
    # was: any program named looprl-* (a user's looprl-mine) imported looprl.cli at
    # ``import looprl`` and had its Ctrl-C turned into "looprl: interrupted"
    script = tmp_path / "looprl-mine"
    script.write_text("import sys, looprl\nprint(looprl._PROGRAM, 'looprl.cli' in sys.modules)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300)
    assert done.stdout == "False False\n", done.stderr
    assert looprl._is_program("looprl-classic") and looprl._is_program("looprl")
    assert not looprl._is_program("looprl-classic.py")


def test_an_interrupted_looprl_exits_though_a_thread_would_hold_it() -> None:
    """Ctrl-C ends a ``looprl`` process with its one line and 130 within ``EXIT_GRACE`` seconds,
    even when a library left a thread that never ends (was: a PBT run that printed its line
    and had not exited 300 s later, its interpreter waiting on such a thread)."""
    code = ("import threading, time, looprl.cli as cli\n"
            "threading.Thread(target=time.sleep, args=(3600,)).start()  # (not a daemon)\n"
            "cli.EXIT_GRACE = 1\n"
            "def interrupted(argv):\n"
            "    raise KeyboardInterrupt\n"
            "raise SystemExit(cli.main(command=interrupted))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 130 and done.stderr == "looprl: interrupted\n", done.stderr


def test_short_train_run_succeeds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["train", "ppo", "CartPole-v1", "--frames", "400", "--test-episodes", "1",
                 "--logdir", str(tmp_path), "--quiet"])
    assert code == 0
    out = capsys.readouterr().out
    assert "evaluation: mean return" in out and out.split("over 1 ")[1].startswith("episode\n")


def test_the_commands_train_prints_are_quoted_for_the_shell(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logdir = tmp_path / "my runs"
    assert main(["train", "ppo", "CartPole-v1", "--frames", "200", "--test-episodes", "0",
                 "--logdir", str(logdir), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert f"tensorboard --logdir '{logdir}'" in out
    assert f"looprl watch '{logdir / 'ppo' / 'CartPole-v1'}'" in out


def test_train_wraps_the_environment_and_watch_plays_it_so(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    """``--wrapper``: FrozenLake's ``Discrete`` observations one-hot (the preset refused them
    with no way around from the command line); ``looprl watch`` wraps its environment alike
    (it made the bare id's: "The preset was built for ... Box(16,)")."""
    flatten = ["--wrapper", "gymnasium.wrappers.FlattenObservation"]
    assert _error_line(capsys, ["train", "ppo", "FrozenLake-v1", "--quiet"]).endswith(
        "looprl train ... --wrapper gymnasium.wrappers.FlattenObservation; "
        "GymEnvironment(id, wrap_env=FlattenObservation))")
    assert main(["train", "ppo", "FrozenLake-v1", *flatten, "--frames", "300",
                 "--test-episodes", "1", "--logdir", str(tmp_path), "--quiet"]) == 0
    gif = tmp_path / "play.gif"
    assert main(["watch", str(tmp_path / "ppo" / "FrozenLake-v1"), "--max-steps", "5",
                 "--gif", str(gif)]) == 0
    assert gif.read_bytes()[:6] == b"GIF89a"


# -- errors: exit 2 with one line ----------------------------------------------------------------
def test_unknown_env(capsys: pytest.CaptureFixture[str]) -> None:
    line = _error_line(capsys, ["train", "ppo", "CartPol-v1", "--quiet"])
    assert "'CartPol-v1'" in line and "Did you mean 'CartPole-v1'" in line


def test_run_without_hydra_names_the_extra(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "hydra", None)  # (as an install without looprl[config])
    line = _error_line(capsys, ["run", "frames=100"])
    assert line == "looprl: error: looprl run needs Hydra: pip install looprl[config]"


def test_unknown_agent(capsys: pytest.CaptureFixture[str]) -> None:
    line = _error_line(capsys, ["train", "dqnn", "CartPole-v1", "--quiet"])
    assert "'dqnn'" in line
    assert "dqn" in line.split("Available:")[1] and "ppo" in line.split("Available:")[1]


def test_unknown_hyperparameter(capsys: pytest.CaptureFixture[str]) -> None:
    line = _error_line(capsys, ["train", "ppo", "CartPole-v1", "lrr=0.1", "--quiet"])
    assert "'lrr'" in line and "Did you mean 'lr'?" in line and "n_steps" in line


def test_dqn_on_continuous_env(capsys: pytest.CaptureFixture[str]) -> None:
    line = _error_line(capsys, ["train", "dqn", "Pendulum-v1", "--quiet"])
    assert "DQN" in line and "discrete" in line and "Pendulum-v1" in line


def test_malformed_hyperparameter(capsys: pytest.CaptureFixture[str]) -> None:
    line = _error_line(capsys, ["train", "ppo", "CartPole-v1", "lr", "--quiet"])
    assert "key=value" in line


def test_invalid_hyperparameter_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _error_line(capsys, ["train", "ppo", "CartPole-v1", "n_envs=0", "--frames", "100",
                         "--logdir", str(tmp_path), "--quiet"])


def test_atari_game_given_to_a_classic_preset(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("ale_py")
    line = _error_line(capsys, ["train", "ppo", "Breakout", "--quiet"])
    assert "'Breakout' is an Atari game" in line and "looprl train atari.ppo Breakout" in line
    assert "looprl run algorithm=atari/ppo env=Breakout" in line  # (looprl run's form too)
    line = _error_line(capsys, ["train", "dqn", "Breakout", "--quiet"])  # (was atari.ppo's)
    assert "looprl train atari.dqn Breakout" in line
    # once ale-py has registered its ids, the classic preset's space check points the way
    line = _error_line(capsys, ["train", "ppo", "ALE/Breakout-v5", "--quiet"])
    assert "Atari preset" in line


@pytest.mark.parametrize("frames", ["0", "-5"])
def test_frames_must_be_positive(frames: str, capsys: pytest.CaptureFixture[str]) -> None:
    line = _error_line(capsys, ["train", "dqn", "CartPole-v1", "--frames", frames, "--quiet"])
    assert "frames must be a positive number" in line


def test_diverging_training_is_one_line_and_keeps_its_logs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _error_line(capsys, ["train", "dqn", "CartPole-v1", "lr=1e12", "clip_grad=0",
                                "--frames", "3000", "--logdir", str(tmp_path), "--quiet",
                                "--seed", "0"])
    run_dir = tmp_path / "dqn" / "CartPole-v1"
    assert "training diverged" in line and f"Logs until then: {run_dir}" in line
    assert (run_dir / "results.csv").read_text().count("\n") > 1  # episodes before the NaN
    assert any(run_dir.glob("events.out.tfevents.*"))


def test_ctrl_c_keeps_the_preset_and_logs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from looprl.experiments import ParallelEnvExperiment

    train = ParallelEnvExperiment._train

    def interrupted(self, frames, episodes):  # the user presses Ctrl-C after 2,000 frames
        train(self, 2_000, episodes)
        raise KeyboardInterrupt

    monkeypatch.setattr(ParallelEnvExperiment, "_train", interrupted)
    code = main(["train", "ppo", "CartPole-v1", "--frames", "50000", "--logdir",
                 str(tmp_path), "--quiet"])
    out = capsys.readouterr().out.splitlines()
    run_dir = tmp_path / "ppo" / "CartPole-v1"
    assert code == 130
    assert re.fullmatch(r"interrupted at frame 2,00\d; the preset as trained so far is saved",
                        out[0])  # (env steps: a copy that resets takes none)
    assert (run_dir / "preset.pt").exists() and (run_dir / "results.csv").exists()
    assert main(["watch", str(run_dir), "--max-steps", "5"]) == 0  # the saved preset plays


def test_list_presets_and_hyperparameters(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("classic_control: a2c, c51, ddqn, dqn, ppg, ppo, rainbow, vac")
    assert any(line.startswith("continuous: ddpg, ppo, sac, td3") for line in lines)
    assert main(["list", "continuous.sac"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "continuous.sac hyperparameters (defaults; set them as key=value):"
    assert "  discount_factor = 0.99" in lines
    line = _error_line(capsys, ["list", "pppo"])
    assert "Did you mean 'ppo'" in line


def test_watch_missing_preset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = _error_line(capsys, ["watch", str(tmp_path / "nothing")])
    assert "No saved preset" in line


def test_plot_empty_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = _error_line(capsys, ["plot", str(tmp_path)])
    assert "returns100.csv" in line


def test_bad_usage_exits_2() -> None:
    with pytest.raises(SystemExit) as info:
        main(["fly"])
    assert info.value.code == 2


def test_parse_hyperparameters_and_agents() -> None:
    parsed = parse_hyperparameters(["lr=1e-3", "hidden=128", "huber=False", "name=abc"])
    assert parsed == {"lr": 0.001, "hidden": 128, "huber": False, "name": "abc"}
    # YAML's spellings, as in looprl run (was: the strings 'true' and 'null', refused)
    parsed = parse_hyperparameters(["huber=true", "linear_clip=false", "value_clip=null"])
    assert parsed == {"huber": True, "linear_clip": False, "value_clip": None}
    agents = available_agents()
    assert {"dqn", "ppo", "classic_control.dqn", "classic_control.ppo"} <= set(agents)
    assert agents["ppo"] is agents["classic_control.ppo"]


def test_train_reads_inf_and_nan_as_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    # as looprl run does: the range names what is wrong (was: "must be float ..., got 'inf'")
    parsed = parse_hyperparameters(["lr=inf", "v_min=-inf", "clip=nan"])
    assert parsed["lr"] == math.inf and parsed["v_min"] == -math.inf and math.isnan(parsed["clip"])
    line = _error_line(capsys, ["train", "ppo", "CartPole-v1", "lr=inf", "--frames", "10"])
    assert line.endswith("'lr' of ppo must be finite and >= 0, got inf")


def test_default_threads_per_family() -> None:
    from looprl.presets.catalog import default_threads

    assert default_threads("ppo") == default_threads("continuous.sac") == 1  # small MLPs
    assert default_threads("atari.dqn") == 0  # torch's default: CNN updates use every core


# -- plot and watch --------------------------------------------------------------------------
def test_plot(trained: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    logdir, _ = trained
    assert main(["plot", str(logdir)]) == 0
    path = Path(capsys.readouterr().out.strip())
    assert path == logdir / "returns100.png"
    assert path.read_bytes().startswith(PNG_SIGNATURE)


class _FakeRenderEnv(GymEnvironment):
    """Renders a distinct small frame per call, without pygame."""

    def render(self, **kwargs):
        self._frames = getattr(self, "_frames", 0) + 1
        return np.full((8, 8, 3), self._frames % 256, dtype=np.uint8)


def _gif_frames(path: Path) -> int:
    from PIL import Image

    with Image.open(path) as image:
        return image.n_frames


def test_watch_writes_gif_without_display(
    trained: tuple[Path, str], monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(looprl.environments, "GymEnvironment", _FakeRenderEnv)
    run_dir = trained[0] / "ppo" / "CartPole-v1"
    assert main(["watch", str(run_dir), "--episodes", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    gif = run_dir / "watch.gif"
    assert out[-1] == f"animation: {gif}"
    assert out[0].startswith("episode 1: return ")
    episode_return = float(out[0].split("return ")[1])
    assert gif.read_bytes()[:6] == b"GIF89a"
    assert _gif_frames(gif) == int(episode_return) + 1  # one frame per state
    # what ALL's watch scripts call: the GIF comes back (was set as args.gif_written)
    args = build_parser().parse_args(["watch", str(run_dir), "--episodes", "1"])
    assert watch_saved(args) == gif and "gif_written" not in vars(args)
    gif.unlink()


def test_guarded_prints_a_bad_input_in_one_line(capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The scripts' public helper (was the private ``cli._guarded``)."""
    monkeypatch.delenv("LOOPRL_DEBUG", raising=False)

    def bad() -> int:
        raise ValueError("seed must be whole")

    assert guarded(lambda: 0) == 0 and guarded(bad) == 2
    assert capsys.readouterr().err == "looprl: error: seed must be whole\n"


@pytest.mark.parametrize(("error", "line"), [
    (lambda: torch.OutOfMemoryError(
        "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.18 GiB "
        "of which 1.44 MiB is free. Process 764 has 60.25 GiB memory in use. See documentation"),
     "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.18 GiB "
     "of which 1.44 MiB is free. (the GPU is out of memory: free it, nvidia-smi lists what holds "
     "it, or run on the CPU, device=cpu)"),
    (lambda: RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling "
                          "`cublasCreate(handle)`"),
     "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)` (the GPU is out "
     "of memory: free it, nvidia-smi lists what holds it, or run on the CPU, device=cpu)"),
    (lambda: MemoryError("Unable to allocate 9.00 GiB for an array"),
     "Unable to allocate 9.00 GiB for an array (out of memory: lower the replay, batch or "
     "network sizes)"),
])
def test_running_out_of_memory_mid_run_is_one_line(error, line, capsys, monkeypatch) -> None:
    """A GPU filled by other processes failed the first cuBLAS call of training, or the
    optimizer's first step, with torch's traceback (an H100 run of the suite, 2026-12-05)."""
    monkeypatch.delenv("LOOPRL_DEBUG", raising=False)

    def failing() -> int:
        raise error()

    assert guarded(failing) == 2
    assert capsys.readouterr().err == f"looprl: error: {line}\n"
    with pytest.raises(RuntimeError):  # (another RuntimeError of torch's is a bug: traceback)
        guarded(lambda: (_ for _ in ()).throw(RuntimeError("CUDA error: an illegal memory "
                                                            "access was encountered")))


def test_a_full_disk_is_one_line_that_says_so(capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOOPRL_DEBUG", raising=False)

    def full() -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "runs/ppo/results.csv")

    assert guarded(full) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the disk is full" in err and "--logdir" in err


def test_watch_a_preset_file_outside_its_run_directory(
    trained: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(looprl.environments, "GymEnvironment", _FakeRenderEnv)
    moved = tmp_path / "my_cartpole.pt"
    shutil.copy(trained[0] / "ppo" / "CartPole-v1" / "preset.pt", moved)
    gif = tmp_path / "out.gif"
    # the preset knows its environment: no run.json needed
    assert main(["watch", str(moved), "--max-steps", "5", "--gif", str(gif)]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("episode 1: return ")
    assert gif.exists()
    # a preset saved without its environment's name (older files) says to pass --env
    preset = load_preset(str(moved))
    preset.env_name = None
    preset.save(str(moved))
    line = _error_line(capsys, ["watch", str(moved)])
    assert "no run.json beside it" in line and "--env ENV_ID" in line
    assert main(["watch", str(moved), "--env", "CartPole-v1", "--max-steps", "5",
                 "--gif", str(gif)]) == 0


def test_watch_a_trained_multiagent_preset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train = ["train", "multiagent.dqn", "tictactoe_v3", "--frames", "100", "--test-episodes",
             "1", "--logdir", str(tmp_path), "--quiet", "--seed", "0"]
    assert main(train) == 0
    run_dir = tmp_path / "independent_dqn" / "tictactoe_v3"
    capsys.readouterr()
    assert main(["watch", str(run_dir), "--episodes", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("episode 1: returns player_1 ")
    assert out[1].startswith("episode 2: returns player_1 ")
    assert out[-1] == f"animation: {run_dir / 'watch.gif'}"
    assert (run_dir / "watch.gif").read_bytes()[:6] == b"GIF89a"


WATCHED = "tests.experiments.watched_envs"


@pytest.mark.parametrize("display", [None, ":0"])
def test_watch_an_environment_whose_constructor_takes_no_render_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    display: str | None,
) -> None:
    """It is built as training built it, without a render_mode: its frames go to a GIF (it
    draws no window, even with a display), or one line says it does not render."""
    from looprl.presets.classic_control import ppo

    if display:
        monkeypatch.setenv("DISPLAY", display)
    for name in ("Frames", "NoRender"):
        ppo.env(GymEnvironment(f"{WATCHED}:{name}")).device("cpu").build().save(
            str(tmp_path / f"{name}.pt"))
    assert main(["watch", str(tmp_path / "Frames.pt")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["episode 1: return 3.0", f"animation: {tmp_path / 'watch.gif'}"]
    assert _gif_frames(tmp_path / "watch.gif") == 4  # one frame per state
    line = _error_line(capsys, ["watch", str(tmp_path / "NoRender.pt")])
    assert line == (f"looprl: error: {WATCHED}:NoRender does not render: nothing to write to "
                    "the GIF: build it with render_mode='rgb_array' (an argument its "
                    "constructor must take), or have its render() return RGB frames")


def test_ctrl_c_while_watching_into_a_gif_keeps_the_frames_played(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # was: no GIF at all (the frames played were lost) and a bare "looprl: interrupted"
    from looprl.presets.classic_control import ppo

    ppo.env(GymEnvironment(f"{WATCHED}:Interrupted")).device("cpu").build().save(
        str(tmp_path / "preset.pt"))
    gif = tmp_path / "out.gif"
    assert main(["watch", str(tmp_path / "preset.pt"), "--episodes", "50", "--gif",
                 str(gif)]) == 130
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"looprl: interrupted; the 6 frames played so far are in {gif}\n"
    assert _gif_frames(gif) == 6


@pytest.mark.skipif(importlib.util.find_spec("pygame") is None, reason="needs pygame")
def test_watch_renders_cartpole_with_pygame(
    trained: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = trained[0] / "ppo" / "CartPole-v1"  # (10 frames: its episode runs ~200)
    assert main(["watch", str(run_dir), "--episodes", "1", "--max-steps", "10"]) == 0
    assert (run_dir / "watch.gif").read_bytes()[:6] == b"GIF89a"
    assert _gif_frames(run_dir / "watch.gif") > 1  # (an animation: PIL merges equal frames)


@pytest.mark.skipif(importlib.util.find_spec("pygame") is not None, reason="pygame installed")
def test_watch_without_pygame_is_a_one_line_error(
    trained: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    _error_line(capsys, ["watch", str(trained[0] / "ppo" / "CartPole-v1"), "--episodes", "1"])


def test_watch_best_of_a_run_without_evaluations_says_how_to_keep_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """(was: "No saved preset at .../best_preset.pt (train one with looprl train)", which a
    run that trained and saved its preset does not explain)"""
    from looprl.presets.classic_control import ppo

    ppo.env(GymEnvironment("CartPole-v1")).device("cpu").build().save(str(tmp_path / "preset.pt"))
    line = _error_line(capsys, ["watch", str(tmp_path), "--best"])
    assert line == (f"looprl: error: No best_preset.pt in {tmp_path}: a run keeps its best agent "
                    "when it evaluates during training (looprl run runner.eval_every=N; "
                    "OnlineRunner(eval_every=N))")


def test_watch_the_logs_directory_of_a_looprl_run(
    trained: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``looprl run`` keeps ``preset.pt`` at its top, its logs in ``ALGORITHM/ENV/``: watching
    the latter finds it (was: "No saved preset at .../ALGORITHM/ENV/preset.pt")."""
    monkeypatch.setattr(looprl.environments, "GymEnvironment", _FakeRenderEnv)
    logs = tmp_path / "run" / "ppo" / "CartPole-v1"
    logs.mkdir(parents=True)
    shutil.copy(trained[0] / "ppo" / "CartPole-v1" / "preset.pt", tmp_path / "run")
    gif = tmp_path / "out.gif"
    assert main(["watch", str(logs), "--max-steps", "5", "--gif", str(gif)]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("episode 1: return ")


def test_watch_finds_the_one_run_below_and_names_the_module_of_an_env_it_cannot_make(
    trained: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``run_experiment``'s logdir holds ``ALGORITHM/ENV/``: watching it finds the run (was
    "No saved preset at LOGDIR/preset.pt"), and refuses a choice among several. A run on an id
    the user's code registered says how to give it (was: "Unknown environment" alone)."""
    monkeypatch.setattr(looprl.environments, "GymEnvironment", _FakeRenderEnv)
    gif = tmp_path / "out.gif"
    assert main(["watch", str(trained[0]), "--max-steps", "5", "--gif", str(gif)]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("episode 1: return ")
    for env in ("CartPole-v1", "MyPole-v0"):
        run = tmp_path / "runs" / "ppo" / env
        run.mkdir(parents=True)
        shutil.copy(trained[0] / "ppo" / "CartPole-v1" / "preset.pt", run)
        (run / "run.json").write_text(json.dumps({"env": env}))
    line = _error_line(capsys, ["watch", str(tmp_path / "runs")])
    assert line.startswith(f"looprl: error: {tmp_path / 'runs'} holds 2 runs (")
    line = _error_line(capsys, ["watch", str(run), "--gif", str(gif)])
    assert line.startswith("looprl: error: Unknown environment 'MyPole-v0'.")
    assert line.endswith("If your code registers MyPole-v0, give the module that does: "
                         "--env MODULE:MyPole-v0")


def test_watch_of_a_run_with_only_a_checkpoint_says_what_it_holds(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``OnlineRunner(logdir=..., checkpoint_every=N)`` saves ``checkpoint.pt``, no preset.pt:
    ``looprl watch`` said only "No saved preset at RUN/preset.pt (train one with looprl
    train)"."""
    from looprl.presets.classic_control import ppo
    from looprl.runners import OnlineRunner

    builder = ppo.hyperparameters(n_envs=1, n_steps=8, minibatch_size=8, epochs=1, hidden=8)
    runner = OnlineRunner(builder, "CartPole-v1", num_steps=16, seed=0, quiet=True,
                          logdir=str(tmp_path / "r"), checkpoint_every=8, eval_episodes=1)
    runner.run()
    runner.close()
    run = tmp_path / "r" / "ppo" / "CartPole-v1"
    for given in (tmp_path / "r", run):
        assert main(["watch", str(given), "--gif", str(tmp_path / "w.gif")]) == 2
        assert f"; {run / 'checkpoint.pt'} is a checkpoint to resume (resume_from), not a " \
               "preset: save one with runner.preset.save(PATH)" in capsys.readouterr().err
