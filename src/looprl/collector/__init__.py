"""``EnvRunner``, the one collector: steps copies of an environment (a registered SRL one, copy
by copy, or a ``VectorEnvironment``, batched with next-step autoreset), asks the policy for
actions and cuts the trajectories into ``SampleBatch`` segments. No Ray: the local parallel
experiments, the Ray actors and ``test_pipeline`` all run it.

Every (env copy, agent) pair is a *stream*: stream ``i * agent_count + a`` is agent ``a`` of
copy ``i``. Each step, ``request`` asks for one action per stream that received a result,
``record`` writes the answer as one row per stream into a ``looprl.memory.SegmentBuffer`` and
``advance`` steps the envs (``step`` does both). The envs are split into ``groups`` so that
the caller may step one group while the policy answers another.
"""

from looprl.collector.copies import Episode
from looprl.collector.runner import EnvRunner, RolloutSizeError

__all__ = ["Episode", "EnvRunner", "RolloutSizeError"]
