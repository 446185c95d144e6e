"""looprl: deep reinforcement learning in three loops.

The inner loop (agents acting in environments, with meta components hooked in), the
outer loop (runners over repeated runs), and the same inner loop spread over Ray.
See ``ARCHITECTURE.md`` for the layers.
"""

__version__ = "0.1.0"
