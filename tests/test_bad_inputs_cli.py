"""Issue 44, section 3: out-of-range values, keys given twice, runners without evaluation,
Hydra-wrapped errors, Ctrl-C, a full disk and damaged run files are each one line (and a
non-zero exit), never a traceback. The subprocess checks run the real ``looprl`` command."""

from __future__ import annotations

import errno
import logging
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import looprl.cli as cli
from looprl.core.ranges import RANGES, check_ranges
from looprl.environments import GymEnvironment
from looprl.presets import classic_control


def _looprl(*argv: str, cwd: Path, timeout: float = 600) -> tuple[int, str]:
    """Run the ``looprl`` command; its exit status and its output (stdout and stderr)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("LOOPRL_DEBUG", None)
    done = subprocess.run([sys.executable, "-m", "looprl.cli", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout + done.stderr


def _looprl_here(*argv: str, cwd: Path, capfd: pytest.CaptureFixture[str],
                 caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
                 ) -> tuple[int, str]:
    """``_looprl`` in this process (seconds faster: no interpreter and torch to start): its exit
    status and its output, with the warnings its loggers gave as the lines they print."""
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("LOOPRL_DEBUG", raising=False)
    caplog.set_level(logging.WARNING)
    try:
        code = cli.main(list(argv))
    except SystemExit as stop:  # (argparse's errors)
        code = stop.code if isinstance(stop.code, int) else 1
    out, err = capfd.readouterr()
    warned = "".join(f"{record.levelname} {record.name}: {record.getMessage()}\n"
                     for record in caplog.records if record.levelno >= logging.WARNING)
    return code, out + err + warned


def _one_line(code: int, output: str, *expected: str) -> str:
    """The one error line of a failed command, which holds each of ``expected``."""
    lines = [line for line in output.splitlines() if line.strip()]
    assert code != 0, output
    assert "Traceback" not in output, output
    assert len(lines) == 1, output
    for text in expected:
        assert text in lines[0], output
    return lines[0]


# ---------------------------------------------------------------- ranges, declared once
@pytest.mark.parametrize(("key", "value", "expected"), [
    ("discount_factor", 1.5, "in [0, 1]"), ("clip", -0.2, ">= 0"),
    ("n_envs", 0, "whole number >= 1"), ("epochs", 0, "whole number >= 1"),
    ("lam", -0.1, "in [0, 1]"), ("entropy_coef", -1.0, ">= 0")])
def test_an_out_of_range_hyperparameter_is_refused_by_the_builder(
        key: str, value: float, expected: str) -> None:
    with pytest.raises(ValueError, match=rf"'{key}' of ppo must be .*{re.escape(expected)}"
                       ) as error:
        classic_control.ppo.hyperparameters(**{key: value})
    assert len(str(error.value).splitlines()) == 1


@pytest.mark.parametrize("value", ["abc", "null"])
def test_text_for_a_number_whose_default_is_none_is_refused_by_the_builder(value: str) -> None:
    """``value_clip`` defaults to ``None``, so its type is not checked: text reached the loss
    (was: "bad operand type for unary -: 'str'" after the preset was built)."""
    with pytest.raises(ValueError, match=rf"'value_clip' of ppo must be >= 0, got '{value}'"):
        classic_control.ppo.hyperparameters(value_clip=value)
    from looprl.presets import continuous
    with pytest.raises(ValueError, match=r"'target_entropy' of sac must be a finite number \(null: "
                                         rf"-\|A\|\), got '{value}'"):
        continuous.sac.hyperparameters(target_entropy=value)  # (was: "could not convert ...")


@pytest.mark.parametrize(("builder", "key", "value"), [
    ("ppo", "value_clip", [0.2]), ("ppo", "value_clip", True), ("ppo", "value_clip", {}),
    ("continuous.sac", "target_entropy", [-1.0]), ("continuous.sac", "target_entropy", True)])
def test_a_non_number_whose_default_is_none_is_refused_by_the_builder(
        builder: str, key: str, value: object) -> None:
    """A default ``None`` leaves the type unchecked: a list was "bad operand type for unary -:
    'list'" in the loss; ``True`` trained as 1."""
    from looprl.presets.catalog import resolve_agent

    with pytest.raises(TypeError, match=re.escape(f"'{key}' must be")) as error:
        resolve_agent(builder).hyperparameters(**{key: value})
    assert str(error.value).endswith(f"or None, got {value!r}")


def test_a_log_std_init_the_gaussian_head_clamps_is_refused() -> None:
    """``log_std_init=100`` trained with a std of e**2 that never moved (clamped: no gradient)."""
    from looprl.presets import continuous

    with pytest.raises(ValueError, match=r"'log_std_init' of ppo must be in \[-20, 2\], got 100"):
        continuous.ppo.hyperparameters(log_std_init=100.0)
    continuous.ppo.hyperparameters(log_std_init=-1)  # (an int where a float is fine)


@pytest.mark.parametrize(("builder", "key", "value", "expected"), [
    ("ppo", "lr", math.inf, "must be finite and >= 0, got inf"),
    ("ppo", "discount_factor", math.nan, "must be finite and in [0, 1], got nan"),
    ("c51", "v_min", -math.inf, "must be a finite number, got -inf"),
    ("continuous.ppo", "log_std_init", math.nan, "must be finite and in [-20, 2], got nan"),
    ("continuous.sac", "target_entropy", math.inf, "must be a finite number (null: -|A|)"),
    ("dqn", "replay_buffer_size", 10**400, "must be finite and a whole number >= 1 (at most "
                                           "3.4e38 in size, float32's largest), got 1000"),
    ("dqn", "lr", -10**400, "must be finite and >= 0 (at most 3.4e38"),
    # (beyond float32: "value cannot be converted to type float without overflow" in torch)
    ("rainbow", "sigma", 1e300, "must be finite and positive (> 0) (at most 3.4e38 in size, "
                                "float32's largest), got 1e+300"),
    ("ppo", "clip", 1e300, "must be finite and >= 0 (at most 3.4e38"),
    ("ppo", "value_clip", "None", "must be >= 0, got 'None' (Python's None is null in a config)"),
    # (flushed to 0 by the CPU steps: Adam's 0 / 0 turned a dead unit's weights NaN, and
    # rainbow blamed CartPole's observations)
    ("rainbow", "eps", 1e-45, "must be at least 1.2e-38 (float32's smallest normal number"),
    ("vqn", "eps", 0.0, "must be at least 1.2e-38")])
def test_a_non_finite_hyperparameter_is_refused_by_the_builder(
        builder: str, key: str, value: float, expected: str) -> None:
    """``lr=inf`` trained on NaN weights, ``v_min=-inf`` was a torch traceback deep in C51's
    projection and ``log_std_init=nan`` was blamed on the environment's NaNs; an int beyond any
    float was an OverflowError traceback."""
    from looprl.presets.catalog import resolve_agent

    with pytest.raises(ValueError, match=re.escape(f"'{key}' of {builder.split('.')[-1]} "
                                                   f"{expected}")):
        resolve_agent(builder).hyperparameters(**{key: value})


@pytest.mark.parametrize("key", ["hidden", "lr", "exploration", "replay_start_size"])
def test_null_for_a_hyperparameter_whose_default_is_not_null_is_refused(key: str) -> None:
    """``hidden=null`` was "empty(): argument 'size' ... must be tuple of ints" at build time."""
    default = classic_control.dqn.default_hyperparameters[key]
    with pytest.raises(TypeError, match=rf"'{key}' must be {type(default).__name__} .*got None"):
        classic_control.dqn.hyperparameters(**{key: None})


def test_presets_built_directly_check_the_same_ranges() -> None:
    """The constructors check what the builders do (a preset made without a builder)."""
    from looprl.presets import continuous
    from looprl.presets.continuous.ddpg import DDPGContinuousPreset

    hp = {**continuous.ddpg.default_hyperparameters, "polyak_rate": 1.5}
    with pytest.raises(ValueError, match=r"'polyak_rate' of ddpg must be in \(0, 1\]"):
        DDPGContinuousPreset(GymEnvironment("Pendulum-v1"), "ddpg", "cpu", hp)


def test_every_range_holds_its_default_in_every_preset() -> None:
    from looprl.presets.catalog import available_agents

    for name, builder in available_agents().items():
        check_ranges(getattr(builder, "default_hyperparameters", {}), name)  # no error
    assert {"discount_factor", "clip", "n_envs", "n_steps"} <= set(RANGES)


def test_n_envs_zero_warns_nothing_before_its_error(caplog: pytest.LogCaptureFixture) -> None:
    """The minibatch warning used to come first, about a batch of 0 rows."""
    from looprl.presets.classic_control.ppo import PPOClassicControlPreset

    hp = {**classic_control.ppo.default_hyperparameters, "n_envs": 0}
    with pytest.raises(ValueError, match="'n_envs' of ppo must be a whole number >= 1"):
        PPOClassicControlPreset(GymEnvironment("CartPole-v1"), "ppo", "cpu", hp)
    assert not caplog.records


def test_an_on_policy_segment_that_cannot_fit_in_memory_is_one_line() -> None:
    builder = classic_control.ppo.hyperparameters(n_steps=10**12)
    with pytest.raises(ValueError, match=r"n_envs x \(n_steps \+ 1\) = .* GiB.* lower n_steps"):
        builder.env(GymEnvironment("CartPole-v1")).build()


def test_networks_that_cannot_fit_in_memory_are_one_line() -> None:
    """``hidden=2e7`` (1.6 PB of weights) was torch's allocator traceback. ``2e12``: its first
    layer fails too (2e7's, 320 MB, was allocated and initialized first: seconds)."""
    builder = classic_control.dqn.hyperparameters(hidden=2 * 10**12).device("cpu")
    with pytest.raises(ValueError, match=r"dqn's networks do not fit in memory \(.*allocate.*\); "
                                         r"lower hidden \(now 2000000000000\)$"):
        builder.env(GymEnvironment("CartPole-v1")).build()


def test_a_full_gpu_is_one_line_that_offers_the_cpu(monkeypatch) -> None:
    """A GPU other processes fill cannot hold a new CUDA context: torch's AcceleratorError
    "CUDA error: out of memory" was a traceback (it is no torch.OutOfMemoryError)."""
    from looprl.presets import builder as builder_module

    def full(self, device):
        raise torch.AcceleratorError("CUDA error: out of memory\nCUDA kernel errors might be "
                                     "asynchronously reported at some other API call, so the "
                                     "stacktrace below might be incorrect.")

    monkeypatch.setattr(builder_module, "default_device", lambda: "cuda")
    monkeypatch.setattr(builder_module.PresetBuilder, "_construct", full)
    with pytest.raises(ValueError, match=r"^dqn's networks do not fit in memory \(CUDA error: out "
                                         r"of memory\); lower hidden \(now 256\), or free the GPU "
                                         r"\(nvidia-smi lists what holds it\) or build on "
                                         r"device='cpu'$"):
        classic_control.dqn.env(GymEnvironment("CartPole-v1")).build()


def test_a_replay_that_cannot_fit_in_memory_is_one_line() -> None:
    builder = classic_control.dqn.hyperparameters(replay_buffer_size=10**12)
    with pytest.raises(ValueError, match=r"replay_buffer_size = .* GiB.* lower replay_buffer"):
        builder.env(GymEnvironment("CartPole-v1")).build()


def test_a_replay_of_images_that_cannot_fit_is_one_line_at_build() -> None:
    """The check counted a float per transition (40 MB for 1e7 images of 12 KB: 246 GB of
    windows), so the build passed and the first write, a few hundred steps in, was torch's
    allocator traceback or the kernel's OOM killer; the Atari ring's slots too (7 KB each)."""
    import gymnasium as gym
    import numpy as np

    from looprl.presets import atari

    for shape, builder, size in (((3, 64, 64), classic_control.dqn.hyperparameters(
            features="nature"), 10**7), ((4, 84, 84), atari.dqn, 10**9)):
        env = GymEnvironment(gym.make("CartPole-v1"))
        env.env.observation_space = gym.spaces.Box(0, 255, shape, np.uint8)
        with pytest.raises(ValueError, match=r"dqn: replay_buffer_size = [\d,]+ rows of "
                                             r"[\d,]+ bytes need [\d,.]+ GiB, more than.*"
                                             r"lower replay_buffer_size$"):
            builder.hyperparameters(replay_buffer_size=size).device("cpu").env(env).build()


def test_a_minibatch_of_frames_that_cannot_fit_is_one_line_at_build(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``minibatch_size=1e5`` of Atari frames (5.6 GB of windows; 0.7 GB in the ring, which
    stores each frame once) was torch's allocator traceback at the first update, hours in."""
    import gymnasium as gym
    import numpy as np

    from looprl.presets import atari

    monkeypatch.setattr("looprl.core.suggest.memory_limit", lambda device="cpu": 2**30)
    env = GymEnvironment(gym.make("CartPole-v1"))
    env.env.observation_space = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    builder = atari.dqn.hyperparameters(replay_buffer_size=10**5, minibatch_size=10**5)
    with pytest.raises(ValueError, match=r"dqn: minibatch_size = 100,000 rows of 56,468 bytes "
                                         r"need 5.3 GiB, more than the 1.0 GiB .* lower "
                                         r"minibatch_size$"):
        builder.device("cpu").env(env).build()
    builder.hyperparameters(minibatch_size=32).device("cpu").env(env).build()  # (the ring fits)


def test_an_atari_replay_too_small_for_a_window_is_one_line_at_build() -> None:
    """``replay_buffer_size=5`` (a stack of 4 and a 1-step window need 6) built and failed at
    the first write, a run already started (an actor worker's failure on Ray); 1 was 'Replay
    buffer size must be at least 2', naming no key and the wrong least size."""
    import gymnasium as gym
    import numpy as np

    from looprl.presets import atari

    env = GymEnvironment(gym.make("CartPole-v1"))
    env.env.observation_space = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    for size, n_steps, least in ((1, 1, 6), (5, 1, 6), (64, 1000, 1005)):
        builder = atari.rainbow.hyperparameters(replay_buffer_size=size, minibatch_size=1,
                                                n_steps=n_steps)
        with pytest.raises(ValueError, match=rf"^Replay size {size} is too small for stacks of 4 "
                                             rf"and {n_steps}-step returns: give it at least "
                                             rf"{least} \(a preset's replay_buffer_size\)$"):
            builder.device("cpu").env(env).build()
    atari.dqn.hyperparameters(replay_buffer_size=6, minibatch_size=1).device("cpu").env(
        env).build()


def test_on_policy_segments_of_frames_are_counted_at_a_byte_a_pixel(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The segment buffer keeps uint8 frames as they come; the check counted 4 bytes a pixel
    and refused segments of 0.4 GiB of frames as 1.7 GiB."""
    import gymnasium as gym
    import numpy as np

    from looprl.presets import atari

    monkeypatch.setattr("looprl.core.suggest.memory_limit", lambda device="cpu": 2**30)
    env = GymEnvironment(gym.make("CartPole-v1"))
    env.env.observation_space = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    atari.ppo.hyperparameters(n_envs=16, n_steps=1000).device("cpu").env(env).build()
    with pytest.raises(ValueError, match=r"^ppo: n_envs x \(n_steps \+ 1\) = 48,016 rows of "
                                         r"28,224 bytes need 1.3 GiB, more than the 1.0 GiB"):
        atari.ppo.hyperparameters(n_envs=16, n_steps=3000).device("cpu").env(env).build()


def test_vpg_segments_that_cannot_fit_are_one_line_at_build(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """VPG's segment of ``min_batch_size + 1`` rows was not checked: ``min_batch_size=1e15``
    built, then failed at its first step with NumPy's ``MemoryError`` traceback."""
    monkeypatch.setattr("looprl.core.suggest.memory_limit", lambda device="cpu": 2**30)
    builder = classic_control.vpg.device("cpu").env("CartPole-v1")
    builder.hyperparameters(min_batch_size=10**7).build()
    with pytest.raises(ValueError, match=r"^vpg: min_batch_size \+ 1 = 100,000,001 rows of 16 "
                                         r"bytes need 1.5 GiB, more than the 1.0 GiB .* lower "
                                         r"min_batch_size$"):
        builder.hyperparameters(min_batch_size=10**8).build()


def test_the_memory_checks_take_a_ulimit_as_the_machines_memory(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Under ``ulimit -v`` (1 GiB here) the checks compared with the machine's memory, and a
    replay that passed them failed at its first write."""
    import resource

    from looprl.core.suggest import memory_limit

    monkeypatch.setattr(resource, "getrlimit", lambda kind: (2**30, resource.RLIM_INFINITY))
    assert memory_limit() == 2**30
    with pytest.raises(ValueError, match=r"replay_buffer_size = 30,000,000 rows of 52 bytes "
                                         r"need 1.5 GiB.*lower replay_buffer_size"):
        classic_control.dqn.hyperparameters(replay_buffer_size=3 * 10**7).device("cpu").env(
            "CartPole-v1").build()


def test_a_failing_torch_call_keeps_its_traceback_and_a_raise_of_looprls_is_one_line() -> None:
    """Bugs (a RuntimeError from inside torch) are not hidden; looprl's own are reported."""
    from looprl.core.suggest import is_bad_input
    from looprl.distributed.cluster import check_local_resources
    from looprl.distributed.config import RuntimeConfig

    code = compile("torch.zeros(2, 3) @ torch.zeros(2, 3)", "looprl_module.py", "exec")
    with pytest.raises(RuntimeError) as torch_error:  # (torch failing in a looprl module)
        exec(code, {"__name__": "looprl.module", "torch": torch})
    assert not is_bad_input(torch_error.value)
    with pytest.raises(RuntimeError) as ours:
        check_local_resources(RuntimeConfig(gpus_per_trainer=1), {"CPU": 8, "GPU": 0})
    assert is_bad_input(ours.value)


def test_too_few_cpus_for_the_workers_says_to_raise_num_cpus_not_lower_it() -> None:
    """``runtime.num_cpus=2`` with 2 actors and a trainer (3 CPUs): the advice was "lower
    runtime.num_cpus", which makes it worse."""
    from looprl.distributed.cluster import check_local_resources
    from looprl.distributed.config import RuntimeConfig

    with pytest.raises(RuntimeError) as error:
        check_local_resources(RuntimeConfig(actors=2, num_cpus=2), {"CPU": 2, "GPU": 0})
    message = str(error.value)
    assert "reserves 3 CPUs" in message and "raise runtime.num_cpus to 3" in message
    assert "lower runtime.num_cpus" not in message


# ---------------------------------------------------------------- looprl train / watch
@pytest.mark.parametrize(("argv", "expected"), [
    (["train", "ppo", "CartPole-v1", "--threads", "-1"], "--threads: must be a whole number"),
    (["train", "ppo", "CartPole-v1", "--test-episodes", "-3"], "--test-episodes: must be"),
    (["train", "ppo", "CartPole-v1", "--frames", "1", "--frames", "2"],
     "--frames is given twice (--frames 1 and --frames 2): give it once"),
    (["train", "ppo", "CartPole-v1", "lr=1e-3", "lr=1e-4"], "lr is given twice"),
    (["train", "ppo", "CartPole-v1", "discount_factor=1.5"], "must be in [0, 1], got 1.5"),
    (["watch", "somewhere", "--fps", "0"], "--fps: must be a finite number > 0"),
    (["watch", "somewhere", "--episodes", "0"], "--episodes: must be a whole number >= 1"),
    (["plot", "runs", "--timesteps", "0"], "--timesteps: must be a whole number >= 1"),
    (["plot", "/nonexistent/runs"], "no directory /nonexistent/runs: give the one looprl"),
    (["train", "ppo"], "looprl train: error: the following arguments are required"),
    (["bogus"], "invalid choice: 'bogus'"),
    # (was: both presets' keys merged, "Unknown hyperparameter 'update_frequency' for ppo")
    (["run", "algorithm=[dqn,ppo]"], "algorithm=[dqn,ppo]: algorithm takes one option; a "
                                     "sweep over several is -m algorithm=dqn,ppo"),
])
def test_bad_command_lines_are_one_line(argv: list[str], expected: str, tmp_path: Path,
                                       capfd: pytest.CaptureFixture[str],
                                       caplog: pytest.LogCaptureFixture,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """argparse's errors too: no usage line before the message."""
    _one_line(*_looprl_here(*argv, cwd=tmp_path, capfd=capfd, caplog=caplog,
                            monkeypatch=monkeypatch), expected)


@pytest.mark.parametrize(("argv", "expected"), [
    (["train", "ppo", "CartPole-v1", "discount_factor=1.5"], "must be in [0, 1], got 1.5"),
    (["run", "env=CartPole-v1", "--frames", "500"], "Did you mean frames=500?")])
def test_the_looprl_command_says_a_bad_input_in_one_line(argv: list[str], expected: str,
                                                         tmp_path: Path) -> None:
    """The real command, as a user runs it, once for ``looprl train`` (a builder's error) and
    once for ``looprl run`` (where Hydra printed its usage block): no traceback or usage block.
    The same lines, and argparse's and ``looprl run``'s builder errors, are checked in this
    process by ``test_bad_command_lines_are_one_line`` and
    ``test_bad_run_overrides_are_one_line``."""
    _one_line(*_looprl(*argv, cwd=tmp_path), expected)


@pytest.mark.parametrize(("argv", "expected"), [
    (["train", "ppo", "CartPole-v1", "--frame", "1", "--frames=2"],  # (abbreviated: was taken)
     "looprl train: error: --frames is given twice (--frames 1 and --frames 2): give it once"),
    (["train", "ppo", "CartPole-v1", "--quiet", "--quiet"], "--quiet is given twice: give it"),
    (["watch", "run", "--episodes", "2", "--episodes", "3"],
     "--episodes is given twice (--episodes 2 and --episodes 3)"),
    (["plot", "--timesteps", "5", "--timesteps=6"], "(--timesteps 5 and --timesteps 6)"),
])
def test_an_option_given_twice_names_both_values(argv: list[str], expected: str,
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ``store`` option of every subcommand takes argparse's one path (abbreviations
    included), the console scripts' too; ``--wrapper`` (``append``) repeats."""
    with pytest.raises(SystemExit):
        cli.main(argv)
    assert expected in capsys.readouterr().err
    from looprl.scripts import train_classic
    with pytest.raises(SystemExit):
        train_classic.main(["CartPole-v1", "ppo", "--save_freq", "5", "--save_freq", "6"])
    assert "(--save_freq 5 and --save_freq 6): give it once" in capsys.readouterr().err
    monkeypatch.setattr(cli, "cmd_train", lambda args: len(args.wrapper))  # (was refused)
    assert cli.main(["train", "ppo", "CartPole-v1", "--wrapper", "x", "--wrapper", "y"]) == 2


def test_ctrl_c_while_setting_up_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "make_env", interrupted)
    threads, handler = torch.get_num_threads(), signal.getsignal(signal.SIGINT)
    assert cli.main(["train", "ppo", "CartPole-v1", "--quiet"]) == 130
    torch.set_num_threads(threads)
    out, err = capsys.readouterr()
    assert err.strip() == "looprl: interrupted", err
    # called from Python, the caller's Ctrl-C stays (an ignored one would be inherited by
    # every process it starts later: a looprl run started then could not be interrupted)
    assert signal.getsignal(signal.SIGINT) is handler


INTERRUPTED_IMPORT = """
import builtins, importlib, sys
program, entry = (sys.argv[2:] or ["looprl", "looprl.cli"])  # (a console script's, its module)
sys.argv[0] = f"/somewhere/bin/{program}"  # (as the looprl program runs)
real, pressed = builtins.__import__, []
def importing(name, *args, **kwargs):
    if name == sys.argv[1] and not pressed:
        pressed.append(name)
        raise KeyboardInterrupt  # (one Ctrl-C while looprl imports it)
    return real(name, *args, **kwargs)
builtins.__import__ = importing
importlib.import_module(entry)
"""


def test_a_second_ctrl_c_while_the_run_stops_does_nothing(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """docs/bad-inputs.md (was: only once the interrupt reached ``main``, after ``looprl
    train`` had saved its preset and closed its logs, when a second Ctrl-C could cut them)."""
    from looprl import cli

    installed: dict[int, object] = {}
    monkeypatch.setattr(signal, "signal", lambda signum, handler: installed.update({
        signum: handler}))
    stopping = cli._stopping(os.getpid())
    with pytest.raises(KeyboardInterrupt):
        stopping(signal.SIGTERM, None)
    installed[signal.SIGINT](signal.SIGINT, None)  # (nothing raised: the save goes on)
    installed[signal.SIGTERM](signal.SIGTERM, None)


@pytest.mark.parametrize("module", ["torch", "numpy", "looprl.memory.prioritized"])
def test_ctrl_c_while_looprl_imports_is_one_line(module: str) -> None:
    """numpy: torch's import of it swallows a Ctrl-C (was: the run trained on, with a numpy
    that lacked names, and failed at the end: module 'numpy' has no attribute 'matrix')."""
    done = subprocess.run([sys.executable, "-c", INTERRUPTED_IMPORT, module],
                          capture_output=True, text=True, timeout=600)
    assert (done.returncode, done.stdout + done.stderr) == (130, "looprl: interrupted\n")


@pytest.mark.parametrize("module", ["torch", "looprl.scripts.train"])
def test_ctrl_c_while_a_console_script_imports_is_one_line(module: str) -> None:
    """``looprl-classic`` and the other console scripts of pyproject.toml (was: a traceback,
    as only the program named ``looprl`` was covered); the line names the script, as its
    errors do."""
    done = subprocess.run([sys.executable, "-c", INTERRUPTED_IMPORT, module, "looprl-classic",
                           "looprl.scripts.train_classic"],
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout + done.stderr) == (130, "looprl-classic: interrupted\n")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])  # (Ctrl-C, a scheduler's)
def test_ctrl_c_during_looprl_run_is_one_line(signum: int, tmp_path: Path) -> None:
    run_dir = tmp_path / "r"
    env = {k: v for k, v in os.environ.items() if k != "LOOPRL_DEBUG"}
    checkpoints = ["checkpoint_every=1000"] if signum == signal.SIGINT else []
    process = subprocess.Popen(
        [sys.executable, "-m", "looprl.cli", "run", "env=CartPole-v1", "frames=10000000",
         "logging.quiet=true", f"hydra.run.dir={run_dir}", *checkpoints], cwd=tmp_path, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        # Ctrl-C as a terminal sends it: a shell's background job (``make test &``) starts its
        # children with SIGINT ignored, which they inherit and keep
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # training runs once results.csv has rows (appended every 100 episodes): the run's
    # directory exists earlier, while torch still imports (a Ctrl-C there may be lost to
    # CPython's import machinery, or end in a SIGINT exit rather than 130)
    # the first checkpoint flushes results.csv before it is written: with
    # checkpoints, wait for the file too (a Ctrl-C during its save leaves none to resume)
    results = run_dir / "ppo" / "CartPole-v1" / "results.csv"
    saved = results.with_name("checkpoint.pt")
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and process.poll() is None and not (
            results.exists() and len(results.read_text().splitlines()) > 1
            and (saved.exists() or not checkpoints)):
        time.sleep(0.2)
    process.send_signal(signum)
    try:
        output, _ = process.communicate(timeout=300)
    finally:
        process.kill()  # (a run that ignored the Ctrl-C would train on, 10M frames)
    assert process.returncode == 130, output
    # (was a bare "looprl: interrupted": where the run is, and how it goes on)
    resume = f"; looprl run --resume {run_dir} goes on from its last checkpoint"
    assert output.strip() == (f"looprl: interrupted; the run is in {run_dir}"
                              + (resume if checkpoints else "")), output
    rows = results.read_text().splitlines()[1:]  # (frame, episode, return: whole rows)
    assert [int(row.split(",")[1]) for row in rows] == list(range(1, len(rows) + 1)), rows[-3:]


def test_watch_over_a_damaged_run_json_names_it(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    preset = classic_control.ppo.env(GymEnvironment("CartPole-v1")).build()
    preset.save(str(tmp_path / "preset.pt"))
    (tmp_path / "run.json").write_text("{damaged")
    assert cli.main(["watch", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err] and f"{tmp_path / 'run.json'} is damaged" in err


@pytest.mark.parametrize("content", ["", "garbage\x00\n1,2,3\n"])
def test_plot_over_a_damaged_returns100_csv_names_it(content: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "ppo" / "CartPole-v1"
    run.mkdir(parents=True)
    (run / "results.csv").write_text("frame,episode,return\n10,1,10.0\n")  # (a good one beside)
    (run / "returns100.csv").write_text(content)
    assert cli.main(["plot", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err] and str(run / "returns100.csv") in err
    assert not list(tmp_path.rglob("*.png"))


# ---------------------------------------------------------------- looprl run
@pytest.mark.parametrize(("overrides", "expected"), [
    (["algorithm.lr=1e-3", "algorithm.lr=1e-4"], "algorithm.lr is given twice"),
    (["frames=abc", "frames=500"], "frames is given twice"),
    (["exploration=greedy", "algorithm.exploration=ez_greedy"], "given twice"),
    (["--resume", "a", "--resume", "b"], "--resume is given twice (--resume a and --resume b): "
     "resume one run directory at a time"),  # (was: "Unknown flag '--resume' ...", and for
    # --resume a --resume a: "a is given twice (a= and a=)")
    (["-cn", "looprl", "--config-name=other"], "--config-name is given twice (-cn looprl and "
     "--config-name=other): give it once"),  # (was: the last taken, as Hydra's flags)
    (["-cd", ".", "-cd", "elsewhere"], "--config-dir is given twice (-cd . and -cd elsewhere)"),
    (["algorithm.clip=-0.2"], "'clip' of ppo must be >= 0"),
    (["runner=es", "runner.search_params=true", "test_episodes=0"],
     "runner=es scores each individual by its evaluation returns"),
    (["runner=es", "runner.search_params=true", "runner.popsize=0"], "popsize must be positive"),
    (["+seed=3"], "Could not append to config"),  # (Hydra's own error)
    (["hydra.run.dir=/proc/x"], "/proc/x"),
    (["hydra.job.chdir=abc"], "Error merging override hydra.job.chdir=abc: Value 'abc' is not a "
                              "valid bool"),  # (was: Hydra's line without its reason)
    (["runtime=ray", "runtime.gpus_per_trainer=1"], "reserves 1 GPUs"),
    (["runtime.max_restarts=-1"], "max_restarts (looprl run's runtime.max_restarts) must be a "
     "whole number >= 0 (0: stop at an environment's exception), got -1"),  # (env copies
    # rebuilt by runtime=local too, as on Ray)
    (["runtime.env_timeout=-1"], "env_timeout (looprl run's runtime.env_timeout) must be "
     "positive, got -1"),  # (runtime=local's: a hung env call interrupted, as on Ray)
    (["--quiet"], "Unknown flag '--quiet' of looprl run. Did you mean logging.quiet=true?"),
    (["--frames", "500"], "Did you mean frames=500?"),  # (Hydra printed its usage block)
    (["--multirn"], "Did you mean '--multirun'?"),
    # a Hydra flag without its value: Hydra's usage block, or (before an override) the run
    # trained with the override taken as the flag's value
    (["--cfg"], "Hydra's flag --cfg takes job, hydra or all after it (looprl run --help)"),
    (["--cfg", "bogus"], "--cfg takes job, hydra or all after it, got 'bogus'"),
    (["--package", "seed=1"], "Hydra's flag --package takes a value after it, got 'seed=1'"),
    # (was: "... convert it with int(...), or give the argparse option type=int")
    (["checkpoint_every=abc"], "got 'abc' (text, not a number)"),
    # (was: "runtime.num_cpus must be ...", the key not given)
    (["runner=pbt", "runner.num_cpus=0"], "runner.num_cpus must be positive"),
    (["runner.num_steps=500"], "runner.num_steps=500 and frames=300 both set the training "
                               "budget"),  # (was: 500 trained, frames silently unread)
    # Mighty's names (was: "Did you mean 'clip_grad'?", "'polyak_rate'?")
    (["algorithm=ppo", "algorithm.clip_range=0.1"], "Did you mean 'clip' (Mighty's "
                                                    "'clip_range')?"),
    (["algorithm=continuous/sac", "algorithm.policy_lr=0.1"],
     "Did you mean 'lr_actor' (Mighty's 'policy_lr')?"),
])
def test_bad_run_overrides_are_one_line(overrides: list[str], expected: str, tmp_path: Path,
                                        capfd: pytest.CaptureFixture[str],
                                        caplog: pytest.LogCaptureFixture,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    if "gpus_per_trainer" in overrides[-1] and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    budget = [] if "runner=es" in overrides else ["frames=300"]  # (es: its own budget keys)
    _one_line(*_looprl_here("run", "env=CartPole-v1", *budget, *overrides, cwd=tmp_path,
                            capfd=capfd, caplog=caplog, monkeypatch=monkeypatch), expected)


def test_optuna_without_evaluation_is_refused() -> None:
    pytest.importorskip("optuna")
    from looprl.runners import OptunaRunner

    with pytest.raises(ValueError, match="runner=optuna scores each trial by its evaluation"):
        OptunaRunner(classic_control.ppo, "CartPole-v1", {"hp/lr": (1e-4, 1e-2, "log")},
                     eval_episodes=0)


@pytest.fixture(scope="module")
def checkpointed_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A short ``looprl run`` with checkpoints (its directory; run in this process: seconds
    faster)."""
    run_dir = tmp_path_factory.mktemp("run") / "r"
    assert cli.main(["run", "env=CartPole-v1", "frames=400", "test_episodes=1",
                     "checkpoint_every=200", "logging.quiet=true", "device=cpu",
                     f"hydra.run.dir={run_dir}"]) == 0
    return run_dir


@pytest.mark.parametrize(("name", "content"), [
    (".hydra/config.yaml", "{{{ :"), (".hydra/config.yaml", ""),
    ("ppo/CartPole-v1/results.csv", "garbage\n"), ("ppo/CartPole-v1/returns100.csv", "")])
def test_resume_over_a_damaged_file_names_it(checkpointed_run: Path, name: str, content: str,
                                             capfd: pytest.CaptureFixture[str],
                                             caplog: pytest.LogCaptureFixture,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path = checkpointed_run / name
    before = path.read_bytes()
    config = {p: p.read_bytes() for p in (checkpointed_run / ".hydra").iterdir() if p != path}
    path.write_text(content)
    try:
        line = _one_line(*_looprl_here("run", "--resume", str(checkpointed_run), "frames=600",
                                       cwd=checkpointed_run.parent, capfd=capfd, caplog=caplog,
                                       monkeypatch=monkeypatch), path.name, "damaged")
    finally:
        path.write_bytes(before)
    assert str(path.parent.name) in line
    # (before anything is written: the run's config still says frames=400)
    assert {p: p.read_bytes() for p in config} == config


def test_a_refused_resume_leaves_the_runs_config_as_it_was(
        checkpointed_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Refused once Hydra ran (frames below the checkpoint's, of a run killed after it), a
    resume left ``.hydra`` rewritten with its overrides: the next bare ``--resume`` took them."""
    results = checkpointed_run / "results.json"
    finished = results.read_bytes()
    saved = checkpointed_run / ".hydra"
    config = {path: path.read_bytes() for path in saved.iterdir()}
    results.unlink()  # (killed after its last checkpoint: no results.json)
    try:
        assert cli.main(["run", "--resume", str(checkpointed_run), "frames=100"]) == 2
    finally:
        results.write_bytes(finished)
    assert "'s checkpoint is at frame 402, past the 100 frames asked for" in \
        capsys.readouterr().err  # (killed: no "finished run")
    assert {path: path.read_bytes() for path in saved.iterdir()} == config


def test_a_first_checkpoint_killed_while_written_is_one_line(
        checkpointed_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Killed between writing ``checkpoint.pt.tmp`` and renaming it, a run's first checkpoint
    leaves that file alone (here: the checkpoint renamed back): a resume said there was no
    checkpoint, as if none had been asked for; it says the write was interrupted."""
    from looprl.distributed.run_state import find_controller_checkpoint
    from looprl.experiments.checkpoint import load_checkpoint

    run_dir = checkpointed_run / "ppo" / "CartPole-v1"
    (run_dir / "checkpoint.pt").rename(run_dir / "checkpoint.pt.tmp")
    try:
        assert cli.main(["run", "--resume", str(checkpointed_run), "frames=600"]) == 2
        with pytest.raises(FileNotFoundError) as error:  # (OnlineRunner's resume_from)
            load_checkpoint(run_dir)
    finally:
        (run_dir / "checkpoint.pt.tmp").rename(run_dir / "checkpoint.pt")
    never = (f"{run_dir / 'checkpoint.pt'} was never written: the write of this first "
             "checkpoint was interrupted (the process was killed while it wrote "
             "checkpoint.pt.tmp, left incomplete beside it); ")
    assert capsys.readouterr().err == (f"looprl: error: {never}there is none to resume from: "
                                       "start the run anew (the logs of the run so far stay "
                                       "in its directory)\n")
    assert str(error.value).startswith(never) and "start the run anew" in str(error.value)
    (tmp_path / "controller_checkpoint.pt.tmp").write_bytes(b"half")  # (a Ray run's)
    with pytest.raises(FileNotFoundError, match=re.escape(
            f"{tmp_path / 'controller_checkpoint.pt'} was never written")):
        find_controller_checkpoint(tmp_path)


def test_a_run_resumed_twice_with_more_frames_gives_each_key_once(tmp_path: Path) -> None:
    """The frames a resume asks for replace the run's own (not a key given twice)."""
    run_dir = tmp_path / "r"
    common = ("test_episodes=0", "checkpoint_every=100", "logging.quiet=true")
    assert cli.main(["run", "env=CartPole-v1", "frames=200", *common,
                     f"hydra.run.dir={run_dir}"]) == 0  # (in this process: seconds faster)
    for frames in (300, 400):
        assert cli.main(["run", "--resume", str(run_dir), f"frames={frames}"]) == 0
    overrides = (run_dir / ".hydra" / "overrides.yaml").read_text()
    assert overrides.count("frames=") == 1 and "frames=400" in overrides, overrides


# ---------------------------------------------------------------- a full disk
@pytest.mark.parametrize("failure", [OSError(errno.ENOSPC, "No space left on device"),
                                     RuntimeError("PytorchStreamWriter failed writing file "
                                                  "data/0: file write failed"),
                                     RuntimeError("[enforce fail at inline_container.cc:672] . "
                                                  "unexpected pos 50048 vs 49936")])
def test_a_full_disk_while_checkpointing_is_reported_as_one(
        failure: Exception, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from looprl.experiments import SingleEnvExperiment
    from looprl.experiments import checkpoint as checkpoint_module

    env = GymEnvironment("CartPole-v1")
    experiment = SingleEnvExperiment(classic_control.dqn.env(env).build(), env,
                                     logdir=str(tmp_path), quiet=True)

    def full(*args: object, **kwargs: object) -> None:
        raise failure

    monkeypatch.setattr(checkpoint_module.torch, "save", full)
    with pytest.raises(OSError, match="the disk is full.*MiB free") as error:
        checkpoint_module.save_checkpoint(experiment)
    assert error.value.errno == errno.ENOSPC or isinstance(failure, RuntimeError)
    assert "must pickle" not in str(error.value)
    assert not list(tmp_path.rglob("*.tmp"))
    experiment.close()
