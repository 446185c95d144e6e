"""``EnvRunner``, the one collector (local experiments, Ray actors): steps copies of an
environment (SRL ones copy by copy, or a ``VectorEnvironment`` as a batch), asks the policy for
actions and cuts the trajectories into ``SampleBatch`` segments. Each (env copy, agent) pair is a
*stream*; each step ``request`` asks for an action per stream that received a result, ``record``
writes the answers as rows into a ``looprl.memory.SegmentBuffer`` and ``advance`` steps the envs
(``step`` does both); the envs are split into ``groups`` to step one while the policy answers
another."""

from looprl.collector.copies import Episode
from looprl.collector.runner import EnvRunner, RolloutSizeError

__all__ = ["Episode", "EnvRunner", "RolloutSizeError"]
