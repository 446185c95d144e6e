"""Multi-agent presets: independent learners built from single-agent presets."""

from __future__ import annotations

import pytest
import torch
from torch import nn

pytest.importorskip("pettingzoo")

from pettingzoo.classic import rps_v2, tictactoe_v3  # noqa: E402

from looprl.agents.independent import (  # noqa: E402
    IndependentMultiagent,
    MaskedAgent,
    MaskedModule,
    RandomAgent,
    SingleStateAgent,
)
from looprl.core import Preset  # noqa: E402
from looprl.environments.multiagent import MultiagentPettingZooEnv  # noqa: E402
from looprl.experiments.multiagent import MultiagentEnvExperiment, play  # noqa: E402
from looprl.presets import UnknownHyperparameterError, load_preset  # noqa: E402
from looprl.presets import classic_control as cc  # noqa: E402
from looprl.presets.multiagent import dqn, independent, ppo  # noqa: E402
from looprl.presets.multiagent.independent import mask_model, masked_view  # noqa: E402


def _rps_presets(*names: str, builder=cc.dqn) -> dict:
    """One preset per name, built on rock-paper-scissors' first agent's view (ALL's way)."""
    env = MultiagentPettingZooEnv(rps_v2.env())
    view = env.subenvs[env.agents[0]]
    return {name: builder.hyperparameters(replay_start_size=20).env(view).device("cpu").build()
            for name in names}


@pytest.mark.parametrize(("names", "match"), [
    (["player_0"], r"^No preset for agent 'player_1' of rps \(got \['player_0'\]\)$"),
    (["player_0", "player_2"], r"^No preset for agent 'player_1' of rps \(got \['player_0', "
                               r"'player_2'\]\): rename 'player_2' to 'player_1'$"),
    (["player_0", "player_1", "bob"], r"^ind has presets for \['bob'\], but rps has no such "
                                      r"agent \(its agents: player_0, player_1\)")])
def test_an_experiment_checks_the_names_of_alls_independent_presets(names, match) -> None:
    """(Was: a missing agent's "the request names agents [1], but there are 1"; a misnamed one
    trained as another agent by its place, its losses logged nowhere.)"""
    from looprl.presets import IndependentMultiagentPreset

    env = MultiagentPettingZooEnv(rps_v2.env(), name="rps")
    preset = IndependentMultiagentPreset("ind", "cpu", _rps_presets(*names))
    with pytest.raises(ValueError, match=match):
        MultiagentEnvExperiment(preset, env, quiet=True, logdir=None)


def test_alls_independent_presets_of_a_game_with_masks_play_unmasked_with_a_warning(
        tmp_path, caplog) -> None:
    """Presets built on ``env.subenvs`` read the observation, not the mask (ALL's: an illegal
    move ends the game); was: "linear(): argument 'input' must be Tensor, not NamedArray"."""
    from looprl.presets import IndependentMultiagentPreset

    env = MultiagentPettingZooEnv(tictactoe_v3.env(), name="tictactoe_v3")
    small = cc.dqn.hyperparameters(replay_start_size=20, minibatch_size=8)
    presets = {agent: small.env(env.subenvs[agent]).device("cpu").build() for agent in env.agents}
    experiment = MultiagentEnvExperiment(IndependentMultiagentPreset("ind", "cpu", presets), env,
                                         quiet=True, logdir=str(tmp_path))
    assert "act without tictactoe_v3's action masks" in caplog.text
    experiment.train(frames=800)  # (its collector's segments: 256 rows each agent)
    assert all(updates(agent) > 0 for agent in experiment.agent.agents.values())
    assert set(experiment.test(episodes=2)) == {"player_1", "player_2"}


def test_alls_independent_preset_routes_a_users_own_agents(tmp_path) -> None:
    """ALL's ``IndependentMultiagentPreset.agent()`` takes any presets' agents (was: "takes
    agents with an actor and a learner")."""
    from looprl.agents import Agent
    from looprl.presets import IndependentMultiagentPreset

    class Rock(Agent):
        def act(self, state):
            return torch.tensor(0)

    class RockPreset(Preset):
        def __init__(self):
            super().__init__("rock", "cpu", {})

        def agent(self, logger=None, train_steps=float("inf")):
            return Rock()

        def test_agent(self):
            return Rock()

    env = MultiagentPettingZooEnv(rps_v2.env(), name="rps")
    presets = {name: RockPreset() for name in env.agents}
    experiment = MultiagentEnvExperiment(IndependentMultiagentPreset("ind", "cpu", presets), env,
                                         quiet=True, logdir=str(tmp_path))
    assert type(experiment.agent) is IndependentMultiagent
    experiment.train(frames=40)
    assert experiment.test(episodes=1) == {"player_0": [0.0], "player_1": [0.0]}  # (a tie)


def updates(agent):
    while not hasattr(agent, "trainer"):
        agent = agent.agent  # through MaskedAgent and SingleStateAgent
    return agent.trainer.policy.version


@pytest.mark.parametrize(
    ("builder", "hyperparameters"),
    [(dqn, {"replay_start_size": 100}), (ppo, {"n_steps": 64})],
    ids=["dqn", "ppo"],
)
def test_preset_trains_saves_loads_and_evaluates(builder, hyperparameters, tmp_path):
    env = MultiagentPettingZooEnv(tictactoe_v3.env())
    preset = builder.env(env).device("cpu").hyperparameters(**hyperparameters).build()
    experiment = MultiagentEnvExperiment(
        preset, env, train_steps=600, logdir=str(tmp_path), quiet=True, verbose=False, seed=0
    )
    experiment.train(frames=600)  # MaskedAgent raises on any illegal action
    assert experiment.frame >= 600 and experiment.episode > 50
    assert all(updates(agent) > 0 for agent in experiment.agent.agents.values())
    assert preset.env_spaces is None  # (per agent: a preset keeps no bound method of the game)
    preset.save(str(tmp_path / "preset.pt"))
    loaded = load_preset(str(tmp_path / "preset.pt"), device="cpu")
    assert set(loaded.presets) == {"player_1", "player_2"}
    agent = loaded.test_agent()
    opponent = RandomAgent(env.action_space("player_2"), seed=0)
    returns = play(env, IndependentMultiagent({**agent.agents, "player_2": opponent}), 20)
    assert len(returns["player_1"]) == 20
    assert set(returns["player_1"]) <= {-1.0, 0.0, 1.0}
    test_returns = experiment.test(episodes=4)
    assert {k: len(v) for k, v in test_returns.items()} == {"player_1": 4, "player_2": 4}
    experiment.close()


def test_agents_of_a_masked_env_are_wrapped_and_parallel_presets_use_one_env():
    env = MultiagentPettingZooEnv(tictactoe_v3.env())
    preset = ppo.env(env).device("cpu").build()
    assert preset.masked == {"player_1", "player_2"}
    sub = preset.presets["player_2"]
    assert sub.n_envs == 1 and sub.name == "independent_ppo.player_2"
    assert isinstance(sub.model, MaskedModule)
    assert sub.model.module.actor[0].in_features == 18 + 9  # observation + mask
    agent = preset.agent().agents["player_1"]
    assert isinstance(agent, MaskedAgent) and isinstance(agent.agent, SingleStateAgent)
    assert isinstance(preset.test_agent().agents["player_2"], MaskedAgent)


def test_masked_actor_critic_presets_keep_their_actor_and_critic():
    """A2C, VAC and VPG give the actor and the critic their own learning rates: their
    optimizer reads ``model.actor`` through the ``MaskedModule``."""
    env = MultiagentPettingZooEnv(tictactoe_v3.env())
    preset = independent(cc.a2c).env(env).device("cpu").build()
    model = preset.presets["player_1"].model
    assert isinstance(model, MaskedModule) and model.actor is model.module.actor
    assert isinstance(preset.agent().agents["player_1"], MaskedAgent)


def test_one_builder_per_agent_and_unmasked_parallel_env():
    env = MultiagentPettingZooEnv(rps_v2.parallel_env())
    builder = independent({"player_0": cc.dqn, "player_1": cc.ppo}, name="mixed")
    preset = builder.env(env).hyperparameters(hidden=32).device("cpu").build()
    assert preset.name == "mixed" and preset.masked == set()
    assert not isinstance(preset.presets["player_0"].model, MaskedModule)
    assert preset.presets["player_0"].hyperparameters["hidden"] == 32
    assert preset.presets["player_1"].hyperparameters["hidden"] == 32
    returns = play(env, preset.agent(), episodes=2, seed=0)
    assert set(returns) == {"player_0", "player_1"}
    # one cut of the rows for both agents, the same on both runtimes: the on-policy agent's
    # segments (PPO's n_steps), a divisor of the replay agent's (DQN's update_frequency)
    length = preset.agent().adder.segment_length
    assert length == preset.presets["player_1"].hyperparameters["n_steps"]
    ray = preset.learning(1000)
    assert (ray["segment_length"], ray["whole_episodes"]) == (length, False)


def test_agents_whose_rows_no_one_cut_fits_are_one_line():
    from looprl.agents.independent_learner import shared_cut

    assert shared_cut([(256, False, True), (32, False, False)]) == (32, False)
    assert shared_cut([(4, False, True), (6, False, True)]) == (2, False)
    for cuts in ([(16, False, False), (32, False, False)],  # two on-policy lengths
                 [(20, False, True), (32, False, False)],  # 32 does not divide 20
                 [(32, True, False), (32, False, True)]):  # whole episodes and a replay
        with pytest.raises(ValueError, match="one collector cannot cut for all"):
            shared_cut(cuts)


def test_builder_errors_name_the_problem():
    env = MultiagentPettingZooEnv(tictactoe_v3.env())
    with pytest.raises(UnknownHyperparameterError, match="Did you mean 'lr'"):
        dqn.hyperparameters(lrr=1e-3)
    with pytest.raises(ValueError, match="'hidden' of independent_ppo must be a whole number"):
        ppo.hyperparameters(hidden=1.5)
    with pytest.raises(ValueError, match="Call .env"):
        dqn.build()
    with pytest.raises(ValueError, match=r"No preset builder for agent 'player_2' of "
                       r"tictactoe_v3 \(got "
                       r"\['player_1'\]\)$"):  # (was: "rename 'player_1' to 'player_2'")
        independent({"player_1": cc.dqn}).env(env).device("cpu").build()
    # a builder for no agent of the game was left out silently; a value that is no builder
    # was an AttributeError ('hyperparameter_defaults')
    with pytest.raises(ValueError, match=r"^independent has preset builders for \['player_3'\], "
                       r"but tictactoe_v3 has no such agent \(its agents: player_1, player_2\)"):
        independent(dict.fromkeys(["player_1", "player_2", "player_3"], cc.dqn)).env(env).build()
    preset = cc.dqn.env("CartPole-v1").device("cpu").build()
    for builders, got in ((5, "int 5"), ({"player_1": cc.dqn, "player_2": preset},
                                         r"\(for agent 'player_2'\) DQNClassicControlPreset")):
        with pytest.raises(TypeError, match=r"^independent\(\) takes a preset builder .* or a "
                           rf"dict agent name -> builder, got {got}"):
            independent(builders)
    with pytest.raises(ValueError, match=r"\(got \['player2', 'player_1'\]\): rename 'player2' "
                       "to 'player_2'$"):
        independent({"player_1": cc.dqn, "player2": cc.dqn}).env(env).device("cpu").build()
    # a game not wrapped, or a single-agent environment: not an AttributeError at build()
    for game in (tictactoe_v3.env(), cc.dqn.env("CartPole-v1")._env):
        with pytest.raises(TypeError, match=r"dqn.env\(\) takes a MultiagentEnvironment"):
            dqn.env(game)


def test_a_single_agent_preset_in_a_multiagent_env_is_one_line(tmp_path):
    """``classic_control.dqn.env(game)`` said the game "has method actions (<bound method
    ...>)"; a single-agent preset in ``MultiagentEnvExperiment`` that it "has method(),
    method()"."""
    env = MultiagentPettingZooEnv(tictactoe_v3.env())
    with pytest.raises(ValueError, match=r"multi-agent environment: .*multiagent.independent"
                       r"\(classic_control.dqn\)\)$"):
        cc.dqn.env(env)
    preset = cc.dqn.env("CartPole-v1").device("cpu").build()
    with pytest.raises(ValueError, match="single-agent CartPole-v1; .* is a multi-agent env"):
        MultiagentEnvExperiment(preset, env, logdir=str(tmp_path), quiet=True)


def test_n_envs_other_than_one_is_refused_not_ignored():
    """``n_envs=4`` was accepted, ignored (each agent's preset steps one view) and recorded in
    the run's hyperparameters; ``looprl run``'s config showed the single-agent preset's 8."""
    assert ppo.hyperparameter_defaults["n_envs"] == 1
    assert ppo.hyperparameters(n_envs=1).hyperparameter_defaults["n_envs"] == 1
    with pytest.raises(ValueError, match="one environment per agent: n_envs is 1, got 4"):
        ppo.hyperparameters(n_envs=4)


def test_mask_model_rejects_outputs_that_are_not_one_value_per_action():
    view = masked_view(MultiagentPettingZooEnv(tictactoe_v3.env()).subenv("player_1"))

    class WrongPreset(Preset):
        def __init__(self):
            super().__init__("wrong", "cpu", {})
            self.model = nn.Linear(27, 4)

        def agent(self, logger=None, train_steps=float("inf")):
            raise NotImplementedError

        def test_agent(self):
            raise NotImplementedError

    with pytest.raises(ValueError, match="cannot be masked"):
        mask_model(WrongPreset(), view)
    assert view.observation_space.shape == (27,)
    assert view.observation_space.high[-9:].tolist() == [1.0] * 9
    assert torch.equal(torch.as_tensor(view.observation_space.low[-9:]), torch.zeros(9))


def test_make_env_makes_a_game_by_name_to_render_or_not():
    """One path: the game by name, with the ``render_mode`` asked for (watching) where its
    ``env()`` takes one; its training copies (Ray's actors too) are made by that name."""
    from looprl.presets.catalog import make_env

    plain = make_env("multiagent.dqn", "tictactoe_v3")
    shown = make_env("multiagent.dqn", "classic.tictactoe_v3", render_mode="rgb_array")
    assert (plain.name, shown.name) == ("tictactoe_v3", "tictactoe_v3")
    assert (plain.env.render_mode, shown.env.render_mode) == (None, "rgb_array")
    assert plain.remote_env() == ("pettingzoo", {"env": "tictactoe_v3", "flatten": True})
    assert shown.remote_env() == ("pettingzoo", {"env": "classic.tictactoe_v3", "flatten": True})
    shown.reset(seed=0)
    assert shown.render().ndim == 3


def test_an_import_path_of_a_game_factory_makes_the_game():
    """``env=package.module:parallel_env`` (``make_zoo_env``'s form) for a multi-agent preset
    (was "is a function, not a gymnasium.Env class"), made by that path on Ray too; for a
    single-agent preset, one line that says what the path is for."""
    from looprl.presets.catalog import make_env

    path = "pettingzoo.classic.rps_v2:parallel_env"
    game = make_env("multiagent.ppo", path)
    assert game.agents == ["player_0", "player_1"]
    assert game.remote_env() == ("pettingzoo", {"env": path, "flatten": True})
    with pytest.raises(TypeError, match="is a function, .* a PettingZoo game: with a "
                                        "multi-agent preset"):
        make_env("classic_control.dqn", path)
    with pytest.raises(ValueError, match="^CartPole-v1 is a single-agent Gymnasium environment: "
                                         r"train it with a single-agent preset \(dqn, not "
                                         r"multiagent.dqn\)"):
        make_env("multiagent.dqn", "CartPole-v1")  # (was "Unknown PettingZoo environment")


def test_an_id_is_made_for_the_family_of_a_configured_builder():
    """``run_experiment(multiagent.dqn.hyperparameters(...), "tictactoe_v3")``: the builder a
    call configured, or a preset built from it, makes the game as its family's does, not a
    Gymnasium environment (a built preset's was refused: 'train it with a multi-agent
    preset')."""
    from looprl.presets.catalog import env_for

    built = dqn.env("tictactoe_v3").device("cpu").hyperparameters(hidden=8).build()
    for builder in (dqn, dqn.hyperparameters(replay_start_size=50), ppo.device("cpu"), built):
        assert isinstance(env_for(builder, "tictactoe_v3"), MultiagentPettingZooEnv)
    assert env_for(cc.dqn.hyperparameters(lr=1e-3), "CartPole-v1").name == "CartPole-v1"


def test_agents_of_different_algorithms_take_turns(tmp_path):
    """A replay agent (DQN: actions only) and an on-policy one (PPO: log-probs and values) in a
    turn-based game: their rows, asked one agent at a time, are written alike."""
    env = MultiagentPettingZooEnv(tictactoe_v3.env())
    builder = independent({
        "player_1": cc.dqn.hyperparameters(update_frequency=8, gradient_steps=1,
                                           replay_start_size=16, hidden=16),
        "player_2": cc.ppo.hyperparameters(n_steps=8, minibatch_size=8, epochs=1, hidden=16)})
    experiment = MultiagentEnvExperiment(builder.env(env).device("cpu").build(), env,
                                         logdir=str(tmp_path), quiet=True, seed=0)
    experiment.train(frames=100)
    assert all(updates(agent) > 0 for agent in experiment.agent.agents.values())
    experiment.close()


def test_a_multiagent_run_that_never_trained_says_so(tmp_path, caplog):
    """No agent's first update within the budget: a local run evaluated the untrained agents
    without a word (a Ray run warned; the independent learners counted no ``updates``)."""
    env = MultiagentPettingZooEnv(tictactoe_v3.env())
    for start, frames in ((500, 31), (0, 33)):
        preset = dqn.env(env).device("cpu").hyperparameters(
            replay_start_size=start, update_frequency=1, gradient_steps=1, minibatch_size=4,
            hidden=8).build()
        experiment = MultiagentEnvExperiment(preset, env, train_steps=frames,
                                             logdir=str(tmp_path), quiet=True, seed=0)
        with caplog.at_level("WARNING"):
            experiment.train(frames=frames)
        experiment.close()
        assert (f"independent_dqn on tictactoe_v3: the agent never trained in its {frames} "
                "frames" in caplog.text) == (start > 0)
