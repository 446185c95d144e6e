"""looprl: deep reinforcement learning in three loops (``ARCHITECTURE.md``): agents acting in
environments with meta components hooked in, runners over repeated runs, and the same inner
loop spread over Ray."""

import logging
import os
import sys

try:
    import numpy  # noqa: F401  (before torch, whose import of it swallows a Ctrl-C)

    from looprl.core.algorithm import register_names_from  # (imports torch: seconds)
except KeyboardInterrupt:
    if os.path.basename(sys.argv[0]) != "looprl":  # (imported by a user's program)
        raise
    # the looprl program: Ctrl-C while it starts is one line (logging's last resort prints it)
    logging.getLogger(__name__).error("looprl: interrupted")
    raise SystemExit(130) from None

from looprl.core import State, StateArray  # noqa: E402  (ALL's ``from all import State``)

__version__ = "0.1.0"
__all__ = ["State", "StateArray"]

# The built-in policies and trainers (``Policy(type_="ppo", ...)``), imported from
# looprl.agents the first time a name is asked for (agents are slow to import).
register_names_from("looprl.agents")
