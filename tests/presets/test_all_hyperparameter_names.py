"""ALL 0.9's preset hyperparameter names on looprl's presets (``looprl.presets.all_names``):
each name of ALL's ``default_hyperparameters`` sets looprl's value, or is one line."""

from __future__ import annotations

import re
from typing import Any

import pytest

from looprl.environments import GymEnvironment
from looprl.presets import (
    PresetBuilder,
    UnknownHyperparameterError,
    atari,
    classic_control,
    continuous,
)
from looprl.presets.all_names import ALL_NAMES, Converted

M = None  # a model constructor (ALL's fc_relu_q, nature_dqn, ...): every preset takes it
# (None: its own network)
_DQN = {"discount_factor": 0.99, "lr": 1e-3, "minibatch_size": 64, "update_frequency": 1,
        "target_update_frequency": 100, "replay_start_size": 1000, "replay_buffer_size": 10000,
        "initial_exploration": 1.0, "final_exploration": 0.0, "final_exploration_step": 10000,
        "test_exploration": 0.001, "model_constructor": M}
_VQN = {"discount_factor": 0.99, "lr": 1e-2, "eps": 1.5e-4, "initial_exploration": 1.0,
        "final_exploration": 0.0, "final_exploration_step": 10000, "test_exploration": 0.001,
        "n_envs": 8, "model_constructor": M}
_AC_MODELS = {"feature_model_constructor": M, "value_model_constructor": M,
              "policy_model_constructor": M}
_VAC = {"discount_factor": 0.99, "lr_v": 5e-4, "lr_pi": 1e-4, "eps": 1.5e-4, "clip_grad": 0.5,
        "value_loss_scaling": 0.25, "n_envs": 16, **_AC_MODELS}
_PPO = {"discount_factor": 0.99, "lr": 1e-3, "eps": 1.5e-4, "clip_grad": 0.1,
        "entropy_loss_scaling": 0.001, "value_loss_scaling": 0.5, "clip_initial": 0.1,
        "clip_final": 0.01, "epochs": 4, "minibatches": 4, "n_envs": 8, "n_steps": 8,
        "lam": 0.95, **_AC_MODELS}
_OFF = {"discount_factor": 0.99, "lr_q": 1e-3, "lr_pi": 1e-3, "minibatch_size": 256,
        "update_frequency": 1, "polyak_rate": 0.005, "replay_start_size": 5000,
        "replay_buffer_size": 1e6}  # (ALL's float: a whole one is taken for an int)
# The names (and values) of ALL 0.9.1's default_hyperparameters, copied from
# all/presets/{classic_control,atari,continuous}/<preset>.py (the presets looprl has); the
# classic-control ones stand for the Atari ones where those have the same names.
ALL_DEFAULTS: dict[str, dict[str, Any]] = {
    "dqn": _DQN, "ddqn": {**_DQN, "alpha": 0.2, "beta": 0.6},
    "c51": {**_DQN, "atoms": 101, "v_min": -100, "v_max": 100},
    "rainbow": {**{k: v for k, v in _DQN.items() if k != "final_exploration_step"},
                "eps": 1.5e-4, "alpha": 0.5, "beta": 0.5, "n_steps": 5, "atoms": 101,
                "v_min": -101, "v_max": 101, "sigma": 0.5},
    "vqn": _VQN, "vsarsa": _VQN,
    "a2c": {"discount_factor": 0.99, "lr": 3e-3, "eps": 1e-3, "clip_grad": 0.1,
            "entropy_loss_scaling": 0.001, "value_loss_scaling": 0.5, "n_envs": 4, "n_steps": 32,
            **_AC_MODELS},
    "vac": _VAC,
    "vpg": {**{k: v for k, v in _VAC.items() if k != "n_envs"}, "min_batch_size": 500},
    "ppo": _PPO,
}
CONTINUOUS_DEFAULTS: dict[str, dict[str, Any]] = {
    "ddpg": {**_OFF, "noise": 0.1, "q_model_constructor": M, "policy_model_constructor": M},
    "ppo": {**{k: v for k, v in _PPO.items() if k != "feature_model_constructor"},
            "n_envs": 32, "n_steps": 128, "epochs": 20, "clip_initial": 0.2},
    "sac": {**_OFF, "temperature_initial": 1.0, "lr_temperature_scaling": 3e-5,
            "entropy_backups": True, "entropy_target_scaling": 1.0, "q1_model_constructor": M,
            "q2_model_constructor": M, "policy_model_constructor": M},
}
PRESETS = [(family, name, names) for family, table in (
    (classic_control, ALL_DEFAULTS), (atari, ALL_DEFAULTS), (continuous, CONTINUOUS_DEFAULTS))
    for name, names in table.items()]
IDS = [f"{family.__name__.split('.')[-1]}.{name}" for family, name, _ in PRESETS]

RENAMES = {"lr_q": "lr_critic", "lr_pi": "lr_actor", "entropy_loss_scaling": "entropy_coef",
           "value_loss_scaling": "value_coef", "clip_initial": "clip",
           "temperature_initial": "alpha"}
REFUSED = {"lr_temperature_scaling": "lr_temperature"}  # -> the looprl key the line names


def _one_line(error: pytest.ExceptionInfo[BaseException]) -> str:
    text = str(error.value)
    assert "\n" not in text and text
    return text


def _check(builder: PresetBuilder, name: str, value: Any) -> None:
    """``name=value`` sets looprl's value (or is one line that points to looprl's keys)."""
    own = builder.default_hyperparameters
    if (name.endswith("model_constructor") and name not in own) or name in REFUSED:
        with pytest.raises(KeyError) as error:
            builder.hyperparameters(**{name: value})
        line = _one_line(error)
        assert name in line and "ALL's" in line
        use = (REFUSED[name],) if name in REFUSED else ("hidden", "features")
        assert all(key in line for key in use if key in own)
        return
    if name == "clip_final":  # ALL's final clip range: looprl anneals to 0 or keeps clip
        with pytest.raises(ValueError) as error:
            builder.hyperparameters(clip_final=value)
        assert "linear_clip" in _one_line(error)
        return
    got = builder.hyperparameters(**{name: value}).hyperparameter_defaults
    if name in own:
        assert got[name] == value
    elif name in RENAMES:
        assert got[RENAMES[name]] == value
        assert name not in got
    elif name == "minibatches":
        assert got["minibatch_size"] == own["n_envs"] * own["n_steps"] // value
    elif name == "entropy_target_scaling":  # 1: -action dimensions, looprl's None
        assert got["target_entropy"] is None
    elif name == "entropy_backups":  # True: what looprl's SAC does
        assert got == builder.hyperparameter_defaults
    else:
        raise AssertionError(f"no expectation for {name}")


@pytest.mark.parametrize(("family", "name", "names"), PRESETS, ids=IDS)
def test_every_all_name_is_accepted_or_one_line(family: Any, name: str,
                                                names: dict[str, Any]) -> None:
    builder = getattr(family, name)
    for key, value in names.items():
        _check(builder, key, value)


@pytest.mark.parametrize(("family", "name", "names"), PRESETS, ids=IDS)
def test_the_table_covers_alls_names(family: Any, name: str, names: dict[str, Any]) -> None:
    """Every ALL name the preset lacks is in the table, and every looprl key the table
    sets is the preset's."""
    builder = getattr(family, name)
    table = ALL_NAMES[f"{family.__name__.split('.')[-1]}.{name}"]
    assert set(names) - set(builder.default_hyperparameters) <= set(table)
    for entry in table.values():
        keys = (entry,) if isinstance(entry, str) else getattr(entry, "keys", ())
        reads = entry.reads if isinstance(entry, Converted) else ()
        assert set(keys) | set(reads) <= set(builder.default_hyperparameters)


def test_all_names_reach_the_built_agents() -> None:
    cartpole = GymEnvironment("CartPole-v1")
    preset = classic_control.ppo.hyperparameters(
        n_envs=4, n_steps=16, minibatches=2, entropy_loss_scaling=0.02, value_loss_scaling=0.3,
        clip_initial=0.15, clip_final=0.0).device("cpu").env(cartpole).build()
    assert {k: preset.hyperparameters[k] for k in (
        "minibatch_size", "entropy_coef", "value_coef", "clip", "linear_clip")} == {
        "minibatch_size": 32, "entropy_coef": 0.02, "value_coef": 0.3, "clip": 0.15,
        "linear_clip": True}
    assert not {"minibatches", "clip_final", "entropy_loss_scaling"} & set(preset.hyperparameters)
    trainer = preset.trainer(preset.policy())
    assert (trainer.minibatch_size, trainer.entropy_coef, trainer.value_coef) == (32, 0.02, 0.3)

    a2c = classic_control.a2c.hyperparameters(entropy_loss_scaling=0.005).env(cartpole).build()
    assert a2c.trainer(a2c.policy()).entropy_coef == 0.005

    pendulum = GymEnvironment("Pendulum-v1")
    ddpg = continuous.ddpg.hyperparameters(lr_q=2e-3, lr_pi=3e-4).device("cpu").env(pendulum)
    ddpg = ddpg.build()
    assert (ddpg.hyperparameters["lr_critic"], ddpg.hyperparameters["lr_actor"]) == (2e-3, 3e-4)
    policy = ddpg.policy()
    assert policy.actor.optimizer.param_groups[0]["lr"] == 3e-4
    assert ddpg.trainer(policy).q.optimizer.param_groups[0]["lr"] == 2e-3

    sac = continuous.sac(hyperparameters={"temperature_initial": 0.5, "entropy_backups": True,
                                          "entropy_target_scaling": 1.0}).env(pendulum).build()
    assert sac.temperature.log_alpha.exp().item() == pytest.approx(0.5)
    assert sac.target_entropy == -1.0


def test_both_names_of_one_key_is_one_line() -> None:
    for builder, both in ((continuous.ddpg, {"lr_q": 1e-3, "lr_critic": 1e-3}),
                          (classic_control.a2c, {"entropy_loss_scaling": 0.1, "entropy_coef": 0.1}),
                          (atari.ppo, {"minibatches": 4, "minibatch_size": 256}),
                          (classic_control.ppo, {"clip_final": 0.0, "linear_clip": True})):
        with pytest.raises(ValueError) as error:
            builder.hyperparameters(**both)
        assert "give one of them" in _one_line(error)


def test_every_way_in_takes_alls_names() -> None:
    expected = {"lr_critic": 5e-4, "lr_actor": 1e-4}
    for builder in (continuous.ddpg(hyperparameters={"lr_q": 5e-4, "lr_pi": 1e-4}),
                    PresetBuilder("ddpg", continuous.ddpg.default_hyperparameters,
                                  continuous.ddpg.constructor,
                                  hyperparameters={"lr_q": 5e-4, "lr_pi": 1e-4})):
        assert {k: builder.hyperparameter_defaults[k] for k in expected} == expected


def test_conversions_follow_later_calls() -> None:
    """``minibatches`` stays a count when ``n_envs`` or ``n_steps`` change later, as in ALL;
    a later ``minibatch_size`` replaces it."""
    builder = classic_control.ppo.hyperparameters(minibatches=4)  # 8 x 32 rows
    assert builder.hyperparameter_defaults["minibatch_size"] == 64
    assert builder.hyperparameters(n_envs=16).hyperparameter_defaults["minibatch_size"] == 128
    fixed = builder.hyperparameters(minibatch_size=50).hyperparameters(n_envs=16)
    assert fixed.hyperparameter_defaults["minibatch_size"] == 50
    with pytest.raises(ValueError) as error:
        classic_control.ppo.hyperparameters(minibatches=3)
    assert "minibatch_size" in _one_line(error)
    # clip_final equal to clip: a constant clip range
    constant = continuous.ppo.hyperparameters(clip_initial=0.3, clip_final=0.3)
    assert constant.hyperparameter_defaults["linear_clip"] is False
    with pytest.raises(ValueError) as error:
        constant.hyperparameters(clip=0.2)  # (ALL's 0.2 -> 0.3 has no looprl form)
    assert "clip_final" in _one_line(error)


@pytest.mark.parametrize("given", [{"n_envs": "abc"}, {"n_steps": None}, {"n_envs": [2]}])
def test_a_value_a_conversion_reads_is_typed_before_it_converts(given: dict[str, Any]) -> None:
    """``minibatches`` redone over ``n_envs='abc'`` was "not all arguments converted during
    string formatting"."""
    message = re.escape(f"'{next(iter(given))}' must be int (like ")
    with pytest.raises(TypeError, match=message):
        classic_control.ppo.hyperparameters(minibatches=4).hyperparameters(**given)
    with pytest.raises(TypeError, match=message):
        classic_control.ppo.hyperparameters(minibatches=4, **given)


@pytest.mark.parametrize(("name", "value", "key"), [
    ("entropy_target_scaling", 0.5, "target_entropy"), ("entropy_backups", False, "entropy")])
def test_sac_values_without_a_looprl_form_are_one_line(name: str, value: Any, key: str) -> None:
    with pytest.raises(ValueError) as error:
        continuous.sac.hyperparameters(**{name: value})
    assert key in _one_line(error)


def test_default_hyperparameters_read_alls_names() -> None:
    """ALL's train scripts read ``type(preset.default_hyperparameters[name])`` for each
    ``--hyperparameters name=value``: a renamed ALL name reads its looprl key's default; any
    other ALL name is a KeyError that names the looprl keys (was: a bare ``KeyError: 'lr_q'``)."""
    defaults = continuous.ddpg.default_hyperparameters
    assert defaults["lr_q"] == defaults["lr_critic"] and "lr_q" not in defaults
    assert classic_control.a2c.default_hyperparameters["entropy_loss_scaling"] == (
        classic_control.a2c.default_hyperparameters["entropy_coef"])
    with pytest.raises(KeyError, match="minibatch_size"):
        classic_control.ppo.default_hyperparameters["minibatches"]
    with pytest.raises(KeyError, match="lr_temperature"):
        continuous.sac.default_hyperparameters["lr_temperature_scaling"]
    with pytest.raises(KeyError):
        continuous.ddpg.default_hyperparameters["no_such_name"]


def test_an_unknown_default_hyperparameter_is_the_builders_line() -> None:
    """(was a bare ``KeyError: 'minibatches'``): the line ``.hyperparameters(name=...)``
    gives, and ``default_hyperparameters`` stays a dict to copy, iterate and unpack."""
    defaults = classic_control.dqn.default_hyperparameters
    with pytest.raises(UnknownHyperparameterError) as error:
        defaults["minibatches"]
    with pytest.raises(UnknownHyperparameterError) as given:
        classic_control.dqn.hyperparameters(minibatches=4)
    assert str(error.value) == str(given.value) == _one_line(error)
    assert str(error.value).startswith("Unknown hyperparameter 'minibatches' for dqn. Did you "
                                       "mean 'minibatch_size'? Valid: alpha, ")
    assert type(defaults.copy()) is dict and dict(**defaults) == defaults.copy()
    assert list(defaults) == list(defaults.copy()) and defaults["lr"] == defaults.copy()["lr"]
