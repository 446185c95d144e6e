"""ALL 0.9's preset hyperparameter names, taken by looprl's presets of the same family and name.

``continuous.ddpg.hyperparameters(lr_q=1e-3)`` sets ``lr_critic``: the builder reads
``ALL_NAMES`` for every name its preset does not have itself. An entry is

- a ``str``: a pure rename, ALL's name for that looprl key (same meaning, read in both
  presets' code);
- a ``Converted``: an exact, simple conversion to looprl keys, or a one-line ``ValueError``
  for the values it cannot convert;
- a ``Refused``: no exact counterpart; the builder's ``KeyError`` names the looprl keys to use.

The presets keep looprl's names (``preset.hyperparameters`` shows them). Giving an ALL name and
the looprl key it sets in one call is a ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from looprl.core.suggest import MIGHTY_NAMES, hyperparameter_hint

__all__ = ["ALL_NAMES", "MIGHTY_NAMES", "AllName", "Converted", "Defaults", "Refused",
           "UnknownHyperparameterError", "hyperparameter_hint", "no_such_hyperparameter"]

class UnknownHyperparameterError(KeyError):
    """A hyperparameter name the preset does not have."""

    def __str__(self) -> str:
        return str(self.args[0])


def no_such_hyperparameter(name: str, preset: str,
                           valid: Iterable[str]) -> UnknownHyperparameterError:
    """The error for ``name``, which ``preset`` lacks: the closest and all ``valid`` names."""
    valid = sorted(valid)
    return UnknownHyperparameterError(f"Unknown hyperparameter {name!r} for {preset}."
                                      f"{hyperparameter_hint(name, valid)} Valid: "
                                      f"{', '.join(valid)}")


@dataclass(frozen=True)
class Converted:
    """An ALL name whose value ``convert(value, hyperparameters)`` turns into values of
    ``keys`` (``hyperparameters``: the preset's, with those given in the same call), reading
    ``reads``. A conversion given once is redone when a later call changes ``reads``, until
    a later call sets the ALL name or one of ``keys`` again."""

    keys: tuple[str, ...]
    reads: tuple[str, ...]
    how: str
    convert: Callable[[Any, Mapping[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Refused:
    """An ALL name looprl has no exact counterpart for: use those of ``use`` the preset has."""

    use: tuple[str, ...]
    why: str


AllName = str | Converted | Refused


def _minibatches(value: Any, hp: Mapping[str, Any]) -> dict[str, Any]:
    rows = hp["n_envs"] * hp["n_steps"]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 or rows % value:
        raise ValueError(f"minibatches={value!r} must be a count that divides the {rows} rows of "
                         "an update (n_envs x n_steps): give minibatch_size, looprl's rows per "
                         "minibatch")
    return {"minibatch_size": rows // value}


def _clip_final(value: Any, hp: Mapping[str, Any]) -> dict[str, Any]:
    if value == 0:
        return {"linear_clip": True}
    if value == hp["clip"]:
        return {"linear_clip": False}
    raise ValueError(f"clip_final={value!r}: looprl's clip range stays at clip "
                     f"({hp['clip']!r}; clip_final equal to it) or anneals linearly to 0 "
                     "(clip_final=0): give clip and linear_clip")


def _entropy_target_scaling(value: Any, hp: Mapping[str, Any]) -> dict[str, Any]:
    if value == 1:
        return {"target_entropy": None}
    raise ValueError(f"entropy_target_scaling={value!r}: give target_entropy = -{value!r} x "
                     "the action dimensions (looprl's target_entropy=None is -1 x them)")


def _entropy_backups(value: Any, hp: Mapping[str, Any]) -> dict[str, Any]:
    if value is True:
        return {}
    raise ValueError(f"entropy_backups={value!r}: looprl's SAC always backs up the entropy "
                     "(ALL's entropy_backups=True)")


#: A2C, VAC and VPG: ALL's loss = pg + value_loss_scaling * mse - entropy_loss_scaling * entropy
#: (their model constructors are the presets' own hyperparameters: looprl.presets.constructors)
ACTOR_CRITIC: dict[str, AllName] = {
    "entropy_loss_scaling": "entropy_coef", "value_loss_scaling": "value_coef"}
PPO: dict[str, AllName] = {
    **ACTOR_CRITIC,
    "clip_initial": "clip",  # (the clip range at the start of training)
    "clip_final": Converted(("linear_clip",), ("clip",), "0: linear_clip=True (anneal to 0); "
                            "equal to clip: linear_clip=False; else ValueError", _clip_final),
    "minibatches": Converted(("minibatch_size",), ("n_envs", "n_steps"),
                             "minibatch_size = n_envs x n_steps / minibatches (must divide)",
                             _minibatches),
}
#: DDPG, TD3 and SAC (their model constructors: the presets' own hyperparameters)
OFF_POLICY_CONTINUOUS: dict[str, AllName] = {"lr_q": "lr_critic", "lr_pi": "lr_actor"}
SAC: dict[str, AllName] = {
    **OFF_POLICY_CONTINUOUS,
    "temperature_initial": "alpha",  # (the initial temperature; looprl tunes its log with Adam)
    "lr_temperature_scaling": Refused(
        ("lr_temperature",), "Adam's learning rate of log alpha; ALL steps the temperature "
        "itself by lr_temperature_scaling / action dimensions"),
    "entropy_target_scaling": Converted(("target_entropy",), (), "1: target_entropy=None "
                                        "(-action dimensions); else ValueError",
                                        _entropy_target_scaling),
    "entropy_backups": Converted((), (), "True: looprl's behaviour; False: ValueError",
                                 _entropy_backups),
}

#: ``"family.preset"`` -> ALL's names that the preset does not have itself, for every preset
#: of ALL 0.9.1 (``all/presets/{classic_control,atari,continuous}``) that looprl has
ALL_NAMES: dict[str, Mapping[str, AllName]] = {
    # (the DQN family: none; ALL's model_constructor is their own, looprl.presets.constructors)
    **{f"{family}.{name}": {} for family in ("classic_control", "atari")
       for name in ("c51", "ddqn", "dqn", "rainbow", "vqn", "vsarsa")},
    **{f"{family}.{name}": ACTOR_CRITIC for family in ("classic_control", "atari")
       for name in ("a2c", "vac", "vpg")},
    "classic_control.ppo": PPO, "atari.ppo": PPO, "continuous.ppo": PPO,
    "continuous.ddpg": OFF_POLICY_CONTINUOUS, "continuous.sac": SAC,
}


class Defaults(dict[str, Any]):
    """A preset's default hyperparameters, where ``table``'s ALL names read too, as ALL's
    scripts read them (``type(preset.default_hyperparameters['lr_q'])``): a rename reads its
    looprl key; any other ALL name is a ``KeyError`` that names the keys to use, any other
    name ``no_such_hyperparameter``'s (of the preset ``preset``)."""

    def __init__(self, values: Mapping[str, Any], table: Mapping[str, AllName], preset: str):
        super().__init__(values)
        self.table, self.preset = table, preset

    def __missing__(self, name: str) -> Any:
        entry = self.table.get(name)
        if isinstance(entry, str):
            return self[entry]
        if entry is None:
            raise no_such_hyperparameter(name, self.preset, self)
        keys = entry.keys if isinstance(entry, Converted) else entry.use
        raise UnknownHyperparameterError(
            f"{name!r} is ALL's and has no default here: looprl's preset has "
            f"{', '.join(key for key in keys if key in self) or 'no such setting'} "
            f"({entry.how if isinstance(entry, Converted) else entry.why})")
