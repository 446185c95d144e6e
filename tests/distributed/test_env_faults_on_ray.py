"""Environment faults inside Ray actors, injected as RLlib's env-runner failure tests inject
them (``rllib/env/tests/test_env_runner_failures.py``): env copies that raise in ``step`` or
``reset`` on chosen actors, and one whose ``step`` hangs. The run rebuilds the copy (or Ray
restarts the actor), says which actor, copy, method, episode and step, and finishes its frame
budget; past ``runtime.max_restarts`` it stops in one line. First the collector's part, without
Ray (``EnvRunner(restarts=...)``), then whole runs on the module's shared local instance."""

from __future__ import annotations

import logging
import re
import time
from typing import Any

import numpy as np
import pytest
from tests.distributed.faulty_env import PATH, faulty_policy

from looprl.collector import EnvRunner
from looprl.collector.recovery import EnvRestarts
from looprl.core import RolloutResult
from looprl.distributed import AlgorithmSpec, DistributedRun, RuntimeConfig
from looprl.distributed.run_state import DistributedResult
from looprl.environments import EnvironmentFailure, PolicyActionError
from looprl.environments.base import wrapped_seed
from looprl.environments.duplicate import DuplicateEnvironment
from looprl.environments.gym import GymEnvironment
from looprl.environments.srl import import_environment

GYM_ID = "tests.distributed.faulty_env.FaultyCartPole"  # (what importing PATH registers)
NAME = re.escape(PATH)  # (the name in its lines: as the user gave it, on either runtime)


def collect(runner: EnvRunner, steps: int) -> list:
    """Step ``runner`` ``steps`` times with action 0; its segments."""
    segments = []
    for _ in range(steps):
        request = runner.request(0)
        runner.step(0, RolloutResult(action=np.zeros(len(request.obs), np.int64)))
        segments += runner.segments()
    return segments


def faulty_runner(faults: dict[int, str], restarts: EnvRestarts | None, **options) -> EnvRunner:
    """Two copies of ``FaultyCartPole`` (seeded 0 and 1) in segments of 4 steps."""
    return EnvRunner(PATH, {"faults": faults}, n_envs=2, segment_length=4, seed=0,
                     restarts=restarts, **options)


def test_a_copy_that_raises_in_step_is_rebuilt_and_its_episode_cut_as_truncated() -> None:
    restarts = EnvRestarts(3)
    runner = faulty_runner({1: "step"}, restarts)
    first_env = runner.envs[1]
    segments = collect(runner, 8)
    (fault,) = restarts.pop()
    assert (fault.env, fault.copy, fault.method, fault.episode, fault.step) == (
        PATH, 1, "step", 1, 3)
    assert fault.error == "RuntimeError: step fault injected"
    assert fault.line() == f"{PATH} copy 1 raised in step (episode 1, step 3): " \
                           "RuntimeError: step fault injected"
    assert runner.envs[1] is not first_env and restarts.count == 1
    # stream 1: rows 0, 1, 2 are its first episode (row 2 chose the action of the failed step 3)
    first = segments[0]
    assert first.truncated[:, 1].tolist() == [False, False, True, False, False]
    assert not first.done[:, 1].any() and first.reward[3, 1] == 0.0  # row 3 starts anew
    assert not first.truncated[:, 0].any()  # copy 0 goes on untouched
    assert all(episode.length > 2 for episode in runner.pop_episodes()), "the cut one was reported"


def test_a_copy_that_raises_in_reset_is_rebuilt_and_the_run_goes_on() -> None:
    restarts = EnvRestarts(3)
    runner = faulty_runner({0: "reset"}, restarts)
    segments = collect(runner, 60)  # (three CartPole episodes end well within 60 steps)
    faults = restarts.pop()
    assert [(f.copy, f.method, f.episode, f.step) for f in faults] == [(0, "reset", 3, None)]
    ends = [s.done[:, 0] | s.truncated[:, 0] for s in segments]
    assert sum(int(e[:-1].sum()) for e in ends) >= 2  # episodes go on ending after the fault


def test_without_restarts_an_env_fault_stops_as_locally_and_past_the_limit_in_one_line() -> None:
    with pytest.raises(EnvironmentFailure, match=f"{NAME}.step.. raised RuntimeError: step "
                                                 r"fault injected \(episode 1, step 3\)"):
        collect(faulty_runner({1: "step"}, None), 8)
    with pytest.raises(EnvironmentFailure, match=(
            f"{NAME}.step.. raised RuntimeError: step fault injected "
            r"\(copy 1, episode 1, step 3\); runtime.max_restarts=0 rebuilds no copy$")):
        collect(faulty_runner({1: "step"}, EnvRestarts(0, "runtime.max_restarts")), 8)


def test_a_vector_environment_that_raises_is_rebuilt_whole() -> None:
    import_environment(PATH)  # registers the Gymnasium id

    def build() -> DuplicateEnvironment:
        return DuplicateEnvironment([GymEnvironment(GYM_ID, faults={1: "step"})
                                     for _ in range(2)])

    restarts = EnvRestarts(3)
    runner = EnvRunner(build, n_envs=2, segment_length=4, seed=0, restarts=restarts)
    first_env = runner.envs
    segments = collect(runner, 8)
    (fault,) = restarts.pop()
    assert (fault.copy, fault.method) == (None, "step")
    assert "step fault injected" in fault.line() and "rebuilt together" in fault.line()
    assert runner.envs is not first_env
    assert segments[0].truncated[2].tolist() == [True, True]  # every episode cut there


def test_a_rebuilt_atari_environment_of_a_run_seeded_near_2_31_keeps_ale_pys_seed_range() -> None:
    pytest.importorskip("ale_py")
    from looprl.environments.atari import AtariVectorEnvironment

    class FaultyPong(AtariVectorEnvironment):
        faulty = True  # (the first one built: its first step raises)

        def step(self, action):
            if FaultyPong.faulty:
                FaultyPong.faulty = False
                raise RuntimeError("step fault injected")
            return super().step(action)

    restarts = EnvRestarts(3)  # (the rebuilt copies' seed, 2**31 - 2, is past ale-py's int32)
    runner = EnvRunner(lambda: FaultyPong("Pong", 2), n_envs=2, segment_length=4,
                       seed=2**31 - 4, restarts=restarts)
    collect(runner, 3)
    assert [fault.line() for fault in restarts.pop()] == [
        "Pong raised in step: RuntimeError: step fault injected"]


def test_a_nan_action_is_the_policys_fault_and_no_copy_is_rebuilt() -> None:
    restarts = EnvRestarts(3)
    runner = EnvRunner("Pendulum-v1", n_envs=2, segment_length=4, seed=0, restarts=restarts)
    first_envs = list(runner.envs)
    runner.request(0)
    with pytest.raises(PolicyActionError, match=r"non-finite actions \(\[\[nan\], \[nan\]\]\)"):
        runner.step(0, RolloutResult(action=np.full((2, 1), np.nan, np.float32)))
    assert restarts.count == 0 and runner.envs == first_envs


def test_env_timeout_must_be_positive_or_null() -> None:
    with pytest.raises(ValueError, match="runtime.env_timeout must be > 0 seconds"):
        RuntimeConfig(env_timeout=0)
    assert RuntimeConfig(env_timeout=None).env_timeout is None


# -- whole runs on Ray ------------------------------------------------------------------------

def ppo_spec(faults: dict[int, str], broken: str | None = None,
             policy: Any = "actor-critic-separate") -> AlgorithmSpec:
    return AlgorithmSpec(
        env=PATH, env_args={"faults": faults, "broken": broken}, policy=policy,
        policy_args={"obs_dim": {"obs": 4}, "action_dim": 2, "lr": 1e-3},
        trainer="ppo", trainer_args={"epochs": 2, "minibatch_size": 64},
        buffer_args={"batch_streams": 4})


def run(faults: dict[int, str], frames: int, seed: int = 0, broken: str | None = None,
        policy: Any = "actor-critic-separate", **options) -> DistributedResult:
    """A PPO run of ``frames`` on two actors of two copies each (``broken``: ``FaultyCartPole``'s
    constructor fault; ``policy``: the spec's); ``AssertionError`` if it has not finished
    within 600 s (an actor that hangs would hold it forever; a loaded machine takes a minute or
    more)."""
    runtime = RuntimeConfig(**{"actors": 2, "envs_per_actor": 2, "segment_length": 16,
                               "checkpoint_every": None, **options})
    deadline = time.monotonic() + 600

    def in_time(_: DistributedRun) -> None:
        assert time.monotonic() < deadline, "the run did not finish within 600 s"

    return DistributedRun(ppo_spec(faults, broken, policy), runtime, frames=frames, logdir=None,
                          seed=seed, quiet=True).run(callback=in_time)


def test_faults_in_step_reset_and_a_hang_on_chosen_actors(local_ray, caplog):
    """One run, three faults: actor 0's copy 1 raises in step 3 (rebuilt), then its copy 0
    hangs in step 6 (after ``runtime.env_timeout`` the controller kills actor 0, and Ray
    restarts it: its copies seeded anew, no fault); actor 1's copy 0 raises in the reset of
    its episode 3 (rebuilt). Each is logged and recorded, and the run finishes its budget on
    sane returns (the cut episode, 2 steps long, is not among them: CartPole's shortest last
    8). The hang lasts an hour, so ``env_timeout`` is 10 s: a healthy copy's step that a loaded
    machine stalls for a second or more is not taken for a hang (was: 1 s)."""
    caplog.set_level(logging.WARNING, "looprl.distributed")
    result = run({1: "step", 0: ("hang", 6), 10_000: "reset"}, frames=600, env_timeout=10.0)
    assert 600 <= result.frames <= 602 and result.train_steps > 0  # (was 610: the restarted
    # actor took its whole share again, not what was left of it)
    assert sorted(name for name, _ in result.restarts) == [
        "actor0", "actor0/copy1", "actor1/copy0"], caplog.text
    assert (f"actor0: {PATH} copy 1 raised in step (episode 1, step 3): RuntimeError: step "
            "fault injected; rebuilt it, dropped its episode in progress" in caplog.text)
    assert (f"actor1: {PATH} copy 0 raised in reset (episode 3): RuntimeError: reset fault "
            "injected; rebuilt it" in caplog.text)
    assert re.search(f"actor0: {NAME} copy 0 has been in step for \\d+ s \\(episode 1, step 6\\)"
                     r", longer than runtime.env_timeout=10 s: killing actor0", caplog.text)
    assert re.search(f"actor0 worker died at frame \\d+ \\({NAME} copy 0 has been in step",
                     caplog.text)  # (the call that hung; was Ray's "killed by ray.kill")
    assert result.returns and 8 <= min(result.returns) and max(result.returns) <= 500


def test_env_faults_past_max_restarts_stop_the_run_in_one_line(local_ray):
    """... in a run seeded 2**32 - 1 on two actors and two trainers: actor 1's copies are
    seeded from the seed plus 10_000 wrapped as every derived seed (``wrapped_seed``), its copy
    1 with one more, which the fault names (was: each actor failed to start, its copy's seed
    past 2**32 - 1; and trainer 1, NumPy's global seed past it)."""
    seed = 2**32 - 1
    with pytest.raises(RuntimeError, match=(
            f"^actor1 worker failed: EnvironmentFailure: {NAME}.step.. raised RuntimeError: "
            r"step fault injected \(copy 1, episode 1, step 3\); runtime.max_restarts=0 "
            r"rebuilds no copy$")):
        run({wrapped_seed(seed + 10_000) + 1: "step"}, frames=10**6, seed=seed, trainers=2,
            max_restarts=0)


def test_a_worker_that_cannot_start_stops_the_run_and_its_warnings_reach_the_driver(
        local_ray, caplog):
    """A user's environment whose constructor warns why it cannot start, then raises, in the
    actors: the run stops in its one line, and the warning is logged on the driver (was: in
    Ray's session logs only; Ray keeps the constructor's error as text). Likewise where it
    fails in an actor that Ray restarts after its process ended: not restarted again; and in a
    policy worker that Ray restarts (was: its actors asked it again forever, the run hung), as
    where a policy worker died with no ``runtime.max_restarts`` left."""
    caplog.set_level(logging.WARNING)

    def warned(how: str, line: str = "FaultyCartPole: no licence server found") -> bool:
        return any(record.name == "tests.distributed.faulty_env"
                   and record.getMessage() == f"{line} ({how})" for record in caplog.records)

    with pytest.raises(RuntimeError, match=r"^actor\d worker failed to start: RuntimeError: "
                                           r"constructor fault injected$"):
        run({}, frames=10**6, broken="actor")
    assert warned("actor"), caplog.text
    with pytest.raises(RuntimeError, match=r"^actor0 worker could not be restarted: "
                                           r"RuntimeError: constructor fault injected$"):
        run({0: "exit"}, frames=10**6, broken="restarted")
    assert warned("restarted"), caplog.text
    started = time.monotonic()
    with pytest.raises(RuntimeError, match=r"^policy0 worker could not be restarted: "
                                           r"RuntimeError: policy constructor fault injected$"):
        run({}, frames=10**6, policy=faulty_policy, policy_workers=1)
    # (its actors stop at once: they asked the dead policy worker on, and the driver waited
    # runtime.placement_timeout for them, 600 s in the tests)
    assert time.monotonic() - started < 300
    assert warned("restarted", "faulty_policy: no GPU left"), caplog.text
    with pytest.raises(RuntimeError, match=r"^policy0 worker died and Ray did not restart it: "
                                           r"its runtime.max_restarts=0 restarts are spent$"):
        run({}, frames=10**6, policy=faulty_policy, policy_workers=1, max_restarts=0)
