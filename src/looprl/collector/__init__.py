"""``EnvRunner``, the one collector (``collector.runner``; the env copies it steps are in
``collector.copies``): steps copies of an environment, asks the policy for actions
and cuts the trajectories into ``SampleBatch`` segments. No Ray: the local parallel experiments
(``ParallelEnvExperiment``), the Ray actor workers and ``test_pipeline`` all run it.

It steps either copies of a registered (SRL) environment, one copy at a time (each step gives
a list of per-agent ``StepResult`` s), or a ``VectorEnvironment`` (one agent per copy, all
copies in one batched step, next-step autoreset: the step after a copy's episode ended resets
it, and the action sent to it is ignored). A vector environment's states may first pass
through the agent's bodies (``process``: frame stacks, clipped rewards, a lost life as a
terminal state): the rows record what the bodies leave, the episode returns stay the
environment's.

Every (env copy, agent) pair is a *stream*; stream ``i * agent_count + a`` is agent ``a`` of
copy ``i``. At each step, the runner asks for one action per stream that received a
``StepResult`` (``request``), writes the policy's answer as one row per stream (``record``),
then hands the actions to the envs (``advance``; ``step`` does both). The rows go into a
``looprl.memory.SegmentBuffer`` (the row convention, ``segment_length`` segments, or with
``whole_episodes`` (VPG) segments of whole episodes): one write per field and step, a stream
that does not act in a step (an agent that waits) masked out of it. So every agent's
observations have the same fields and shapes (pad them to one size). With several agents per
env, requests and segments say whose rows they hold (``agent``).

The envs are split into ``groups``: while the policy answers one group's request, the caller
may step another group (``ActorWorker`` does, so that env stepping overlaps inference).

With meta components (``meta``), the runner calls their step and episode hooks as the local
loops do (``MetaHub.pre_step`` before a group's request, ``MetaHub.after_step`` after its
envs stepped): ``transition`` holds one row per stream that stepped, and the reward the
post-step hooks leave is the one its row records (returns stay the environment's).

With ``restarts`` (``collector.recovery.EnvRestarts``: the Ray actors), an env copy that raises
in ``reset`` or ``step`` is rebuilt and the runner goes on (its episode in progress cut as
truncated); without, the exception stops the caller, as locally.
"""

from looprl.collector.copies import Episode
from looprl.collector.runner import EnvRunner, RolloutSizeError

__all__ = ["Episode", "EnvRunner", "RolloutSizeError"]
