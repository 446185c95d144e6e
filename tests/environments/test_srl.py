"""The SRL environment API: StepResult lists, register/make, adapters, test_environment."""

from __future__ import annotations

import re
import threading
import types

import gymnasium as gym
import numpy as np
import pytest
from pettingzoo.utils.env import ParallelEnv

from looprl.core.namedarray import NamedArray
from looprl.distributed import test_environment
from looprl.distributed.testing_env import EnvironmentCheckError
from looprl.environments import (
    GymnasiumEnvironment,
    PettingZooEnvironment,
    SRLEnvironment,
    StepResult,
    make,
    register,
    registered_environments,
    srl,
)
from looprl.environments.srl import action_value, step_result


@pytest.fixture(autouse=True)
def _restore_registry():
    saved = dict(srl._REGISTRY)
    yield
    srl._REGISTRY.clear()
    srl._REGISTRY.update(saved)


class Countdown(SRLEnvironment):
    """Two agents; agent 1 acts only on even steps; the episode lasts ``length`` steps."""

    def __init__(self, length: int = 4):
        self.length, self.t = length, 0

    @property
    def agent_count(self) -> int:
        return 2

    @property
    def observation_spaces(self):
        return [gym.spaces.Dict({"obs": gym.spaces.Box(0, 100, (1,), np.float32)})] * 2

    @property
    def action_spaces(self):
        return [gym.spaces.Discrete(3)] * 2

    def reset(self):
        self.t = 0
        return [self._result(), self._result()]

    def step(self, actions):
        assert actions[0] is not None
        self.t += 1
        return [self._result(), self._result() if self.t % 2 == 0 else None]

    def _result(self):
        obs = {"obs": np.array([self.t], np.float32)}
        return step_result(obs, 1.0, self.t >= self.length)


class Broken(Countdown):
    """``Countdown`` with one defect chosen by ``defect``."""

    def __init__(self, defect: str):
        super().__init__()
        self.defect = defect

    def step(self, actions):
        results = super().step(actions)
        if self.defect == "count":
            return [*results, None]
        if self.defect == "obs":
            results[0].obs = np.zeros(1, np.float32)
        if self.defect == "reward":
            results[0].reward = np.array([[1.0]])  # shape (1, 1)
        if self.defect == "shape":
            results[0].obs = {"obs": np.zeros(2, np.float32)}
        return results


# --- register / make ------------------------------------------------------------------------


def test_register_and_make_with_arguments():
    register("countdown-test", Countdown)
    env = make("countdown-test", length=7)
    assert isinstance(env, Countdown) and env.length == 7
    assert "countdown-test" in registered_environments()
    assert {"gym", "atari", "pettingzoo"} <= set(registered_environments())
    # an environment's own name= argument is its own (was "make() got multiple values for
    # argument 'name'")
    class Named(Countdown):
        def __init__(self, name: str):
            super().__init__(length=len(name))

    register("named-test", Named)
    assert make("named-test", name="abc").length == 3
    with pytest.raises(TypeError, match=r"^make takes an environment's name, got 'Countdown' "
                       r"itself: register it first \(looprl.environments.register\("
                       r"'countdown', Countdown\)\) and pass that name$"):
        make(Countdown)  # (was: "unknown environment <class ...>")


def test_an_argument_of_the_wrong_type_is_one_line_when_the_env_is_made():
    """As a Gymnasium id's (``looprl run +env_kwargs.X=...``): was made, to read as true
    (``flip='no'``), to end its episodes at step 3 (``length=2.5``) or to fail at a step."""
    class Flipped(Countdown):
        def __init__(self, length: int = 4, flip: bool = False, scale: float = 1):
            super().__init__(length)
            self.flip, self.scale = flip, scale

    register("flipped-test", Flipped)
    for args, message in ((dict(flip="no"), "flip takes true or false (default False), got "
                           "the text 'no'"),
                          (dict(length="abc"), "length takes a number (default 4), got the "
                           "text 'abc'"),
                          (dict(length=2.5), "length takes a whole number (default 4), got 2.5")):
        with pytest.raises(TypeError, match=rf"^flipped-test's argument {re.escape(message)} "):
            make("flipped-test", **args)
    env = make("flipped-test", length=3.0, scale=0.5)  # a whole float is that int
    assert env.length == 3 and type(env.length) is int and env.scale == 0.5


def test_a_constructor_that_raises_names_the_environment_in_one_line():
    """A simulator that cannot start (``looprl run env=my_envs:Sim``: was Hydra's 76-line
    traceback, locally and on Ray); a bad argument stays the constructor's own error."""
    from looprl.environments.faults import EnvironmentFailure

    class Sim(Countdown):
        def __init__(self, length: int = 4):
            if length < 0:
                raise ValueError("length must be >= 0")
            raise RuntimeError("cannot open simulator")

    register("sim-test", Sim)
    with pytest.raises(EnvironmentFailure, match=r"^sim-test\.__init__\(\) raised "
                                                 r"RuntimeError: cannot open simulator$"):
        make("sim-test")
    with pytest.raises(ValueError, match="^length must be >= 0$"):
        make("sim-test", length=-1)


def test_duplicate_name_is_refused():
    register("dup-test", Countdown)
    with pytest.raises(ValueError, match="environment 'dup-test' is already registered"):
        register("dup-test", Broken)
    with pytest.raises(ValueError, match="already registered"):
        register("gym", Countdown)


def test_lazy_path_is_imported_at_make():
    register("lazy-cartpole", "looprl.environments.srl_adapters:GymnasiumEnvironment")
    env = make("lazy-cartpole", env_id="CartPole-v1")
    assert isinstance(env, GymnasiumEnvironment) and env.agent_count == 1


def test_srl_register_with_a_class_name_and_its_module():
    # SRL's register(name, "ThisIsMyEnv", "codespace.implementation.this_is_my_env")
    register("srl-lazy-cartpole", "GymnasiumEnvironment", "looprl.environments.srl_adapters")
    env = make("srl-lazy-cartpole", env_id="CartPole-v1")
    assert isinstance(env, GymnasiumEnvironment)


def test_bad_lazy_paths_name_the_path():
    register("bad-module", "no_such_package.envs:Env")
    register("bad-attr", "looprl.environments.srl:NoSuchClass")
    with pytest.raises(ImportError, match="no_such_package.envs:Env"):
        make("bad-module")
    with pytest.raises(ImportError, match="has no attribute 'NoSuchClass'"):
        make("bad-attr")
    # one check, the Registry's, for every entry point (was a ValueError here with its own line)
    for bad in ("looprl.environments.srl", 3, None):
        with pytest.raises(TypeError, match=r"environment 'no-colon': register a class, a "
                                            r"factory or a 'package.module:Name' path, got"):
            register("no-colon", bad)


def test_unknown_name_is_a_one_line_key_error():
    with pytest.raises(KeyError) as info:
        make("CartPol-v1")
    message = str(info.value)
    assert "\n" not in message and not message.startswith("'")
    assert "'CartPole-v1'" in message  # close match
    assert "Registered: atari, contextual, gym, pettingzoo" in message
    assert "Gymnasium" in message and "register" in message


def test_a_class_that_is_not_an_srl_environment_is_refused():
    register("not-srl", gym.Env)
    with pytest.raises(TypeError, match="not a looprl.environments.SRLEnvironment"):
        make("not-srl")


def test_optional_methods_say_what_is_missing():
    class Minimal(Countdown):
        observation_spaces = SRLEnvironment.observation_spaces
        action_spaces = SRLEnvironment.action_spaces

    env = Minimal()
    with pytest.raises(NotImplementedError, match="action_spaces"):
        _ = env.action_spaces
    with pytest.raises(NotImplementedError, match="curriculum"):
        env.set_curriculum_stage("hard")
    assert (
        StepResult({"obs": np.zeros(1)}, np.zeros(1), np.zeros(1, bool), {}).truncated.dtype == bool
    )


def test_action_value_unwraps_named_arrays_and_tensors():
    import torch

    assert action_value(NamedArray(x=np.array([2]))).tolist() == [2]
    assert action_value(torch.tensor([1.5])).tolist() == [1.5]
    assert action_value(3) == 3
    with pytest.raises(TypeError, match="field named 'x'"):
        action_value(NamedArray(a=np.zeros(1), b=np.zeros(1)))


def test_step_result_takes_observations_by_name():
    """A bare array was ``AttributeError: 'numpy.ndarray' object has no attribute 'items'``."""
    result = step_result(NamedArray(obs=np.zeros(2)), 1.0, False)
    assert list(result.obs) == ["obs"] and result.reward.tolist() == [1.0]
    with pytest.raises(TypeError) as error:
        step_result(np.zeros(3), 1.0, False)
    assert str(error.value) == ("step_result's obs is a dict of arrays by name, {'obs': array} "
                                "(SRL's observations), got ndarray")


# --- Gymnasium ------------------------------------------------------------------------------


def test_gymnasium_id_falls_back_to_the_adapter_and_passes_the_check():
    env = make("CartPole-v1")
    assert isinstance(env, GymnasiumEnvironment)
    [first] = env.reset()
    assert set(first.obs) == {"obs"} and first.obs["obs"].shape == (4,)
    [result] = env.step([NamedArray(x=np.array([1]))])  # SRL's DiscreteAction(x=...) style
    assert result.reward.dtype == np.float64 and result.done.dtype == bool  # (returns sum it)
    report = test_environment("CartPole-v1", steps=150)
    assert report.agent_count == 1 and report.obs_shapes == [{"obs": (4,)}]
    assert report.steps == 150 and report.episodes >= 1


def test_gymnasium_seed_makes_resets_reproducible_and_truncation_is_separate():
    a, b = make("gym", env_id="CartPole-v1"), make("gym", env_id="CartPole-v1", max_episode_steps=3)
    a.seed(3), b.seed(3)
    np.testing.assert_array_equal(a.reset()[0].obs["obs"], b.reset()[0].obs["obs"])
    results = [b.step([0])[0] for _ in range(3)]
    assert results[-1].truncated[0] and not results[-1].done[0]


def test_gymnasium_dict_observations_keep_their_keys():
    class DictEnv(gym.Env):
        observation_space = gym.spaces.Dict(
            {"image": gym.spaces.Box(0, 1, (2, 2), np.float32), "pos": gym.spaces.Discrete(5)}
        )
        action_space = gym.spaces.Discrete(2)

        def reset(self, seed=None, options=None):
            super().reset(seed=seed)
            return self.observation_space.sample(), {}

        def step(self, action):
            return self.observation_space.sample(), 1.0, True, False, {}

    env = GymnasiumEnvironment(DictEnv())
    assert set(env.reset()[0].obs) == {"image", "pos"}
    assert set(env.observation_spaces[0].spaces) == {"image", "pos"}


def test_gymnasium_invalid_id_is_one_line():
    with pytest.raises(ValueError, match="Unknown environment 'NoSuchEnv-v0'"):
        make("gym", env_id="NoSuchEnv-v0")


def test_atari_adapter_gives_stacked_84x84_frames():
    pytest.importorskip("ale_py")
    for env in (make("atari", game="Breakout"), make("ALE/Breakout-v5", atari_wrappers=True)):
        env.seed(0)
        [first] = env.reset()
        [result] = env.step([1])
        for obs in (first.obs, result.obs):
            assert obs["obs"].shape == (4, 84, 84) and obs["obs"].dtype == np.uint8
        assert env.observation_spaces[0]["obs"].contains(result.obs["obs"])
        assert result.info["lives"] == 5
        with pytest.raises(ValueError, match="actions are 0..3"):
            env.step([7])
        env.close()


# --- PettingZoo -----------------------------------------------------------------------------


def _play(env, moves):
    """Play ``moves`` in turn; return the result list after each step."""
    results, history = env.reset(), []
    for move in moves:
        actions = [move if r is not None and not r.done[0] else None for r in results]
        results = env.step(actions)
        history.append(results)
    return history


def test_tictactoe_only_the_player_to_move_gets_a_result_and_the_end_pays_both():
    env = make("pettingzoo", env="pettingzoo.classic.tictactoe_v3")
    assert env.agent_count == 2
    first = env.reset()
    assert first[0] is not None and first[1] is None
    assert set(first[0].obs) == {"obs", "action_mask"} and first[0].obs["action_mask"].all()
    # player_0 takes cells 0, 1, 2 (a line), player_1 takes 3, 4.
    history = _play(env, [0, 3, 1, 4, 2])
    for results in history[:-1]:
        assert sum(r is not None for r in results) == 1  # the other player waits
    winner, loser = history[-1]
    assert winner.done[0] and loser.done[0]
    assert winner.reward[0] == 1.0 and loser.reward[0] == -1.0


def test_aec_rewards_earned_during_other_turns_are_not_lost():
    from pettingzoo.classic import rps_v2

    env = PettingZooEnvironment(rps_v2.env(num_actions=3, max_cycles=30))
    env.seed(1)
    results, totals, rng = env.reset(), np.zeros(2), np.random.default_rng(0)
    while any(r is not None and not (r.done[0] or r.truncated[0]) for r in results):
        actions = [None if r is None else int(rng.integers(3)) for r in results]
        results = env.step(actions)
        totals += [0.0 if r is None else r.reward[0] for r in results]
    assert np.abs(totals).sum() > 0
    assert totals[0] == -totals[1]  # zero-sum: no reward dropped on the way


def test_flattened_pettingzoo_observations_are_the_local_envs():
    """``flatten=True``: the observations the local ``MultiagentPettingZooEnv`` gives (what
    the multi-agent presets' networks read), with the mask beside them; spaces to match."""
    from looprl.environments import MultiagentPettingZooEnv

    env, local = make("pettingzoo", env="tictactoe_v3", flatten=True), MultiagentPettingZooEnv(
        "tictactoe_v3")
    results, state = env.reset(), local.reset()
    for action in (4, 0):
        obs = next(r for r in results if r is not None).obs
        assert obs["obs"].dtype == np.float32 and obs["obs"].shape == (18,)
        assert np.array_equal(obs["obs"], state.observation.numpy())
        assert np.array_equal(obs["action_mask"], state["action_mask"].numpy())
        results, state = env.step([action, action]), local.step(action)
    assert env.observation_spaces[1]["obs"] == local.observation_space("player_2")
    report = test_environment("pettingzoo", {"env": "tictactoe_v3", "flatten": True}, steps=40)
    assert report.obs_shapes[1] == {"obs": (18,), "action_mask": (9,)}


def test_pettingzoo_envs_pass_the_check():
    report = test_environment("pettingzoo", {"env": "pettingzoo.classic.tictactoe_v3"}, steps=120)
    assert report.agent_count == 2 and report.episodes >= 5
    assert report.obs_shapes[1] == {"obs": (3, 3, 2), "action_mask": (9,)}
    assert report.obs_dtypes[1]["action_mask"] == "bool"
    report = test_environment("pettingzoo", {"env": "classic.rps_v2", "parallel": True}, steps=60)
    assert report.agent_count == 2 and report.episodes >= 1


class _Relay(ParallelEnv):
    """A tiny PettingZoo parallel env: agent 'b' leaves after 2 steps, 'a' after 4."""

    metadata = {"name": "relay"}

    def __init__(self):
        self.possible_agents = ["a", "b"]
        self.lifetimes = {"a": 4, "b": 2}

    def observation_space(self, agent):
        return gym.spaces.Box(0, 10, (1,), np.float32)

    def action_space(self, agent):
        return gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        self.t, self.agents = 0, list(self.possible_agents)
        return {a: np.zeros(1, np.float32) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions):
        assert set(actions) == set(self.agents)
        self.t += 1
        obs = {a: np.full(1, self.t, np.float32) for a in self.agents}
        done = {a: self.t >= self.lifetimes[a] for a in self.agents}
        rewards = {a: float(actions[a]) for a in self.agents}
        infos = {a: {} for a in self.agents}
        self.agents = [a for a in self.agents if not done[a]]
        return obs, rewards, done, dict.fromkeys(done, False), infos


def test_parallel_env_gives_none_to_agents_no_longer_alive():
    env = PettingZooEnvironment(_Relay())
    assert env.agent_count == 2 and all(r is not None for r in env.reset())
    history = [env.step([1, 1 if t < 2 else None]) for t in range(4)]
    assert history[1][1].done[0] and history[1][1].reward[0] == 1.0
    assert history[2][1] is None and history[3][1] is None
    assert history[3][0].done[0]
    with pytest.raises(ValueError, match="call reset"):
        env.step([1, 1])
    env.reset()
    with pytest.raises(ValueError, match="agent 0 \\('a'\\) must act"):
        env.step([None, 0])


def test_parallel_custom_env_passes_the_check():
    register("relay-test", PettingZooEnvironment)
    report = test_environment("relay-test", {"env": _Relay()}, steps=20)
    assert report.episodes == 5 and report.steps == 20


# --- test_environment on broken environments ------------------------------------------------


@pytest.mark.parametrize(
    ("defect", "message"),
    [
        ("count", "env 'broken': step\\(\\) returned 3 results for 2 agents$"),
        ("obs", "env 'broken': agent 0: step\\(\\) obs is a ndarray, not a dict"),
        (
            "reward",
            "agent 0: step\\(\\) reward must be .* shape \\(1,\\) .*, got shape \\(1, 1\\)",
        ),
        ("shape", "agent 0: step\\(\\) obs changed from \\{obs: \\(1,\\) float32\\}"),
    ],
)
def test_broken_env_gives_a_one_line_error(defect, message):
    register("broken", Broken)
    with pytest.raises(EnvironmentCheckError, match=message) as info:
        test_environment("broken", {"defect": defect}, steps=10)
    assert "\n" not in str(info.value) and isinstance(info.value, ValueError)


def test_the_user_guide_env_passes_the_check():
    """SRL's environments.md: ``reward=np.array([reward])`` (float64), uint8 flags, and "Info
    is allowed to be None" (test_environment refused both, which the pipeline takes)."""

    class GuideEnv(Countdown):
        def _result(self):
            return StepResult(obs={"obs": np.array([self.t], np.float32)},
                              reward=np.array([1.0]), info=None,
                              done=np.array([self.t >= self.length], dtype=np.uint8),
                              truncated=np.array([0], dtype=np.uint8))

    register("guide", GuideEnv)
    assert test_environment("guide", steps=8).episodes == 2


def test_the_srl_example_reads_obs_shapes_from_test_environment():
    """codespace/examples: ``obs_dim = test_environment(...)``, then ``obs_dim[0]["obs"]``
    (SRL returned the list of obs shapes; the report was not subscriptable)."""
    register("countdown-test", Countdown)
    obs_dim = test_environment(env_name="countdown-test", env_args={}, test_stepping=False)
    assert obs_dim[0]["obs"][0] == 1 and list(obs_dim) == obs_dim.obs_shapes


def test_the_atari_adapter_takes_srl_s_game_name():
    """The SRL example's ``env_args=dict(game_name="ALE/Boxing-v5")`` (a TypeError before)."""
    pytest.importorskip("ale_py")
    env = make("atari", game_name="ALE/Breakout-v5")
    assert env.name == "Breakout" and env.agent_count == 1
    env.close()
    with pytest.raises(TypeError, match="takes one game: game='Breakout'"):
        make("atari")


def test_countdown_passes_and_stepping_needs_action_spaces():
    register("countdown-test", Countdown)
    report = test_environment("countdown-test", {"length": 4}, steps=12)
    assert report.episodes == 3 and report.obs_shapes == [{"obs": (1,)}, {"obs": (1,)}]

    class NoSpaces(Countdown):
        action_spaces = SRLEnvironment.action_spaces

    register("no-spaces", NoSpaces)
    assert test_environment("no-spaces", test_stepping=False).steps == 0
    with pytest.raises(EnvironmentCheckError, match="test_stepping=False"):
        test_environment("no-spaces")


def test_obs_outside_the_observation_space_and_bad_agent_count_are_caught():
    class OutOfSpace(Countdown):
        def __init__(self):
            super().__init__(length=500)  # obs grows past the space's high of 100

    class NoAgents(Countdown):
        agent_count = 0

    register("out-of-space", OutOfSpace)
    register("no-agents", NoAgents)
    with pytest.raises(EnvironmentCheckError, match="agent 0: step\\(\\) obs\\['obs'\\] .* not in"):
        test_environment("out-of-space", steps=200)
    with pytest.raises(EnvironmentCheckError, match="agent_count must be a positive int, got 0"):
        test_environment("no-agents")


def test_the_gymnasium_adapter_is_a_view_of_a_gym_environment():
    """Seeding, observations and the invalid-action error are GymEnvironment's own."""
    from looprl.environments import GymEnvironment

    adapter, gym_env = make("CartPole-v1"), GymEnvironment("CartPole-v1", seed=3)
    adapter.seed(3)
    [first] = adapter.reset()
    np.testing.assert_array_equal(first.obs["obs"], gym_env.reset().observation.numpy())
    [result] = adapter.step([np.int64(1)])
    np.testing.assert_array_equal(result.obs["obs"], gym_env.step(1).observation.numpy())
    expected = r"Invalid action 5 for CartPole-v1 \(action space Discrete\(2\)\)"
    for env, action in ((adapter, [5]), (gym_env, 5)):
        with pytest.raises(ValueError, match=expected):
            env.step(action)


def test_the_atari_adapter_is_a_view_of_one_atari_copy():
    """Frames, rendering and action checks are AtariEnvironment's (one place calls ale-py)."""
    pytest.importorskip("ale_py")
    from looprl.environments import AtariEnvironment

    adapter, atari = make("atari", game="Breakout"), AtariEnvironment("Breakout", seed=5)
    with pytest.raises(RuntimeError, match=r"render\(\) before reset\(\)"):
        adapter.render()
    adapter.seed(5)
    [first] = adapter.reset()
    np.testing.assert_array_equal(first.obs["obs"], atari.reset().observation.numpy())
    for action in (1, 2, 3, 0):
        [result] = adapter.step([action])
        np.testing.assert_array_equal(result.obs["obs"], atari.step(action).observation.numpy())
    np.testing.assert_array_equal(adapter.render(), atari.render())
    assert adapter.render().shape == (84, 84, 3)
    for env, action in ((adapter, [10]), (atari, 10)):
        with pytest.raises(ValueError, match=r"Invalid actions \[10\] for Breakout"):
            env.step(action)
    adapter.close()
    atari.close()


def test_the_gymnasium_adapter_gives_observations_as_gym_environment_does():
    """Integer observations (``FrozenLake-v1`` one-hot by ``FlattenObservation``, given as
    ``wrap_env``) reach the policy as ``float32``, as ``GymEnvironment``'s states hold them:
    ``looprl watch`` of a Ray run on them crashed in the network's first layer (int64 input)."""
    import gymnasium as gym

    from looprl.environments import GymEnvironment, GymnasiumEnvironment
    from looprl.environments.wrappers import Wrappers

    flatten = Wrappers(["gymnasium.wrappers.FlattenObservation"])
    env = GymnasiumEnvironment("FrozenLake-v1", wrap_env=flatten, is_slippery=False)
    obs = env.reset()[0].obs["obs"]
    assert obs.dtype == np.float32 and obs.tolist() == [1.0] + [0.0] * 15
    assert env.observation_spaces[0]["obs"] == gym.spaces.Box(0, 1, (16,), np.float32)
    local = GymEnvironment("FrozenLake-v1", wrap_env=flatten, is_slippery=False)
    assert local.reset().observation.numpy().tolist() == obs.tolist()
    moved = env.step([2])[0].obs["obs"]  # (right, not slippery)
    assert moved.dtype == np.float32 and moved.argmax() == 1


def test_result_flags_that_are_neither_bools_nor_0_or_1_are_one_line():
    """A run's collector read ``done=np.array([2])``, ``[0.5]`` or ``[None]`` as True or False
    (only ``test_environment`` refused them); bools and the 0/1 flags of ``uint8`` read as
    flags."""
    from looprl.environments.srl import StepResult, result_scalars

    def result(done):
        return StepResult(obs={"obs": np.zeros(1)}, reward=np.array([1.0]), done=done, info={},
                          truncated=np.array([False]))

    for done in (np.array([2]), np.array([0.5]), np.array([None]), np.array(["yes"])):
        with pytest.raises(ValueError, match=r"done and truncated: True/False or 0/1\)"):
            result_scalars(result(done))
    for done, flag in ((np.array([True]), True), (np.array([1], np.uint8), True),
                       (np.array([0.0]), False)):
        assert result_scalars(result(done)) == (1.0, flag, False)


class _OneAgent(SRLEnvironment):
    """One agent seeing ``obs`` (and ``fields``), without ``seed()``; 2 steps an episode."""

    def __init__(self, fields: tuple[str, ...] = ()):
        self.fields, self.t = fields, 0

    agent_count = 1
    observation_spaces = property(lambda self: [gym.spaces.Dict(
        {key: gym.spaces.Box(0.0, 1.0, (2,), np.float32) for key in ("obs", *self.fields)})])
    action_spaces = property(lambda self: [gym.spaces.Discrete(2)])

    def reset(self) -> list[StepResult]:
        self.t = 0
        return [step_result({"obs": np.zeros(2, np.float32)}, 0.0, False)]

    def step(self, actions: list) -> list[StepResult]:
        self.t += 1
        return [step_result({"obs": np.full(2, self.t, np.float32)}, float(actions[0]),
                            self.t == 2)]


class _Uncopiable(_OneAgent):
    """Holds what no deep copy takes (an emulator's handle, a lock)."""

    def __init__(self, fields: tuple[str, ...] = ()):
        super().__init__(fields)
        self.lock = threading.Lock()


class _CountMethod(_OneAgent):
    def agent_count(self) -> int:  # (SRL's is a property)
        return 1


def test_a_one_agent_srl_environment_as_a_single_agents_environment() -> None:
    """``SRLAgentEnvironment``: its ``obs`` field, rewards and ends; an environment without
    ``seed()`` resets unseeded; its copies, as Ray's actors', are made by its name."""
    from looprl.environments.srl_adapters import SRLAgentEnvironment

    register("one", _Uncopiable)
    env = SRLAgentEnvironment(make("one", fields=()), ("one", {"fields": ()}))
    assert env.observation_space == gym.spaces.Box(0.0, 1.0, (2,), np.float32)
    assert env.reset(seed=3).observation.tolist() == [0.0, 0.0]
    state = env.step(1)
    assert (state.observation.tolist(), float(state.reward), state.done) == ([1.0, 1.0], 1.0,
                                                                            False)
    assert env.step(0).done and env.remote_env() == ("one", {"fields": ()})
    states = env.duplicate(2).reset(seed=0)
    assert states.observation.shape == (2, 2)


@pytest.mark.parametrize("env, message", [
    (_OneAgent(("action_mask",)), r"observations have the fields \['action_mask', 'obs'\]; a "
                                  "single-agent preset learns from one array, the field 'obs'"),
    (Countdown(), "is an SRL environment of 2 agents: train it with a multi-agent preset"),
    # (was: "_CountMethod.agent_count (a property) must be positive (a whole number), got
    # <bound method ...>")
    (_CountMethod(), r"^_CountMethod.agent_count is a method; make it a @property that returns "
                     "the number of agents$"),
])
def test_what_a_single_agent_view_cannot_show_is_one_line(env, message) -> None:
    from looprl.environments.srl_adapters import SRLAgentEnvironment

    with pytest.raises((ValueError, TypeError), match=message):
        SRLAgentEnvironment(env, ("mine", {}))


class _WrongField(_OneAgent):
    def step(self, actions: list) -> list[StepResult]:
        return [step_result({"observation": np.ones(2, np.float32)}, 0.0, False)]


def test_an_observation_without_its_obs_field_is_one_line() -> None:
    """A one-agent SRL environment declaring ``obs`` but returning another field was a bare
    ``KeyError: 'obs'``."""
    from looprl.environments.srl_adapters import SRLGymEnv

    env = SRLGymEnv(_WrongField(), "mine")
    env.reset()
    with pytest.raises(ValueError, match=r"^mine.step\(\) returned an observation of the fields "
                                         r"\['observation'\], without 'obs'"):
        env.step(0)


def test_a_pettingzoo_games_errors_name_the_game_not_its_wrapper():
    """The collector's and Ray's messages named every AEC game 'OrderEnforcingWrapper'."""
    env = PettingZooEnvironment("tictactoe_v3")
    assert env.name == "tictactoe_v3" and PettingZooEnvironment(_Relay()).name == "_Relay"
    env.reset()
    with pytest.raises(ValueError, match=r"^Invalid action 100 for tictactoe_v3's player_1 "
                                         r"\(action space Discrete\(9\)\)$"):
        env.step([100, None])  # (was the game's AssertionError as an environment fault)
    for parallel in (True, False):  # (a parallel game's actions are checked alike)
        game = PettingZooEnvironment("rps_v2", parallel=parallel)
        game.reset()
        with pytest.raises(ValueError, match=r"^Invalid action 7 for rps_v2's player_0 "):
            game.step([7, 1])


class _Faulty(_OneAgent):
    """``_OneAgent`` whose observations or results are wrong in the way ``fault`` names."""

    def __init__(self, fault: str):
        super().__init__()
        self.fault = fault

    def reset(self) -> list:
        obs = {"obs": np.zeros(2, np.float32)}
        if self.fault == "extra field":
            obs["extra"] = np.zeros(1, np.float32)
        if self.fault == "text":
            obs["obs"] = np.array(["a", "b"])
        if self.fault == "shape":
            obs["obs"] = np.zeros(3, np.float32)
        info = None if self.fault == "info None" else {}
        return [StepResult(obs=obs, reward=np.zeros(1), done=np.zeros(1, bool), info=info)]

    def step(self, actions: list) -> list:
        if self.fault == "no reward":
            return [types.SimpleNamespace(obs={"obs": np.zeros(2, np.float32)})]
        if self.fault == "text reward":
            return [StepResult(obs={"obs": np.zeros(2, np.float32)}, reward=np.array(["1.0"]),
                               done=np.zeros(1, bool), info={})]
        return super().step(actions)


@pytest.mark.parametrize("fault, message", [
    # (were: the field dropped silently; a cast error of NumPy's or a shape-less line, each
    # after the copies were rebuilt max_restarts times; AttributeError: 'reward'; "1.0" read
    # as the reward 1.0)
    ("extra field", r"^_Faulty.reset\(\) returned an observation of the fields \['extra', 'obs'\], "
                    r"but its observation_spaces declare \['obs'\]"),
    ("text", r"^_Faulty.reset\(\) returned obs\['obs'\] of <U1 \(not numbers\), but its "
             r"observation space is Box\(0.0, 1.0, \(2,\), float32\)"),
    ("shape", r"^_Faulty.reset\(\) returned obs\['obs'\] of shape \(3,\), but its observation "
              r"space is Box"),
    ("no reward", r"^_Faulty.step\(\) returned a SimpleNamespace without reward and done for "
                  r"agent 0; return a StepResult"),
    ("text reward", r"^_Faulty.step\(\) returned the reward array\(\['1.0'\], dtype='<U3'\) "
                    r"for agent 0: a reward is a number"),
])
def test_an_environments_wrong_output_is_one_line_never_rebuilt(fault, message) -> None:
    """An ``EnvironmentOutputError``: a new copy would return the same, so a run does not
    rebuild its copies for it (``max_restarts``) but stops at it in one line."""
    from looprl.environments.faults import EnvironmentOutputError
    from looprl.environments.srl_adapters import SRLGymEnv

    env = SRLGymEnv(_Faulty(fault), "mine")
    with pytest.raises(EnvironmentOutputError, match=message):
        env.reset()
        env.step(0)


def test_an_srl_info_of_none_is_an_empty_info() -> None:
    """(Was: "'NoneType' object is not iterable" in every copy; ``test_environment`` and the
    multi-agent path took it.)"""
    from looprl.environments.srl_adapters import SRLGymEnv

    assert SRLGymEnv(_Faulty("info None"), "mine").reset()[1] == {}


def test_step_result_takes_flags_and_a_number_not_text() -> None:
    """(Was: ``done="no"`` read as True, ``bool("no")``; a reward "1.0" as 1.0.)"""
    with pytest.raises(TypeError, match="step_result's done is True/False \\(or 0/1\\), got 'no'"):
        step_result({"obs": np.zeros(1)}, 0.0, "no")
    with pytest.raises(TypeError, match="step_result's reward is a number, got '1.0'"):
        step_result({"obs": np.zeros(1)}, "1.0", False)
    assert step_result({"obs": np.zeros(1)}, np.float32(1), np.bool_(True), truncated=0).done


def test_test_environments_arguments_are_a_dict() -> None:
    """(Was: make()'s "argument after ** must be a mapping, not str".)"""
    with pytest.raises(TypeError, match="^test_environment's env_args is a dict of the "
                                        "environment's arguments, got str 'mode=ok'$"):
        test_environment("CartPole-v1", env_args="mode=ok")
