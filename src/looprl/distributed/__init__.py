"""Distributed training (Ray runtime) and the local checks to run before it.

``test_environment`` checks an SRL environment in one process; it imports no Ray.
"""

from looprl.distributed.testing_env import test_environment

__all__ = ["test_environment"]
