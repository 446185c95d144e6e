"""Meta components: code hooked into the training loop at named points (seeds 000, 001).

* ``MetaComponent`` / ``MetaStack`` / ``HOOKS`` -- the hook lists and their order.
* ``RND``, ``NovelD`` -- intrinsic rewards from novelty.
* ``CosineLRSchedule``, ``HPSchedule`` -- schedules of ``hp/*`` keys.
* ``NetworkReset`` -- periodic layer resets and shrink-and-perturb.
* ``PLR``, ``SPaCE`` -- curricula over the instances of a contextual environment.
* ``COMPONENTS`` / ``make_component`` -- the components by name, for configurations.
"""

from looprl.meta.component import HOOKS, MetaComponent, MetaStack
from looprl.meta.plr import PLR
from looprl.meta.registry import COMPONENTS, make_component
from looprl.meta.reset import NetworkReset
from looprl.meta.rnd import RND, NovelD
from looprl.meta.schedules import CosineLRSchedule, HPSchedule
from looprl.meta.space import SPaCE

__all__ = ["COMPONENTS", "CosineLRSchedule", "HOOKS", "HPSchedule", "MetaComponent", "MetaStack",
           "NetworkReset", "NovelD", "PLR", "RND", "SPaCE", "make_component"]
