"""``MultiagentEnvExperiment``: the multi-agent control loop and its logs."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.classic import tictactoe_v3  # noqa: E402
from pettingzoo.utils.env import ParallelEnv  # noqa: E402

from looprl.agents.independent import IndependentMultiagent, RandomAgent  # noqa: E402
from looprl.core import Agent, Preset  # noqa: E402
from looprl.environments import srl  # noqa: E402
from looprl.environments.multiagent import MultiagentPettingZooEnv  # noqa: E402
from looprl.experiments.multiagent import MultiagentEnvExperiment, play  # noqa: E402


class CountingRandom(Agent):
    def __init__(self, space, seed):
        self.random = RandomAgent(space, seed)
        self.done_states = 0
        self.logger = None

    def act(self, state):
        self.done_states += bool(state.done)
        return self.random.act(state)


class RandomPreset(Preset):
    def __init__(self, env):
        super().__init__("random", "cpu", {})
        self.spaces = {agent: env.action_space(agent) for agent in env.possible_agents}
        self.agents = {}

    def agent(self, logger=None, train_steps=float("inf")):
        for i, (name, space) in enumerate(self.spaces.items()):
            self.agents[name] = CountingRandom(space, i)
            self.agents[name].logger = logger[name]
        return IndependentMultiagent(self.agents)

    def test_agent(self):
        return IndependentMultiagent({n: RandomAgent(s, 9) for n, s in self.spaces.items()})


def test_logs_each_agents_returns_and_the_team_return(tmp_path):
    env = MultiagentPettingZooEnv(tictactoe_v3.env())
    preset = RandomPreset(env)
    experiment = MultiagentEnvExperiment(preset, env, logdir=str(tmp_path), quiet=True, seed=0)
    experiment.train(frames=3)  # (no game ends in 3 moves) each agent's logger at the run's
    assert [logger.frame for logger in experiment.agent_loggers.values()] == [3, 3]  # frame
    experiment.train(episodes=100)
    assert experiment.episode == 100
    assert all(agent.done_states == 100 for agent in preset.agents.values())  # terminal acts
    run = tmp_path / "random" / "tictactoe_v3"
    assert experiment.logger.log_dir == str(run)
    for name in ("player_1", "player_2"):
        assert preset.agents[name].logger is experiment.agent_loggers[name]
        rows = (run / f"random.{name}" / "tictactoe_v3" / "returns100.csv").read_text().split()
        assert rows[0] == "frame,mean,std,max,min" and len(rows) == 2
    team = (run / "returns100.csv").read_text().split()[1].split(",")
    assert float(team[1]) == 0.0  # zero-sum game: the agents' returns cancel
    returns = experiment.test(episodes=10)
    assert [len(returns[name]) for name in ("player_1", "player_2")] == [10, 10]
    assert all(a == -b for a, b in zip(returns["player_1"], returns["player_2"]))
    experiment.close()
    assert (run / "random.player_1" / "tictactoe_v3" / "test_returns.csv").exists()


def test_play_returns_each_agents_returns_per_episode():
    env = MultiagentPettingZooEnv(tictactoe_v3.env())
    names = env.possible_agents
    agents = {name: RandomAgent(env.action_space(name), seed=i) for i, name in enumerate(names)}
    returns = play(env, IndependentMultiagent(agents), episodes=30, seed=3)
    assert len(returns["player_1"]) == 30
    wins = sum(r > 0 for r in returns["player_1"])
    losses = sum(r > 0 for r in returns["player_2"])
    assert wins + losses <= 30 and wins > losses  # the first player's edge
    with pytest.raises(TypeError, match=r"play plays an agent.*got dict"):
        play(env, agents)  # (was: AttributeError: 'dict' object has no attribute 'act')


def test_evaluation_plays_the_policy_as_a_ray_runs_does(tmp_path):
    """``test`` is Ray's final evaluation (``evaluation_episodes`` of the preset's spec): the
    preset's policy by an evaluation ``Actor`` whose random draws (``test_exploration``) and
    env resets are seeded with ``seed + TEST_SEED_OFFSET``; so it also repeats itself."""
    from looprl.distributed import AlgorithmSpec
    from looprl.distributed.pipeline import evaluation_episodes
    from looprl.experiments.experiment import TEST_SEED_OFFSET
    from looprl.experiments.multiagent import agent_returns
    from looprl.presets.multiagent import dqn

    env = MultiagentPettingZooEnv("tictactoe_v3")
    preset = dqn.env(env).device("cpu").hyperparameters(test_exploration=0.5, hidden=16).build()
    experiment = MultiagentEnvExperiment(preset, env, logdir=str(tmp_path), quiet=True, seed=3)
    local = experiment.test(episodes=30)
    spec, _ = AlgorithmSpec.of_preset(preset, frames=100)
    ray = evaluation_episodes(spec, None, episodes=30, seed=3 + TEST_SEED_OFFSET)
    assert agent_returns(ray, env.possible_agents) == local
    assert experiment.test(episodes=30) == local
    assert len(set(local["player_1"])) > 1  # (the draws decide some games)
    experiment.close()


def test_a_test_in_an_id_is_one_line(tmp_path):
    """``test(env="tictactoe_v3")`` was an AttributeError ('possible_agents')."""
    env = MultiagentPettingZooEnv(tictactoe_v3.env())
    experiment = MultiagentEnvExperiment(RandomPreset(env), env, logdir=str(tmp_path),
                                         quiet=True, seed=0)
    with pytest.raises(TypeError, match=r"^MultiagentEnvExperiment.test's env is one looprl "
                                        r"environment \(MultiagentEnvironment.*got str.*"
                                        r"e.g. MultiagentPettingZooEnv\(game\)$"):
        experiment.test(episodes=1, env="tictactoe_v3")
    experiment.close()


@pytest.mark.parametrize("trained", [False, True], ids=["act", "learn"])
def test_a_step_that_gives_no_agent_a_turn_trains_on_as_on_ray(trained, tmp_path, monkeypatch):
    """The local run asked the policy for no rows (``AttributeError: 'NoneType' object has no
    attribute 'agent'``) where Ray's actors and the evaluation step on without actions."""
    from tests.configs.user_parts import TurnlessStep

    from looprl.presets.multiagent import dqn

    monkeypatch.setitem(srl._REGISTRY, "turnless_step", TurnlessStep)
    env = MultiagentPettingZooEnv(TurnlessStep(), "turnless", remote=("turnless_step", {}))
    preset = dqn.env(env).device("cpu").build() if trained else RandomPreset(env)
    experiment = MultiagentEnvExperiment(preset, env, logdir=str(tmp_path), quiet=True, seed=0)
    experiment.train(episodes=3)
    assert (experiment.frame, experiment.episode) == (18, 3)
    assert experiment.test(episodes=1) == {"agent_0": [3.0], "agent_1": [4.0]}
    experiment.close()


def test_a_checkpoint_saved_without_agent_logs_resumes_logging_each_agent(tmp_path):
    """An experiment checkpointed before it had ``agent_logs`` (only ``agent_loggers``) goes
    on logging each agent's returns in the same directories."""
    from looprl.experiments.checkpoint import load_checkpoint, save_checkpoint

    env = MultiagentPettingZooEnv(tictactoe_v3.env())
    experiment = MultiagentEnvExperiment(RandomPreset(env), env, logdir=str(tmp_path),
                                         quiet=True, seed=0)
    experiment.train(episodes=5)
    logs = experiment.__dict__.pop("agent_logs")  # (as an earlier checkpoint's)
    save_checkpoint(experiment)
    logs.close()
    experiment.logger.close()
    resumed = load_checkpoint(tmp_path / "random" / "tictactoe_v3")
    assert resumed.agent_logs.loggers is resumed.agent_loggers
    resumed.train(episodes=8)
    resumed.close()
    rows = (tmp_path / "random" / "tictactoe_v3" / "random.player_2" / "tictactoe_v3" /
            "results.csv").read_text().splitlines()
    assert [row.split(",")[1] for row in rows[1:]] == [str(n) for n in range(1, 9)]


def test_render_trains_in_the_game_given_which_shows_itself(tmp_path, monkeypatch) -> None:
    """``render=True`` with a game made by name with ``render_mode='human'``: training steps
    that game (it rendered nothing: the run trained in a copy made by name, without a
    render mode)."""
    pytest.importorskip("pygame")
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")  # (a window without a display)
    from looprl.environments import MultiagentPettingZooEnv
    from looprl.experiments import MultiagentEnvExperiment
    from looprl.presets.multiagent import dqn

    game = MultiagentPettingZooEnv("tictactoe_v3", render_mode="human")
    board = game.env.unwrapped
    board.metadata = {**board.metadata, "render_fps": 1000}  # (its 1 s a frame: a test's 1 ms)
    preset = dqn.hyperparameters(replay_start_size=50).env(game).device("cpu").build()
    experiment = MultiagentEnvExperiment(preset, game, str(tmp_path), quiet=True, render=True)
    experiment.train(frames=6)
    assert experiment.runner.envs[0] is game.adapter
    experiment.close()


def test_run_experiment_gives_each_agents_test_returns(tmp_path):
    from looprl.experiments import run_experiment
    from looprl.presets.multiagent import dqn

    (result,) = run_experiment(dqn.hyperparameters(replay_start_size=50), "tictactoe_v3", 200,
                               logdir=str(tmp_path), quiet=True, test_episodes=3, seed=0)
    each = result.agent_test_returns  # (was only the team's, always 0 in a zero-sum game)
    assert sorted(each) == ["player_1", "player_2"] and len(each["player_1"]) == 3
    assert result.test_returns == [a + b for a, b in zip(each["player_1"], each["player_2"])]


def test_every_agents_results_csv_is_whole_once_train_returns(tmp_path):
    # was: the rows since the last hundredth episode reached results.csv only at close()
    env = MultiagentPettingZooEnv(tictactoe_v3.env())
    experiment = MultiagentEnvExperiment(RandomPreset(env), env, logdir=str(tmp_path),
                                         quiet=True, seed=0)
    experiment.train(episodes=30)
    run = tmp_path / "random" / "tictactoe_v3"
    for folder in (run, run / "random.player_1" / "tictactoe_v3"):
        assert len((folder / "results.csv").read_text().splitlines()) == 1 + 30
    experiment.close()


def test_a_diverging_agent_is_named(tmp_path):
    """Every agent's network is named 'q': the line said "Approximation 'q': the loss is inf"
    without saying whose."""
    from looprl.experiments import run_experiment
    from looprl.presets.multiagent import dqn

    with pytest.raises(FloatingPointError, match=r"^independent_dqn: Training diverged at frame "
                                                 r"[\d,]+ on tictactoe_v3: agent player_\d: "
                                                 r"Approximation 'q': the loss is "):
        run_experiment(dqn.hyperparameters(replay_start_size=32, minibatch_size=16, hidden=16,
                                           lr=1e12, clip_grad=0),
                       "tictactoe_v3", 3000, logdir=str(tmp_path), quiet=True, test_episodes=0,
                       seed=0)


def test_each_agents_meta_scalars_go_to_its_own_run_directory_as_on_ray(tmp_path):
    """A meta component's ``log/*`` scalars of agent ``player_1`` are ``log/<key>`` in
    ``{run}/{name}.player_1/{env}`` (TensorBoard and ``log.csv``), as a Ray run logs them, not
    ``log/<key>/player_1`` in the run's own directory."""
    from looprl.meta import MetaComponent
    from looprl.presets.multiagent import dqn

    class Mark(MetaComponent):
        def __init__(self):
            super().__init__()
            self.post_episode_methods.append(self.mark)

        def mark(self, metrics):
            metrics["log/mark"] = 1.0 if metrics["agent"] == "player_1" else 2.0

    env = MultiagentPettingZooEnv(tictactoe_v3.env())
    builder = dqn.env(env).device("cpu").hyperparameters(replay_start_size=1000).meta(Mark())
    experiment = MultiagentEnvExperiment(builder.build(), env, logdir=str(tmp_path), quiet=True,
                                         seed=0)
    experiment.train(episodes=5)
    experiment.close()
    run = tmp_path / "independent_dqn" / "tictactoe_v3"
    assert not (run / "log.csv").exists()
    for name, value in (("player_1", 1.0), ("player_2", 2.0)):
        rows = (run / f"independent_dqn.{name}" / "tictactoe_v3" / "log.csv").read_text().split()
        assert rows[0] == "frame,name,value" and len(rows) == 6
        assert all(row.split(",")[1:] == ["mark", repr(value)] for row in rows[1:])


class _Uneven(ParallelEnv):
    """Agents whose observations (``obs``) or actions (``act``) differ in shape (MPE's
    simple_adversary: the adversary sees less)."""

    metadata = {"name": "uneven"}
    render_mode = None
    possible_agents = ["adversary", "agent"]  # noqa: RUF012

    def __init__(self, differ):
        self.differ = differ

    def observation_space(self, agent):
        size = 3 if self.differ == "obs" and agent == "adversary" else 4
        return gym.spaces.Box(-1.0, 1.0, (size,), np.float32)

    def action_space(self, agent):
        size = 3 if self.differ == "act" and agent == "adversary" else 2
        return gym.spaces.Box(-1.0, 1.0, (size,), np.float32)

    def reset(self, seed=None, options=None):
        self.agents = list(self.possible_agents)
        return ({a: self.observation_space(a).sample() for a in self.agents},
                {a: {} for a in self.agents})

    def step(self, actions):
        obs = {a: self.observation_space(a).sample() for a in self.agents}
        done = dict.fromkeys(self.agents, True)
        self.agents = []
        infos = {a: {} for a in done}
        return obs, dict.fromkeys(done, 1.0), done, dict.fromkeys(done, False), infos


@pytest.mark.parametrize("differ", ["obs", "act"])
def test_agents_of_different_shapes_are_one_line_before_training(differ, tmp_path):
    from looprl.experiments import run_experiment
    from looprl.presets import continuous, multiagent

    env = MultiagentPettingZooEnv(_Uneven(differ))
    kind = "observation" if differ == "obs" else "action"
    with pytest.raises(ValueError, match=rf"one {kind} shape .* uneven's .*adversary \(3,\)"):
        run_experiment(multiagent.independent(continuous.ppo), env, 100, logdir=str(tmp_path),
                       quiet=True)
    with pytest.raises(ValueError, match=f"one {kind} shape"):
        play(env, IndependentMultiagent({}))


class _Swapped(_Uneven):
    """``_Uneven``'s agents in the other order."""

    possible_agents = ["agent", "adversary"]  # noqa: RUF012


def test_a_preset_of_other_agents_or_spaces_is_one_line(tmp_path):
    """A multi-agent preset's policies answer the agents by index: one built for other agents
    trained silently on them (here each agent with the other's networks), or failed in its
    policy (``KeyError: "NamedArray has no field 'action_mask'"``); also its test in another
    environment, and in a single-agent one at its first step ("the request does not say whose
    rows it holds")."""
    from looprl.environments import GymEnvironment
    from looprl.experiments import run_experiment
    from looprl.presets import continuous, multiagent

    env = MultiagentPettingZooEnv(_Uneven("same"))
    preset = multiagent.independent(continuous.ppo).env(env).hyperparameters(hidden=8).build()
    trained = r"^The preset was built for uneven \(agents, observations, actions: adversary " \
              r"Box\(4,\) Box\(2,\); agent Box\(4,\) Box\(2,\)\), "
    with pytest.raises(ValueError, match=trained + r"uneven has agent Box\(4,\) Box\(2,\); "
                       r"adversary .*same agents, in the same order, and spaces"):
        MultiagentEnvExperiment(preset, MultiagentPettingZooEnv(_Swapped("same")),
                                logdir=str(tmp_path), quiet=True)
    experiment = MultiagentEnvExperiment(preset, env, logdir=str(tmp_path), quiet=True)
    with pytest.raises(ValueError, match=trained + r"tictactoe_v3 has player_1 Box\(18,\) "
                                                   r"Discrete\(9\) masked; player_2"):
        experiment.test(episodes=1, env=MultiagentPettingZooEnv("tictactoe_v3"))
    assert set(experiment.test(episodes=1, env=MultiagentPettingZooEnv(_Uneven("same")))) == {
        "adversary", "agent"}
    experiment.close()
    with pytest.raises(ValueError, match=r"^The preset was built for the multi-agent uneven; "
                                         r"CartPole-v1 is a single-agent environment"):
        run_experiment(preset, GymEnvironment("CartPole-v1"), 100, logdir=str(tmp_path),
                       quiet=True)
