"""Where a run's Ray runs: ``start_ray`` joins a cluster or starts a local instance on
127.0.0.1 only; whether it can hold the run's workers, and the waits for their answers."""

from __future__ import annotations

import logging
import math
import os
import socket
import time
from typing import Any

from looprl.core.imports import import_extra
from looprl.core.reaper import LOOPBACK, local_instance_settings, signals_kept, start_local_ray
from looprl.core.suggest import did_you_mean, message_lines
from looprl.distributed.config import RuntimeConfig, starts_local

__all__ = ["answers", "check_local_resources", "error_line", "import_ray", "local_gpus",
           "local_instance_settings", "not_placed", "start_ray", "warn_cluster_too_small"]

log = logging.getLogger(__name__)


def import_ray() -> Any:
    """The ``ray`` module, or an ``ImportError`` naming the extra that installs it."""
    return import_extra("ray", "A run on Ray needs Ray", "distributed")


def start_ray(runtime: RuntimeConfig) -> bool:
    """Join ``runtime.address`` or start a local instance on loopback; whether this call
    started Ray. ``ConnectionError``: the address cannot be reached; ``RuntimeError``: a local
    instance lacks what the run reserves, or Ray runs already and ``runtime_env`` is set."""
    ray = import_ray()
    _check_runtime_env(runtime.runtime_env)
    if ray.is_initialized():
        if runtime.runtime_env:
            raise RuntimeError("runtime.runtime_env takes effect when the run starts or joins "
                               "Ray, and Ray is already initialized in this process: pass it "
                               "to your own ray.init(runtime_env=...), or leave Ray to the run")
        return False
    if not starts_local(runtime.address):  # join a cluster
        address = runtime.address
        if address == "auto":
            address = os.environ.get("RAY_ADDRESS") or "auto"
        if address != "auto":
            _check_reachable(address)
        try:
            with signals_kept():
                ray.init(address=address, runtime_env=runtime.runtime_env,
                         logging_level=logging.WARNING)
        except KeyboardInterrupt:  # (held until ray.init returned: leave the cluster)
            ray.shutdown()
            raise
        except ConnectionError as error:
            raise ConnectionError(f"runtime.address={runtime.address!r}: {error_line(error)}; "
                                  "start a cluster with `ray start --head` or leave "
                                  "runtime.address unset to run locally") from None
        return True
    cpus = runtime.num_cpus or max(math.ceil(runtime.reserved_cpus()), os.cpu_count() or 1)
    check_local_resources(runtime, {"CPU": cpus, "GPU": local_gpus()})
    try:
        start_local_ray(cpus, runtime_env=runtime.runtime_env)
    except Exception as error:  # Ray raises a bare Exception when its processes do not start
        if "during startup" not in str(error):
            raise
        raise ConnectionError(f"the local Ray instance did not start ({error_line(error)}); "
                              "the machine may be overloaded: try again when it is quieter"
                              ) from None
    _check_loopback()
    return True


def check_local_resources(runtime: RuntimeConfig, have: dict[str, float]) -> None:
    """``RuntimeError`` if the run reserves more than a local instance would ``have``."""
    cpus = "lower runtime.actors or the runtime.cpus_per_* options"
    if runtime.num_cpus is not None:  # (the instance's size, which the user set too low)
        cpus = (f"raise runtime.num_cpus to {math.ceil(runtime.reserved_cpus())} (or leave it "
                f"unset), {cpus}")
    for kind, wanted, advice in (
            ("CPU", runtime.reserved_cpus(), cpus),
            ("GPU", runtime.reserved_gpus(), "lower runtime.gpus_per_trainer and "
             "runtime.gpus_per_policy")):
        if wanted > have.get(kind, 0):
            raise RuntimeError(f"the run reserves {wanted:g} {kind}s and the local Ray "
                               f"instance has {have.get(kind, 0):g}: {advice}, or "
                               "join a cluster that has them (runtime.address=...)")


def local_gpus() -> int:
    """The GPUs a local Ray instance started here could use (torch's count)."""
    import torch
    return torch.cuda.device_count()


def _check_loopback() -> None:
    """Warn (one line) if a local instance asked for loopback and did not get it."""
    import ray
    addresses = sorted({node["NodeManagerAddress"] for node in ray.nodes()} - {"127.0.0.1"})
    if addresses and os.environ.get(LOOPBACK) == "0":
        log.warning("the local Ray instance listens on %s, not on 127.0.0.1 only: Ray was "
                    "imported before looprl.distributed set %s=0; import looprl.distributed "
                    "before ray, or set %s=0 in the environment, to keep it on loopback",
                    addresses[0], LOOPBACK, LOOPBACK)


def answer_timeout(runtime: RuntimeConfig) -> float:
    """Seconds to wait for a worker's answer: ``placement_timeout``, at least 120 s."""
    return max(120.0, runtime.placement_timeout)


def no_answer(timeout: float) -> str:
    """What a message says of a wait of ``answer_timeout`` that ran out: the option to raise."""
    return (f"no answer within {timeout:g}s: the machine may be overloaded; raise "
            "runtime.placement_timeout")


def answers(refs: dict[Any, Any], timeout: float, died: set[Any] | None = None,
            any_error: bool = False) -> dict[Any, Any]:
    """The answers of ``refs`` within ``timeout`` seconds in all, of the live workers (the
    dead added to ``died``; ``any_error``: skip a failed call too)."""
    import ray
    errors = ray.exceptions
    skipped = errors.RayError if any_error else (errors.RayActorError, errors.GetTimeoutError)
    deadline, answered = time.monotonic() + timeout, {}
    for key, ref in refs.items():
        try:
            answered[key] = ray.get(ref, timeout=max(0.0, deadline - time.monotonic()))
        except errors.ActorDiedError:
            if died is not None:
                died.add(key)
        except skipped:
            continue
    return answered


def error_line(error: BaseException) -> str:
    """One line of ``error``'s text: a Ray error's last (it ends with the original message),
    another's first (its summary: torch's "Expected parameter logits ... but found invalid
    values:" above the tensor)."""
    lines = message_lines(error)  # (without torch's CUDA advice, which ends a CUDA error)
    if not lines:
        return type(error).__name__
    return lines[-1] if type(error).__module__.startswith("ray.") else lines[0]


def _check_runtime_env(runtime_env: dict[str, Any] | None) -> None:
    """``ValueError`` for a ``runtime_env`` key Ray does not know (else silently ignored)."""
    from ray.runtime_env import RuntimeEnv
    known = sorted(name for name in RuntimeEnv.known_fields if not name.startswith("_"))
    unknown = sorted(set(runtime_env or {}) - RuntimeEnv.known_fields)
    if unknown:
        raise ValueError(f"runtime.runtime_env has no key {unknown[0]!r}."
                         f"{did_you_mean(str(unknown[0]), known)} Ray's keys: {known} (a "
                         "plugin's: pass it to your own ray.init(runtime_env=...))")


def _check_reachable(address: str) -> None:
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not port.isdigit():
        raise ConnectionError(f"runtime.address={address!r} is not HOST:PORT (the head node's "
                              "address and port, such as 10.0.0.1:6379), 'auto' or null (a "
                              "local instance)")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=3):
            return
    except (OSError, ValueError) as error:
        raise ConnectionError(f"cannot reach a Ray cluster at {address!r} ({error}); start one "
                              "with `ray start --head` or leave runtime.address unset to run "
                              "locally") from None


def not_placed(ray: Any, rt: RuntimeConfig, missing: list[str]) -> None:
    """``RuntimeError`` for the ``missing`` workers, not placed in time: why (one line)."""
    free, total = ray.available_resources(), ray.cluster_resources()
    _check_node_fits(ray, rt, missing)
    if _holds(total, rt):
        actors = any(name.startswith(("actor", "eval")) for name in missing)
        raise RuntimeError(
            f"worker(s) {missing} did not start within {rt.placement_timeout:g}s, although "
            f"the cluster holds what the run reserves ({rt.reserved_cpus():g} CPUs, "
            f"{rt.reserved_gpus():g} GPUs): its processes start slowly, so the machine may "
            "be overloaded" + (", or an actor's environment hangs in its first reset (an "
            "actor makes and resets its env copies as it starts: try the environment with "
            "looprl.distributed.test_environment)" if actors else "") +
            "; raise runtime.placement_timeout or run when it is quieter")
    raise RuntimeError(
        f"the cluster did not place worker(s) {missing} within "
        f"{rt.placement_timeout:g}s: the run reserves {rt.reserved_cpus():g} CPUs and "
        f"{rt.reserved_gpus():g} GPUs and the cluster has {free.get('CPU', 0):g} CPUs and "
        f"{free.get('GPU', 0):g} GPUs free; lower runtime.actors or the "
        "runtime.cpus_per_*/gpus_per_* options, or add nodes")


def _holds(resources: dict[str, float], rt: RuntimeConfig) -> bool:
    """Whether ``resources`` (Ray's) hold the CPUs and GPUs the run reserves."""
    return (rt.reserved_cpus() <= resources.get("CPU", 0)
            and rt.reserved_gpus() <= resources.get("GPU", 0))


def warn_cluster_too_small(ray: Any, rt: RuntimeConfig) -> None:
    """Warn if the cluster cannot hold the run's workers (an autoscaler may add nodes)."""
    total = ray.cluster_resources()
    try:
        _check_node_fits(ray, rt, ["actor", "trainer"] + ["policy"] * (rt.policy_workers > 0))
    except RuntimeError as error:
        log.warning("%s; the workers wait up to runtime.placement_timeout=%gs for an "
                    "autoscaler to add one", error, rt.placement_timeout)
    if not _holds(total, rt):
        log.warning(
            "the run reserves %g CPUs and %g GPUs and the Ray cluster has %g CPUs and %g GPUs "
            "in all: its workers wait up to runtime.placement_timeout=%gs for an autoscaler to "
            "add nodes; lower runtime.actors or the runtime.cpus_per_*/gpus_per_* options, or "
            "give Ray more (ray.init(num_cpus=...))", rt.reserved_cpus(), rt.reserved_gpus(),
            total.get("CPU", 0), total.get("GPU", 0), rt.placement_timeout)


def _check_node_fits(ray: Any, rt: RuntimeConfig, missing: list[str]) -> None:
    """``RuntimeError`` if no node is large enough for one of the ``missing`` workers."""
    nodes = [node["Resources"] for node in ray.nodes() if node["Alive"]]
    for role in ("actor", "policy", "trainer"):
        cpus = getattr(rt, f"cpus_per_{role}")
        gpus = getattr(rt, f"gpus_per_{role}", 0.0)
        if not any(name.startswith(role) or role == "actor" and name.startswith("eval")
                   for name in missing):
            continue
        if not any(node.get("CPU", 0) >= cpus and node.get("GPU", 0) >= gpus for node in nodes):
            largest = max(nodes, key=lambda node: (node.get("CPU", 0), node.get("GPU", 0)),
                          default={})
            raise RuntimeError(
                f"no node of the cluster can place {role} workers: each reserves {cpus:g} "
                f"CPUs and {gpus:g} GPUs (runtime.cpus_per_{role}"
                + (f", runtime.gpus_per_{role}" if role != "actor" else "")
                + f") and the largest node has {largest.get('CPU', 0):g} CPUs and "
                f"{largest.get('GPU', 0):g} GPUs; lower them, or add a larger node")
