"""Losses of the algorithms in ``looprl.agents``: short pure functions of tensors, one module
per family, each tested against a hand-computed reference; every module's names are here too."""

from looprl.agents.losses import continuous, policy_gradient, value
from looprl.agents.losses import vtrace as _vtrace  # (the function vtrace takes the name)
from looprl.agents.losses.continuous import *  # noqa: F403
from looprl.agents.losses.policy_gradient import *  # noqa: F403
from looprl.agents.losses.value import *  # noqa: F403
from looprl.agents.losses.vtrace import *  # noqa: F403

__all__ = [*continuous.__all__, *policy_gradient.__all__, *value.__all__, *_vtrace.__all__]
