"""A user's own environment that misbehaves (issue 44, section 2): an exception in its ``step``
or ``reset``, the old gym API, non-numeric observations, action spaces no preset handles and
an episode that never ends each get one line saying what was wrong and what to do."""

from __future__ import annotations

import logging
import textwrap

import gymnasium as gym
import numpy as np
import pytest
import torch

from looprl.cli import main
from looprl.core import State
from looprl.environments import (
    DuplicateEnvironment,
    EnvironmentFailure,
    GymEnvironment,
    GymnasiumEnvironment,
    GymVectorEnvironment,
)
from looprl.environments.base import Environment
from looprl.presets import continuous
from looprl.presets.classic_control import dqn, ppo
from looprl.presets.continuous import ddpg, sac

BOX = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)


class Crashing(gym.Env):
    """Raises ``ZeroDivisionError`` at step ``at`` of episode ``episode`` (or in ``reset``)."""

    observation_space, action_space = BOX, gym.spaces.Discrete(2)

    def __init__(self, method: str = "step", at: int = 3, episode: int = 2, length: int = 5):
        self.method, self.at, self.episode, self.length = method, at, episode, length
        self.episodes, self.t = 0, 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.episodes, self.t = self.episodes + 1, 0
        if self.method == "reset" and self.episodes == self.episode:
            raise ZeroDivisionError("the user's bug")
        return np.zeros(4, np.float32), {}

    def step(self, action):
        self.t += 1
        if self.method == "step" and (self.episodes, self.t) == (self.episode, self.at):
            raise ZeroDivisionError("the user's bug")
        return np.zeros(4, np.float32), 1.0, self.t == self.length, False, {}


class OldGym(gym.Env):
    """The old gym API: ``step`` returns 4 values, ``reset`` (``bare``) an observation (of
    ``size`` entries)."""

    action_space = gym.spaces.Discrete(2)

    def __init__(self, bare: bool = False, size: int = 4):
        self.bare, self.size = bare, size
        self.observation_space = gym.spaces.Box(-1, 1, (size,), np.float32)

    def reset(self, seed=None, options=None):
        obs = np.zeros(self.size, np.float32)
        return obs if self.bare else (obs, {})

    def step(self, action):
        return np.zeros(4, np.float32), 1.0, False, {}


class Observing(gym.Env):
    """Observations of a given kind: a string, a dict, arrays of two shapes."""

    action_space = gym.spaces.Discrete(2)
    observation_space = gym.spaces.Text(8)

    def __init__(self, obs):
        self.obs = obs

    def reset(self, seed=None, options=None):
        return self.obs, {}

    def step(self, action):
        return self.obs, 0.0, False, False, {}


class UsersEnvironment(Environment):
    """A user's own looprl ``Environment`` whose ``step`` raises."""

    name = "UsersEnvironment"
    observation_space, action_space = BOX, gym.spaces.Discrete(2)

    def reset(self, seed=None):
        self._state = State(torch.zeros(4))
        return self._state

    def step(self, action):
        raise KeyError("the user's bug")

    def duplicate(self, n):
        raise NotImplementedError


def _play(env, steps: int, action) -> None:
    env.reset()
    for _ in range(steps):
        env.step(action)


def _check_failure(error: EnvironmentFailure, method: str, *where: str) -> None:
    """One line naming the environment, the method, the error and where; cause chained."""
    message = str(error)
    assert "\n" not in message
    assert f"Crashing.{method}() raised ZeroDivisionError: the user's bug" in message
    assert all(part in message for part in where), message
    assert isinstance(error.__cause__, ZeroDivisionError)


@pytest.mark.parametrize("method, where", [("step", ("episode 2", "step 3")),
                                           ("reset", ("episode 2",))])
def test_an_exception_in_step_or_reset_names_the_env_the_method_and_where(method, where):
    with pytest.raises(EnvironmentFailure) as info:
        _reset_by_hand(GymEnvironment(Crashing(method)), 3)
    _check_failure(info.value, method, *where)
    assert info.value.method == method and info.value.episode == 2
    with pytest.raises(EnvironmentFailure) as info:  # the local loop's vector environment
        _play(DuplicateEnvironment([GymEnvironment(Crashing(method))]), 20, [0])
    _check_failure(info.value, method, *where)
    with pytest.raises(EnvironmentFailure) as info:  # Gymnasium's vector env of copies
        _play(GymEnvironment(Crashing(method)).duplicate(2), 20, [0, 0])
    _check_failure(info.value, method, "one of its 2 copies")
    with pytest.raises(EnvironmentFailure) as info:  # the SRL adapter (Ray actors)
        srl = GymnasiumEnvironment(Crashing(method))
        for _ in range(4):
            srl.reset()
            for _ in range(5):
                srl.step([0])
    _check_failure(info.value, method, *where)


def _reset_by_hand(env: GymEnvironment, steps: int) -> None:
    for _ in range(steps):
        state = env.reset()
        while not state.done:
            state = env.step(0)


def test_a_single_gym_environment_counts_episodes_and_steps():
    env = GymEnvironment(Crashing("step", at=4, episode=3))
    with pytest.raises(EnvironmentFailure, match=r"\(episode 3, step 4\)"):
        _reset_by_hand(env, 5)


def test_a_users_own_looprl_environment_is_named_with_its_copy():
    envs = DuplicateEnvironment([GymEnvironment("CartPole-v1"), UsersEnvironment()])
    envs.reset()
    with pytest.raises(EnvironmentFailure, match=r"^UsersEnvironment\.step\(\) raised KeyError: "
                       r"\"the user's bug\" \(copy 1\)$"):
        envs.step([0, 0])


class CrashingClose(Crashing):
    def close(self):
        raise ZeroDivisionError("the user's bug")


def test_an_exception_in_close_names_the_env_and_the_method():
    """``Experiment.test`` closes its copies after the evaluation: the user's bare exception
    was all the run said (through the CLI: ``looprl: error: the user's bug``)."""
    for env in (GymEnvironment(CrashingClose()), GymEnvironment(CrashingClose()).duplicate(2)):
        with pytest.raises(EnvironmentFailure, match=r"CrashingClose\.close\(\) raised "
                           r"ZeroDivisionError: the user's bug") as info:
            env.close()
        assert info.value.method == "close"


def test_the_cli_prints_an_environment_failure_in_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "users_envs.py").write_text(textwrap.dedent("""
        import gymnasium as gym, numpy as np
        class Crashing(gym.Env):
            observation_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
            action_space = gym.spaces.Discrete(2)
            def reset(self, seed=None, options=None):
                self.t = 0
                return np.zeros(4, np.float32), {}
            def step(self, action):
                self.t += 1
                if self.t == 7:
                    raise ZeroDivisionError("the user's bug")
                return np.zeros(4, np.float32), 1.0, False, False, {}
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("LOOPRL_DEBUG", raising=False)
    code = main(["train", "dqn", "users_envs:Crashing", "--frames", "50", "--quiet",
                 "--logdir", str(tmp_path / "runs")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "Traceback" not in err
    assert err.startswith("looprl: error: ") and ".step() raised ZeroDivisionError" in err
    assert "step 7" in err


@pytest.mark.parametrize("make", [lambda: GymEnvironment(OldGym()),
                                  lambda: DuplicateEnvironment([GymEnvironment(OldGym())]),
                                  lambda: GymnasiumEnvironment(OldGym())])
def test_the_old_gym_step_api_is_named(make):
    env = make()
    action = [0] if not isinstance(env, GymEnvironment) else 0
    env.reset()
    with pytest.raises(TypeError, match=r"OldGym\.step\(\) returned a 4-tuple \(obs, reward, "
                       r"done, info\), the old gym API.*looprl expects Gymnasium's 5-tuple"):
        env.step(action)


def test_the_old_gym_step_api_under_a_wrapper_is_named():
    # gym.make's and the user's wrappers unpack the 4-tuple first (was: only "not enough
    # values to unpack (expected 5, got 4)", with no word of the old gym API)
    env = GymEnvironment(gym.wrappers.TimeLimit(OldGym(), 10))
    env.reset()
    with pytest.raises(EnvironmentFailure, match=r"OldGym\.step\(\) raised ValueError: .*"
                       r"looprl expects Gymnasium's 5-tuple.*the old gym API"):
        env.step(0)


@pytest.mark.parametrize("make", [lambda: GymEnvironment(OldGym(bare=True)),
                                  lambda: GymnasiumEnvironment(OldGym(bare=True))])
def test_a_bare_reset_observation_is_named(make):
    with pytest.raises(TypeError, match=r"OldGym\.reset\(\) returned a ndarray .*the old gym "
                       r"API.*\(observation, info\) pair"):
        make().reset()


@pytest.mark.parametrize("bare, size", [(False, 4), (True, 4), (True, 2)])
def test_the_old_gym_api_in_a_vector_environment_is_named(bare, size):
    # (a bare observation of 2 entries unpacks as Gymnasium's pair: its info had no items);
    # each copy's output is checked as GymEnvironment's: the same TypeError
    env = GymEnvironment(OldGym(bare, size)).duplicate(2)
    with pytest.raises(TypeError, match=r"OldGym\.(step|reset)\(\) returned .*old gym API"):
        _play(env, 2, [0, 0])


@pytest.mark.parametrize("obs, kind", [("hello", "dtype <U5"), ({"a": 1.0}, "dtype object"),
                                       ((np.zeros(2), np.zeros(3)), "tuple"),
                                       (None, "dtype object")])
def test_a_non_numeric_observation_says_what_it_was(obs, kind):
    makers = [lambda: GymEnvironment(Observing(obs)),
              lambda: DuplicateEnvironment([GymEnvironment(Observing(obs))]),
              lambda: GymEnvironment(Observing(obs)).duplicate(2)]
    for make in makers:
        with pytest.raises(TypeError) as info:
            env = make()
            env.reset()
            env.step([0, 0] if hasattr(env, "n_envs") else 0)
        message = str(info.value)
        assert message.startswith("Observing returned an observation of "), message
        assert kind in message and "looprl expects numbers" in message


SPACES = [gym.spaces.MultiDiscrete([2, 3]), gym.spaces.MultiBinary(3),
          gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Discrete(2))),
          gym.spaces.Dict({"a": gym.spaces.Discrete(2)})]


def _env_with_actions(space: gym.Space) -> GymEnvironment:
    env = Observing(np.zeros(4, np.float32))
    env.observation_space, env.action_space = BOX, space
    return GymEnvironment(env)


@pytest.mark.parametrize("space", SPACES, ids=lambda s: type(s).__name__)
@pytest.mark.parametrize("builder, name, handles", [
    (ppo, "PPO", "discrete actions"), (dqn, "DQN", "discrete actions"),
    (ddpg, "DDPG", "continuous actions"), (sac, "SAC", "continuous actions")])
def test_an_action_space_no_preset_handles_is_named(space, builder, name, handles):
    with pytest.raises(ValueError) as info:
        builder.env(_env_with_actions(space)).build()
    message = str(info.value)
    kind = type(space).__name__
    assert message.startswith(f"{name} handles {handles}"), message
    assert f"has {kind} actions" in message and f"no looprl preset acts in {kind}" in message
    assert "continuous actions" not in message.partition(";")[2].partition("(")[0]


@pytest.mark.parametrize("builder", [ppo, dqn])
def test_discrete_actions_that_do_not_start_at_0_are_named(builder):
    """The presets act with 0 ... n - 1: a ``Discrete(n, start)`` environment would get
    actions shifted by ``start`` (silently, where it does not assert them)."""
    with pytest.raises(ValueError, match=r"has Discrete\(3, start=-1\) actions .*a \+ -1"):
        builder.env(_env_with_actions(gym.spaces.Discrete(3, start=-1))).build()


@pytest.mark.parametrize("reward, message", [
    # (beyond float32, in which looprl stores rewards: was stored as inf, and training
    # diverged on "NaN or infinite rewards")
    (1e300, r"^Observing.step\(\) returned the reward 1e\+300, beyond float32's range"),
    (-np.float64(1e39), r"^Observing.step\(\) returned the reward -1e\+39, beyond float32's "),
    # (not one number: was NumPy's "only 0-dimensional arrays can be converted", or text
    # taken as a number)
    (np.array([1.0]), r"Observing.step\(\) returned the reward .*one number"),
    (None, r"Observing.step\(\) returned the reward .*one number"),
    ("1.0", r"Observing.step\(\) returned the reward .*one number"),
])
def test_a_reward_that_is_not_one_float32_number_is_named(reward, message):
    """A reward beyond float32's range, an array (even of one element), ``None`` or text: one
    line naming the reward, on every Gymnasium-backed environment."""
    env = Observing(np.zeros(4, np.float32))
    env.observation_space = BOX
    env.step = lambda action: (np.zeros(4, np.float32), reward, False, False, {})
    for made in (GymEnvironment(env), DuplicateEnvironment([GymEnvironment(env)]),
                 GymnasiumEnvironment(env)):
        made.reset()
        with pytest.raises(TypeError, match=message):
            made.step([0])
    env.step = lambda action: (np.zeros(4, np.float32), 0.0, False, False, [1])
    with pytest.raises(TypeError, match=r"Observing.step\(\) returned the info a list "):
        GymEnvironment(env).step(0)  # (was AttributeError: 'list' object has no attribute)
    for reward in (np.float32(0.5), np.array(2.0), torch.tensor(1.0), 3):
        env.step = lambda action, reward=reward: (np.zeros(4, np.float32), reward, False, False,
                                                  {})
        assert GymEnvironment(env).step(0).reward == float(reward)


class Returning(gym.Env):
    """``step`` returns ``reward`` and ``terminated`` as given."""

    observation_space, action_space = BOX, gym.spaces.Discrete(2)

    def __init__(self, reward=0.0, terminated=False):
        self.reward, self.terminated = reward, terminated

    def reset(self, seed=None, options=None):
        return np.zeros(4, np.float32), {}

    def step(self, action):
        return np.zeros(4, np.float32), self.reward, self.terminated, False, {}


@pytest.mark.parametrize("reward, terminated, named", [
    ("1.0", False, "the reward a str '1.0'"), (None, False, "the reward a NoneType"),
    (np.array([1.0, 2.0]), False, "the reward a ndarray"),
    (0.0, np.array(2), "terminated a ndarray array\\(2\\)"),
    (0.0, np.array([True, False]), "terminated a ndarray"), (0.0, None, "terminated a NoneType"),
    (0.0, "yes", "terminated a str")])
def test_a_reward_or_terminated_of_the_wrong_kind_is_named_in_every_form(reward, terminated,
                                                                       named):
    """The vector environment of copies (the parallel presets) stored a text reward as a
    number, ``None`` as NaN, ``terminated=np.array(2)`` as True; an array of flags was NumPy's
    "truth value of an array" in ``GymEnvironment``: each is the one line of
    ``GymEnvironment``'s checks, in every form."""
    for made, action in ((GymEnvironment(Returning(reward, terminated)), 0),
                         (GymEnvironment(Returning(reward, terminated)).duplicate(3), [0] * 3)):
        made.reset()
        with pytest.raises(TypeError, match=rf"Returning.step\(\) returned {named}"):
            made.step(action)
    for flag in (True, np.bool_(False), 1, np.array(True)):  # (bools, and 0/1 flags, are fine)
        assert GymEnvironment(Returning(terminated=flag)).step(0).done == bool(flag)


class VectorRewards(gym.vector.VectorEnv):
    """A user's own vector environment of two copies whose ``step`` returns ``rewards``."""

    def __init__(self, rewards):
        self.num_envs, self.rewards = 2, rewards
        self.single_observation_space, self.single_action_space = BOX, gym.spaces.Discrete(2)
        self.observation_space = gym.vector.utils.batch_space(BOX, 2)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, 2)

    def reset(self, seed=None, options=None):
        return np.zeros((2, 4), np.float32), {}

    def step(self, actions):
        flags = np.zeros(2, bool)
        return np.zeros((2, 4), np.float32), self.rewards, flags, flags.copy(), {}


@pytest.mark.parametrize("rewards, named", [
    (np.array([1.0, None], dtype=object), "the reward a NoneType None for copy 1"),
    ([None, 2.0], "the reward a NoneType None for copy 0"),
    (np.array(["1", "2"]), "the reward a str_ np.str_\\('1'\\) for copy 0")])
def test_a_reward_that_is_no_number_in_a_users_vector_env_is_named(rewards, named):
    """A user's ``VectorEnv`` whose rewards hold ``None`` (made NaN by NumPy: the run stopped
    later as diverging) or text: one line naming the env, the copy and the step."""
    env = GymVectorEnvironment(VectorRewards(rewards), "users_vec")
    env.reset()
    with pytest.raises(TypeError, match=rf"^users_vec.step\(\) returned {named} \(vector step 1 "):
        env.step(np.array([0, 1]))
    env = GymVectorEnvironment(VectorRewards(np.array([1.0, 2], dtype=object)), "users_vec")
    env.reset()
    assert env.step(np.array([0, 1])).reward.tolist() == [1.0, 2.0]


class VectorShapes(VectorRewards):
    """A user's own vector environment whose ``step`` returns observations of 5 numbers."""

    def step(self, actions):
        _, *rest = super().step(actions)
        return (np.zeros((2, 5), np.float32), *rest)


def test_observations_that_change_shape_in_a_given_vector_env_are_named():
    """Was: a user's ``VectorEnv`` went on unchecked (NumPy's "could not broadcast" traceback
    later, in the collector)."""
    env = GymVectorEnvironment(VectorShapes(np.ones(2)), "users_vec")
    env.reset()
    with pytest.raises(ValueError, match=r"^users_vec returned an observation of shape "
                                         r"\(5,\) after observations of shape \(4,\): .* "
                                         r"must keep one shape \(pad them"):
        env.step(np.array([0, 1]))


def test_a_box_dimension_of_zero_width_is_named_by_gaussian_ppo():
    """PPO's Gaussian normalizes actions by the half-width: 0 made every loss NaN ("training
    diverged"); the tanh presets map onto the one value and train."""
    space = gym.spaces.Box(np.array([-1.0, 0.5], np.float32), np.array([1.0, 0.5], np.float32))
    with pytest.raises(ValueError, match=r"PPO's Gaussian actions need low < high in every "
                       r"dimension, but Observing's action space .* has low == high in "
                       r"dimension\(s\) \[1\]: drop them"):
        continuous.ppo.env(_env_with_actions(space)).build()
    ddpg.env(_env_with_actions(space)).build()


def test_discrete_and_continuous_presets_point_at_each_other():
    box = _env_with_actions(gym.spaces.Box(-1.0, 1.0, (2,), np.float32))
    with pytest.raises(ValueError, match=r"has Box actions .*choose a preset for continuous "
                       r"actions \(continuous\.ppo"):
        ppo.env(box).build()
    with pytest.raises(ValueError, match=r"has Discrete actions .*choose a preset for discrete "
                       r"actions \(ppo, dqn"):
        ddpg.env(_env_with_actions(gym.spaces.Discrete(3))).build()
    flat = _env_with_actions(gym.spaces.Box(-1.0, 1.0, (2, 2), np.float32))
    with pytest.raises(ValueError, match=r"has Box of shape \(2, 2\) actions .*flatten"):
        sac.env(flat).build()


def _forever_zoo_env():
    """A PettingZoo parallel environment whose episodes never end."""
    from pettingzoo.utils.env import ParallelEnv

    class Forever(ParallelEnv):
        metadata = {"name": "forever"}
        render_mode = None
        possible_agents = ["a", "b"]

        def observation_space(self, agent):
            return gym.spaces.Box(-1.0, 1.0, (2,), np.float32)

        def action_space(self, agent):
            return gym.spaces.Discrete(2)

        def reset(self, seed=None, options=None):
            self.agents, self.steps = list(self.possible_agents), 0
            return ({a: np.zeros(2, np.float32) for a in self.agents},
                    {a: {} for a in self.agents})

        def step(self, actions):
            self.steps += 1
            if self.steps > 1000:  # (the test fails instead of hanging without the cap)
                raise RuntimeError("the episode was not cut")
            obs = {a: np.zeros(2, np.float32) for a in self.agents}
            return (obs, dict.fromkeys(self.agents, 1.0), dict.fromkeys(self.agents, False),
                    dict.fromkeys(self.agents, False), {a: {} for a in self.agents})

    return Forever()


def test_a_never_ending_multiagent_episode_is_cut(monkeypatch, caplog):
    pytest.importorskip("pettingzoo")
    from looprl.agents.independent import IndependentMultiagent, RandomAgent
    from looprl.environments import MultiagentPettingZooEnv, gym_helpers
    from looprl.experiments import multiagent

    monkeypatch.setattr(gym_helpers, "DEFAULT_EPISODE_CAP", 40)  # (the collector's cap)
    env = MultiagentPettingZooEnv(_forever_zoo_env())
    agents = IndependentMultiagent({a: RandomAgent(env.action_space(a), seed=0)
                                    for a in env.possible_agents})
    with caplog.at_level(logging.WARNING):
        returns = multiagent.play(env, agents, episodes=2, seed=0)
    assert len(returns["a"]) == 2 and 0 < returns["a"][0] <= 40
    assert caplog.text.count("ran 40 steps without ending: cut there") == 1  # (the first)
    assert "2 episodes of forever were cut at the cap of 40 steps" in caplog.text


def test_a_never_ending_multiagent_training_episode_is_cut(monkeypatch, tmp_path, caplog):
    pytest.importorskip("pettingzoo")
    from looprl.agents.independent import IndependentMultiagent, RandomAgent
    from looprl.core import Preset
    from looprl.environments import MultiagentPettingZooEnv, gym_helpers
    from looprl.experiments import multiagent

    class RandomPreset(Preset):
        def __init__(self, env):
            super().__init__("random", "cpu", {})
            self.spaces = {agent: env.action_space(agent) for agent in env.possible_agents}

        def agent(self, logger=None, train_steps=float("inf")):
            return IndependentMultiagent({name: RandomAgent(space, 0)
                                          for name, space in self.spaces.items()})

        def test_agent(self):
            return self.agent()

    monkeypatch.setattr(gym_helpers, "DEFAULT_EPISODE_CAP", 30)  # (the collector's cap)
    env = MultiagentPettingZooEnv(_forever_zoo_env())
    experiment = multiagent.MultiagentEnvExperiment(RandomPreset(env), env, quiet=True, seed=0,
                                                    logdir=str(tmp_path))
    with caplog.at_level(logging.WARNING):
        experiment.train(frames=60)
    assert (experiment.episode, experiment.frame) == (2, 60)  # (cut at 30 steps each)
    assert caplog.text.count("ran 30 steps without ending: cut there") == 1
    assert "2 episodes of forever were cut at the cap of 30 steps" in caplog.text  # (the total)
    experiment.close()


def test_an_exception_when_a_finished_agent_steps_none_is_named():
    """PettingZoo's turn loop steps each finished agent with ``None``: an exception there is
    the game's, named as in any other step, not a bare traceback."""
    pytest.importorskip("pettingzoo")
    from pettingzoo.classic.tictactoe.tictactoe import raw_env

    from looprl.environments import MultiagentPettingZooEnv

    class FailsAtTheEnd(raw_env):
        def step(self, action):
            if action is None:
                raise RuntimeError("cannot remove a finished agent")
            return super().step(action)

    env = MultiagentPettingZooEnv(FailsAtTheEnd())
    env.reset(seed=0)
    with pytest.raises(EnvironmentFailure, match=r"^FailsAtTheEnd\.step\(\) raised RuntimeError"):
        for move in (0, 3, 1, 4, 2):  # player_1 wins on its third move
            env.step(move)


def test_a_users_srl_environment_that_raises_is_named_by_the_local_collector():
    """A user's own SRL environment played locally (``looprl run algorithm=multiagent/ppo
    env=my_envs:name``) raised its bare exception (``looprl: error: the user's bug``); on Ray
    the same fault names the environment, the method, the copy, the episode and the step."""
    from looprl.collector import EnvRunner
    from looprl.core import RolloutResult
    from looprl.environments.srl import Environment as SRLEnvironment
    from looprl.environments.srl import step_result

    class Failing(SRLEnvironment):
        agent_count, t = 1, 0

        def reset(self) -> list:
            return [step_result({"obs": np.zeros(2, np.float32)}, 0.0, False)]

        def step(self, actions: list) -> list:
            self.t += 1
            if self.t == 3:
                raise KeyError("the user's bug")
            return [step_result({"obs": np.zeros(2, np.float32)}, 1.0, False)]

    class FailingReset(Failing):
        def reset(self) -> list:
            raise KeyError("the user's bug")

    with pytest.raises(EnvironmentFailure, match=r"FailingReset\.reset\(\) raised KeyError: "
                       r"\"the user's bug\" \(copy 0, episode 1\)"):
        EnvRunner(FailingReset, segment_length=None, seed=0).request(0)
    runner = EnvRunner(Failing, n_envs=2, segment_length=None, seed=0)
    with pytest.raises(EnvironmentFailure, match=r"Failing\.step\(\) raised KeyError: \"the "
                       r"user's bug\" \(copy 0, episode 1, step 3\)") as info:
        for _ in range(3):
            runner.request(0)
            runner.step(0, RolloutResult(action=np.zeros(2, np.int64)))
    assert info.value.method == "step" and isinstance(info.value.__cause__, KeyError)


def test_a_users_srl_environment_whose_close_raises_is_named():
    """The multi-agent experiment closes its collector's copies after an evaluation: an SRL
    environment's exception there was all the run said."""
    from looprl.collector import EnvRunner
    from looprl.environments.srl import Environment as SRLEnvironment
    from looprl.environments.srl import step_result

    class ClosingBadly(SRLEnvironment):
        agent_count = 1

        def reset(self) -> list:
            return [step_result({"obs": np.zeros(2, np.float32)}, 0.0, False)]

        def step(self, actions: list) -> list:
            return self.reset()

        def close(self) -> None:
            raise KeyError("the user's bug")

    runner = EnvRunner(ClosingBadly, n_envs=2, segment_length=None, seed=0)
    with pytest.raises(EnvironmentFailure, match=r"ClosingBadly\.close\(\) raised KeyError: "
                       r"\"the user's bug\" \(copy 0\)"):
        runner.close()
    EnvRunner(GymEnvironment(Crashing()).duplicate(2), segment_length=None, seed=0).close()
