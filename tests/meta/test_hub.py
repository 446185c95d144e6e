"""The metrics dictionary and the hooks in the local experiment loops (looprl.meta.hub)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from helpers import Recorder
from looprl.core import StateArray
from looprl.environments import GymEnvironment
from looprl.experiments import make_experiment, run_experiment
from looprl.experiments.experiment import seed_everything
from looprl.meta import HPSchedule, MetaComponent, MetaStack
from looprl.presets.classic_control import dqn, ppo
from looprl.presets.continuous import sac

SMALL_DQN = dqn.hyperparameters(replay_start_size=50, update_frequency=8, gradient_steps=2,
                                minibatch_size=16, hidden=16)
SMALL_PPO = ppo.hyperparameters(n_envs=2, n_steps=16, minibatch_size=16, epochs=1, hidden=16)
SMALL_SAC = sac.hyperparameters(replay_start_size=50, minibatch_size=16, hidden=16)


class SetHyperparameter(MetaComponent):
    """Writes ``value`` to ``key`` before every step."""

    def __init__(self, key: str, value: Any):
        super().__init__()
        self.key, self.value = key, value
        self.pre_step_methods.append(lambda metrics: metrics.__setitem__(key, value))


class BonusReward(MetaComponent):
    def __init__(self, bonus: float):
        super().__init__()
        self.post_step_methods.append(self.add)
        self.bonus = bonus

    def add(self, metrics: dict[str, Any]) -> None:
        metrics["transition"]["reward"] = metrics["transition"]["reward"] + self.bonus


def _experiment(builder, env_id: str, tmp_path: Path, frames: int = 0, **kwargs):
    seed_everything(0)
    env = GymEnvironment(env_id)
    preset = builder.env(env).device("cpu").build()
    experiment = make_experiment(preset, env, logdir=str(tmp_path), quiet=True, seed=0,
                                 train_steps=max(frames, 1), **kwargs)
    if frames:
        experiment.train(frames=frames)
    return experiment


@pytest.mark.parametrize("builder", [SMALL_DQN, SMALL_PPO], ids=["dqn", "ppo"])
def test_hooks_run_in_order_and_stack(builder, tmp_path: Path) -> None:
    log: list = []
    experiment = _experiment(builder, "CartPole-v1", tmp_path, 200,
                             meta=[Recorder("a", log), Recorder("b", log)])
    calls = [(tag, hook) for tag, hook, _ in log]
    # the same class twice: each hook runs a, then b
    for (tag, hook), (next_tag, next_hook) in zip(calls[::2], calls[1::2]):
        assert (tag, next_tag, hook) == ("a", "b", next_hook)
    hooks = [hook for tag, hook in calls if tag == "a"]
    assert hooks[0] == "pre_episode"
    # post_step sees the copies that took an env step (one frame each); pre_step comes before
    # every step, those that reset copies included, and once more for the next one
    moved = sum(len(m["transition"]["reward"]) for tag, hook, m in log
                if tag == "a" and hook == "post_step")
    assert moved == experiment.frame
    assert hooks.count("pre_step") > hooks.count("post_step") > 0
    assert hooks.count("pre_update") == hooks.count("post_update") > 0
    assert hooks.count("post_episode") > 0
    # the first episode starts once; every end is followed by the next episode's start
    episodes = [h for h in hooks if h.endswith("_episode")]
    assert episodes == ["pre_episode"] + ["post_episode", "pre_episode"] * (len(episodes) // 2)
    # within a step: pre_step, (updates), post_step; updates come in pre/post pairs
    order = [h for h in hooks if h in ("pre_step", "post_step")]  # (a step that only resets
    assert "post_step post_step" not in " ".join(order)  # copies has no post_step)
    assert order[0] == order[-1] == "pre_step"
    updates = [h for h in hooks if h in ("pre_update", "post_update")]
    assert updates == ["pre_update", "post_update"] * (len(updates) // 2)


@pytest.mark.parametrize("builder", [SMALL_DQN, SMALL_PPO], ids=["dqn", "ppo"])
def test_each_hook_receives_its_documented_keys(builder, tmp_path: Path) -> None:
    log: list = []
    experiment = _experiment(builder, "CartPole-v1", tmp_path, 200, meta=[Recorder("a", log)])
    n = getattr(experiment.training_env, "n_envs", 1)
    seen = {hook: metrics for _, hook, metrics in log}
    assert {"env", "model", "step", "episode", "hp/lr", "hp/discount"} <= set(seen["pre_step"])
    assert seen["pre_step"]["state"].shape == (n, 4)
    transition = seen["post_step"]["transition"]
    assert set(transition) == {"state", "action", "reward", "next_state", "terminated",
                               "truncated", "env_step", "env_index"}
    assert transition["env_index"].tolist() == list(range(n))
    assert transition["state"].shape == transition["next_state"].shape == (n, 4)
    assert transition["reward"].shape == transition["terminated"].shape == (n,)
    assert transition["terminated"].dtype == torch.bool
    assert seen["pre_update"]["batch"] is not None
    post_update = seen["post_update"]
    assert {"losses", "td_error", "predictions", "grad_norm", "update"} <= set(post_update)
    assert post_update["losses"] and all(torch.is_tensor(v) or isinstance(v, float)
                                         for v in post_update["losses"].values())
    predictions = post_update["predictions"]
    assert set(predictions) == ({"q_values"} if n == 1 else {"values", "log_probs"})
    assert all(p.dim() == 1 and p.shape[0] > 1 for p in predictions.values())
    norms = post_update["grad_norm"]
    assert norms and all(torch.is_tensor(v) and v > 0 for v in norms.values())
    episode = seen["post_episode"]
    assert episode["ended"].shape == (n,) and episode["ended"].any()
    assert len(episode["episode_returns"]) == len(episode["episode_lengths"]) >= 1
    assert all(length >= 8 for length in episode["episode_lengths"])  # CartPole lasts >= 8


@pytest.mark.parametrize(
    ("builder", "env_id"),
    [(SMALL_DQN, "CartPole-v1"), (SMALL_PPO, "CartPole-v1"), (SMALL_SAC, "Pendulum-v1")],
    ids=["dqn", "ppo", "sac"],
)
def test_hp_lr_changes_the_optimizers_learning_rate(builder, env_id, tmp_path: Path) -> None:
    experiment = _experiment(builder, env_id, tmp_path, 120,
                             meta=[SetHyperparameter("hp/lr", 1.5e-5)])
    hub = experiment.hub
    approximations = [v for k, v in hub.hyperparameters.items() if k.startswith("hp/lr/")]
    assert approximations
    for hyperparameter in approximations:
        assert hyperparameter.get() == 1.5e-5
    # it stays applied through the updates (PPO's own linear schedule gave way)
    assert hub.metrics["update"] > 0
    assert all(h.get() == 1.5e-5 for h in approximations)


def test_hp_epsilon_changes_how_dqn_acts(tmp_path: Path) -> None:
    builder = SMALL_DQN.hyperparameters(replay_start_size=10_000)  # no training: fixed greedy
    greedy = _experiment(builder, "CartPole-v1", tmp_path, 0,
                         meta=[SetHyperparameter("hp/epsilon", 0.0)])
    random = _experiment(builder, "CartPole-v1", tmp_path, 0,
                         meta=[SetHyperparameter("hp/epsilon", 1.0)])
    actions = {}
    for name, experiment in (("greedy", greedy), ("random", random)):
        log: list = []
        experiment.hub.stack = MetaStack([*experiment.hub.stack, Recorder("r", log)])
        experiment.train(frames=300)
        taken = torch.cat([m["transition"]["action"] for _, h, m in log if h == "post_step"])
        states = torch.cat([m["transition"]["state"] for _, h, m in log if h == "post_step"])
        actions[name] = (taken, states)
    taken, states = actions["greedy"]
    q = greedy.agent.policy.q
    expected = q.no_grad(StateArray({"observation": states}, (len(states),))).argmax(-1)
    assert torch.equal(taken[1:], expected[1:])  # the first action was chosen before the hook
    taken, states = actions["random"]
    expected = random.agent.policy.q.no_grad(
        StateArray({"observation": states}, (len(states),))).argmax(-1)
    assert (taken != expected).float().mean() > 0.3  # uniform over 2 actions: ~0.5


def test_a_changed_reward_is_what_the_agent_learns_from(tmp_path: Path) -> None:
    experiment = _experiment(SMALL_DQN, "CartPole-v1", tmp_path, 100, meta=[BonusReward(100.0)])
    buffer = experiment.agent.replay_buffer
    rewards = buffer._storage["reward"][: len(buffer), 1]  # what arrived after each action
    assert torch.all(rewards == 101.0)  # CartPole's 1 plus the bonus
    assert experiment.logger.mean_return100 < 100  # logged returns stay the env's own


def test_no_component_no_hub(tmp_path: Path) -> None:
    experiment = _experiment(SMALL_DQN, "CartPole-v1", tmp_path, 60)
    assert experiment.hub is None and experiment.agent.learner.hooks is None


def test_builder_meta_and_run_experiment_meta(tmp_path: Path) -> None:
    log: list = []
    preset = SMALL_DQN.env(GymEnvironment("CartPole-v1")).meta(Recorder("preset", log)).build()
    run_experiment(preset, GymEnvironment("CartPole-v1"), 60, logdir=str(tmp_path), quiet=True,
                   test_episodes=0, meta=[Recorder("run", log)])
    tags = [tag for tag, hook, _ in log if hook == "post_step"]
    assert tags[:4] == ["preset", "run", "preset", "run"]
    with pytest.raises(TypeError, match="not a MetaComponent"):
        SMALL_DQN.meta("rnd")


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="Unknown hook 'post_stepp'.*Did you mean 'post_step'"):
        MetaComponent().methods("post_stepp")
    with pytest.raises(KeyError, match="'hp/momentum' is not a hyperparameter.*hp/lr"):
        _experiment(SMALL_DQN, "CartPole-v1", tmp_path, 20,
                    meta=[SetHyperparameter("hp/momentum", 0.9)])
    # a schedule's key, before the first update (was: none in a run too short to update)
    with pytest.raises(KeyError, match="^\"HPSchedule at pre_update: 'hp/lrr' is not a "
                                       "hyperparameter of this agent. Did you mean 'hp/lr'"):
        _experiment(SMALL_DQN, "CartPole-v1", tmp_path, 20,
                    meta=[HPSchedule("hp/lrr", "linear", 1e-3, end=1e-4, duration=10)])

    class WrongShape(MetaComponent):
        def __init__(self):
            super().__init__()
            self.post_step_methods.append(
                lambda m: m["transition"].__setitem__("reward", torch.zeros(3, 3)))

    with pytest.raises(ValueError, match=r"transition\['reward'\] as \(3, 3\).*shape \(1,\)"):
        _experiment(SMALL_DQN, "CartPole-v1", tmp_path, 20, meta=[WrongShape()])


class ReadsAMisspelledKey(MetaComponent):
    def __init__(self):
        super().__init__()
        self.post_step_methods.append(self.read)

    def read(self, metrics: dict[str, Any]) -> None:
        metrics["transition"]["nxt_state"]  # noqa: B018 -- the user's typo (next_state)


class Divides(MetaComponent):
    def __init__(self):
        super().__init__()
        self.pre_update_methods.append(lambda m: 1 / 0)


@pytest.mark.parametrize(("component", "message"), [
    (ReadsAMisspelledKey(), r"^ReadsAMisspelledKey.read at post_step raised KeyError: "
                            r"'nxt_state' \(\S*test_hub.py:\d+\)$"),
    (Divides(), r"^Divides.__init__.<locals>.<lambda> at pre_update raised ZeroDivisionError: "
                r"division by zero \(\S*test_hub.py:\d+\)$"),
], ids=["a typo", "a bug"])
def test_an_exception_in_a_components_code_names_its_method_hook_and_line(
        component, message, tmp_path: Path, capsys) -> None:
    """(was: ``looprl: error: nxt_state``, or a traceback; the original stays the cause)"""
    from looprl.cli import guarded
    from looprl.meta import MetaComponentFailure

    with pytest.raises(MetaComponentFailure, match=message) as info:
        _experiment(SMALL_PPO, "CartPole-v1", tmp_path, 300, meta=[component])
    assert isinstance(info.value.__cause__, KeyError | ZeroDivisionError)

    def run() -> int:
        raise info.value  # (as the command's run raises it)

    assert guarded(run) == 2
    assert capsys.readouterr().err == f"looprl: error: {info.value}\n"  # one line, no traceback


@pytest.mark.parametrize(("builder", "key", "value", "message"), [
    # each was taken: epsilon 2 explored silently as 1, the rest failed deep in torch
    (SMALL_DQN, "hp/epsilon", 2.0, r"hp/epsilon must be in \[0, 1\], got 2.0"),
    (SMALL_DQN, "hp/lr", "fast", "hp/lr must be >= 0, got 'fast'"),
    (SMALL_DQN, "hp/batch_size", -5, "hp/batch_size must be a whole number >= 1, got -5"),
    (SMALL_DQN.hyperparameters(exploration="stochastic"), "hp/temperature", 0.0,
     r"hp/temperature must be positive \(> 0\), got 0.0"),
    (SMALL_PPO, "hp/clip", float("nan"), "hp/clip must be >= 0, got nan"),
    (SMALL_DQN, "hp/lr", True, "hp/lr must be >= 0, got True"),  # (was: trained at lr 1)
    (SMALL_DQN, "hp/batch_size", True, "hp/batch_size must be a whole number >= 1, got True"),
])
def test_a_hyperparameter_value_the_agent_cannot_take_is_one_line(builder, key, value, message,
                                                                  tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=message) as info:
        _experiment(builder, "CartPole-v1", tmp_path, 300, meta=[SetHyperparameter(key, value)])
    assert "\n" not in str(info.value)


def test_a_refused_write_names_the_component_that_made_it(tmp_path: Path) -> None:
    """Of the components at the hook, the one that may have written the key: not looprl's
    that do not write it (was: "SetHyperparameter, RND, HPSchedule at pre_step: ...")."""
    from looprl.meta import RND
    schedule = HPSchedule("hp/epsilon", "linear", 0.5, end=0.1, duration=10, per="step")
    schedule.pre_step_methods.append(lambda metrics: metrics)  # (at the hook too)
    with pytest.raises(ValueError, match=r"^SetHyperparameter at pre_step: hp/lr must be >= 0, "
                                         r"got nan$"):
        _experiment(SMALL_DQN, "CartPole-v1", tmp_path, 300,
                    meta=[RND(), schedule, SetHyperparameter("hp/lr", float("nan"))])


class DeleteReward(MetaComponent):
    def __init__(self):
        super().__init__()
        self.post_step_methods.append(lambda m: m["transition"].pop("reward"))


def test_a_hook_that_deletes_a_transition_key_is_named_in_one_line(tmp_path: Path) -> None:
    # was: "looprl: error: reward", a KeyError naming neither the component nor the hook
    with pytest.raises(ValueError, match=r"^DeleteReward at post_step: metrics\['transition'\] "
                                         r"lost its key 'reward' \(change its values, keep its "
                                         r"keys\)$"):
        _experiment(SMALL_DQN, "CartPole-v1", tmp_path, 100, meta=[DeleteReward()])


class WrongBatch(MetaComponent):
    def __init__(self):
        super().__init__()
        self.pre_update_methods.append(lambda m: m.__setitem__("batch", m["batch"].to_dict()))


def test_a_batch_replaced_by_something_else_is_one_line(tmp_path: Path) -> None:
    # was: AttributeError: 'dict' object has no attribute ... inside the trainer
    with pytest.raises(TypeError, match=r"metrics\['batch'\] as a dict; it must stay a "
                                        "SampleBatch"):
        _experiment(SMALL_PPO, "CartPole-v1", tmp_path, 100, meta=[WrongBatch()])


class AssignReward(MetaComponent):
    """Assigns the batch's reward field anew (not in place) and notes the value losses."""

    def __init__(self):
        super().__init__()
        self.losses: list[float] = []
        self.pre_update_methods.append(self.assign)
        self.post_update_methods.append(lambda m: self.losses.append(float(m["losses"]["value"])))

    def assign(self, metrics: dict[str, Any]) -> None:
        metrics["batch"].reward = metrics["batch"].reward + 1000.0


def test_a_batch_field_assigned_by_a_hook_is_what_the_trainer_learns_from(tmp_path) -> None:
    # was: the trainer stepped on the batch as it was, and the new rewards were dropped
    spy = AssignReward()
    _experiment(SMALL_PPO, "CartPole-v1", tmp_path, 32, meta=[spy])
    assert spy.losses and spy.losses[0] > 1e4  # returns near 1000 / (1 - gamma) vs V ~ 0


class MisspelledHook(MetaComponent):
    """Mighty's style with a typo: the list was never called, and the run went on without it."""

    def __init__(self):
        super().__init__()
        self.post_stpe_methods = [lambda m: None]


class NoSuperInit(MetaComponent):
    def __init__(self):  # no super().__init__(): an AttributeError deep in the hub
        self.post_step_methods = [lambda m: None]


class NotCallable(MetaComponent):
    def __init__(self):
        super().__init__()
        self.post_step_methods.append(3)  # a TypeError at the first step


@pytest.mark.parametrize(("component", "error", "message"), [
    (MisspelledHook, ValueError,
     r"MisspelledHook.post_stpe_methods: 'post_stpe' is no hook.*Did you mean 'post_step'"),
    (NoSuperInit, TypeError, r"NoSuperInit has no pre_episode_methods: call super\(\).__init__"),
    (NotCallable, TypeError, r"NotCallable.post_step_methods holds 3, which is not callable"),
])
def test_hook_lists_the_loop_would_not_call_are_one_line(component, error, message,
                                                         tmp_path: Path) -> None:
    with pytest.raises(error, match=message) as info:
        _experiment(SMALL_DQN, "CartPole-v1", tmp_path, 20, meta=[component()])
    assert "\n" not in str(info.value)


class ClosureCount(MetaComponent):
    """Counts its steps in a lambda over ``self``: a copy's lambda is the original's."""

    def __init__(self):
        super().__init__()
        self.steps = 0
        self.post_step_methods.append(lambda m: setattr(self, "steps", self.steps + 1))


def test_a_copy_whose_hooks_act_on_the_original_is_one_line() -> None:
    """Runners, ``run_experiment`` and multi-agent runs attach copies of the components; a
    lambda copied with one still changes the original (was: silently, each ES individual's
    component counting on from the one before)."""
    import copy

    from looprl.meta import MetaStack

    MetaStack([ClosureCount()])  # the instance it was made in: fine
    with pytest.raises(TypeError, match=r"^ClosureCount.post_step_methods holds a hook of "
                                        r"another ClosureCount \(a lambda.*own methods"):
        MetaStack([copy.deepcopy(ClosureCount())])


@pytest.mark.parametrize(
    ("builder", "env_id"),
    [(SMALL_DQN.hyperparameters(buffer="uniform"), "CartPole-v1"), (SMALL_SAC, "Pendulum-v1")],
    ids=["dqn-uniform", "sac"],
)
def test_value_methods_fill_td_error_at_every_update(builder, env_id, tmp_path: Path) -> None:
    experiment = _experiment(builder, env_id, tmp_path, 120, meta=[BonusReward(0.0)])
    metrics = experiment.hub.metrics
    assert metrics["update"] > 0
    td_error, q_values = metrics["td_error"], metrics["predictions"]["q_values"]
    assert td_error.shape == q_values.shape == (16,)  # one per sample of the minibatch
    assert torch.isfinite(td_error).all() and not td_error.requires_grad


class _Bonus(MetaComponent):
    def __init__(self, scale: float = 1.0, network: Any = None):
        super().__init__()
        self.scale, self.network = scale, network


def test_repr_shows_the_arguments_given_so_run_json_tells_a_sweeps_runs_apart() -> None:
    """(Was: ``RND(internal_reward_weight=0.1, normalize=False, network='auto')`` for every
    ``meta.rnd.lr``, and ``_Bonus()`` whatever its ``scale``.)"""
    from looprl.meta import RND

    assert repr(_Bonus(scale=0.1)) == "_Bonus(scale=0.1)" and repr(_Bonus()) == "_Bonus()"
    assert repr(_Bonus(network=torch.nn.Linear(1, 1))) == "_Bonus()"  # (plain values only)
    assert repr(RND(lr=1e-4)) == ("RND(internal_reward_weight=0.1, normalize=False, "
                                  "network='auto', lr=0.0001)")
