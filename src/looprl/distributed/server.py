"""The parameter server of a distributed run: the latest parameters a trainer published.

It holds them as the bytes ``publication`` makes and never unpickles them, so its process
imports Ray alone, not torch (seconds of CPU at every run's start). Importing this module
imports Ray.
"""

from __future__ import annotations

import logging
import pickle
import threading
from typing import Any

import ray
from ray import cloudpickle

__all__ = ["ParameterServer", "Publisher", "publication", "unpack"]

logger = logging.getLogger(__name__)


def publication(parameters: dict[str, Any], shared: list[Any] = ()) -> bytes:
    """What a trainer publishes: the policy's ``parameters`` (CPU tensors) and the meta
    components' ``shared`` states, cloudpickled; tensors as NumPy arrays where NumPy has
    their dtype (pickling torch tensors costs ten times as much)."""
    arrays = {key: _array(value) for key, value in parameters.items()}
    converted = [key for key, value in parameters.items() if arrays[key] is not value]
    return cloudpickle.dumps((arrays, converted, list(shared)))


def unpack(payload: bytes) -> tuple[dict[str, Any], list[Any]]:
    """``(parameters, shared)`` of a ``publication`` (plain pickle reads cloudpickle)."""
    import torch  # (the server never unpacks: its process does not import torch)

    arrays, converted, shared = pickle.loads(payload)  # (the run's own trainer wrote it)
    for key in converted:
        arrays[key] = torch.from_numpy(arrays[key])
    return arrays, shared


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
    """Sends a trainer's publications to a ``ParameterServer``: from the calling thread
    (``background=False``: the call returns once Ray took the payload), or from a thread of
    its own, so that the trainer's loop goes on while Ray stores the payload (a quarter MB
    for a DQN; about a tenth of an asynchronous DQN trainer's time when its own loop sent
    them). In the background only the newest pending publication is sent: one that arrives
    while another waits replaces it."""

    def __init__(self, server: Any, background: bool) -> None:
        self.server = server
        self._pending: tuple[int, bytes] | None = None
        self._sending = False
        self._changed = threading.Condition()
        self._thread = None
        if background:
            self._thread = threading.Thread(target=self._loop, name="publisher", daemon=True)
            self._thread.start()

    def send(self, version: int, payload: bytes) -> None:
        """Publish ``payload`` (a ``publication``) of policy ``version``."""
        if self._thread is None:
            self.server.put.remote(version, payload)
            return
        with self._changed:
            self._pending = (version, payload)
            self._changed.notify_all()

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every publication was handed to Ray; whether that happened in time."""
        with self._changed:
            return self._changed.wait_for(
                lambda: self._pending is None and not self._sending, timeout)

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
    """The latest parameters a trainer published, by serial number, not by policy version:
    a trainer restarted from an older checkpoint publishes an older version, which must
    still replace what its dead predecessor published."""

    def __init__(self) -> None:
        self.serial = 0
        self.latest: tuple[int, int, bytes] | None = None

    def put(self, version: int, payload: bytes) -> None:
        """Publish ``payload`` (a ``publication``) of policy ``version``."""
        self.serial += 1
        self.latest = (self.serial, version, payload)

    def get(self, newer_than: int) -> tuple[int, int, bytes] | None:
        """``(serial, version, payload)`` if published after serial ``newer_than``."""
        return self.latest if self.latest is not None and self.serial > newer_than else None
