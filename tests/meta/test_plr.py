"""PLR: sampling, scores against hand-computed values, and a run on a contextual CartPole."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from looprl.environments import GymEnvironment, make
from looprl.environments.contextual import (
    ContextualEnvironment,
    contextual_envs,
    sample_contexts,
)
from looprl.experiments import run_experiment
from looprl.experiments.experiment import seed_everything
from looprl.meta import COMPONENTS, PLR, MetaComponent
from looprl.meta.plr import episode_score
from looprl.presets.classic_control import ppo

SMALL_PPO = ppo.hyperparameters(n_envs=2, n_steps=16, minibatch_size=16, epochs=1, hidden=16)


def seen_plr(scores, **kwargs) -> PLR:
    plr = PLR(levels=range(len(scores)), **kwargs)
    for level, score in enumerate(scores):
        plr.update_score(level, score)
    return plr


def test_rank_prioritization_matches_hand_computed_distribution():
    plr = seen_plr([0.1, 0.5, 0.3], beta=0.5, rho=0.0)
    # ranks: level 1 -> 1, level 2 -> 2, level 0 -> 3; h^(1/beta) = (1/rank)^2
    expected = np.array([1 / 9, 1.0, 1 / 4]) / (1 + 1 / 4 + 1 / 9)
    np.testing.assert_allclose(plr.replay_distribution(), expected)
    assert COMPONENTS["plr"] is PLR


def test_staleness_raises_old_levels_probability():
    plr = seen_plr([0.1, 0.5, 0.3], beta=0.5, rho=0.5)
    # c = 3; levels last played at episodes 1, 2, 3: staleness 2, 1, 0
    np.testing.assert_allclose(plr.staleness_weights(), [2 / 3, 1 / 3, 0.0])
    before = plr.replay_distribution()[0]
    for _ in range(4):
        plr.update_score(1, 0.5)
        plr.update_score(2, 0.3)
    assert plr.replay_distribution()[0] > before  # level 0 grew staler
    # c = 11; last played at 1, 10, 11
    np.testing.assert_allclose(plr.staleness_weights(), [10 / 11, 1 / 11, 0.0])


def test_high_score_levels_are_sampled_more_often():
    plr = seen_plr([0.0, 4.0, 1.0, 3.0, 2.0], beta=1.0, rho=0.0, seed=0)
    counts = np.zeros(5)
    for _ in range(2000):
        level, replayed = plr.sample_level()
        assert replayed  # every level is seen: always replay
        counts[level] += 1
    assert list(np.argsort(-counts)) == [1, 3, 4, 2, 0]
    np.testing.assert_allclose(counts / 2000, plr.replay_distribution(), atol=0.03)


@pytest.mark.parametrize("level, score, kind, message", [
    (7, 1.0, ValueError, "PLR has no level 7: its levels are [0, 1, 2]"),
    ("a", 1.0, ValueError, "PLR has no level 'a'"),
    (1, math.nan, FloatingPointError, "PLR's score of level 1 is nan, no finite number"),
])
def test_update_score_names_an_unknown_level_or_a_score_that_is_no_number(level, score, kind,
                                                                          message):
    """An unknown level was ``7 is not in list``; a NaN score was taken (its level ranked
    last for good under an EMA); a run reports a ``FloatingPointError`` as diverging."""
    plr = PLR(levels=range(3))
    with pytest.raises(kind) as error:
        plr.update_score(level, score)
    assert message in str(error.value) and "\n" not in str(error.value)
    assert not plr.seen.any() and plr.episodes == 0


def test_unseen_levels_are_played_with_probability_one_minus_replay_prob():
    plr = PLR(levels=range(10), replay_prob=0.3, seed=1)
    plr.update_score(0, 1.0)
    draws = [plr.sample_level() for _ in range(2000)]
    replays = np.mean([replayed for _, replayed in draws])
    assert replays == pytest.approx(0.3, abs=0.04)
    assert all(level == 0 for level, replayed in draws if replayed)
    assert {level for level, replayed in draws if not replayed} == set(range(1, 10))
    assert PLR(levels=range(3), seed=0).sample_level()[1] is False  # nothing seen yet


def test_scores_against_hand_computed_values():
    logits = torch.tensor([[0.0, 0.0], [math.log(3.0), 0.0]])  # p = (.5, .5), (.75, .25)
    entropy = (math.log(2) - (0.75 * math.log(0.75) + 0.25 * math.log(0.25))) / 2
    rewards, values = torch.tensor([1.0, 2.0]), torch.tensor([0.5, 1.0])
    assert episode_score("policy_entropy", rewards, logits) == pytest.approx(entropy)
    assert episode_score("least_confidence", rewards, logits) == pytest.approx((0.5 + 0.25) / 2)
    # margins p1 - p2: 0 and 0.5; the score is 1 - margin
    assert episode_score("min_margin", rewards, logits) == pytest.approx((1.0 + 0.5) / 2)
    g, lam = 0.9, 0.5
    # terminated: V(s_2) = 0. deltas: 1 + .9 * 1 - .5 = 1.4; 2 + 0 - 1 = 1
    kwargs = {"logits": logits, "values": values, "gamma": g, "lam": lam}
    assert episode_score("one_step_td_error", rewards, **kwargs) == pytest.approx(1.2)
    advantages = [1.4 + g * lam * 1.0, 1.0]
    assert episode_score("gae", rewards, **kwargs) == pytest.approx(np.mean(advantages))
    # truncated with V(s_2) = 4: deltas 1.4 and 2 + 3.6 - 1 = 4.6
    negative = torch.tensor([-3.0, 0.0])
    deltas = [-3 + 0.9 - 0.5, 0 + 0.9 * 4.0 - 1.0]
    adv = [deltas[0] + g * lam * deltas[1], deltas[1]]
    assert episode_score("value_l1", negative, last_value=4.0, **kwargs) == pytest.approx(
        np.mean(np.abs(adv)))
    assert episode_score("gae", negative, last_value=4.0, **kwargs) == pytest.approx(
        np.mean(adv))
    assert episode_score("one_step_td_error", negative, last_value=4.0,
                         **kwargs) == pytest.approx(np.mean(np.abs(deltas)))
    assert 0 <= episode_score("random", rewards, rng=np.random.default_rng(0)) < 1


def test_policies_give_logits_and_values_and_others_say_they_cannot():
    """PLR and SPaCE read ``Policy.logits_and_values``: a Q policy gives ``Q`` as logits and
    ``max_a Q`` as values, an actor-critic policy its logits and critic; a continuous
    deterministic policy has none (one line)."""
    from looprl.meta.plr import logits_and_values
    from looprl.presets.classic_control import dqn
    from looprl.presets.continuous import ddpg

    torch.manual_seed(0)
    obs = torch.randn(3, 4)
    env = GymEnvironment("CartPole-v1")
    q_policy = dqn.env(env).device("cpu").build().policy()
    logits, values = q_policy.logits_and_values(obs)
    q = q_policy.q.model.model(obs)
    torch.testing.assert_close(logits, q.detach())
    torch.testing.assert_close(values, q.detach().max(dim=-1).values)
    ac_policy = ppo.env(env).device("cpu").build().policy()
    logits, values = ac_policy.logits_and_values(obs.numpy())
    params, value = ac_policy.module(obs)[:2]
    torch.testing.assert_close(logits, params.detach())
    torch.testing.assert_close(values, value.detach())
    continuous = ddpg.env(GymEnvironment("Pendulum-v1")).device("cpu").build().policy()
    with pytest.raises(ValueError, match="gives no action logits and values: PLR and SPaCE"):
        logits_and_values(continuous, torch.zeros(1, 3))


def test_bad_inputs():
    with pytest.raises(ValueError, match="Unknown PLR scoring strategy 'td'. Valid: random, "
                                         "policy_entropy.*value_l1"):
        PLR(strategy="td")
    # were: NaN or exploding scores, and a repeated level that stayed unseen for ever
    for kwargs, message in (({"gamma": float("nan")}, "gamma must be finite and in"),
                            ({"lam": 2.0}, r"lam must be in \[0, 1\], got 2.0")):
        with pytest.raises(ValueError, match=rf"^PLR's {message}"):
            PLR(**kwargs)
    # (were: one line listing all five values; beta=inf drew levels uniformly)
    for name, value, valid in (("replay_prob", -0.1, r"in \[0, 1\]"),
                               ("rho", np.float32(1.5), r"in \[0, 1\]"),
                               ("score_ema", 0, r"in \(0, 1\]"),
                               ("beta", float("inf"), r"finite and positive \(> 0\)")):
        with pytest.raises(ValueError, match=rf"^PLR's {name} must be {valid}, got "):
            PLR(**{name: value})
    with pytest.raises(ValueError, match=r"PLR levels must be distinct, got \[1, 1, 2\]"):
        PLR(levels=[1, 1, 2])
    # were: level 1.5 played as level 1, and int()'s, NumPy's or a comparison's messages
    for levels in ([0, 1.5], 3, "01"):
        with pytest.raises(ValueError, match=r"^PLR levels are instance ids \(a list of "):
            PLR(levels=levels)
    for min_seen in (-1, 1.5, "a"):
        with pytest.raises(ValueError, match="^PLR's min_seen must be a whole number >= 0"):
            PLR(min_seen=min_seen)
    with pytest.raises(ValueError, match=r"^PLR's replay_prob must be in \[0, 1\], got 'half'"):
        PLR(replay_prob="half")
    # (was NumPy's "truth value of an array ... is ambiguous", torch's the same of a tensor)
    for beta in (np.array([0.1, 0.2]), torch.tensor([0.1, 0.2])):
        with pytest.raises(ValueError,
                           match=r"^PLR's beta must be positive \(> 0\), got (array|tensor)\("):
            PLR(beta=beta)
    for beta, finite in ((0, ""), (-0.5, ""), (math.nan, "finite and "), (math.inf, "finite and ")):
        with pytest.raises(ValueError, match=rf"^PLR's beta must be {finite}positive \(> 0\), "
                                             rf"got {beta}$"):
            PLR(beta=beta)
    assert PLR(levels=np.arange(3), min_seen=np.int64(2)).levels == [0, 1, 2]
    plr = PLR()
    with pytest.raises(ValueError, match="holds no ContextualEnv"):
        plr.setup({"env": GymEnvironment("CartPole-v1")})
    with pytest.raises(ValueError, match=r"^the env copies \(GymnasiumEnvironment\) hold no "
                                         r"ContextualEnv; make them with make\('contextual'"):
        plr.setup({"env": [make("CartPole-v1")]})  # a Ray actor's copies of a plain env
    no = torch.zeros(1, dtype=torch.bool)
    transition = {"state": torch.zeros(1, 4), "reward": torch.zeros(1), "terminated": no,
                  "next_state": torch.zeros(1, 4), "env_index": torch.zeros(1, dtype=torch.long)}
    with pytest.raises(ValueError, match=r"^PLR\(strategy='value_l1'\) scores with the policy's "
                                         r"outputs but metrics\['policy'\] is None"):
        plr.record({"transition": transition, "policy": None})
    PLR(strategy="random").record({"transition": transition, "policy": None})
    # was: a Gaussian policy's cat(mean, log_std) scored as logits, without a word
    from looprl.presets.continuous import ppo as continuous_ppo
    gaussian = continuous_ppo.env(ContextualEnvironment("Pendulum-v1")).hyperparameters(
        hidden=8).device("cpu").build().agent().unwrapped.policy
    pendulum = {**transition, "state": torch.zeros(1, 3), "next_state": torch.zeros(1, 3)}
    with pytest.raises(ValueError, match=r"^PLR\(strategy='policy_entropy'\) scores with "
                                         "action probabilities.*continuous actions"):
        PLR(strategy="policy_entropy").record({"transition": pendulum, "policy": gaussian})
    PLR(strategy="value_l1").record({"transition": pendulum, "policy": gaussian})


class Follow(MetaComponent):
    """Runs after PLR: the level PLR set for each ended copy, and the instance that copy
    actually played after its reset step."""

    def __init__(self):
        super().__init__()
        self.chosen: list[list[int]] = [[], []]
        self.played: list[list[int]] = [[], []]
        self.pending = [False, False]
        self.post_step_methods.append(self.follow)
        self.post_episode_methods.append(self.note)

    def note(self, metrics):
        for i, wrapper in enumerate(contextual_envs(metrics["env"])):
            if bool(metrics["ended"][i]):
                self.chosen[i].append(wrapper.next_instance)
                self.pending[i] = True
        return metrics

    def follow(self, metrics):  # the reset step of a copy that ended
        for i, wrapper in enumerate(contextual_envs(metrics["env"])):
            if self.pending[i]:
                self.played[i].append(wrapper.instance_id)
                self.pending[i] = False
        return metrics


def test_plr_on_ppo_replays_levels_it_chose(tmp_path: Path) -> None:
    seed_everything(0)
    contexts = sample_contexts("CartPole-v1", 6, {"length": (0.2, 1.0)}, seed=0)
    env = ContextualEnvironment("CartPole-v1", contexts, seed=0)
    plr = PLR(strategy="value_l1", replay_prob=0.5, seed=0)
    follow = Follow()
    run_experiment(SMALL_PPO, env, 600, logdir=str(tmp_path), quiet=True, test_episodes=0,
                   seed=0, meta=[plr, follow])
    assert len(plr.choices) >= 10
    assert plr.seen.sum() >= 3 and np.isfinite(plr.scores).all()
    assert (plr.scores[plr.seen] > 0).all()  # value_l1 of real episodes is positive
    assert any(replayed for *_, replayed in plr.choices)
    assert any(not replayed for *_, replayed in plr.choices)
    for i in range(2):
        mine = [level for copy, level, _ in plr.choices if copy == i]
        assert mine and follow.chosen[i] == mine  # PLR set next_instance of the ended copy
        # ... and the copy played it: the last choice may not be reached within the budget
        assert follow.played[i] == mine[: len(follow.played[i])]
        assert len(follow.played[i]) >= len(mine) - 1
    [table] = tmp_path.glob("*/*/log.csv")  # what PLR logged (log/plr/*)
    rows = [line.split(",") for line in table.read_text().splitlines()[1:]]
    logged = {name: [float(value) for _, n, value in rows if n == name]
              for name in ("plr/mean_score", "plr/seen", "plr/replay_share")}
    assert logged["plr/seen"][-1] == plr.seen.sum() and logged["plr/mean_score"][-1] > 0
    shares = logged["plr/replay_share"]
    assert all(0 <= share <= 1 for share in shares) and 0 < max(shares)


def test_plr_on_dqn_scores_with_the_q_values(tmp_path: Path) -> None:
    """A single-env DQN run: PLR scores its episodes with ``max_a Q`` as values."""
    from looprl.presets.classic_control import dqn

    seed_everything(0)
    contexts = sample_contexts("CartPole-v1", 4, {"length": (0.2, 1.0)}, seed=0)
    env = ContextualEnvironment("CartPole-v1", contexts, seed=0)
    plr = PLR(strategy="one_step_td_error", replay_prob=0.5, seed=0)
    preset = dqn.hyperparameters(replay_start_size=50, minibatch_size=16)
    run_experiment(preset, env, 400, logdir=str(tmp_path), quiet=True, test_episodes=0,
                   seed=0, meta=[plr])
    assert len(plr.choices) >= 5 and plr.seen.sum() >= 2
    assert np.isfinite(plr.scores).all() and (plr.scores[plr.seen] > 0).all()


class ScoreLog(PLR):
    """PLR that keeps every episode score it records."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.log: list[float] = []

    def update_score(self, level: int, score: float) -> None:
        self.log.append(score)
        super().update_score(level, score)


def test_plr_in_an_env_runner_plays_the_levels_it_chose_and_scores_each_copys_episodes():
    """The collector of a Ray actor (``EnvRunner``, no Ray here) over ``make("contextual")``:
    PLR's choice for a copy that ended is the level of that copy's next episode, and each
    episode is scored on its own rows (GAE with V = 0 depends only on the length)."""
    from types import SimpleNamespace

    from looprl.collector import EnvRunner
    from looprl.core import RolloutResult

    def model(obs):  # logits and values of zeros: the GAE score is a function of length
        return torch.zeros(len(obs), 2), torch.zeros(len(obs))

    policy = SimpleNamespace(logits_and_values=lambda obs: model(torch.as_tensor(obs)),
                             hyperparameters=dict, approximations=dict,
                             exploration=None)  # declares none
    contexts = sample_contexts("CartPole-v1", 6, {"length": (0.2, 1.0)}, seed=0)
    _, env_args = ContextualEnvironment("CartPole-v1", contexts).remote_env()
    plr = ScoreLog(strategy="gae", gamma=0.9, lam=0.5, replay_prob=0.5, seed=0)
    runner = EnvRunner("contextual", env_args, n_envs=3, segment_length=8, meta=[plr],
                       policy=policy, seed=0)
    wrappers = contextual_envs(runner.envs)
    played: list[list[int]] = [[], [], []]  # each copy's level after each of its resets
    rng = np.random.default_rng(0)
    lengths, ended = [], []
    while len(plr.choices) < 12:
        request = runner.request(0)
        runner.step(0, RolloutResult(action=rng.integers(2, size=len(request.obs))))
        for i in ended:  # the copies whose episode ended at the last step reset in this one
            played[i].append(wrappers[i].instance_id)
        episodes = runner.pop_episodes()  # reported at the step that ends them
        ended = [episode.env for episode in episodes]
        lengths += [episode.length for episode in episodes]
    for i in range(3):
        mine = [level for copy, level, _ in plr.choices if copy == i]
        assert mine and played[i] == mine[: len(played[i])]
        assert len(played[i]) >= len(mine) - 1
    reported = runner.meta_scalars()  # what the actor reports: the same log/* keys
    assert reported["log/plr/seen"] == plr.seen.sum() and runner.meta_scalars() == {}
    c = 0.9 * 0.5  # GAE of an all-ones episode of length L with V = 0, mean over steps
    expected = [np.mean([sum(c ** k for k in range(n - t)) for t in range(n)]) for n in lengths]
    assert sorted(plr.log[: len(lengths)]) == pytest.approx(sorted(expected))


def test_plr_given_levels_plays_only_them_from_the_first_episode():
    """``levels``: a subset of the instance set (was: ``ValueError: 2 is not in list`` at the
    first episode the environment drew outside it); levels it does not have are one line."""
    from looprl.collector import EnvRunner
    from looprl.core import RolloutResult

    contexts = sample_contexts("CartPole-v1", 6, {"length": (0.2, 1.0)}, seed=0)
    _, env_args = ContextualEnvironment("CartPole-v1", contexts).remote_env()
    plr = PLR(strategy="random", levels=[1, 4], seed=0)
    runner = EnvRunner("contextual", env_args, n_envs=3, segment_length=None, meta=[plr], seed=0)
    wrappers = contextual_envs(runner.envs)
    rng = np.random.default_rng(0)
    played = {w.instance_id for w in wrappers}
    while len(plr.choices) < 12:
        request = runner.request(0)
        runner.step(0, RolloutResult(action=rng.integers(2, size=len(request.obs))))
        played |= {w.instance_id for w in wrappers}
    assert played == {1, 4} and plr.seen.all()
    with pytest.raises(ValueError, match=r"PLR levels \[9\] are not instances of the env"):
        EnvRunner("contextual", env_args, n_envs=1, segment_length=None,
                  meta=[PLR(strategy="random", levels=[1, 9])], seed=0)


def test_plr_bootstraps_truncated_episodes_in_an_env_runner():
    """Episodes cut by a 5-step time limit bootstrap from ``V(s_T)``: with ``V = 1`` every
    TD error is ``r + gamma - 1 = gamma`` (0 at the last step without the bootstrap)."""
    from types import SimpleNamespace

    from looprl.collector import EnvRunner
    from looprl.core import RolloutResult

    def model(obs):
        return torch.zeros(len(obs), 2), torch.ones(len(obs))

    policy = SimpleNamespace(logits_and_values=lambda obs: model(torch.as_tensor(obs)),
                             hyperparameters=dict, approximations=dict,
                             exploration=None)  # declares none
    plr = ScoreLog(strategy="one_step_td_error", gamma=0.9, seed=0)
    runner = EnvRunner("contextual", {"env_id": "CartPole-v1", "max_episode_steps": 5},
                       n_envs=2, segment_length=8, meta=[plr], policy=policy, seed=0)
    while len(plr.log) < 4:
        request = runner.request(0)
        runner.step(0, RolloutResult(action=np.zeros(len(request.obs), dtype=np.int64)))
    assert plr.log == pytest.approx([0.9] * len(plr.log))


class StepCounts(PLR):
    """PLR that keeps, for each episode it scores, its steps and the episode's length."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.counts: list[tuple[int, int]] = []

    def _score(self, i, steps, metrics):
        ended = np.flatnonzero(np.asarray(torch.as_tensor(metrics["ended"]).cpu()).reshape(-1))
        length = metrics["episode_lengths"][int(np.flatnonzero(ended == i)[0])]
        self.counts.append((len(steps), int(length)))
        return super()._score(i, steps, metrics)


@pytest.mark.parametrize("family", ["ppo", "dqn"])
def test_plr_scores_every_step_of_every_episode(tmp_path: Path, family: str) -> None:
    """A copy's next episode starts at the step after its reset (the reset is no step of an
    episode): PLR scores each episode over all of its steps, in a vector environment as in
    one environment."""
    from looprl.presets.classic_control import dqn

    seed_everything(0)
    contexts = sample_contexts("CartPole-v1", 4, {"length": (0.2, 1.0)}, seed=0)
    env = ContextualEnvironment("CartPole-v1", contexts, seed=0)
    plr = StepCounts(strategy="value_l1" if family == "ppo" else "one_step_td_error", seed=0)
    preset = SMALL_PPO if family == "ppo" else dqn.hyperparameters(replay_start_size=50)
    run_experiment(preset, env, 400, logdir=str(tmp_path), quiet=True, test_episodes=0,
                   seed=0, meta=[plr])
    assert len(plr.counts) >= 4
    assert all(steps == length for steps, length in plr.counts), plr.counts


def test_plr_draws_from_the_runs_seed_unless_given_its_own() -> None:
    """A seeded run (its collector: ``seed_run``) makes PLR's level draws repeat; a PLR given
    a ``seed`` keeps it."""
    from looprl.meta.hub import MetaHub, Parts, StreamHooks

    def draws(plr: PLR, run_seed: int) -> list[int]:
        StreamHooks([MetaHub([plr], Parts(None), None)]).seed_run(run_seed)
        plr.set_levels(range(50))
        return [plr.sample_level()[0] for _ in range(20)]

    assert draws(PLR(), 3) == draws(PLR(), 3) != draws(PLR(), 4)
    assert draws(PLR(seed=7), 3) == draws(PLR(seed=7), 4)


def test_plr_keeps_only_its_latest_choices():
    """``choices`` is bounded (was: one entry per episode for the whole run, a leak)."""
    from looprl.meta.plr import KEPT_CHOICES

    env = ContextualEnvironment("CartPole-v1", sample_contexts("CartPole-v1", 3, {}, seed=0))
    env.reset()
    plr = PLR(strategy="random", seed=0)
    metrics = {"env": env, "ended": torch.ones(1, dtype=torch.bool)}
    for _ in range(KEPT_CHOICES + 5):
        plr.score_and_choose(metrics)
    assert len(plr.choices) == KEPT_CHOICES and plr.episodes == KEPT_CHOICES + 5
    assert plr.choices[-1][1] == contextual_envs(env)[0].next_instance


def test_the_random_strategy_picks_levels_uniformly():
    """``random`` is domain randomization, as in the paper's code and Mighty (was: random
    scores, rank-prioritized: one level took nearly every replay)."""
    plr = PLR(strategy="random", levels=list(range(4)), seed=0)
    for level in range(4):
        plr.update_score(level, episode_score("random", torch.zeros(1), rng=plr.rng))
    counts = np.bincount([plr.sample_level()[0] for _ in range(4000)], minlength=4)
    assert counts.min() > 900, counts
