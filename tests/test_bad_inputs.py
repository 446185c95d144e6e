"""Bad input of every kind is one line that says what was wrong and how to fix it: in
Python (a ``ValueError``/``KeyError`` with that line) and on the command line (one
``looprl: error:`` line, no traceback), checked for every CLI error path in turn."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from helpers import CountingEnv
from looprl.agents.sac import Temperature
from looprl.core import Policy
from looprl.core.files import load_file
from looprl.environments import GymEnvironment, StepResult
from looprl.experiments import run_experiment
from looprl.experiments.checkpoint import load_checkpoint
from looprl.memory import ExperienceReplayBuffer, SegmentBuffer
from looprl.meta import NetworkReset, SPaCE
from looprl.presets import load_preset
from looprl.presets.classic_control import dqn, ppo
from looprl.presets.continuous import sac


class ShapeShifter(CountingEnv):
    """Observations of shape (4,) for 3 steps, then (5,)."""

    observation_space = gym.spaces.Box(-1, 1, (4,), np.float32)

    def step(self, action):
        self.t += 1
        return np.zeros(4 if self.t < 3 else 5, np.float32), 1.0, self.t >= 10, False, {}


def _one_line(error: pytest.ExceptionInfo, *parts: str) -> None:
    message = str(error.value.args[0])
    assert "\n" not in message, message
    for part in parts:
        assert part in message, message


@pytest.mark.parametrize("content", [b"garbage\n", b"PK\x03\x04 truncated zip", b""])
def test_a_damaged_file_is_one_line(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "preset.pt"
    path.write_bytes(content)
    with pytest.raises(ValueError) as error:
        load_preset(str(path))
    _one_line(error, str(path), "not a readable looprl preset", "train one")
    checkpoint = tmp_path / "checkpoint.pt"
    checkpoint.write_bytes(content)
    with pytest.raises(ValueError) as error:
        load_checkpoint(tmp_path)
    # (was "start the run anew": a new run in its directory is refused while checkpoint.pt is
    # there, saying to resume it)
    _one_line(error, "not a readable checkpoint", "nothing to resume from it: start the run "
              "again in a new directory, or in this one once you delete checkpoint.pt")


def test_a_truncated_preset_is_one_line(tmp_path: Path) -> None:
    whole = tmp_path / "whole.pt"
    ppo.env(GymEnvironment("CartPole-v1")).device("cpu").build().save(str(whole))
    cut = tmp_path / "cut.pt"
    cut.write_bytes(whole.read_bytes()[:3000])
    with pytest.raises(ValueError) as error:
        load_file(cut, "looprl preset", "train one")
    _one_line(error, "truncated, corrupted")


class Retired:
    """A class a later version no longer has (as ``MetaTrainer`` went)."""


def test_a_checkpoint_of_a_class_since_removed_is_one_line(tmp_path: Path, monkeypatch) -> None:
    import looprl.meta.hub as hub

    Retired.__module__, Retired.__qualname__ = hub.__name__, "Retired"
    monkeypatch.setattr(hub, "Retired", Retired, raising=False)
    old = tmp_path / "checkpoint.pt"
    torch.save({"trainer": Retired()}, old)
    monkeypatch.delattr(hub, "Retired")
    with pytest.raises(ValueError) as error:
        load_file(old, "checkpoint", "start the run anew")
    _one_line(error, "written by another version of looprl", "Retired", "start the run anew")


def test_a_checkpoint_of_a_module_since_removed_is_one_line(tmp_path: Path, monkeypatch) -> None:
    """As checkpoints of n-step runs that hold a ``looprl.memory.nstep.NStepReplayBuffer``."""
    import sys
    import types

    module = types.ModuleType("looprl.memory.retired")
    Retired.__module__, Retired.__qualname__ = module.__name__, "Retired"
    module.Retired = Retired
    monkeypatch.setitem(sys.modules, module.__name__, module)
    old = tmp_path / "checkpoint.pt"
    torch.save({"buffer": Retired()}, old)
    monkeypatch.delitem(sys.modules, module.__name__)
    with pytest.raises(ValueError) as error:
        load_file(old, "checkpoint", "start the run anew")
    _one_line(error, "written by another version of looprl", "'looprl.memory.retired'",
              "start the run anew")


@pytest.mark.parametrize("module", ["__main__", "__mp_main__"])  # (a spawned child's copy)
def test_a_checkpoint_of_a_class_of_the_users_script_says_to_move_it_to_a_module(
        tmp_path: Path, monkeypatch, module: str) -> None:
    import types

    class MyEnv:
        """A user's class, defined in the script."""

    MyEnv.__module__, MyEnv.__qualname__ = module, "MyEnv"
    script = types.ModuleType(module)
    script.MyEnv = MyEnv
    monkeypatch.setitem(sys.modules, module, script)
    saved = tmp_path / "checkpoint.pt"
    torch.save({"env": MyEnv()}, saved)
    if module == "__main__":  # (another script: its __main__ has no such class)
        monkeypatch.delattr(script, "MyEnv")
    else:  # (the parent of the spawned child that wrote it)
        monkeypatch.delitem(sys.modules, module)
    with pytest.raises(ValueError) as error:
        load_file(saved, "checkpoint", "start the run anew")
    _one_line(error, "defined in the script that wrote it", "in a module that both import")


def test_a_file_as_log_directory_is_one_line(tmp_path: Path) -> None:
    logdir = tmp_path / "a_file"
    logdir.write_text("")
    with pytest.raises(ValueError) as error:
        run_experiment(ppo, GymEnvironment("CartPole-v1"), 64, logdir=str(logdir), quiet=True)
    _one_line(error, "cannot write the run's logs", "Not a directory", "logdir=")


@pytest.fixture
def read_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory this process may not write in (``os.access`` says so: tests run as root,
    whom a ``chmod`` does not stop)."""
    path = tmp_path / "read_only"
    path.mkdir()
    access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, *args, **kwargs: (
        not Path(p).is_relative_to(path) and access(p, mode, *args, **kwargs)))
    return path


def test_a_log_directory_without_write_permission_is_one_line(read_only: Path) -> None:
    with pytest.raises(ValueError) as error:
        run_experiment(ppo, GymEnvironment("CartPole-v1"), 64, logdir=str(read_only),
                       quiet=True)
    _one_line(error, "cannot write the run's logs", "Permission denied", "logdir=")
    assert not any(read_only.iterdir())  # nothing made in it


@pytest.mark.parametrize("argv", [
    ["train", "ppo", "CartPole-v1", "--frames", "64", "--logdir", "{ro}"],
    ["run", "frames=64", "test_episodes=0", "hydra.run.dir={ro}/run"],
    ["run", "-m", "frames=64", "test_episodes=0", "hydra.sweep.dir={ro}"],
])
def test_a_log_directory_without_write_permission_is_one_line_in_the_cli(
        read_only: Path, argv: list[str], capsys: pytest.CaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from looprl.cli import main

    monkeypatch.delenv("LOOPRL_DEBUG", raising=False)
    assert main([a.format(ro=read_only) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("looprl: error: cannot write"), err
    assert "Permission denied" in err and not any(read_only.iterdir())


@pytest.mark.parametrize("argv", [
    ["train", "ppo", "CartPole-v1", "--frames", "64", "--logdir", "{tmp}/{long}"],
    ["train", "ppo", "CartPole-v1", "--frames", "64", "--logdir", "{tmp}/x/{long}/y"],  # (no x/)
    ["run", "frames=64", "test_episodes=0", "hydra.run.dir='{tmp}/{long}/run'"],
])
def test_a_log_directory_name_too_long_for_the_file_system_is_one_line(
        tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A path component over 255 bytes was a traceback (Python 3.11's ``Path.exists``)."""
    from looprl.cli import main

    monkeypatch.delenv("LOOPRL_DEBUG", raising=False)
    assert main([a.format(tmp=tmp_path, long="é" * 200) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("looprl: error: "), err
    assert "File name too long" in err and "choose" in err and not any(tmp_path.iterdir())


@pytest.mark.parametrize("frames", [None, "abc", True, 0, -5])
def test_the_budget_must_be_a_positive_number(frames: object) -> None:
    with pytest.raises(ValueError) as error:
        run_experiment(ppo, GymEnvironment("CartPole-v1"), frames, quiet=True)
    _one_line(error, "frames must be a positive number", repr(frames))


def test_an_environment_id_is_made_for_the_agents_family(tmp_path: Path) -> None:
    (result,) = run_experiment(ppo.hyperparameters(n_envs=2, n_steps=16, minibatch_size=32),
                               "CartPole-v1", 64, logdir=str(tmp_path), quiet=True,
                               test_episodes=1)
    assert result.env == "CartPole-v1" and result.frames >= 64


def test_a_minibatch_larger_than_its_data(caplog: pytest.LogCaptureFixture) -> None:
    """Cut to the rows of an update (on-policy) or to the replay, said in one warning: what
    the trainer uses, logs and saves is that size."""
    env = GymEnvironment("CartPole-v1")
    preset = ppo.env(env).hyperparameters(minibatch_size=512).device("cpu").build()
    (warning,) = [r.getMessage() for r in caplog.records if "minibatch_size" in r.getMessage()]
    assert "minibatch_size=512 is larger than the 256 rows" in warning and "\n" not in warning
    assert preset.hyperparameters["minibatch_size"] == 256
    caplog.clear()  # (a second preset, e.g. a search's next trial, does not say it again)
    ppo.env(env).hyperparameters(minibatch_size=512).device("cpu").build()
    assert not [r for r in caplog.records if "minibatch_size" in r.getMessage()]
    agent = preset.agent()
    assert agent.trainer.minibatch_size == 256
    caplog.clear()
    replay = dqn.env(env).hyperparameters(minibatch_size=64, replay_buffer_size=32).build()
    assert replay.hyperparameters["minibatch_size"] == 32
    assert replay.agent().minibatch_size == 32
    sac_preset = sac.env(GymEnvironment("Pendulum-v1")).hyperparameters(
        minibatch_size=64, replay_buffer_size=32).build()
    assert sac_preset.hyperparameters["minibatch_size"] == 32
    warnings = [r.getMessage() for r in caplog.records if "replay_buffer_size=32" in r.getMessage()]
    assert len(warnings) == 2 and "minibatch_size=64 is larger than the replay" in warnings[0]


def test_a_misspelled_registered_name_suggests_the_right_one() -> None:
    with pytest.raises(KeyError) as error:
        Policy(type_="actor-critic-separat")
    _one_line(error, "Did you mean 'actor-critic-separate'?")


def test_search_ranges_that_are_not_a_mapping_are_one_line() -> None:
    from looprl.runners.space import SearchSpaceError, search_mapping

    with pytest.raises(SearchSpaceError) as error:
        search_mapping(42, "search_targets")
    _one_line(error, "search_targets must map names to ranges", "got 42")
    assert search_mapping(None, "mutations") == {}


def test_observations_that_change_shape_are_one_line(tmp_path: Path) -> None:
    torch.manual_seed(0)
    for builder in (dqn, ppo):  # one environment, then Gymnasium's vector environments
        with pytest.raises(ValueError) as error:
            run_experiment(builder, GymEnvironment(ShapeShifter()), 200, logdir=str(tmp_path),
                           quiet=True, test_episodes=0)
        _one_line(error, "ShapeShifter returned an observation of shape (5,) after "
                  "observations of shape (4,)", "must keep one shape")


# -- every CLI error path, through the command's main, one after another --------------------
def _cli_error_paths(tmp: Path) -> list[list[str]]:
    (tmp / "file").write_text("")
    (tmp / "bad").mkdir()
    (tmp / "bad" / "preset.pt").write_bytes(b"garbage")
    run = ["run", "frames=64", "test_episodes=0"]
    return [
        ["train", "ppoo", "CartPole-v1"],
        ["train", "ppo", "NoSuchEnv-v0"],
        ["train", "ppo", "CartPole-v1", "lrr=1"],
        ["train", "ppo", "CartPole-v1", "lr=abc"],
        ["train", "dqn", "Pendulum-v1"],
        ["train", "ppo", "CartPole-v1", "--frames", "0"],
        ["train", "ppo", "CartPole-v1", "--frames", "64", "--logdir", str(tmp / "file")],
        ["watch", str(tmp / "bad")],
        ["watch", str(tmp / "nothing_here")],
        ["list", "ppoo"],
        [*run, "algorithm=ppoo"],
        [*run, "algorithm.lrr=1"],
        [*run, "env=NoSuchEnv-v0"],
        ["run", "test_episodes=0", "runner=es", "runner.search_targets=42"],
        [*run, "--resume", str(tmp / "bad")],
        [*run, f"hydra.run.dir={tmp / 'file' / 'run'}"],
        [*run, "runtime=ray", "runtime.actorz=2"],
    ]


def test_every_cli_error_path_is_one_line_without_traceback(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """In this process, one path after another (a subprocess cost seconds of imports; the
    real command's own lines are checked by test_bad_inputs_cli's subprocess tests)."""
    from looprl.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOOPRL_DEBUG", raising=False)
    for argv in _cli_error_paths(tmp_path):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                code = main(argv)
            except SystemExit as stop:
                code = stop.code
        lines = [line for line in err.getvalue().splitlines() if line.strip()]
        assert code == 2, (argv, code, err.getvalue())
        assert len(lines) == 1 and lines[0].startswith("looprl: error: "), (argv, err.getvalue())
        assert "Traceback" not in err.getvalue(), (argv, err.getvalue())
    assert not (tmp_path / "outputs").exists()  # rejected configs leave no run directory


def test_observations_that_change_shape_are_one_line_on_the_ray_collector() -> None:
    from looprl.collector import EnvRunner
    from looprl.core import RolloutResult
    from looprl.environments import SRLEnvironment, step_result

    class Growing(SRLEnvironment):
        agent_count = 1

        def __init__(self):
            self.t = 0

        def reset(self):
            self.t = 0
            return [step_result({"obs": np.zeros(2, np.float32)}, 0.0, False)]

        def step(self, actions):
            self.t += 1
            return [step_result({"obs": np.zeros(2 + self.t, np.float32)}, 1.0, False)]

    runner = EnvRunner(Growing, n_envs=2)
    request = runner.request()
    with pytest.raises(ValueError) as error:
        runner.step(0, RolloutResult(action=np.zeros(len(request.obs), np.int64)))
    _one_line(error, "Growing's observations changed shape", "(3,)", "(2,)", "keep one shape")


def test_agents_that_wait_train_and_evaluate_on_the_local_runtime(tmp_path: Path) -> None:
    """An SRL environment whose agents do not all act at every step (``None`` results)
    trains and evaluates locally as on Ray: the local run steps the SRL environment itself on
    the collector (it was refused before, when the local loop played it through a PettingZoo
    parallel view)."""
    from looprl.cli import main

    env = "tests.configs.user_parts:TakingTurns"
    quiet_hydra = ["logging.quiet=true", "hydra/job_logging=none", "hydra/hydra_logging=none"]
    assert main(["train", "multiagent.ppo", env, "--frames", "64", "--quiet", "--logdir",
                 str(tmp_path)]) == 0
    assert main(["run", "algorithm=multiagent/ppo", f"env={env}", "frames=64",
                 "test_episodes=2", *quiet_hydra, f"hydra.run.dir={tmp_path / 'run'}"]) == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert len(results["eval"]["returns"]) == 2 and results["train"]["step"] >= 64


def test_a_result_list_of_the_wrong_length_is_one_line_on_both_runtimes() -> None:
    from tests.configs.user_parts import TakingTurns

    from looprl.collector import EnvRunner
    from looprl.core import RolloutResult
    from looprl.environments import MultiagentPettingZooEnv

    local = MultiagentPettingZooEnv(TakingTurns(short=True), "pair")  # (seed 003's turn loop)
    local.reset(seed=0)
    with pytest.raises(ValueError) as error:
        local.step(0)
        local.step(1)
    _one_line(error, "TakingTurns.step() returned 1 results for 2 agents",
              "one StepResult (or None) per agent")
    runner = EnvRunner(lambda: TakingTurns(short=True), n_envs=1)
    request = runner.request()
    with pytest.raises(ValueError) as error:
        runner.step(0, RolloutResult(action=np.zeros(len(request.obs), np.int64)))
    _one_line(error, "TakingTurns.step() returned 1 results for 2 agents")


def test_a_reset_with_no_agent_to_act_is_one_line() -> None:
    """(was: the run stepped the environment with no actions until its budget ran out, then
    said the trainer never stepped)"""
    from tests.configs.user_parts import TakingTurns

    from looprl.collector import EnvRunner

    class NobodyFirst(TakingTurns):
        def reset(self) -> list[None]:
            super().reset()
            return [None, None]

    with pytest.raises(ValueError) as error:
        EnvRunner(NobodyFirst, n_envs=1)
    _one_line(error, "NobodyFirst.reset() returned None for every agent", "agents that move first")


def _one_agent_env() -> type:
    """An SRL environment of one agent whose ``step`` returns ``self.returned``."""
    from looprl.environments import SRLEnvironment

    class OneAgent(SRLEnvironment):
        agent_count = 1
        returned: object = None

        def reset(self):
            return [StepResult(obs={"obs": np.zeros(3, np.float32)},
                               reward=np.zeros(1, np.float32), done=np.zeros(1, bool), info={})]

        def step(self, actions):
            return self.returned

    return OneAgent


@pytest.mark.parametrize("returned,found", [
    (None, "returned NoneType, not a list"),
    (StepResult(obs={"obs": np.zeros(3, np.float32)}, reward=np.zeros(1, np.float32),
                done=np.zeros(1, bool), info={}), "returned StepResult, not a list"),
], ids=["None", "a bare StepResult"])
def test_a_step_that_returns_no_list_is_one_line_and_never_rebuilt(returned, found) -> None:
    """(was: ``None`` read as a copy that raised and was rebuilt, so ``test_pipeline`` and Ray
    runs stepped on without a frame, forever; a bare ``StepResult`` rebuilt ``max_restarts``
    times, a new copy returning the same)"""
    from looprl.collector import EnvRunner
    from looprl.collector.recovery import EnvRestarts
    from looprl.core import RolloutResult
    from looprl.environments.faults import EnvironmentOutputError

    class Forgot(_one_agent_env()):
        pass

    Forgot.returned = returned

    runner = EnvRunner(Forgot, n_envs=1, restarts=EnvRestarts(3, "runtime.max_restarts"))
    request = runner.request()
    with pytest.raises(EnvironmentOutputError) as error:
        runner.step(0, RolloutResult(action=np.zeros(len(request.obs), np.int64)))
    _one_line(error, f"Forgot.step() {found}; return one StepResult (or None) per agent")
    assert runner.restarts.count == 0


@pytest.mark.parametrize("spaces,found", [
    (None, "Forgot.observation_spaces must be a list of 1 Gymnasium spaces (one per agent), got "
           "NoneType"),
    ([4], "Forgot.observation_spaces[0] is a int, not a Gymnasium space"),
], ids=["None", "not a space"])
def test_spaces_that_are_not_one_space_per_agent_are_one_line_everywhere(spaces, found) -> None:
    """(was: ``'NoneType' object is not subscriptable`` where a single-agent preset adapts the
    environment; ``test_environment`` said it)"""
    import gymnasium as gym

    from looprl.distributed import test_environment
    from looprl.environments import srl
    from looprl.environments.srl import register
    from looprl.environments.srl_adapters import SRLAgentEnvironment

    class Forgot(_one_agent_env()):
        observation_spaces = spaces
        action_spaces = [gym.spaces.Discrete(2)]

    with pytest.raises(ValueError) as error:
        SRLAgentEnvironment(Forgot(), ("forgot", {}))
    _one_line(error, found)
    name, saved = "forgot_spaces", dict(srl._REGISTRY)
    register(name, Forgot)
    try:
        with pytest.raises(ValueError) as error:
            test_environment(name)
    finally:
        srl._REGISTRY.clear()
        srl._REGISTRY.update(saved)
    _one_line(error, f"env '{name}': {found}")


def test_a_seed_style_space_method_that_returns_none_is_one_line() -> None:
    class Forgot(_one_agent_env()):
        def observation_space(self):
            pass  # (``return`` forgotten)

    with pytest.raises(ValueError) as error:
        Forgot().observation_spaces  # noqa: B018 -- the property raises
    _one_line(error, "Forgot.observation_space() returned None; return a Gymnasium space")


@pytest.mark.parametrize("bad,found", [
    (lambda obs: (obs, 1.0, False, {}), "returned a tuple for agent 0"),
    (lambda obs: StepResult(obs=obs, reward=np.ones(1, np.float32), done=np.zeros(1, bool),
                            info={}), "returned a StepResult whose obs is a ndarray, not a dict"),
], ids=["a gym tuple", "bare obs array"])
def test_a_result_that_is_not_a_step_result_is_one_line(bad, found) -> None:
    """An SRL environment returning something else than ``StepResult`` s of dict observations
    (on Ray, test_pipeline and the local collector alike): was ``AttributeError: 'tuple' object
    has no attribute 'reward'`` or ``'numpy.ndarray' object has no attribute 'items'``."""
    from looprl.collector import EnvRunner
    from looprl.core import RolloutResult
    from looprl.environments import SRLEnvironment

    class Wrong(SRLEnvironment):
        agent_count = 1

        def reset(self):
            return [StepResult(obs={"obs": np.zeros(3, np.float32)},
                               reward=np.zeros(1, np.float32), done=np.zeros(1, bool), info={})]

        def step(self, actions):
            return [bad(np.zeros(3, np.float32))]

    runner = EnvRunner(Wrong, n_envs=1)
    request = runner.request()
    with pytest.raises(ValueError) as error:
        runner.step(0, RolloutResult(action=np.zeros(len(request.obs), np.int64)))
    _one_line(error, f"Wrong.step() {found}", "return a StepResult(obs={'obs': array",
              "step_result(...)")


@pytest.mark.parametrize("make", [
    lambda: ExperienceReplayBuffer(100, n_step=0.5),
    lambda: NetworkReset(every=0.5),
    lambda: SPaCE(check_every=2.5),
    lambda: SegmentBuffer(0.5, 2),
], ids=["replay n_step", "reset every", "space check_every", "segment length"])
def test_a_fraction_where_a_count_belongs_is_one_line(make) -> None:
    """Counts (steps, periods, sizes) are whole numbers >= 1: 0.5 would become 0 (a division
    by zero later) or stay a fraction."""
    with pytest.raises(ValueError, match=r"must be positive \(a whole number\), got (0\.5|2\.5)"):
        make()


@pytest.mark.parametrize("make", [
    lambda: ExperienceReplayBuffer(None),
    lambda: NetworkReset(every=None),
    lambda: Temperature(None),
], ids=["replay size", "reset every", "sac temperature"])
def test_none_where_a_number_belongs_is_one_line(make) -> None:
    """``None`` is no size, period or temperature (``Temperature(None)`` raised math.log's
    TypeError, the others failed later)."""
    with pytest.raises(ValueError, match=r"must be positive.*got None"):
        make()
