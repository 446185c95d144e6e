"""ALL 0.9's model-constructor hyperparameters on the actor-critic and continuous presets
(``looprl.presets.constructed``): called as ALL's presets call them, their modules the very
networks trained; ALL's continuous models (``looprl.presets.continuous.models``)."""

from __future__ import annotations

import json
import pickle
from functools import partial
from typing import Any

import pytest
import torch
from tests.helpers import evaluations_until
from torch import nn

from looprl.environments import GymEnvironment
from looprl.experiments import make_experiment
from looprl.experiments.checkpoint import save_checkpoint
from looprl.experiments.experiment import seed_everything
from looprl.nn import ActorCritic, Float, Linear0, SharedActorCritic
from looprl.presets import classic_control, continuous
from looprl.presets.continuous import models

CARTPOLE = GymEnvironment("CartPole-v1")
PENDULUM = GymEnvironment("Pendulum-v1")
HERE = __name__


# ALL 0.9.1's all/presets/classic_control/models (fc_relu_features, fc_value_head, fc_policy_head)
def fc_relu_features(env: Any, hidden: int = 64) -> nn.Module:
    return nn.Sequential(Float(), nn.Linear(env.state_space.shape[0], hidden), nn.ReLU())


def fc_value_head(hidden: int = 64) -> nn.Module:
    return Linear0(hidden, 1)


def fc_policy_head(env: Any, hidden: int = 64) -> nn.Module:
    return Linear0(hidden, env.action_space.n)


def wrong_policy_head(env: Any) -> nn.Module:
    return nn.Linear(64, env.action_space.n + 1)


AC = {"feature_model_constructor": fc_relu_features, "value_model_constructor": fc_value_head,
      "policy_model_constructor": fc_policy_head}
SMALL = {"a2c": {"n_envs": 2, "n_steps": 4}, "vac": {"n_envs": 2}, "vpg": {"min_batch_size": 16},
         "ppo": {"n_envs": 2, "n_steps": 8, "minibatch_size": 8, "epochs": 1},
         "ddpg": {"replay_start_size": 8, "minibatch_size": 8},
         "td3": {"replay_start_size": 8, "minibatch_size": 8, "policy_delay": 1},
         "sac": {"replay_start_size": 8, "minibatch_size": 8}}
SMALL["continuous.ppo"] = SMALL["ppo"]


def small_q(env: Any) -> nn.Module:
    return models.fc_q(env, 32, 32)


def small_deterministic(env: Any) -> nn.Module:
    return models.fc_deterministic_policy(env, 32, 32)


def small_soft(env: Any) -> nn.Module:
    return models.fc_soft_policy(env, 32, 32)


def small_v(env: Any) -> nn.Module:
    return models.fc_v(env, 32, 32)


def small_gaussian(env: Any) -> nn.Module:
    return models.fc_policy(env, 32, 32)


CONTINUOUS = {
    "ddpg": {"q_model_constructor": small_q, "policy_model_constructor": small_deterministic},
    "td3": {"q_model_constructor": small_q, "policy_model_constructor": small_deterministic},
    "sac": {"q1_model_constructor": small_q, "q2_model_constructor": small_q,
            "policy_model_constructor": small_soft},
    "continuous.ppo": {"value_model_constructor": small_v,
                       "policy_model_constructor": small_gaussian},
}


def _builder(name: str) -> Any:
    return getattr(continuous, name.removeprefix("continuous.")) if (
        name in CONTINUOUS) else getattr(classic_control, name)


def _recording(constructors: dict[str, Any], built: list[nn.Module]) -> dict[str, Any]:
    """``constructors``, each appending the module it builds to ``built``."""
    def record(constructor: Any) -> Any:
        return lambda *args: built.append(constructor(*args)) or built[-1]
    return {name: record(constructor) for name, constructor in constructors.items()}


@pytest.mark.parametrize("name", ["a2c", "vac", "vpg", "ppo", "ddpg", "td3", "sac",
                                  "continuous.ppo"])
def test_the_constructed_modules_are_the_networks_trained(name: str, tmp_path: Any) -> None:
    given, env = (CONTINUOUS[name], PENDULUM) if name in CONTINUOUS else (AC, CARTPOLE)
    built: list[nn.Module] = []
    preset = _builder(name).hyperparameters(**SMALL[name], **_recording(given, built)).env(
        env).device("cpu").build()
    assert len(built) == len(given) + (name == "td3")  # (TD3: q_model_constructor twice)
    before = [[p.detach().clone() for p in module.parameters()] for module in built]
    experiment = make_experiment(preset, env, train_steps=200, logdir=str(tmp_path), quiet=True,
                                 verbose=False, seed=0)
    experiment.train(frames=200)
    networks = [value for value in vars(preset).values() if isinstance(value, nn.Module)]
    trained = {id(p) for network in networks for p in network.parameters()}
    for module, old in zip(built, before, strict=True):
        assert all(id(p) in trained for p in module.parameters())  # the very modules
        assert any(not torch.equal(p, q) for p, q in zip(module.parameters(), old, strict=True))
    experiment.close()


def test_all_style_ppo_solves_cartpole(tmp_path: Any) -> None:
    """ALL's classic-control models (shared ReLU features, a value and a policy head) under
    PPO: a random policy scores about 22; 195 is the classic bar (500 by 6,000 frames)."""
    seed_everything(1)
    preset = classic_control.ppo.hyperparameters(**AC).env(CARTPOLE).device("cpu").build()
    assert isinstance(preset.model, SharedActorCritic)
    experiment = make_experiment(preset, CARTPOLE, train_steps=20_000, logdir=str(tmp_path),
                                 quiet=True, verbose=False, seed=1)
    evaluations = evaluations_until(experiment, 20_000, 3000, 195)
    assert max(evaluations) >= 195, evaluations


def test_all_continuous_models_by_import_path_are_the_networks_trained(tmp_path: Any) -> None:
    """``continuous.ddpg`` over ALL's ``fc_q`` and ``fc_deterministic_policy`` by import path,
    as ``looprl run`` gives them: ALL's 400 x 300 networks, the ones its updates change (that
    DDPG learns Pendulum-v1 is ``test_learning_continuous``'s; that given modules are the
    trained ones, ``test_the_constructed_modules_are_the_networks_trained``'s)."""
    seed_everything(0)
    preset = continuous.ddpg.hyperparameters(
        q_model_constructor="looprl.presets.continuous.models:fc_q",
        policy_model_constructor="looprl.presets.continuous.models:fc_deterministic_policy",
        minibatch_size=64, replay_start_size=100,
    ).env(PENDULUM).device("cpu").build()
    assert preset.critic.model[1].out_features == 400  # (ALL's 400 x 300)
    networks = [preset.critic.model, preset.actor.model]
    before = [[p.detach().clone() for p in network.parameters()] for network in networks]
    experiment = make_experiment(preset, PENDULUM, train_steps=200, logdir=str(tmp_path),
                                 quiet=True, verbose=False, seed=0)
    experiment.train(frames=200)
    experiment.close()
    for network, old in zip(networks, before, strict=True):
        assert all(not torch.equal(p, q) for p, q in zip(network.parameters(), old, strict=True))


WRONG = [("a2c", "policy_model_constructor", wrong_policy_head, "(1, 3)"),
         ("ppo", "value_model_constructor", lambda: nn.Linear(64, 2), "(1, 2)"),
         ("vpg", "feature_model_constructor", lambda env: nn.Linear(5, 64), "(1, 4)"),
         ("ddpg", "q_model_constructor", lambda env: nn.Linear(3, 1), "(1, 4)"),
         ("sac", "policy_model_constructor", small_deterministic, "(1, 1)"),
         ("td3", "policy_model_constructor", small_soft, "(1, 2)"),
         ("continuous.ppo", "policy_model_constructor", small_deterministic, "(1, 1)"),
         # (a value of shape (B,): squeezed to 0-d for a batch of one, were run-time errors)
         ("vpg", "value_model_constructor", lambda: nn.Sequential(
             nn.Linear(64, 1), nn.Flatten(0)), "(1,)"),
         ("continuous.ppo", "value_model_constructor", lambda env: nn.Sequential(
             small_v(env), nn.Flatten(0)), "(1,)"),
         ("ddpg", "q_model_constructor", lambda env: nn.Sequential(
             small_q(env), nn.Flatten(0)), "(1,)")]


@pytest.mark.parametrize(("name", "key", "constructor", "shape"), WRONG,
                         ids=[f"{name}-{key}" for name, key, _, _ in WRONG])
def test_a_module_of_the_wrong_shape_is_one_line(name: str, key: str, constructor: Any,
                                                 shape: str) -> None:
    given = {**(CONTINUOUS[name] if name in CONTINUOUS else AC), key: constructor}
    env = PENDULUM if name in CONTINUOUS else CARTPOLE
    with pytest.raises(ValueError) as error:
        _builder(name).hyperparameters(**given).env(env).device("cpu").build()
    line = str(error.value)
    assert "\n" not in line and key in line and shape in line, line


@pytest.mark.parametrize(("name", "key", "constructor"), [
    ("a2c", "feature_model_constructor", lambda env: nn.Sequential(
        fc_relu_features(env), nn.BatchNorm1d(64))),
    ("ddpg", "policy_model_constructor", lambda env: nn.Sequential(
        small_deterministic(env), nn.BatchNorm1d(1)))])
def test_batch_norm_that_cannot_act_on_one_row_is_one_line(name: str, key: str,
                                                           constructor: Any) -> None:
    given = {**(CONTINUOUS[name] if name in CONTINUOUS else AC), key: constructor}
    env = PENDULUM if name in CONTINUOUS else CARTPOLE
    with pytest.raises(ValueError, match=rf"^{name.upper()}: the network {key}=.*BatchNorm "
                       r"in training mode .* use nn.LayerNorm or nn.GroupNorm$"):
        _builder(name).hyperparameters(**given).env(env).device("cpu").build()


def test_features_and_a_constructor_are_one_line() -> None:
    with pytest.raises(ValueError, match="feature_model_constructor builds the network that "
                       "features='mlp' would"):
        classic_control.ppo.hyperparameters(**AC, features="mlp").env(CARTPOLE).build()


@pytest.mark.parametrize("name", ["td3", "sac"])
def test_twin_critics_of_one_cached_module_are_one_line(name: str) -> None:
    """A constructor that returns the module it cached: both twins one network, the minimum
    of the two idle (was silent)."""
    cached = small_q(PENDULUM)
    given = {key: lambda env: cached for key in CONTINUOUS[name] if "q" in key.split("_")[0]}
    with pytest.raises(ValueError, match=r"same module object for both critics") as error:
        _builder(name).hyperparameters(**given).env(PENDULUM).device("cpu").build()
    assert "\n" not in str(error.value)


def test_settings_a_constructor_replaces_warn_that_they_are_idle(caplog: Any) -> None:
    """(were silent outside the value-based presets: a2c's ``hidden``, continuous ppo's
    ``log_std_init``)"""
    caplog.set_level("WARNING", "looprl.presets")
    classic_control.a2c.hyperparameters(hidden=128, policy_model_constructor=fc_policy_head).env(
        CARTPOLE).device("cpu").build()
    continuous.ppo.hyperparameters(hidden=32, log_std_init=-1.0, value_model_constructor=small_v
                                   ).env(PENDULUM).device("cpu").build()
    classic_control.rainbow.hyperparameters(
        dueling=False, model_constructor="looprl.presets.classic_control.models:fc_relu_rainbow"
    ).env(CARTPOLE).device("cpu").build()
    assert [r.getMessage() for r in caplog.records] == [
        "a2c: hidden takes effect only with policy_model_constructor=None: choose it, or drop "
        "hidden", "ppo: hidden, log_std_init take effect only with value_model_constructor=None: "
        "choose it, or drop hidden and log_std_init", "rainbow: dueling takes effect only with "
        "model_constructor=None: choose it, or drop dueling"]


def test_defaults_build_the_presets_own_networks() -> None:
    """No constructor given: the networks of ``hidden`` (ALL's names default to ``None``)."""
    for builder, env in ((classic_control.a2c, CARTPOLE), (continuous.ppo, PENDULUM)):
        preset = builder.env(env).device("cpu").build()
        assert isinstance(preset.model, ActorCritic)
        assert preset.hyperparameters["policy_model_constructor"] is None
    sac = continuous.sac.env(PENDULUM).device("cpu").build()
    assert sac.critic.q1.model[0].out_features == 256  # (hidden)
    assert "q_model_constructor" not in sac.hyperparameters


def test_missing_constructors_take_alls_defaults() -> None:
    """SAC given only its policy: ALL's ``fc_q`` (400 x 300) for both critics."""
    preset = continuous.sac.hyperparameters(policy_model_constructor=small_soft).env(
        PENDULUM).device("cpu").build()
    assert preset.critic.q1.model[1].out_features == 400
    assert preset.critic.q2.model[1].out_features == 400
    assert preset.actor.model.model[1].out_features == 32  # (the soft policy given)


def test_sac_and_ppo_halve_alls_log_variance() -> None:
    """ALL's policies output ``cat(mean, log variance)``; looprl's heads take a log std."""
    preset = continuous.ppo.hyperparameters(**CONTINUOUS["continuous.ppo"]).env(
        PENDULUM).device("cpu").build()
    policy = preset.model.actor.model
    with torch.no_grad():
        policy.log_stds.fill_(1.0)
        params = preset.model.actor(torch.zeros(1, 3))
    assert params[0, 1].item() == pytest.approx(0.5)


def test_hyperparameters_and_run_json_name_the_constructor(tmp_path: Any) -> None:
    """A ``functools.partial`` (the models module's example) by its function's import path
    (was its repr, with the function's memory address)."""
    builder = continuous.sac.hyperparameters(**{**CONTINUOUS["sac"], "q2_model_constructor":
                                                partial(models.fc_q, hidden1=32, hidden2=32)},
                                             **SMALL["sac"])
    preset = builder.env(PENDULUM).device("cpu").build()
    assert preset.hyperparameters["q1_model_constructor"] is small_q
    experiment = make_experiment(preset, PENDULUM, train_steps=10, logdir=str(tmp_path),
                                 quiet=True, verbose=False, seed=0)
    experiment.train(frames=10)
    experiment.close()
    (run_json,) = tmp_path.rglob("run.json")
    written = json.loads(run_json.read_text())["hyperparameters"]
    assert written["q1_model_constructor"] == f"{HERE}:small_q"
    assert written["policy_model_constructor"] == f"{HERE}:small_soft"
    assert written["q2_model_constructor"] == ("functools.partial(looprl.presets.continuous."
                                               "models:fc_q, hidden1=32, hidden2=32)")


def test_a_module_level_constructor_pickles_and_a_lambda_is_one_line(tmp_path: Any) -> None:
    preset = classic_control.ppo.hyperparameters(**AC, **SMALL["ppo"]).env(CARTPOLE).device(
        "cpu").build()
    copy = pickle.loads(pickle.dumps(preset))  # (as a checkpoint and Ray's workers take it)
    assert copy.hyperparameters["policy_model_constructor"] is fc_policy_head
    preset = classic_control.ppo.hyperparameters(
        **{**AC, "value_model_constructor": lambda: Linear0(64, 1)}, **SMALL["ppo"]).env(
        CARTPOLE).device("cpu").build()
    experiment = make_experiment(preset, CARTPOLE, train_steps=16, logdir=str(tmp_path),
                                 quiet=True, verbose=False, seed=0)
    experiment.train(frames=16)
    with pytest.raises(TypeError) as error:
        save_checkpoint(experiment, tmp_path / "checkpoint.pt")
    experiment.close()
    line = str(error.value)
    assert "\n" not in line and "cannot be checkpointed" in line and "lambda" in line, line


def test_looprl_run_takes_an_import_path() -> None:
    """``looprl run algorithm=continuous/sac algorithm.policy_model_constructor=pkg.mod:fn``."""
    pytest.importorskip("hydra")
    from hydra import compose, initialize

    from looprl.configs import build, register
    register()
    with initialize(version_base="1.3", config_path=None):
        cfg = compose("looprl", overrides=[
            "algorithm=continuous/sac", "env=Pendulum-v1", "frames=64", "logging.quiet=true",
            f"algorithm.policy_model_constructor={HERE}:small_soft",
            f"algorithm.q1_model_constructor={HERE}:small_q"])
    built = build(cfg)
    preset = built.builder.env(built.env).device("cpu").build()
    assert preset.hyperparameters["policy_model_constructor"] == f"{HERE}:small_soft"
    assert preset.actor.model.model[1].out_features == 32
    assert preset.critic.q1.model[1].out_features == 32
    assert preset.critic.q2.model[1].out_features == 400  # (ALL's fc_q)


def nature_features(frames: int = 4) -> nn.Module:  # ALL's atari models, smaller
    return nn.Sequential(nn.Flatten(), Float(), nn.Linear(frames * 84 * 84, 32), nn.ReLU())


def nature_value_head() -> nn.Module:
    return Linear0(32, 1)


def nature_policy_head(env: Any) -> nn.Module:
    return Linear0(32, env.action_space.n)


def test_atari_a2c_calls_the_feature_constructor_without_env() -> None:
    pytest.importorskip("ale_py")
    from looprl.environments.atari import AtariEnvironment
    from looprl.presets import atari
    env = AtariEnvironment("Breakout", device="cpu", seed=0, max_episode_frames=400)
    given = {"feature_model_constructor": nature_features,
             "value_model_constructor": nature_value_head,
             "policy_model_constructor": nature_policy_head}
    for builder in (atari.a2c, atari.ppo, atari.vac, atari.vpg):
        preset = builder.hyperparameters(**given).env(env).device("cpu").build()
        assert isinstance(preset.model, SharedActorCritic)
        assert preset.model.body[2].out_features == 32
    with pytest.raises(ValueError, match="features='cnn' would: give one of them"):
        atari.ppo.hyperparameters(**given, features="cnn").env(env).build()
