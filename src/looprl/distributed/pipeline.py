"""``trainer_core`` (the ``Learner`` of a spec; ``record_losses``: what a trainer worker
logs of it) and ``test_pipeline``, which runs an environment, a policy and that learner in
one process, as on Ray. No Ray here."""

from __future__ import annotations

import copy
import dataclasses
import functools
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partialmethod
from typing import Any

import numpy as np

from looprl.agents.actor import Actor
from looprl.agents.independent import IndependentTrainer
from looprl.agents.independent_learner import IndependentLearner
from looprl.agents.learner import make_learner
from looprl.collector import EnvRunner, Episode
from looprl.collector.recovery import EnvWatch, fault_limits
from looprl.core.logger import DummyLogger, Logger
from looprl.core.suggest import a_type, check_count, check_seed, did_you_mean
from looprl.distributed.config import AlgorithmSpec
from looprl.environments.wrappers import load_normalization
from looprl.meta.hub import MetaHub, seed_hubs
from looprl.meta.hyperparameters import agent_hyperparameters, check_writes

__all__ = ["CHECKPOINT", "LossRecorder", "PendingWrites", "PipelineReport", "act",
           "check_meta_writes", "collect", "evaluation_episodes", "evaluation_spec",
           "hyperparameter_values", "load_parameters", "load_shared_state", "meta_states",
           "policy_parameters", "record_losses", "test_pipeline", "trainer_core"]

logger = logging.getLogger(__name__)


def trainer_core(spec: AlgorithmSpec, policy: Any = None, max_lag: int | None = None,
                 seed: int | None = None) -> Any:
    """The ``Learner`` of ``spec`` training ``policy`` (default: a new one), running the meta
    components' update hooks, seeded with ``seed`` (an ``IndependentLearner`` for independent
    learners)."""
    trainer = spec.make_trainer(policy if policy is not None else spec.make_policy())
    meta = spec.make_meta()
    if spec.buffer != "independent":
        learner = make_learner(trainer, spec.buffer, spec.buffer_args, max_lag)
        if meta:
            learner.hooks = MetaHub(list(meta), learner, None, "trainer")
        hubs, core = [learner.hooks] if meta else [], learner
    else:
        if not isinstance(trainer, IndependentTrainer):
            raise ValueError(f"AlgorithmSpec buffer='independent' gives each agent its own "
                             f"learner and needs an IndependentTrainer of an IndependentPolicy, "
                             f"got a {type(trainer).__name__}: leave buffer unset, or train "
                             "independent learners (e.g. the preset independent_ppo)")
        core = IndependentLearner.from_buffers(trainer, spec.buffer_args.get("agents", ()), max_lag)
        hubs = []
        if meta:  # each agent's own copies
            for learner, name in zip(core.cores, trainer.policy.names, strict=True):
                learner.hooks = MetaHub(copy.deepcopy(list(meta)), learner, None, "trainer")
                learner.hooks.metrics["agent"] = name
                hubs.append(learner.hooks)
    if seed is not None:
        seed_hubs(hubs, seed)
    return core


class LossRecorder(Logger):
    """Keeps what a trainer's approximations log as ``(agent, kind, name, value, frame)``."""

    def __init__(self, frames: Callable[[], int], agent: str | None = None, scale: int = 1,
                 verbose: bool = True):
        self.frames, self.agent, self.scale, self.verbose = frames, agent, scale, verbose
        self.rows: list[tuple[str | None, str, str, float, int]] = []

    def _add(self, kind: str, name: str, value: Any, step: str = "frame") -> None:
        self.rows.append((self.agent, kind, name, float(value), self.frames() * self.scale))

    add_loss = partialmethod(_add, "loss")
    add_schedule = partialmethod(_add, "schedule")

    def __reduce__(self) -> tuple[type, tuple[()]]:
        """A checkpointed or shared trainer's copy logs nothing."""
        return DummyLogger, ()

    def take(self) -> list[tuple[str | None, str, str, float, int]]:
        """The rows since the last call."""
        taken = self.rows[:len(self.rows)]  # (the training thread appends meanwhile)
        del self.rows[:len(taken)]
        return taken


def record_losses(core: Any, frames: Callable[[], int], trainers: int = 1,
                  verbose: bool = True) -> list[LossRecorder]:
    """Give ``core``'s learners and their approximations ``LossRecorder`` s."""
    cores = getattr(core, "cores", None)
    names = core.policy.names if cores is not None else [None]
    recorders = []
    for learner, agent in zip(cores or [core], names, strict=True):
        recorder = learner.logger = LossRecorder(frames, agent, trainers, verbose)
        for part in (learner.policy, learner.trainer):
            for approximation in getattr(part, "approximations", dict)().values():
                approximation.logger = recorder
        recorders.append(recorder)
    return recorders


def hyperparameter_values(core: Any) -> dict[str, Any]:
    """The current ``hp/*`` values of a trainer's ``core``, the keys a local agent has."""
    try:
        declared = agent_hyperparameters(core)
    except AttributeError:  # a user's policy or trainer of its own making declares none
        return {}
    return {key: h.get() for key, h in declared.items()}


class PendingWrites:
    """What the actors' hooks wrote to the ``hp/*`` keys of each of a trainer's learners (one
    hub each, ``hubs``) since it last set them: ``add`` as they arrive, ``take`` what waits."""

    def __init__(self, hubs: list[Any]) -> None:
        self.hubs = hubs
        self._pending: list[dict[str, Any]] = [{} for _ in hubs]

    def add(self, writes: list[dict[str, Any]] | None) -> None:
        for mine, theirs in zip(self._pending, writes or (), strict=False):
            mine.update(theirs)

    def take(self) -> list[dict[str, Any]] | None:
        """What waits, one dict per learner, and none left (``None``: nothing waits)."""
        if not any(self._pending):
            return None
        taken = [dict(writes) for writes in self._pending]
        for writes in self._pending:
            writes.clear()
        return taken

    def apply(self, writes: list[list[dict[str, Any]]]) -> None:
        """Set ``writes`` (``take`` s, of one trainer or of each in rank order) in the hubs."""
        for taken in writes:
            for hub, values in zip(self.hubs, taken, strict=True):
                if values:
                    hub.apply_writes(values)


def check_meta_writes(spec: AlgorithmSpec, core: Any) -> None:
    """The local run's check of the meta components' ``writes`` keys (``check_writes``: a
    schedule of a key the agent lacks is one line), on each learner of ``core`` (a
    ``trainer_core`` to throw away, holding the acting and the training keys), before the
    workers start."""
    components = [component for component in spec.make_meta() if component.writes]
    if not components:
        return
    for learner in core.cores if spec.agent_names(core.policy) else [core]:
        check_writes(components, agent_hyperparameters(learner.unwrapped))


@dataclass
class PipelineReport:
    """What ``test_pipeline`` saw (``episodes``: returns summed over agents)."""

    frames: int = 0
    episodes: list[float] = field(default_factory=list)
    train_steps: int = 0
    stats: dict[str, float] = field(default_factory=dict)

    @property
    def mean_return(self) -> float:
        """Mean return of the last (up to) 20 episodes (``nan`` before the first)."""
        from looprl.experiments.logger import mean_return
        return mean_return(self.episodes, 20)


def test_pipeline(spec: AlgorithmSpec | None = None, episodes: int = 5, max_frames: int = 100_000,
                  n_envs: int = 2, segment_length: int = 32, seed: int = 0,
                  env_timeout: float | None = 60.0, **spec_kwargs: Any) -> PipelineReport:
    """Run an environment, a policy and a trainer together in this process (``spec``, or
    ``AlgorithmSpec``'s fields as keywords), checking what a distributed run needs (one
    answer per row, segments that fit the buffer, finite stats, a new ``policy.version``
    per step), until ``episodes`` episodes with a training step, or ``max_frames`` env steps.
    ``ValueError`` names a part that misbehaves (``FloatingPointError``: a diverged loss; an
    ``EnvironmentFailure``: an env call that raised or ran past ``env_timeout`` seconds).
    SRL's keywords ``env_name``, ``policy_name`` and ``trainer_name`` name ``env``, ``policy``
    and ``trainer``; keywords given with ``spec`` replace its fields. The caller's global
    random generators go on as it left them."""
    caller = random.getstate()  # (rich, which the experiments import, draws from it once)
    from looprl.experiments.episodes import run_scope, seed_everything
    random.setstate(caller)
    check_count(n_envs=n_envs, episodes=episodes, max_frames=max_frames)
    seed = check_seed("test_pipeline", seed, optional=False)
    env_timeout = fault_limits(0, env_timeout)[1]
    spec = _spec(spec, spec_kwargs)
    with run_scope():  # (seeded: the caller's random numbers go on)
        seed_everything(seed)
        policy = spec.make_policy()
        core = trainer_core(spec, policy, seed=seed)
        runner = EnvRunner(spec.make_env, None, n_envs, segment_length, policy.default_policy_state,
                           seed=seed, exploration=(spec.explorations or [None])[0], policy=policy,
                           meta=spec.make_meta(), whole_episodes=spec.whole_episodes,
                           agent_names=spec.agent_names(policy))
        report, actor = PipelineReport(), Actor(policy)
        with EnvWatch(runner, env_timeout):
            _run(runner, actor, core, report, spec, episodes, max_frames)
        report.frames = runner.frames
        if report.train_steps == 0:
            raise ValueError(f"the trainer never stepped in {runner.frames} frames: its buffer "
                             "was never ready (give more max_frames or a smaller batch)")
        return report


def _run(runner: EnvRunner, actor: Actor, core: Any, report: PipelineReport,
         spec: AlgorithmSpec, episodes: int, max_frames: int) -> None:
    """``test_pipeline``'s loop: act, store, train until its ``episodes`` or ``max_frames``."""
    while runner.frames < max_frames:
        collect(runner, actor)
        report.episodes += [episode.ret for episode in runner.pop_episodes()]
        for sample in runner.segments():
            core.put(sample)
        if _trained(core, report, runner, spec) and runner.hooks is not None:
            load_shared_state(runner.hooks.components, core.shared_state())
        if len(report.episodes) >= episodes and report.train_steps > 0:
            return


#: SRL's ``test_pipeline`` keywords and the ``AlgorithmSpec`` fields they name
_SRL_KEYWORDS = {"env_name": "env", "policy_name": "policy", "trainer_name": "trainer"}


def _spec(spec: AlgorithmSpec | None, spec_kwargs: dict[str, Any]) -> AlgorithmSpec:
    """``spec`` with ``spec_kwargs`` (SRL's names too) in its fields, or a spec of them."""
    if spec is not None and not isinstance(spec, AlgorithmSpec):
        raise TypeError(f"test_pipeline takes an AlgorithmSpec, got {a_type(spec)}; pass "
                        "AlgorithmSpec(env=..., policy=..., trainer=...), or its fields as "
                        "keywords (test_pipeline(**fields))")
    fields = {_SRL_KEYWORDS.get(key, key): value for key, value in spec_kwargs.items()}
    known = [f.name for f in dataclasses.fields(AlgorithmSpec)]
    for key in fields:
        if key not in known:
            raise TypeError(f"test_pipeline got an unknown keyword {key!r}: it takes "
                            f"AlgorithmSpec's fields ({', '.join(known[:4])}, ...)."
                            f"{did_you_mean(key, known)}")
    missing = [key for key in ("env", "policy", "trainer") if key not in fields]
    if spec is None and missing:
        raise TypeError(f"test_pipeline needs {', '.join(missing)} (an AlgorithmSpec or its "
                        "fields as keywords: env=..., policy=..., trainer=...)")
    if len(fields) != len(spec_kwargs):
        both = [f"{k}/{v}" for k, v in _SRL_KEYWORDS.items() if k in spec_kwargs and v in fields]
        raise ValueError(f"test_pipeline got both names of {', '.join(both)}; give one")
    return AlgorithmSpec(**fields) if spec is None else replace(spec, **fields)


def act(runner: EnvRunner, actor: Actor) -> Any:
    """``actor``'s answer to the request of ``runner``'s first group (``None``: none)."""
    request = runner.request(0)
    return None if request is None else actor.rollout(request)


def collect(runner: EnvRunner, actor: Actor) -> None:
    """One step of ``runner``'s first group with ``actor``'s actions."""
    runner.step(0, act(runner, actor), actor.policy.version)


def load_shared_state(components: Any, shared: list[dict[str, Any] | None]) -> None:
    """Give each of an actor's ``components`` its ``Learner.shared_state`` entry, if any."""
    for component, state in zip(components, shared, strict=True):
        if state is not None:
            component.load_shared_state(state)


def meta_states(meta: list[Any], copies: int, saved: list[tuple[str, Any]] | None,
                index: int) -> list[Any]:
    """An actor's ``copies`` copies of ``meta``'s states from ``saved`` (none if of others)."""
    if not saved or not meta:
        return []
    names = [type(component).__name__ for component in meta] * copies
    if [name for name, _ in saved] != names:
        logger.warning("actor %d: the checkpoint's meta components %s are not this run's %s: "
                       "they start anew", index, [name for name, _ in saved], names)
        return []
    return [state for _, state in saved]


def _trained(core: Any, report: PipelineReport, runner: EnvRunner, spec: AlgorithmSpec) -> bool:
    """``_train``; a diverged loss says where the NaN came from, as a run's does (was: "try a
    lower learning rate" for an environment's NaN rewards)."""
    try:
        return _train(core, report)
    except FloatingPointError as error:
        from looprl.experiments.diagnose import blamed_data
        returns = [*report.episodes, *np.asarray(runner.running_returns).ravel()]
        components = runner.hooks.components if runner.hooks is not None else ()
        message = blamed_data(error, spec.env_label, runner.frames,
                              running_return_nonfinite=not np.isfinite(returns).all(),
                              components=components, returns_seen=True)
        if message is None:  # (no data to blame: the trainer's own line)
            raise
        raise FloatingPointError(message) from error


def _train(core: Any, report: PipelineReport) -> bool:
    """Take every step due; whether it stepped."""
    trained = report.train_steps
    while core.ready():
        version = core.policy.version
        result = core.train_step()
        stats = {k: float(v) for k, v in result.stats.items()}  # (checked by the learner)
        if core.policy.version == version:
            raise ValueError(f"trainer {type(core.trainer).__name__}.step did not increment "
                             "policy.version; workers could not tell new parameters apart")
        report.train_steps += 1
        report.stats = stats
    return report.train_steps > trained


test_pipeline.__test__ = False  # not a pytest test


def evaluation_spec(spec: AlgorithmSpec, env: Any = None) -> AlgorithmSpec:
    """``spec``, playing in ``env`` (a looprl environment; ``None``: its own) instead."""
    made = None if env is None else env.remote_env()
    if isinstance(made, str):  # (an environment Ray's actors cannot make)
        raise ValueError(made)
    if made is None or made == (spec.env, spec.env_args):
        return spec
    return replace(spec, env=made[0], env_args=made[1], copies=None)  # (another env: its copies)


def evaluation_episodes(spec: AlgorithmSpec, checkpoint: dict[str, Any] | None,
                        episodes: int = 10, seed: int = 0, progress: Any = None,
                        normalization: list[Any] | None = None,
                        timeout: float | None = None) -> list[Episode]:
    """``episodes`` evaluation episodes of the policy restored from ``checkpoint`` (``None``: a
    new one), seeded with ``seed``, over ``min(test_copies, episodes)`` env copies whose
    normalizers load ``normalization``, frozen: Ray's final evaluation, as a local run's (an
    env call past ``timeout`` seconds interrupted)."""
    from looprl.experiments.episodes import play_episodes
    policy = spec.make_policy()
    if checkpoint is not None:
        policy.load_checkpoint(checkpoint)
    actor = Actor(policy, evaluation=True)
    actor.seed(seed)
    copies = max(1, min(spec.test_copies, episodes))
    build, process = spec.collector_env(copies)
    runner = EnvRunner(functools.partial(_normalized, build, normalization, spec.env_label), None,
                       copies, None, policy.default_policy_state, seed=seed, is_evaluation=True,
                       process=process)
    return play_episodes(runner, actor.rollout, episodes, progress=progress, timeout=timeout)


def _normalized(build: Callable[[], Any], normalization: list[Any] | None, name: str) -> Any:
    """``build()``, its normalizers loaded with ``normalization`` (``load_normalization``)."""
    env = build()
    load_normalization(env, normalization, name)
    return env


#: the key of a published ``get_checkpoint()`` (a policy that exposes no ``module``)
CHECKPOINT = "__looprl_checkpoint__"


def policy_parameters(policy: Any) -> dict[str, Any]:
    """What a trainer publishes of ``policy``: its module's ``state_dict`` or checkpoint."""
    try:
        module = policy.module
    except NotImplementedError:
        try:
            return {CHECKPOINT: policy.get_checkpoint()}
        except NotImplementedError:
            raise NotImplementedError(
                f"{type(policy).__name__} exposes no module and no get_checkpoint(): give it a "
                "`module` property (its nn.Module), or get_checkpoint() and load_checkpoint(), "
                "so that the actors can load the trained parameters") from None
    return module.state_dict()


def load_parameters(policy: Any, parameters: dict[str, Any]) -> None:
    """Load what ``policy_parameters`` published into ``policy``."""
    if CHECKPOINT in parameters:
        policy.load_checkpoint(parameters[CHECKPOINT])
    else:
        policy.module.load_state_dict(parameters)
