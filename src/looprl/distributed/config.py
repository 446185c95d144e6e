"""What a distributed run is made of: the algorithm (``AlgorithmSpec``) and the runtime
(``RuntimeConfig``: worker counts and resources, where Ray runs). No Ray import here."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any

from looprl.core.suggest import did_you_mean

__all__ = ["AlgorithmSpec", "RuntimeConfig", "check_meta"]


@dataclass
class AlgorithmSpec:
    """An environment, a policy and a trainer, built by name (seed 004) or by a preset
    (``of_preset``: the preset's own factories build the workers' parts).

    Attributes:
        env: a registered environment name or a Gymnasium id (``looprl.environments.make``).
        policy: the ``Policy`` type, ``Policy(type_=policy, args=policy_args)``, a
            (picklable) factory called as ``policy(**policy_args)``, or a ``Policy`` instance
            (what the seed's ``Policy(type_=..., args=...)`` returns): each worker, and each
            ``make_policy``, gets a copy of it (``policy_args`` may then name a ``device``
            only, which the copy moves to with ``to(device)``).
        trainer: the ``Trainer`` type, or a factory called as ``trainer(policy,
            **trainer_args)``.
        env_args, policy_args, trainer_args: their keyword arguments.
        buffer: the trainer worker's sample buffer (a kind of ``make_learner``; ``None``: see
            ``buffer_kind``); ``"independent"``: one per agent of an ``IndependentTrainer``,
            ``buffer_args={"agents": [(buffer, buffer_args), ...]}`` in the agents' order.
        buffer_args: its keyword arguments and, for a replay, its schedule.
        explorations: Ape-X exploration rates, one per actor worker (``None``: the policy's).
        whole_episodes: actors cut each stream's segments at the first episode end after
            ``runtime.segment_length`` steps (VPG's batches of whole episodes).
        copies: ``copies(n)``, the ``VectorEnvironment`` a local run of a preset's Gymnasium
            or Atari environment steps; actors with their own policy copy step it instead of
            SRL copies of ``env`` (``None``: SRL copies; set by ``of_preset``).
        process: a picklable factory of what turns the states of ``copies`` into those the
            agent learns from (the preset's bodies; the reported returns stay the env's).
        meta: meta components (``looprl.meta``): each actor runs the step and episode hooks
            of its own copy, the trainer worker the update hooks of its own (a copy per
            agent for independent learners); ``shared_state`` travels with the parameters.
    """

    env: str
    policy: str | Callable[..., Any] | Any
    trainer: str | Callable[..., Any]
    env_args: dict[str, Any] = field(default_factory=dict)
    policy_args: dict[str, Any] = field(default_factory=dict)
    trainer_args: dict[str, Any] = field(default_factory=dict)
    buffer: str | None = None
    buffer_args: dict[str, Any] = field(default_factory=dict)
    explorations: list[float] | None = None
    whole_episodes: bool = False
    copies: Callable[[int], Any] | None = None
    process: Callable[[], Callable[[Any], Any] | None] | None = None
    registrations: dict[str, tuple[str, Any]] = field(default_factory=dict)
    meta: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        _check_names(self)

    @classmethod
    def of_preset(cls, preset: Any, frames: float, actors: int = 1, trainers: int = 1
                  ) -> tuple[AlgorithmSpec, dict[str, Any]]:
        """The spec of a built preset (its environment, policy, trainer with schedules
        spanning ``frames`` shared by ``trainers``, and the learner its ``learning()``
        describes), and the runtime options it implies (``segment_length``).

        Raises:
            ValueError: the preset says nothing of how it learns from segments (one line).
        """
        if not callable(getattr(preset, "learning", None)):
            raise ValueError(f"runtime=ray runs every preset of the families (classic control, "
                             f"Atari, continuous, multi-agent); {preset.name!r} "
                             f"({type(preset).__name__}) is none of them: run it locally "
                             "(runtime=local), give it a learning() method, or build an "
                             "AlgorithmSpec in Python")
        train_steps = frames / trainers
        learning = dict(preset.learning(train_steps, actors, trainers))
        implied = {key: learning.pop(key) for key in ("segment_length",) if key in learning}
        remote = getattr(preset, "remote_env", None)  # (the Atari family's; else the env's)
        env, env_args = remote() if remote is not None else (
            preset.env_remote or (preset.env_name, {}))
        process = getattr(preset, "remote_process", None)  # (the Atari family's bodies)
        spec = cls(env=env, env_args=env_args, policy=preset.policy,
                   policy_args={"copy_model": True},
                   trainer=functools.partial(preset.trainer, train_steps=train_steps),
                   meta=list(preset.meta), copies=_local_copies(preset, env, env_args),
                   process=process() if process is not None else None, **learning)
        return spec, implied

    @property
    def algorithm(self) -> str:
        """The algorithm's name in logs: the trainer's registered name or factory's name."""
        if isinstance(self.trainer, str):
            return self.trainer
        return str(getattr(self.trainer, "name", type(self.trainer).__name__))

    @property
    def env_label(self) -> str:
        """The environment's name in logs and run directories (for ``"atari"``,
        ``"contextual"`` and ``"pettingzoo"``: the game, Gymnasium id or PettingZoo module)."""
        key = {"atari": "game", "contextual": "env_id", "pettingzoo": "env"}.get(self.env)
        label = self.env_args.get(key) if key else None
        if not label:
            return self.env
        if self.env == "pettingzoo":
            return str(label).partition(":")[0].rpartition(".")[2]
        return str(label).removeprefix("ALE/")

    def make_env(self) -> Any:
        """A fresh environment."""
        from looprl.environments.srl import make

        self.install()
        return make(self.env, **self.env_args)

    def make_process(self) -> Callable[[Any], Any] | None:
        """A fresh ``process`` of the states of ``copies`` (``None``: none)."""
        return None if self.process is None else self.process()

    def make_policy(self) -> Any:
        """A fresh policy (imports ``looprl.agents``, which registers the built-in ones)."""
        from looprl.core import Policy

        self.install()
        if isinstance(self.policy, Policy):
            return self._policy_copy()
        if callable(self.policy):
            return self.policy(**self.policy_args)
        if not isinstance(self.policy, str):
            raise TypeError(f"AlgorithmSpec policy must be a registered name, a factory or a "
                            f"looprl.core.Policy, got a {type(self.policy).__name__}")
        return Policy(type_=self.policy, args=self.policy_args)

    def _policy_copy(self) -> Any:
        """A copy of the ``Policy`` instance ``policy``, on ``policy_args``' device if any."""
        others = sorted(set(self.policy_args) - {"device"})
        if others:
            raise ValueError(f"policy_args {others} cannot apply to a Policy instance (it is "
                             "built already): build it with them, or pass its registered name "
                             "or a factory as policy")
        policy = copy.deepcopy(self.policy)
        device = self.policy_args.get("device")
        if device is None:
            return policy
        if not callable(getattr(policy, "to", None)):
            raise ValueError(f"{type(policy).__name__} has no to(device) to move to {device!r}: "
                             "pass its registered name or a factory as policy, so that each "
                             "worker builds it on its device")
        return policy.to(device)

    def buffer_kind(self, trainer: Any) -> str | None:
        """``buffer``, else ``trainer.sample_buffer``, else ``"on_policy"``."""
        return self.buffer or getattr(trainer, "sample_buffer", None) or "on_policy"

    def make_trainer(self, policy: Any) -> Any:
        """A fresh trainer of ``policy``."""
        from looprl.core import Trainer

        self.install()
        if callable(self.trainer):
            return self.trainer(policy, **self.trainer_args)
        return Trainer(type_=self.trainer, policy=policy, args=self.trainer_args)

    def make_meta(self) -> list[Any]:
        """A fresh copy of the meta components, for one worker."""
        return copy.deepcopy(self.meta)

    def agent_names(self, policy: Any) -> list[str]:
        """Independent learners' agent names (``policy.names``); ``[]`` for one learner."""
        return list(policy.names) if self.buffer == "independent" else []

    def on_device(self, device: str) -> AlgorithmSpec:
        """A copy whose policy is built on ``device`` (workers given a GPU use ``"cuda"``)."""
        return replace(self, policy_args={**self.policy_args, "device": device})

    def portable(self) -> AlgorithmSpec:
        """This spec, carrying the registrations of its names made by the user's code here
        (workers do not run it); ``install`` registers them in a worker."""
        for kind, name in (("env", self.env), ("policy", self.policy),
                           ("trainer", self.trainer)):
            if not isinstance(name, str):
                continue  # a factory travels as it is
            entry = _registries()[kind].get(name)
            if entry is not None:
                self.registrations[kind] = (name, entry)
        return self

    def install(self) -> None:
        """Register, in this process, the names ``portable`` carried that are missing here."""
        registries = _registries()
        for kind, (name, entry) in self.registrations.items():
            registries[kind].setdefault(name, entry)


def _registries() -> dict[str, dict[str, Any]]:
    """By kind of part: its registry's entries (name -> class, factory or import path)."""
    import looprl.agents  # noqa: F401  (registers the built-in policies and trainers)
    from looprl.core import algorithm
    from looprl.environments import srl

    return {"env": srl._REGISTRY, "policy": algorithm._POLICIES.entries,
            "trainer": algorithm._TRAINERS.entries}


def _check_names(spec: AlgorithmSpec) -> None:
    """A one-line ``ValueError`` (with the closest registered name) for a policy or trainer
    name that is not registered, unless ``spec`` carries its registration (``portable``)."""
    import looprl.agents  # noqa: F401  (registers the built-in policies and trainers)
    from looprl.core import algorithm

    for kind, registry in (("policy", algorithm._POLICIES), ("trainer", algorithm._TRAINERS)):
        name = getattr(spec, kind)
        if not isinstance(name, str) or spec.registrations.get(kind, (None,))[0] == name:
            continue
        problem = registry.missing(name)
        if problem is not None:
            raise ValueError(f"AlgorithmSpec: {problem} (looprl.core.register_{kind}(name, cls) "
                             "registers one of your own)")


def _local_copies(preset: Any, env: str, env_args: dict[str, Any]) -> Any:
    """``AlgorithmSpec.copies`` of ``preset`` for a Gymnasium id or an Atari game (``None``:
    another registered SRL environment, which the actors make by name)."""
    import gymnasium as gym

    from looprl.core import ParallelPreset
    from looprl.environments.duplicate import atari_copies, gym_copies
    from looprl.environments.srl import registered_environments

    one_by_one = not isinstance(preset, ParallelPreset)
    if env == "atari":
        return functools.partial(atari_copies, dict(env_args), one_by_one)
    if env not in gym.registry or env in registered_environments():
        return None
    return functools.partial(gym_copies, env, dict(env_args), one_by_one)


@dataclass
class RuntimeConfig:
    """Worker counts and resources of a Ray run (``looprl run ... runtime=ray runtime.actors=4``).

    Attributes:
        address: ``None`` starts a local Ray instance (loopback only, no dashboard); else the
            address of a running cluster to join (``"HOST:6379"`` or ``"auto"``).
        actors: actor workers; each steps ``envs_per_actor`` env copies.
        envs_per_actor: env copies per actor worker.
        groups: each actor's envs are split in this many groups, so that it steps one group
            while the policy answers another (1: no overlap).
        policy_workers: workers that batch inference across actors (worth it with a GPU or a
            large network); 0: each actor runs its own policy copy, which pulls new
            parameters every ``pull_interval`` s.
        eval_workers: workers that play deterministic episodes with the latest parameters.
        trainers: trainer workers. With N > 1, actor ``i`` feeds trainer ``i % N`` (each owns
            its buffer), and they average their gradients with torch DDP and step together;
            trainer 0 publishes and checkpoints. Needs ``actors >= trainers``.
        trainer_timeout: seconds a trainer waits for the others in a collective; after
            that, or when one dies, all restart from trainer 0's latest checkpoint.
        segment_length: ``T`` of the ``[T + 1, B]`` segments actors send.
        max_lag: samples whose policy version is more than this many trainer steps old are
            dropped (``None``: keep all).
        sync: synchronous sampling (on-policy parity with the local runtime): an actor
            waits until the trainer has stepped on its samples and loads the new parameters
            (lag 0, no overlap of env stepping and training). Needs ``policy_workers=0``.
        queue_batches: an on-policy trainer accepts samples while it holds fewer than this
            many batches; actors then wait (backpressure).
        publish_every: trainer steps between parameter publications.
        pull_interval: seconds between parameter pulls of a policy copy.
        checkpoint_every: trainer steps between trainer checkpoints (``None``: never).
        cpus_per_actor, cpus_per_policy, cpus_per_trainer: Ray CPUs each worker reserves.
        gpus_per_policy, gpus_per_trainer: Ray GPUs each worker reserves (and uses).
        num_cpus: CPUs of a local instance (``None``: what the workers reserve, at least the
            machine's cores).
        max_restarts: how often Ray restarts a worker that died, and how many exceptions
            inside its env copies each actor process recovers from (rebuilding the copy; the
            next one stops the run in one line: ``docs/runtimes.md``).
        env_timeout: seconds an env copy's ``reset`` or ``step`` may take on an actor before
            the controller kills the actor, which Ray restarts (``None``: no limit; polled
            twice a second).
        torch_threads: torch threads per worker.
        trainer_threads: torch threads of each trainer worker (``None``: ``torch_threads``).
        runtime_env: Ray's ``runtime_env`` (``{"working_dir": ".", "py_modules": [...]}``): how
            your code reaches workers on other machines.
        placement_timeout: seconds to wait for the cluster to place every worker.
    """

    address: str | None = None
    actors: int = 2
    envs_per_actor: int = 4
    groups: int = 2
    policy_workers: int = 0
    eval_workers: int = 0
    trainers: int = 1
    trainer_timeout: float = 300.0
    segment_length: int = 64
    max_lag: int | None = None
    sync: bool = False
    queue_batches: int = 2
    publish_every: int = 1
    pull_interval: float = 0.1
    checkpoint_every: int | None = 20
    cpus_per_actor: float = 1.0
    cpus_per_policy: float = 1.0
    cpus_per_trainer: float = 1.0
    gpus_per_policy: float = 0.0
    gpus_per_trainer: float = 0.0
    num_cpus: int | None = None
    max_restarts: int = 3
    env_timeout: float | None = 60.0
    torch_threads: int = 1
    trainer_threads: int | None = None
    runtime_env: dict[str, Any] | None = None
    placement_timeout: float = 60.0

    def __post_init__(self) -> None:
        for least, names in ((1, ("actors", "envs_per_actor", "groups", "segment_length",
                                  "queue_batches", "publish_every", "torch_threads", "trainers")),
                             (0, ("policy_workers", "eval_workers", "max_restarts"))):
            for name in names:
                if int(getattr(self, name)) < least:
                    raise ValueError(f"runtime.{name} must be >= {least}, got "
                                     f"{getattr(self, name)!r}")
        if self.trainer_threads is not None and int(self.trainer_threads) < 1:
            raise ValueError(f"runtime.trainer_threads must be >= 1 (or null: torch_threads), "
                             f"got {self.trainer_threads!r}")
        if self.sync and self.policy_workers:
            raise ValueError("runtime.sync needs each actor's own policy copy: set "
                             "runtime.policy_workers=0 (or runtime.sync=false)")
        if self.groups > self.envs_per_actor:
            raise ValueError(f"runtime.groups ({self.groups}) cannot exceed "
                             f"runtime.envs_per_actor ({self.envs_per_actor})")
        if self.trainers > self.actors:
            raise ValueError(f"runtime.trainers ({self.trainers}) cannot exceed runtime.actors "
                             f"({self.actors}): each trainer learns from its own actors")
        if self.trainers > 1 and 0 < self.gpus_per_trainer < 1:
            raise ValueError(f"runtime.trainers > 1 with GPUs needs gpus_per_trainer >= 1 (NCCL "
                             f"gives each trainer its own GPU), got {self.gpus_per_trainer}")
        if self.trainer_timeout <= 0:
            raise ValueError(f"runtime.trainer_timeout must be > 0, got {self.trainer_timeout}")
        if self.env_timeout is not None and self.env_timeout <= 0:
            raise ValueError(f"runtime.env_timeout must be > 0 seconds (or null: no limit), got "
                             f"{self.env_timeout}")

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> RuntimeConfig:
        """Build from a dict, with a one-line error for an unknown key."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            hint = did_you_mean(unknown[0], known)
            raise KeyError(f"unknown runtime option(s) {unknown}.{hint} Valid: {sorted(known)}")
        return cls(**values)

    def reserved_cpus(self) -> float:
        """CPUs all workers reserve together."""
        return (self.actors * self.cpus_per_actor + self.policy_workers * self.cpus_per_policy
                + self.trainers * self.cpus_per_trainer + self.eval_workers * self.cpus_per_actor)

    def reserved_gpus(self) -> float:
        """GPUs all workers reserve together."""
        return self.trainers * self.gpus_per_trainer + self.policy_workers * self.gpus_per_policy


def check_meta(components: list[Any], runtime: RuntimeConfig) -> None:
    """One-line errors for meta components the Ray runtime cannot run as ``runtime`` says.

    Raises:
        TypeError: one is not a ``MetaComponent``.
        ValueError: actors would have no policy copy of their own (``policy_workers``).
    """
    from looprl.meta.component import MetaStack

    MetaStack(components)
    if components and runtime.policy_workers:
        raise ValueError("meta components on Ray need each actor's own policy copy, which "
                         "loads their shared state with the parameters: set "
                         "runtime.policy_workers=0")
