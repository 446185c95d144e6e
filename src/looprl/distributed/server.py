"""The parameter server of a distributed run: the latest parameters a trainer published, as
bytes it never unpickles (its process imports no torch). Importing this module imports Ray."""

from __future__ import annotations

import logging
import pickle
import threading
from typing import Any

import ray
from ray import cloudpickle

from looprl.distributed.cluster import no_answer

__all__ = ["ParameterServer", "Publisher", "publication", "unpack"]

logger = logging.getLogger(__name__)


def publication(parameters: dict[str, Any], shared: list[Any] = (),
                values: list[dict[str, Any]] = (), written: list[dict[str, Any]] = (),
                run_values: dict[str, Any] | None = None) -> bytes:
    """The policy's ``parameters`` (CPU tensors, as NumPy arrays where NumPy has their dtype:
    ten times cheaper to pickle), the meta components' ``shared`` states, the ``hp/*``
    ``values`` of each learner (one per agent of independent learners), the exploration
    keys its update hooks ``written`` (``MetaHub.published_writes``) and ``run_values``, the
    trainer's ``hp/*`` values as a run logs them (``hyperparameters.csv``), cloudpickled."""
    arrays = {key: _array(value) for key, value in parameters.items()}
    converted = [key for key, value in parameters.items() if arrays[key] is not value]
    return cloudpickle.dumps((arrays, converted, list(shared), list(values), list(written),
                              dict(run_values or {})))


def unpack(payload: bytes) -> tuple[dict[str, Any], list[Any], list[dict[str, Any]],
                                    list[dict[str, Any]], dict[str, Any]]:
    """``(parameters, shared, values, written, run_values)`` of a ``publication`` (plain
    pickle reads cloudpickle)."""
    import torch
    arrays, converted, shared, values, written, run_values = pickle.loads(payload)
    for key in converted:
        arrays[key] = torch.from_numpy(arrays[key])
    return arrays, shared, values, written, run_values


def _array(value: Any) -> Any:
    """A CPU tensor's NumPy array (sharing its memory), or ``value`` itself."""
    numpy = getattr(value, "numpy", None)
    if numpy is None or getattr(value, "device", None) is None or value.device.type != "cpu":
        return value
    try:
        return numpy()
    except (TypeError, RuntimeError):  # (a dtype NumPy lacks: bfloat16; a tensor needing grad)
        return value


class Publisher:
    """Sends a trainer's publications to a ``ParameterServer`` from a thread of its own, which
    sends only the newest pending one: the trainer's loop does not wait while Ray stores it."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self._pending: tuple[int, bytes] | None = None
        self._sending = False
        self._changed = threading.Condition()
        threading.Thread(target=self._loop, name="publisher", daemon=True).start()

    def send(self, version: int, payload: bytes) -> None:
        """Publish ``payload`` (a ``publication``) of policy ``version``."""
        with self._changed:
            self._pending = (version, payload)
            self._changed.notify_all()

    def flush(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for every publication to be sent; whether they were."""
        with self._changed:
            done = self._changed.wait_for(
                lambda: self._pending is None and not self._sending, timeout)
        if not done:
            logger.warning("the trainer's latest parameters were not handed to the parameter "
                           "server yet (%s)", no_answer(timeout))
        return done

    def _loop(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._pending is not None)
                (version, payload), self._pending = self._pending, None
                self._sending = True
            try:
                self.server.put.remote(version, payload)
            except Exception as error:  # (the server's restart: the next publication retries)
                logger.warning("could not publish version %d: %s", version, error)
            finally:
                with self._changed:
                    self._sending = False
                    self._changed.notify_all()


@ray.remote(num_cpus=0)
class ParameterServer:
    """The latest parameters a trainer published, by serial number (not by policy version: a
    restarted trainer may publish an older one), and trainer 0's latest checkpoint (and the
    latest the driver asked for, which a periodic one taken since must not stand in for)."""

    def __init__(self, spec: bytes | None = None,
                 checkpoint: tuple[int, bytes] | None = None,
                 actors_meta: dict[int, Any] | None = None) -> None:
        self.serial = 0
        self.latest: tuple[int, int, bytes] | None = None
        self._spec, self._checkpoint = spec, checkpoint
        self._actors_meta = actors_meta or {}
        self._requested: tuple[int, bytes] | None = None
        self._warnings: dict[str, list[tuple[str, str]]] = {}  # (``keep_warnings``)

    def spec(self) -> bytes | None:
        """The run's ``AlgorithmSpec`` pickled (Ray may lose a worker's arguments over 100 KB)."""
        return self._spec

    def actor_meta(self, index: int) -> Any:
        """A resumed run's meta components' state of actor ``index`` (``None``: none), which
        each (re)started actor fetches: an actor's constructor arguments a restart needs from
        Ray's object store, which Ray warns about, and a resumed state can be large."""
        return self._actors_meta.get(index)

    def keep(self, steps: int, checkpoint: bytes, requested: bool = False) -> None:
        """Keep trainer 0's latest checkpoint, taken at train step ``steps`` (``requested``:
        as the driver asked, ``TrainerWorker.request_checkpoint``)."""
        self._checkpoint = (steps, checkpoint)
        if requested:
            self._requested = self._checkpoint

    def trainer_checkpoint(self, steps: int = 0, requested: bool = False
                           ) -> tuple[int, bytes] | None:
        """Trainer 0's latest checkpoint (``requested``: the latest the driver asked for),
        ``(steps, bytes)``, if taken at ``steps`` or later."""
        held = self._requested if requested else self._checkpoint
        return held if held is not None and held[0] >= steps else None

    def keep_warnings(self, worker: str, lines: list[tuple[str, str]]) -> None:
        """Keep the warnings of worker ``worker`` (a Ray name), whose constructor raised."""
        self._warnings.setdefault(worker, []).extend(lines)

    def take_warnings(self, worker: str) -> list[tuple[str, str]]:
        """The warnings kept of worker ``worker`` (``keep_warnings``), once."""
        return self._warnings.pop(worker, [])

    def put(self, version: int, payload: bytes) -> None:
        """Publish ``payload`` (a ``publication``) of policy ``version``."""
        self.serial += 1
        self.latest = (self.serial, version, payload)

    def get(self, newer_than: int) -> tuple[int, int, bytes] | None:
        """``(serial, version, payload)`` if published after serial ``newer_than``."""
        return self.latest if self.latest is not None and self.serial > newer_than else None
