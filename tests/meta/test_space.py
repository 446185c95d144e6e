"""SPaCE against synthetic metrics on a real contextual CartPole duplicated into 2 copies."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
import torch

from looprl.environments import GymEnvironment
from looprl.environments.contextual import (
    ContextualEnvironment,
    contextual_envs,
    sample_contexts,
)
from looprl.meta import COMPONENTS, SPaCE


def two_copies(hide_context: bool = True):
    contexts = sample_contexts("CartPole-v1", 6, {"length": (0.2, 1.0)}, seed=0)
    return ContextualEnvironment("CartPole-v1", contexts, hide_context=hide_context,
                                 seed=0).duplicate(2)


def end_both(space: SPaCE, metrics: dict, returns: float) -> int:
    metrics.update(ended=torch.tensor([True, True]), episode_returns=[returns, returns])
    space.evaluate(metrics)
    sizes = {len(w.instance_ids) for w in contextual_envs(metrics["env"])}
    assert sizes == {metrics["log/space/instance_set_size"]}  # written to both copies
    return metrics["log/space/instance_set_size"]


def test_set_grows_at_plateaus_and_stays_while_improving():
    env = two_copies()
    space = SPaCE(initial_size=2, increment=1, eta=0.02, check_every=2, measure="return")
    metrics = {"env": env, "policy": None}
    space.setup(metrics)
    assert metrics["log/space/instance_set_size"] == 2
    assert [w.instance_ids for w in contextual_envs(env)] == [[0, 1], [0, 1]]  # given order
    returns = [10, 20, 30, 30.5, 40, 60, 60.2, 60.1, 61.5, 61.6, 61.6, 61.6]
    sizes = [end_both(space, metrics, r) for r in returns]
    # baseline, +100%, +50%: stay; +1.7%: grow; +31%, +50%: stay; +0.3%, -0.2%: grow twice;
    # +2.3%: stay; +0.2%: grow to the full set, which then stays
    assert sizes == [2, 2, 2, 3, 3, 3, 4, 5, 5, 6, 6, 6]
    assert [w.instance_ids for w in contextual_envs(env)] == [list(range(6))] * 2
    assert COMPONENTS["space"] is SPaCE


def test_window_counts_episodes_and_value_measure_orders_by_start_value():
    env = two_copies(hide_context=False)  # the observation ends with the context: length 4th
    scale = {"k": 1.0}

    def model(obs):  # V(s_0) = -k * length: short poles are "easy"
        return torch.zeros(len(obs), 2), -scale["k"] * obs[:, 4 + 3]

    policy = SimpleNamespace(logits_and_values=lambda obs: model(torch.as_tensor(obs)),
                             hyperparameters=dict, approximations=dict,
                             exploration=None)  # declares none
    space = SPaCE(initial_size=2, increment=2, eta=0.05, check_every=4, measure="value")
    metrics = {"env": env, "policy": policy}
    lengths = {i: c["length"] for i, c in contextual_envs(env)[0].contexts.items()}
    space.setup(metrics)
    by_length = sorted(lengths, key=lengths.get)
    assert space.current == by_length[:2]
    assert set(contextual_envs(env)[1].instance_ids) == set(by_length[:2])
    end_both(space, metrics, 0.0)
    assert len(space.history) == 0  # 2 of 4 episodes: no check yet
    end_both(space, metrics, 0.0)  # baseline
    scale["k"] = 0.5  # values rise by 0.5 * mean length > eta: keep the set
    assert end_both(space, metrics, 0.0) == 2 and end_both(space, metrics, 0.0) == 2
    end_both(space, metrics, 0.0)
    assert end_both(space, metrics, 0.0) == 4  # no change: grow by the next easiest two
    assert space.current == by_length[:4]
    with pytest.raises(ValueError, match="measure='value'.*policy"):
        SPaCE(measure="value", check_every=1).evaluate({"env": two_copies(), "policy": None,
                                                        "ended": torch.tensor([True]),
                                                        "episode_returns": [1.0]})


def test_bad_inputs():
    with pytest.raises(ValueError, match="Unknown SPaCE measure 'reward'. Valid: value, return"):
        SPaCE(measure="reward")
    with pytest.raises(ValueError, match="increment must be positive"):
        SPaCE(increment=0)
    with pytest.raises(ValueError,
                       match=r"check_every must be positive \(a whole number\), got True"):
        SPaCE(check_every=True)  # (was taken as 1)
    with pytest.raises(ValueError, match=r"^SPaCE's eta must be finite and >= 0, got nan$"):
        SPaCE(eta=float("nan"))  # was: a set that never grew
    with pytest.raises(ValueError, match=r"^SPaCE's eta must be >= 0, got -1$"):
        SPaCE(eta=-1)  # (in the words of the other components' ranges)
    with pytest.raises(ValueError, match="holds no ContextualEnv"):
        SPaCE().setup({"env": GymEnvironment("CartPole-v1")})


def test_an_initial_size_above_the_instances_warns_and_starts_with_all(caplog):
    env = two_copies()  # 6 instances
    space = SPaCE(initial_size=10, measure="return")
    caplog.set_level(logging.WARNING, "looprl")
    space.setup({"env": env, "policy": None})  # was: 6 without a word
    assert space.size == 6
    assert caplog.messages == ["SPaCE initial_size=10 is more than the environment's 6 context "
                               "instances: it starts with all 6 (pass initial_size <= 6 to start "
                               "with fewer)"]  # (one line: was Python's warning, two)


def test_space_in_an_env_runner_plays_only_its_current_set():
    """The collector of a Ray actor (``EnvRunner``, no Ray here) over ``make("contextual")``:
    every episode, the first ones included, plays an instance of SPaCE's set at its reset,
    and the set grows as the returns stall."""
    import numpy as np

    from looprl.collector import EnvRunner
    from looprl.core import RolloutResult

    contexts = sample_contexts("CartPole-v1", 6, {"length": (0.2, 1.0)}, seed=0)
    _, env_args = ContextualEnvironment("CartPole-v1", contexts,
                                        max_episode_steps=50).remote_env()
    assert env_args["max_episode_steps"] == 50  # gym.make's arguments travel too
    space = SPaCE(initial_size=2, increment=2, eta=1e9, check_every=4, measure="return")
    runner = EnvRunner("contextual", env_args, n_envs=3, segment_length=8, meta=[space], seed=0)
    wrappers = contextual_envs(runner.envs)
    assert wrappers[0].spec.max_episode_steps == 50
    assert space.size == 2 and all(w.instance_id in space.current for w in wrappers)
    rng = np.random.default_rng(0)
    sizes = []
    while space.size < 6:
        request = runner.request(0)
        runner.step(0, RolloutResult(action=rng.integers(2, size=len(request.obs))))
        for episode in runner.pop_episodes():  # the copy reset in this step
            assert wrappers[episode.env].instance_id in space.current
            sizes.append(space.size)
    assert sizes[0] == 2 and {2, 4} <= set(sizes) and len(sizes) > 8


def test_a_resumed_env_runner_plays_the_loaded_set():
    """A Ray actor of a resumed run starts SPaCE from the checkpoint's state (``meta_state``):
    its new env copies, which hold every instance, play the loaded set only (they played all)."""
    from looprl.collector import EnvRunner

    contexts = sample_contexts("CartPole-v1", 6, {"length": (0.2, 1.0)}, seed=0)
    _, env_args = ContextualEnvironment("CartPole-v1", contexts).remote_env()
    saved = SPaCE(initial_size=2, measure="return")
    EnvRunner("contextual", env_args, n_envs=2, segment_length=None, meta=[saved], seed=0)
    saved.current.append(5)  # (the set grew in the first run)
    resumed = SPaCE(initial_size=2, measure="return")
    runner = EnvRunner("contextual", env_args, n_envs=2, segment_length=None, meta=[resumed],
                       seed=1, meta_state=[saved.state_dict()])
    assert resumed.current == [0, 1, 5]
    assert [w.instance_ids for w in contextual_envs(runner.envs)] == [[0, 1, 5]] * 2


def test_plr_and_space_together_are_one_line_at_the_start():
    """(was: ``next_instance 1 is not in the instance set`` mid-run: each picked instances)"""
    from looprl.meta import PLR
    from looprl.meta.component import MetaStack

    with pytest.raises(ValueError, match=r"^PLR and SPaCE each pick the instances of the "
                                         r"contextual environment, and a run has one "
                                         r"curriculum: attach one of them$"):
        MetaStack([PLR(), SPaCE()])
