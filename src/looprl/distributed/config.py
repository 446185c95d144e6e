"""What a distributed run is made of: the algorithm (``AlgorithmSpec``) and the runtime
(``RuntimeConfig``: worker counts and resources, where Ray runs). No Ray import here."""

from __future__ import annotations

import copy
import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from looprl.core import ParallelPreset, Policy, Trainer
from looprl.core.suggest import a_type, check_count, did_you_mean, is_number
from looprl.memory.samples import check_sample_buffer
from looprl.policies.greedy import check_explorations

__all__ = ["AlgorithmSpec", "RuntimeConfig", "starts_local"]


@dataclass
class AlgorithmSpec:
    """An environment, a policy and a trainer, built by name (seed 004) or by ``of_preset``.

    Attributes:
        env: a registered environment name or a Gymnasium id.
        policy: a registered ``Policy`` type, a picklable factory called as
            ``policy(**policy_args)``, or a ``Policy`` instance, copied for each worker
            (``policy_args`` may then hold a ``device`` only).
        acting_args: what a factory ``policy`` is also given in a process that only acts (in
            a run without meta components); ``of_preset``: ``{"optimizer": False}``.
        trainer: a registered ``Trainer`` type, or a factory called as
            ``trainer(policy, **trainer_args)``.
        buffer: a ``make_learner`` kind (``None``: the trainer's, ``agents.learner.buffer_kind``);
            ``"independent"``: one per agent, ``buffer_args={"agents": [(buffer, args), ...]}``.
        explorations: Ape-X exploration rates, one per actor worker (``None``: the policy's).
        copies: ``copies(n)``, the ``VectorEnvironment`` of a preset's Gymnasium or Atari
            env, stepped by actors instead of SRL copies of ``env`` (set by ``of_preset``).
        meta: meta components; each worker runs its own copy.
        label: the environment's name in logs and the run directory (``None``: ``env_label``).
        test_copies: env copies the final evaluation plays at most (``of_preset``: a parallel
            preset's ``n_envs``).
        verbose: the trainers' learners log their statistics (``DistributedRun``'s).
    """

    env: str
    policy: str | Callable[..., Any] | Any
    trainer: str | Callable[..., Any]
    env_args: dict[str, Any] = field(default_factory=dict)
    policy_args: dict[str, Any] = field(default_factory=dict)
    acting_args: dict[str, Any] = field(default_factory=dict)
    trainer_args: dict[str, Any] = field(default_factory=dict)
    buffer: str | None = None
    buffer_args: dict[str, Any] = field(default_factory=dict)
    explorations: list[float] | None = None
    whole_episodes: bool = False
    copies: Callable[[int], Any] | None = None
    process: Callable[[], Callable[[Any], Any] | None] | None = None
    registrations: dict[str, Any] = field(default_factory=dict)
    meta: list[Any] = field(default_factory=list)
    label: str | None = None
    test_copies: int = 1
    verbose: bool = True

    def __post_init__(self) -> None:
        _check_parts(self)
        registries = _registries(entries=False)
        for kind in ("policy", "trainer"):  # (a name registered neither here nor in ``portable``)
            name = getattr(self, kind)
            if isinstance(name, str) and self.registrations.get(kind, (None,))[0] != name and (
                    problem := registries[kind].missing(name)) is not None:
                raise ValueError(f"AlgorithmSpec: {problem} (looprl.core.register_{kind}(name, "
                                 "cls) registers one of your own)")
        check_sample_buffer(self.buffer, "AlgorithmSpec's", also=("independent",))
        check_count(test_copies=self.test_copies)
        check_explorations(self.explorations)

    @classmethod
    def of_preset(cls, preset: Any, frames: float, actors: int = 1, trainers: int = 1
                  ) -> tuple[AlgorithmSpec, dict[str, Any]]:
        """The spec of a built preset (schedules spanning ``frames`` shared by ``trainers``)
        and the runtime options it implies; ``ValueError`` if it has no ``learning()``."""
        if not callable(getattr(preset, "learning", None)):
            raise ValueError(f"runtime=ray runs every preset of the families (classic control, "
                             f"Atari, continuous, multi-agent); {preset.name!r} "
                             f"({type(preset).__name__}) is none of them: run it locally "
                             "(runtime=local), give it a learning() method, or build an "
                             "AlgorithmSpec in Python")
        train_steps = frames / trainers
        learning = dict(preset.learning(train_steps, actors, trainers))
        implied = {key: learning.pop(key) for key in ("segment_length",) if key in learning}
        if isinstance(preset.env_remote, str):  # (an environment Ray's actors cannot make)
            raise ValueError(preset.env_remote)
        remote = getattr(preset, "remote_env", None)  # (the Atari family's; else the env's)
        env, env_args = remote() if remote is not None else (
            preset.env_remote or (preset.env_name, {}))
        process = getattr(preset, "remote_process", None)  # (the Atari family's bodies)
        spec = cls(env=env, env_args=env_args, policy=preset.policy,
                   policy_args={"copy_model": True}, acting_args={"optimizer": False}
                   if "optimizer" in inspect.signature(preset.policy).parameters else {},
                   trainer=functools.partial(preset.trainer, train_steps=train_steps),
                   meta=list(preset.meta), copies=_local_copies(preset, env, env_args),
                   process=process() if process is not None else None,
                   label=getattr(preset, "env_name", None),
                   test_copies=preset.n_envs if isinstance(preset, ParallelPreset) else 1,
                   **learning)
        return spec, implied

    @property
    def algorithm(self) -> str:
        """The trainer's registered name or factory's name."""
        name = getattr(self.trainer, "name", type(self.trainer).__name__)
        return self.trainer if isinstance(self.trainer, str) else str(name)

    @property
    def env_label(self) -> str:
        """``label``, else the game, id or module of a wrapper env: its name in logs."""
        if self.label:
            return self.label
        key = {"atari": "game", "contextual": "env_id", "pettingzoo": "env"}.get(self.env)
        label = self.env_args.get(key) if key else None
        if not label:
            return self.env
        if self.env == "pettingzoo":
            if not isinstance(label, str):  # a built game (``MultiagentPettingZooEnv.remote_env``)
                label = label.metadata.get("name", type(label.unwrapped).__name__)
            return str(label).partition(":")[0].rpartition(".")[2]
        return str(label).removeprefix("ALE/")

    def make_env(self) -> Any:
        """A fresh environment."""
        from looprl.collector.copies import made
        self.install()
        return made(self.env, self.env_args)

    def make_process(self) -> Callable[[Any], Any] | None:
        """A fresh ``process`` of the states of ``copies`` (``None``: none)."""
        return None if self.process is None else self.process()

    def collector_env(self, n: int, local: bool = True) -> tuple[Callable[[], Any], Any]:
        """An ``EnvRunner``'s env of ``n`` copies and its ``process`` (``local``: ``copies``)."""
        if local and self.copies is not None:
            self.install()
            return functools.partial(self.copies, n), self.make_process()
        return self.make_env, None

    def make_policy(self, acting: bool = False) -> Any:
        """A fresh policy; with ``acting``, for a process that only acts (``acting_args``)."""
        _check_parts(self)  # (again: a field set since)
        self.install()
        if isinstance(self.policy, Policy):  # (a copy, on ``policy_args``' device if any)
            others = sorted(set(self.policy_args) - {"device"})
            if others:
                raise ValueError(f"policy_args {others} cannot apply to a Policy instance (it is "
                                 "built already): build it with them, or pass its registered "
                                 "name or a factory as policy")
            policy, device = copy.deepcopy(self.policy), self.policy_args.get("device")
            if device is None:
                return policy
            if not callable(getattr(policy, "to", None)):
                raise ValueError(f"{type(policy).__name__} has no to(device) to move to "
                                 f"{device!r}: pass its registered name or a factory as policy, "
                                 "so that each worker builds it on its device")
            return policy.to(device)
        if callable(self.policy):
            acting_args = self.acting_args if acting and not self.meta else {}
            return self.policy(**self.policy_args, **acting_args)
        return Policy(type_=self.policy, args=self.policy_args)

    def make_trainer(self, policy: Any) -> Any:
        """A fresh trainer of ``policy``."""
        _check_parts(self)
        self.install()
        if callable(self.trainer):
            return self.trainer(policy, **self.trainer_args)
        return Trainer(type_=self.trainer, policy=policy, args=self.trainer_args)

    def make_meta(self) -> list[Any]:
        """A fresh copy of the meta components."""
        return copy.deepcopy(self.meta)

    def agent_names(self, policy: Any) -> list[str]:
        """Independent learners' agent names (``policy.names``); ``[]`` for one learner."""
        return list(policy.names) if self.buffer == "independent" else []

    def on_device(self, device: str) -> AlgorithmSpec:
        """A copy whose policy is built on ``device``."""
        return replace(self, policy_args={**self.policy_args, "device": device})

    def portable(self) -> AlgorithmSpec:
        """This spec, carrying its env's (Gymnasium's too), policy's and trainer's registrations."""
        from looprl.environments.gym import gym_registrations
        registries = _registries()
        for kind, name in (("env", self.env), ("policy", self.policy), ("trainer", self.trainer)):
            if isinstance(name, str) and name in registries[kind]:
                self.registrations[kind] = (name, registries[kind][name])
        self.registrations["gym"] = gym_registrations((self.env, self.env_args))
        return self

    def install(self) -> None:
        """Register here the names ``portable`` carried that are missing."""
        from looprl.environments.gym import install_gym_registrations
        registries, carried = _registries(), dict(self.registrations)
        install_gym_registrations(carried.pop("gym", {}))
        for kind, (name, entry) in carried.items():
            registries[kind].setdefault(name, entry)


def _registries(entries: bool = True) -> dict[str, Any]:
    """The registries by kind of part (``entries``: their entries)."""
    import looprl.agents  # noqa: F401  (registers the built-in policies and trainers)
    from looprl.core import algorithm
    from looprl.environments import srl
    parts = {"policy": algorithm._POLICIES, "trainer": algorithm._TRAINERS}
    return {"env": srl._REGISTRY, **{kind: registry.entries if entries else registry
                                     for kind, registry in parts.items()}}


def _local_copies(preset: Any, env: str, env_args: dict[str, Any]) -> Any:
    """``copies`` of ``preset`` for a Gymnasium id, an Atari game, a contextual env or (a
    single-agent preset's) an SRL environment's view: what a local run steps."""
    import gymnasium as gym

    from looprl.environments.contextual import contextual_copies
    from looprl.environments.duplicate import atari_copies, gym_copies, srl_agent_copies
    from looprl.environments.srl import registered_environments
    from looprl.presets.multiagent.independent import IndependentMultiagentPreset
    one_by_one = not isinstance(preset, ParallelPreset)
    if env == "atari":
        return functools.partial(atari_copies, dict(env_args), one_by_one)
    if env == "contextual":
        return functools.partial(contextual_copies, dict(env_args), one_by_one)
    if env in registered_environments() and not isinstance(preset, IndependentMultiagentPreset):
        return functools.partial(srl_agent_copies, env, dict(env_args), one_by_one)
    if env not in gym.registry or env in registered_environments():
        return None
    return functools.partial(gym_copies, env, dict(env_args), one_by_one)


def starts_local(address: str | None) -> bool:
    """Whether ``runtime.address`` starts a local Ray instance (not a cluster's)."""
    return address in (None, "local")


#: each part of an ``AlgorithmSpec``: its kinds (policy, trainer: or a factory), what to give, why
_PARTS = {"env": (str, "a registered environment name or a Gymnasium id (a str)", ""),
          "policy": ((str, Policy), "a registered name, a factory or a looprl.core.Policy", ""),
          "trainer": (str, "a registered name or a factory of the policy (e.g. a Trainer class)",
                      ": each worker builds its own trainer of its own policy (give the class, "
                      "and its options in trainer_args)"),
          **{name: (Mapping, f"a dict of keyword arguments ({name}={{'key': value}})", "")
             for name in ("env_args", "policy_args", "acting_args", "trainer_args",
                          "buffer_args", "registrations")}}


def _check_parts(spec: AlgorithmSpec) -> None:
    """A one-line ``TypeError`` for a part of ``spec`` of a kind it cannot be."""
    for name, (kinds, want, why) in _PARTS.items():
        value = getattr(spec, name)
        if not (isinstance(value, kinds) or callable(value) and name in ("policy", "trainer")):
            raise TypeError(f"AlgorithmSpec {name} must be {want}, got {a_type(value)}{why}")


@dataclass
class RuntimeConfig:
    """Worker counts and resources of a Ray run (``looprl run ... runtime=ray runtime.actors=4``).

    Attributes:
        address: ``None`` starts a local Ray instance (loopback only, no dashboard); else a
            cluster to join (``"HOST:6379"`` or ``"auto"``).
        actors: actor workers; each steps ``envs_per_actor`` env copies.
        envs_per_actor: env copies per actor worker.
        groups: each actor's envs are split in this many groups, so that it steps one group
            while a policy worker answers another (1: no overlap; ``None``: 2, 1 for one env).
        policy_workers: workers that batch inference across actors; 0: each actor runs its
            own policy copy.
        eval_workers: workers that play deterministic episodes with the latest parameters.
        trainers: trainer workers. With N > 1, actor ``i`` feeds trainer ``i % N`` and they
            average their gradients with torch DDP. Needs ``actors >= trainers``.
        trainer_timeout: seconds a trainer waits for the others in a collective (then all
            restart from trainer 0's latest checkpoint).
        segment_length: ``T`` of the ``[T + 1, B]`` segments actors send (a preset's are
            its own: its ``n_steps``, or its replay's update schedule).
        max_lag: on-policy samples whose policy version is more than this many trainer steps
            old are dropped (``None``: keep all; a replay trainer refuses it).
        sync: synchronous sampling (on-policy parity with the local runtime): an actor
            waits until the trainer has stepped on its samples. Needs ``policy_workers=0``.
        queue_batches: an on-policy trainer accepts samples while it holds fewer than this
            many batches (backpressure).
        publish_every: trainer steps between parameter publications.
        pull_interval: seconds between parameter pulls of a policy copy.
        checkpoint_every: trainer steps between trainer 0's checkpoints (at most one every 5
            seconds), which the parameter server holds for a restarted trainer to go on from
            (``None``: never); the run's checkpoint files are ``checkpoint_every``'s (a
            ``DistributedRun`` argument, a ``looprl run`` key).
        cpus_per_actor, cpus_per_policy, cpus_per_trainer: Ray CPUs each worker reserves.
        gpus_per_policy, gpus_per_trainer: Ray GPUs each worker reserves (and uses), at most 1.
        num_cpus: CPUs of a local instance (``None``: what the workers reserve, at least the
            machine's cores); a cluster has its own.
        max_restarts: how often Ray restarts a worker that died, and how many env copy
            exceptions each actor recovers from.
        env_timeout: seconds an env copy's ``reset`` or ``step`` may take before the actor is
            killed and restarted (``None``: no limit).
        torch_threads: torch threads per worker.
        trainer_threads: torch threads of each trainer worker (``None``: ``torch_threads``).
        runtime_env: Ray's ``runtime_env``: how your code reaches workers on other machines.
        placement_timeout: seconds to wait for workers to be placed (and, at least 120, to answer).
    """

    address: str | None = None
    actors: int = 2
    envs_per_actor: int = 4
    groups: int | None = None
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
        if self.groups is None and _whole(self.envs_per_actor, 1):
            self.groups = min(2, self.envs_per_actor)
        for least, names in ((1, ("actors", "envs_per_actor", "groups", "segment_length",
                                  "queue_batches", "publish_every", "torch_threads", "trainers")),
                             (0, ("policy_workers", "eval_workers", "max_restarts"))):
            for name in names:
                if not _whole(getattr(self, name), least):
                    raise ValueError(f"runtime.{name} must be a whole number >= {least}, got "
                                     f"{getattr(self, name)!r}")
                setattr(self, name, int(getattr(self, name)))  # (2.0: the workers count 2)
        for name, least, null in (("trainer_threads", 1, "torch_threads"),
                                  ("max_lag", 0, "no limit"), ("checkpoint_every", 1, "never"),
                                  ("num_cpus", 1, "what the workers reserve")):
            value = getattr(self, name)
            if value is not None and not _whole(value, least):
                raise ValueError(f"runtime.{name} must be a whole number >= {least} (or null: "
                                 f"{null}), got {value!r}")
            setattr(self, name, None if value is None else int(value))
        for name in ("cpus_per_actor", "cpus_per_policy", "cpus_per_trainer", "gpus_per_policy",
                     "gpus_per_trainer", "pull_interval"):
            if not is_number(getattr(self, name)) or getattr(self, name) < 0:
                raise ValueError(f"runtime.{name} must be a number >= 0, got "
                                 f"{getattr(self, name)!r}")
        for name, kind, null in (("address", str, "a local instance"),
                                 ("runtime_env", dict, "none")):
            value = getattr(self, name)
            if value is not None and not isinstance(value, kind):
                raise ValueError(f"runtime.{name} must be a {kind.__name__} (or null: {null}), "
                                 f"got {value!r}")
        if not isinstance(self.sync, bool):
            raise ValueError(f"runtime.sync must be true or false, got {self.sync!r}")
        if self.sync and self.policy_workers:
            raise ValueError("runtime.sync needs each actor's own policy copy: set "
                             "runtime.policy_workers=0 (or runtime.sync=false)")
        for many, few, why in (
                ("groups", "envs_per_actor", ""),
                ("trainers", "actors", ": each trainer learns from its own actors"),
                ("policy_workers", "actors", ": each policy worker serves its own actors, and "
                 "the others would serve none")):
            if getattr(self, many) > getattr(self, few):
                raise ValueError(f"runtime.{many} ({getattr(self, many)}) cannot exceed "
                                 f"runtime.{few} ({getattr(self, few)}){why}")
        if self.trainers > 1 and 0 < self.gpus_per_trainer < 1:
            raise ValueError(f"runtime.trainers > 1 with GPUs needs gpus_per_trainer >= 1 (NCCL "
                             f"gives each trainer its own GPU), got {self.gpus_per_trainer}")
        for name, null in (("trainer_timeout", ""), ("placement_timeout", ""),
                           ("env_timeout", " seconds (or null: no limit)")):
            value = getattr(self, name)
            if not (null and value is None or is_number(value) and value > 0):
                raise ValueError(f"runtime.{name} must be > 0{null}, got {value!r}")
        self._check_effects()

    def _check_effects(self) -> None:
        """A one-line ``ValueError`` for an option set to what no worker would use."""
        defaults = {f.name: f.default for f in fields(self)}
        alone = "runtime.policy_workers=0 (each actor runs its own policy copy"
        one_group = self.groups in (1, min(2, self.envs_per_actor))  # (1, or its default)
        for name, applies, why, fix in (
                ("cpus_per_policy", self.policy_workers > 0, f"{alone})",
                 "runtime.policy_workers"),
                ("gpus_per_policy", self.policy_workers > 0, f"{alone})",
                 "runtime.policy_workers"),
                ("groups", self.policy_workers > 0 or one_group,
                 f"{alone}, stepping its envs as one group)", "runtime.policy_workers"),
                ("trainer_timeout", self.trainers > 1, "runtime.trainers=1 (it bounds the "
                 "collectives of several trainers)", "runtime.trainers"),
                ("num_cpus", starts_local(self.address), f"runtime.address="
                 f"{self.address!r} (it sizes a local instance; a cluster has its own CPUs)",
                 "runtime.address=null")):
            if not applies and getattr(self, name) != defaults[name]:
                raise ValueError(f"runtime.{name}={getattr(self, name)!r} has no effect with "
                                 f"{why}: drop runtime.{name}, or set {fix}")
        for role, workers in (("policy", "policy_workers"), ("trainer", "trainers")):
            gpus = getattr(self, f"gpus_per_{role}")
            if gpus > 1:
                raise ValueError(f"runtime.gpus_per_{role}={gpus!r}: a {role} worker computes "
                                 f"on one GPU; set it to 1 or less (runtime.{workers}=N for N "
                                 "GPUs)")

    @classmethod
    def given(cls, runtime: Any) -> RuntimeConfig:
        """``DistributedRun``'s ``runtime`` (``None``: the defaults), checked."""
        if runtime is not None and not isinstance(runtime, RuntimeConfig):
            raise TypeError(f"DistributedRun's runtime must be a RuntimeConfig, got a "
                            f"{type(runtime).__name__}: RuntimeConfig(actors=4), or "
                            "RuntimeConfig.from_dict(options) for a dict")
        return runtime or cls()

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


def _whole(value: Any, least: int) -> bool:
    """Whether ``value`` is a whole number (not a bool or text) of at least ``least``."""
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and float(value).is_integer() and value >= least)
