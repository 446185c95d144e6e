"""PettingZoo AEC and parallel environments as ``MultiagentPettingZooEnv``."""

from __future__ import annotations

import pickle
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch

pytest.importorskip("pettingzoo")

try:  # (v11 since PettingZoo 1.25; v10 in 1.24, the floor)
    from pettingzoo.butterfly import knights_archers_zombies_v11 as kaz
except ImportError:
    from pettingzoo.butterfly import knights_archers_zombies_v10 as kaz
from pettingzoo.classic import rps_v2, tictactoe_v3  # noqa: E402

from looprl.core import MultiagentState  # noqa: E402
from looprl.environments.multiagent import (  # noqa: E402
    MultiagentEnvironment,
    MultiagentPettingZooEnv,
    make_zoo_env,
)
from looprl.environments.srl_adapters import PettingZooEnvironment  # noqa: E402


def test_tictactoe_states_carry_agent_observation_and_mask():
    env = MultiagentPettingZooEnv(tictactoe_v3.env(), seed=0)
    assert isinstance(env, MultiagentEnvironment)
    assert env.name == "tictactoe_v3"
    assert env.possible_agents == ["player_1", "player_2"]
    assert env.observation_space("player_1") == gym.spaces.Box(0.0, 1.0, (18,))
    assert env.action_space("player_2") == gym.spaces.Discrete(9)
    assert env.has_action_mask("player_1")

    state = env.reset()
    assert isinstance(state, MultiagentState)
    assert state["agent"] == env.agent_selection == "player_1"
    assert state.observation.dtype == torch.float32 and state.observation.shape == (18,)
    assert state["action_mask"].dtype == torch.bool and state["action_mask"].all()
    assert (state.reward, state.done, state.mask) == (0.0, False, 1.0)

    state = env.step(torch.tensor(4))
    assert state["agent"] == "player_2"
    assert state["action_mask"].tolist() == [True] * 4 + [False] + [True] * 4
    assert state.observation.sum() == 1.0  # the opponent's mark, seen by player_2
    assert env.state["agent"] == "player_2"


def test_tictactoe_game_end_gives_each_agent_a_terminal_state():
    env = MultiagentPettingZooEnv("classic.tictactoe_v3")
    env.reset(seed=1)
    for action in (0, 3, 1, 4):
        env.step(action)
    state = env.step(2)  # player_1 completes a line and wins
    assert env.is_done("player_1") and env.is_done("player_2")
    finals = {}
    while state is not None:
        finals[state["agent"]] = state
        assert state.done and state.mask == 0.0  # terminated: no bootstrapping
        state = env.step(None)  # done agents step None
    assert finals["player_1"].reward == 1.0
    assert finals["player_2"].reward == -1.0
    assert env.done and env.agents == []


def test_agent_iter_loop_and_duplicate_are_independent():
    env = MultiagentPettingZooEnv(tictactoe_v3.env())
    (copy,) = env.duplicate(1)
    env.reset(seed=0)
    copy.reset(seed=0)
    env.step(0)
    assert copy.last()["action_mask"].all()
    seen = []
    for agent in env.agent_iter():
        state = env.last()
        seen.append(agent)
        assert state["agent"] == agent
        legal = state["action_mask"].nonzero().flatten()
        env.step(None if state.done else legal[0])
    assert seen[:2] == ["player_2", "player_1"] and env.done


def test_parallel_rps_is_converted_and_truncates_with_mask_one():
    env = MultiagentPettingZooEnv(rps_v2.parallel_env(num_actions=3, max_cycles=4))
    assert env.name == "rps_v2"
    assert env.observation_space("player_0") == gym.spaces.Box(0.0, 1.0, (4,))  # one-hot
    assert not env.has_action_mask("player_0")
    state = env.reset(seed=0)
    assert state.observation.tolist() == [0.0, 0.0, 0.0, 1.0]  # "no move yet"
    assert "action_mask" not in state
    agents, states = [], []
    for agent in env.agent_iter():
        state = env.last()
        agents.append(agent)
        states.append(state)
        env.step(None if state.done else 0)  # rock for everyone: all ties
    assert agents[:4] == ["player_0", "player_1"] * 2
    finals = states[-2:]
    assert all(s.done and s.mask == 1.0 for s in finals)  # truncated, not terminated
    assert all(s.reward == 0.0 for s in states)


def test_parallel_butterfly_environment_routes_every_agent():
    env = MultiagentPettingZooEnv(kaz.parallel_env(max_cycles=10))
    assert env.observation_space("knight_0").shape == (135,)
    env.reset(seed=0)
    agents = set()
    for agent in env.agent_iter():
        state = env.last()
        assert state["agent"] == agent and state.observation.shape == (135,)
        agents.add(agent)
        env.step(None if state.done else env.action_space(agent).sample())
    assert agents == {"archer_0", "archer_1", "knight_0", "knight_1"}


def test_an_action_outside_the_agents_space_is_refused_as_a_single_agents_is():
    """Was an ``EnvironmentFailure`` wrapping the game's ``AssertionError`` (a fault of the
    environment's), after the agent's turn was taken."""
    env = MultiagentPettingZooEnv("pettingzoo.classic.rps_v2", seed=0)
    env.reset()
    for action in (7, torch.tensor(-1)):
        with pytest.raises(ValueError, match=r"^Invalid action -?\d+ for rps_v2's player_0 "
                                             r"\(action space Discrete\(3\)\)$"):
            env.step(action)
    env.step(torch.tensor(1))  # (its turn kept: a legal action goes on)
    assert env.agent_selection == "player_1"


def test_subenv_gives_one_agents_spaces():
    env = MultiagentPettingZooEnv(tictactoe_v3.env())
    view = env.subenv("player_2")
    assert view.name == "tictactoe_v3/player_2"
    assert view.observation_space.shape == (18,) and view.action_space.n == 9
    assert view.has_action_mask


def test_an_agent_the_environment_has_not_is_named_with_those_it_has():
    """``is_done('player_0')`` was False (a loop waiting for it never ended) and the spaces a
    bare ``KeyError: 'player_0'``."""
    env = MultiagentPettingZooEnv(tictactoe_v3.env())
    env.reset(seed=0)
    for ask in (env.is_done, env.subenv, env.action_space, env.has_action_mask):
        with pytest.raises(KeyError, match="no agent 'player_0'. Did you mean 'player_.'.*"
                                           "Its agents: player_1, player_2"):
            ask("player_0")


def test_alls_subenvs_and_state_space_name_each_agents_spaces():
    """ALL's ``presets = {agent: dqn.env(subenv).build() for agent, subenv in
    env.subenvs.items()}`` and ``env.state_space(agent)``."""
    env = MultiagentPettingZooEnv(tictactoe_v3.env())
    assert list(env.subenvs) == ["player_1", "player_2"]
    assert env.subenvs["player_2"].action_space.n == 9
    assert env.state_space("player_1") == env.observation_space("player_1")


def test_unflattened_observations_keep_their_shape():
    env = MultiagentPettingZooEnv(tictactoe_v3.env(), flatten=False)
    assert env.observation_space("player_1").shape == (3, 3, 2)
    assert env.reset(seed=0).observation.shape == (3, 3, 2)


def test_unknown_environment_name_is_a_value_error():
    with pytest.raises(ValueError, match="Unknown PettingZoo environment 'tictactoe_v99'"):
        make_zoo_env("tictactoe_v99")


def test_mpe_games_are_found_by_name_in_their_own_package(tmp_path, monkeypatch):
    """PettingZoo's MPE games left it for the ``mpe2`` package (1.25): ``simple_spread_v3``
    was an unknown environment whose message said to install pettingzoo, which was there."""
    package = tmp_path / "mpe2"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "fake_spread_v3.py").write_text(
        "from pettingzoo.classic import rps_v2\ndef env(**kwargs):\n    return rps_v2.env()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "mpe2", raising=False)
    assert MultiagentPettingZooEnv("fake_spread_v3").possible_agents == ["player_0", "player_1"]
    with pytest.raises(ValueError, match="'mpe2.nothing_v3'.* need pip install mpe2"):
        make_zoo_env("nothing_v3")


def test_pettingzoo_atari_says_what_to_install_and_finds_ale_pys_roms(monkeypatch):
    """pong_v3 without multi-agent-ale-py said only "No module named 'multi_agent_ale_py'"; with
    it, PettingZoo's "rom pong is not installed" sent the user to AutoROM, a download, though
    ale-py ships the ROMs."""
    import types

    for name in [*sys.modules]:  # (the game imported again, its module missing)
        if name.startswith("pettingzoo.atari"):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "multi_agent_ale_py", None)
    with pytest.raises(ImportError, match=r"^cannot import the PettingZoo environment 'pong_v3': "
                                          r"PettingZoo's atari games need the module "
                                          r"multi_agent_ale_py: pip install 'pettingzoo\[atari\]' "
                                          r"installs it$"):
        make_zoo_env("pong_v3")

    ale_py = pytest.importorskip("ale_py")
    game = types.ModuleType("pettingzoo.atari.fake_v0")
    game.env = lambda **kwargs: kwargs
    monkeypatch.setitem(sys.modules, game.__name__, game)
    folder = make_zoo_env(game.__name__)["auto_rom_install_path"]
    assert str(ale_py.roms.get_rom_path("pong")) == f"{folder}/pong.bin"
    assert make_zoo_env(game.__name__, auto_rom_install_path="mine") == {
        "auto_rom_install_path": "mine"}  # (the user's own)


def test_a_game_not_made_is_a_type_error_saying_to_make_it():
    """The module, its ``env`` uncalled or a Gymnasium environment were an ``AttributeError``
    ('... has no attribute possible_agents')."""
    with pytest.raises(TypeError, match="module pettingzoo.classic.tictactoe_v3: call its env"):
        MultiagentPettingZooEnv(tictactoe_v3)
    with pytest.raises(TypeError, match="env, not called: call it"):
        MultiagentPettingZooEnv(tictactoe_v3.env)
    with pytest.raises(TypeError, match="a PettingZoo environment is a game"):
        MultiagentPettingZooEnv(gym.make("CartPole-v1"))


def test_an_environment_given_built_plays_as_built_on_every_runtime():
    """A PettingZoo game built with arguments (a 5x5 Go board) is what the collector and Ray's
    actors play, not the game its name makes (19x19); each env copy gets its own copy."""
    from pettingzoo.classic import go_v5

    from looprl.collector import EnvRunner
    from looprl.distributed import AlgorithmSpec
    from looprl.environments import make
    from looprl.experiments.multiagent import training_copy

    env = MultiagentPettingZooEnv(go_v5.env(board_size=5))
    name, kwargs = env.remote_env()
    shipped = pickle.loads(pickle.dumps(kwargs))  # (what Ray sends an actor)
    local = training_copy(env)
    assert make(name, **shipped).observation_spaces == local.observation_spaces
    assert local.observation_spaces[0]["obs"].shape == (5 * 5 * 17,)
    runner = EnvRunner(name, shipped, n_envs=2)
    copies = [copy.env for copy in runner.envs]
    assert copies[0] is not copies[1] and shipped["env"] not in copies
    spec = AlgorithmSpec(env=name, env_args=kwargs, policy="q-network", trainer="dqn")
    assert spec.env_label == "go_v5"
    for made in runner.envs:
        made.close()
    by_name = MultiagentPettingZooEnv("go_v5")
    assert by_name.remote_env() == ("pettingzoo", {"env": "go_v5", "flatten": True})


@pytest.mark.parametrize("make", [tictactoe_v3.env, lambda: rps_v2.parallel_env(max_cycles=5)],
                         ids=["aec", "parallel"])
def test_the_turn_loop_is_pettingzoos_own(make):
    """The seed-003 loop is a view of the game's ``PettingZooEnvironment`` (the adapter the
    collector steps), and gives what the game's own AEC loop gives: the same turns (finished
    agents in PettingZoo's order), rewards, ends, observations and masks."""
    from pettingzoo.utils.conversions import parallel_to_aec
    from pettingzoo.utils.env import ParallelEnv

    env, game = MultiagentPettingZooEnv(make()), make()
    game = parallel_to_aec(game) if isinstance(game, ParallelEnv) else game
    assert isinstance(env.adapter, PettingZooEnvironment) and env.adapter.env is env.env
    rng, finals = np.random.default_rng(0), []
    for episode in range(20):
        env.reset(seed=episode)
        game.reset(seed=episode)
        for agent, theirs in zip(env.agent_iter(), game.agent_iter(), strict=True):
            state, (obs, reward, terminated, truncated, _) = env.last(), game.last()
            ended = terminated or truncated
            assert agent == theirs and env.agents == game.agents
            assert (state.reward, state.done, state.mask) == (reward, ended, 1.0 - terminated)
            assert env.is_done(agent) == ended
            space = game.observation_space(agent)
            mask = obs["action_mask"] if isinstance(obs, dict) else np.ones(
                env.action_space(agent).n, bool)
            inner = (space["observation"], obs["observation"]) if isinstance(obs, dict) else (
                space, obs)
            assert state.observation.tolist() == gym.spaces.flatten(*inner).tolist()
            assert state.get("action_mask", torch.ones(len(mask))).tolist() == mask.tolist()
            finals += [agent] if ended else []
            action = None if ended else int(rng.choice(np.flatnonzero(mask)))
            env.step(action)
            game.step(action)
        assert env.done and env.agents == []
    assert len(finals) == 20 * 2  # (each agent's final state, every episode)


def test_the_turn_loop_goes_on_through_a_step_that_gives_no_agent_a_turn():
    """After an SRL step of ``None`` results only, the loop ended while agent 1 played on
    (its last two turns and rewards lost, ``env.done`` False)."""
    from tests.configs.user_parts import TurnlessStep

    env = MultiagentPettingZooEnv(TurnlessStep(), name="turnless")
    env.reset()
    turns = []
    for agent in env.agent_iter():
        state = env.last()
        turns.append((agent, int(state.observation[0])))
        env.step(None if state.done else 0)
    assert turns[-3:] == [("agent_1", 3), ("agent_1", 5), ("agent_1", 6)] and env.done


def test_the_turn_loop_goes_on_while_an_agent_that_waits_plays_on():
    """Agent 0 finished while agent 1 waited (``None``): the loop ended there, agent 1's final
    state and reward lost."""
    from tests.configs.user_parts import LastToFinish

    env = MultiagentPettingZooEnv(LastToFinish(), name="last")
    env.reset()
    earned = {"agent_0": 0.0, "agent_1": 0.0}
    for agent in env.agent_iter(20):
        state = env.last()
        earned[agent] += float(state.reward)
        env.step(None if state.done else 0)
    assert earned == {"agent_0": 2.0, "agent_1": 6.0} and env.done


def test_an_srl_environment_plays_the_turn_loop_agents_that_wait_too():
    """Of an SRL environment, the loop's turns are the agents its results are for; their
    actions go to one ``step`` once all have taken theirs (an agent that waits takes none)."""
    from tests.configs.user_parts import LENGTH, TakingTurns

    env = MultiagentPettingZooEnv(TakingTurns(), name="pair")
    assert env.possible_agents == ["agent_0", "agent_1"] and env.env is env.adapter
    assert env.observation_space("agent_1").shape == (1,) and not env.has_action_mask("agent_0")
    env.reset(seed=0)
    turns, earned = [], 0.0
    for agent in env.agent_iter():
        state = env.last()
        turns.append(agent)
        earned += state.reward if agent == "agent_0" else 0.0
        env.step(None if state.done else int(state.observation[0] > 0))  # (always right)
    assert turns[:5] == ["agent_0", "agent_1", "agent_0", "agent_0", "agent_1"]
    assert len(turns) == LENGTH + LENGTH // 2 + 2 and env.done  # (+ each one's final state)
    assert earned == LENGTH  # (each of its actions stepped the environment)
    with pytest.raises(ValueError, match="give MultiagentPettingZooEnv remote="):
        env.remote_env()
    short = MultiagentPettingZooEnv(TakingTurns(short=True), name="pair")
    short.reset(seed=0)
    short.step(0)
    with pytest.raises(ValueError, match=r"TakingTurns.step\(\) returned 1 results for 2"):
        short.step(0)


def test_an_agent_already_done_takes_no_turn_for_a_repeated_done():
    """An SRL environment that keeps sending a finished agent ``done`` results: the agent's
    episode ended once (was: a turn, a reward and a done state at every later step)."""
    from looprl.environments import SRLEnvironment, step_result

    class RepeatedDone(SRLEnvironment):
        agent_count = 2
        observation_space = gym.spaces.Box(-10, 10, (1,), np.float32)
        action_space = gym.spaces.Discrete(2)

        def reset(self):
            self.t = 0
            return [step_result({"obs": np.zeros(1, np.float32)}, 0.0, False)] * 2

        def step(self, actions):
            self.t += 1
            return [step_result({"obs": np.full(1, self.t, np.float32)}, 1.0, self.t >= a + 2)
                    for a in (0, 2)]  # agent 0 done from step 2 on, agent 1 at step 4

    env = MultiagentPettingZooEnv(RepeatedDone(), name="repeats")
    env.reset(seed=0)
    turns, earned = [], {"agent_0": 0.0, "agent_1": 0.0}
    for agent in env.agent_iter(30):
        state = env.last()
        turns.append(agent)
        earned[agent] += float(state.reward)
        env.step(None if state.done else 0)
    assert turns == ["agent_0", "agent_1"] * 3 + ["agent_1"] * 2
    assert earned == {"agent_0": 2.0, "agent_1": 4.0}


def test_an_srl_result_of_plain_numbers_is_one_line_as_in_the_collector():
    """A user's ``StepResult(obs, 1.0, False, {})`` (plain numbers, not shape-(1,) arrays):
    the collector's one line, not ``'float' object is not subscriptable`` from ``last()``."""
    from looprl.environments import SRLEnvironment, StepResult

    class Plain(SRLEnvironment):
        agent_count = 1
        observation_space = gym.spaces.Dict({"obs": gym.spaces.Box(-1, 1, (2,), np.float32)})
        action_space = gym.spaces.Discrete(2)

        def reset(self):
            return [StepResult({"obs": np.zeros(2, np.float32)}, 1.0, False, {})]

        def step(self, actions):
            return self.reset()

    env = MultiagentPettingZooEnv(Plain())
    with pytest.raises(ValueError, match=r"reward, done and truncated must be shape-\(1,\) "
                       r"arrays, got 1.0, False"):
        env.reset()


def test_multiagent_atari_env_preprocesses_as_alls():
    """ALL's ``MultiagentAtariEnv('pong_v3', device)``: grayscale, max of 2 frames, every 4th,
    84x84, observations (1, 84, 84) uint8 for each agent (was: not ported)."""
    pytest.importorskip("supersuit")
    pytest.importorskip("multi_agent_ale_py")
    from looprl.environments import MultiagentAtariEnv

    env = MultiagentAtariEnv("pong_v3", device="cpu")
    assert env.possible_agents == ["first_0", "second_0"]
    for agent in env.possible_agents:
        assert env.observation_space(agent) == gym.spaces.Box(0, 255, (1, 84, 84), np.uint8)
    env.reset(seed=0)
    frames = []
    for _, agent in zip(range(120), env.agent_iter(), strict=False):  # (60 steps: 240 frames)
        state = env.last()
        assert state["agent"] == agent and state.observation.shape == (1, 84, 84)
        assert state.observation.dtype == torch.uint8
        frames.append(state.observation)
        env.step(0)
    assert any(bool((f != frames[0]).any()) for f in frames)  # (the game moves)
    env.close()
    with pytest.raises(ValueError, match=r"^MultiagentAtariEnv plays PettingZoo's Atari games "
                                         r".*got 'tictactoe_v3': for another PettingZoo game use "
                                         r"MultiagentPettingZooEnv\(name\)$"):
        MultiagentAtariEnv("tictactoe_v3")


def test_atari_presets_train_on_a_multiagent_atari_env_as_alls_script_builds_them(tmp_path):
    """ALL's all-multiagent-atari pong_v3 dqn rainbow: one Atari preset per agent."""
    pytest.importorskip("supersuit")
    pytest.importorskip("multi_agent_ale_py")
    from looprl.environments import MultiagentAtariEnv
    from looprl.experiments import MultiagentEnvExperiment
    from looprl.presets import atari, multiagent

    env = MultiagentAtariEnv("pong_v3")
    small = {"replay_buffer_size": 500, "replay_start_size": 64}
    preset = multiagent.independent({"first_0": atari.dqn.hyperparameters(**small),
                                     "second_0": atari.rainbow.hyperparameters(**small)}
                                    ).env(env).build()
    experiment = MultiagentEnvExperiment(preset, env, logdir=str(tmp_path), quiet=True)
    experiment.train(frames=400)
    assert experiment.frame >= 400
    assert {agent: type(p).__name__ for agent, p in preset.presets.items()} == {
        "first_0": "DQNAtariPreset", "second_0": "RainbowAtariPreset"}
