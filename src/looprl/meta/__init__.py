"""Meta components: code hooked into the training loop at named points (seeds 000, 001):
intrinsic rewards (``RND``, ``NovelD``), schedules, network resets and curricula (``PLR``,
``SPaCE``), by name for configurations (``make_component``)."""

from looprl.meta.component import HOOKS, MetaComponent, MetaComponentFailure, MetaStack
from looprl.meta.plr import PLR, SPaCE
from looprl.meta.registry import COMPONENTS, make_component
from looprl.meta.reset import NetworkReset
from looprl.meta.rnd import RND, NovelD
from looprl.meta.schedules import CosineLRSchedule, HPSchedule

__all__ = ["COMPONENTS", "CosineLRSchedule", "HOOKS", "HPSchedule", "MetaComponent",
           "MetaComponentFailure", "MetaStack", "NetworkReset", "NovelD", "PLR", "RND", "SPaCE",
           "make_component"]
