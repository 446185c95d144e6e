"""Meta components in multi-agent experiments: one hub and one copy per agent."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

pytest.importorskip("pettingzoo")

from pettingzoo.classic import tictactoe_v3  # noqa: E402

from looprl.core import NamedArray  # noqa: E402
from looprl.environments.multiagent import MultiagentPettingZooEnv  # noqa: E402
from looprl.experiments.experiment import seed_everything  # noqa: E402
from looprl.experiments.multiagent import MultiagentEnvExperiment  # noqa: E402
from looprl.meta import MetaComponent  # noqa: E402
from looprl.presets.multiagent import dqn  # noqa: E402


class Bonus(MetaComponent):
    """Adds 100 to every reward and records what each hook saw."""

    def __init__(self):
        super().__init__()
        self.log: list[tuple[str, Any]] = []
        self.post_step_methods.append(self.add)  # bound methods: copied with the component
        self.pre_step_methods.append(self.pre_step)
        self.post_episode_methods.append(self.post_episode)

    def pre_step(self, metrics: dict[str, Any]) -> None:
        self.log.append(("pre_step", metrics["agent"]))

    def post_episode(self, metrics: dict[str, Any]) -> None:
        self.log.append(("post_episode", (metrics["agent"], metrics["episode_returns"])))

    def add(self, metrics: dict[str, Any]) -> None:
        self.log.append(("post_step", metrics["agent"]))
        metrics["transition"]["reward"] = metrics["transition"]["reward"] + 100.0


def test_each_agent_gets_its_own_hub_and_learns_the_changed_reward(tmp_path) -> None:
    seed_everything(0)
    env = MultiagentPettingZooEnv(tictactoe_v3.env())
    component = Bonus()
    builder = dqn.env(env).device("cpu").hyperparameters(replay_start_size=50).meta(component)
    experiment = MultiagentEnvExperiment(builder.build(), env, train_steps=400,
                                         logdir=str(tmp_path), quiet=True, seed=0)
    experiment.train(episodes=20)
    assert component.log == []  # each agent got its own copy
    hubs = experiment.hubs
    assert set(hubs) == {"player_1", "player_2"}
    for name, hub in hubs.items():
        bonus = hub.stack.components[0]
        assert bonus is not component and hub.metrics["agent"] == name
        assert {agent for _, agent in bonus.log if isinstance(agent, str)} == {name}
        episodes = [value for hook, value in bonus.log if hook == "post_episode"]
        assert len(episodes) == 20
        # the returns the hooks see (and the logs keep) are the game's
        assert all(agent == name and abs(r[0]) <= 1 for agent, r in episodes)
        assert experiment.agent_loggers[name].episode == 20
        # every turn ends in a post-step when the agent's next turn (or its end) comes; its
        # final state of each game is asked too, but starts no step: no pre-step there
        steps = [hook for hook, _ in bonus.log if hook in ("pre_step", "post_step")]
        assert steps.count("pre_step") == steps.count("post_step")
        # the agent learned from the changed rewards (the game's are -1, 0 or 1)
        buffer = experiment.agent.agents[name].unwrapped.replay_buffer
        _, _, rewards, _, _ = buffer.sample(64)
        assert (rewards >= 99).all()
    env.close()


def test_an_agent_whose_episode_ends_before_its_first_turn_still_ends_it(tmp_path) -> None:
    """Its final state is its first: no transition, but its post- and pre-episode hooks run
    (``MetaHub.end_episodes``), with its return and a length of 0."""
    seed_everything(0)
    env = MultiagentPettingZooEnv(tictactoe_v3.env())
    builder = dqn.env(env).device("cpu").hyperparameters(replay_start_size=50).meta(Bonus())
    experiment = MultiagentEnvExperiment(builder.build(), env, train_steps=100, quiet=True,
                                         logdir=str(tmp_path), seed=0)
    row = NamedArray(obs=np.zeros((1, 18), np.float32), action_mask=np.ones((1, 9), bool))
    only_player_1 = {"state": row, "action": torch.zeros(1, dtype=torch.long),
                     "reward": torch.ones(1), "next_state": row,
                     "terminated": torch.ones(1, dtype=torch.bool),
                     "truncated": torch.zeros(1, dtype=torch.bool), "env_step": 1,
                     "env_index": torch.zeros(1, dtype=torch.long)}
    experiment.hub.after_step(only_player_1, 1, np.array([True]), np.array([[1.0, -1.0]]), [0],
                              np.array([0]))
    bonus = experiment.hubs["player_2"].stack.components[0]
    assert ("post_episode", ("player_2", [-1.0])) in bonus.log
    assert experiment.hubs["player_2"].metrics["episode_lengths"] == [0]
    assert all(hook != "post_step" for hook, _ in bonus.log)
    experiment.close()


def test_an_agents_hooks_see_its_own_view_of_the_observations(tmp_path) -> None:
    """A masked agent's hooks see what its networks and its learner read (the observation with
    the action mask appended), as on Ray: RND trains on the learner's batches, not on a
    buffer of its own kept because the shapes differ."""
    from looprl.meta import RND

    seed_everything(0)
    env = MultiagentPettingZooEnv(tictactoe_v3.env())
    builder = dqn.env(env).device("cpu").hyperparameters(
        replay_start_size=50, minibatch_size=8, update_frequency=4).meta(RND(seed=0))
    experiment = MultiagentEnvExperiment(builder.build(), env, train_steps=400,
                                         logdir=str(tmp_path), quiet=True, seed=0)
    experiment.train(episodes=30)
    for hub in experiment.hubs.values():
        rnd = hub.stack.components[0]
        assert rnd.obs_shape == (18 + 9,) and hub.metrics["state"].shape[-1] == 27
        assert rnd.recent is None  # the learner's batches fit its networks
