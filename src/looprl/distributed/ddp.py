"""Several trainer workers as one torch.distributed process group (``runtime.trainers > 1``),
whose collectives time out: a trainer that dies or hangs ends the others' in an error. No Ray."""

from __future__ import annotations

import hashlib
import os
import socket
import tempfile
import uuid
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

__all__ = ["TrainerGroup", "TrainerGroupError", "collective_failure", "digest", "rendezvous",
           "tcp_rendezvous"]


class TrainerGroupError(RuntimeError):
    """A collective of the trainer group failed: another trainer died, hung or left."""


def rendezvous(node_ip: str) -> str:
    """An ``init_method`` for rank 0 on ``node_ip``: a file on loopback, else TCP."""
    if node_ip.startswith("127."):
        return "file://" + os.path.join(tempfile.gettempdir(), f"looprl-ddp-{uuid.uuid4().hex}")
    return tcp_rendezvous(node_ip)


def tcp_rendezvous(node_ip: str) -> str:
    """A ``tcp://`` ``init_method`` on a free port of ``node_ip``."""
    with socket.socket() as probe:
        probe.bind((node_ip, 0))
        port = probe.getsockname()[1]
    return f"tcp://{node_ip}:{port}"


def collective_failure(error: BaseException) -> bool:
    """Whether ``error`` comes from the communication of a group."""
    text = str(error)
    return isinstance(error, dist.DistError) or any(
        word in text for word in ("gloo", "NCCL", "Connection reset", "Connection closed"))


def digest(module: nn.Module) -> str:
    """A short hash of ``module``'s parameters (equal digests: equal parameters)."""
    sha = hashlib.sha1()
    for parameter in module.parameters():
        sha.update(parameter.detach().cpu().contiguous().numpy().tobytes())
    return sha.hexdigest()[:16]


class TrainerGroup:
    """This process's membership in the trainers' process group."""

    def __init__(self, rank: int, size: int, gpus: bool, timeout: float):
        self.rank, self.size, self.gpus, self.timeout = rank, size, gpus, timeout

    def join(self, init_method: str) -> None:
        """Form the group with the other trainers (blocks until all joined)."""
        if init_method.startswith("file://"):
            loopback = [name for _, name in socket.if_nameindex() if name.startswith("lo")]
            if loopback:
                os.environ.setdefault("GLOO_SOCKET_IFNAME", loopback[0])
                if self.gpus:
                    os.environ.setdefault("NCCL_SOCKET_IFNAME", loopback[0])
        if self.gpus:
            torch.cuda.set_device(0)  # Ray shows each trainer its own GPU(s) only
        dist.init_process_group("cpu:gloo,cuda:nccl" if self.gpus else "gloo",
                                init_method=init_method, rank=self.rank, world_size=self.size,
                                timeout=timedelta(seconds=self.timeout))

    def distribute(self, policy: Any) -> None:
        """Let DDP average the gradients of ``policy.approximation`` or of a
        ``SingleModelPytorchPolicy``'s network over the group (``ValueError``: neither)."""
        approximation = getattr(policy, "approximation", None)
        if hasattr(approximation, "distribute"):  # (unused parameters: where a loss may)
            approximation.distribute(
                find_unused_parameters=getattr(policy, "unused_parameters", True))
        elif callable(getattr(policy, "distributed", None)):
            policy.distributed()
        else:
            raise ValueError(f"runtime.trainers > 1 needs a policy whose approximation "
                             f"(looprl.approximation.Approximation) runs its gradient forward "
                             f"passes, or a SingleModelPytorchPolicy; {type(policy).__name__} "
                             "is neither")

    def agree(self, ready: bool) -> bool:
        """Whether every trainer is ``ready``."""
        flag = torch.tensor([int(ready)])
        dist.all_reduce(flag, op=dist.ReduceOp.MIN)
        return bool(flag.item())

    def share(self, payload: bytes | None) -> bytes:
        """Rank 0's ``payload`` on every trainer."""
        box = [payload if self.rank == 0 else None]
        dist.broadcast_object_list(box, src=0, device=torch.device("cpu"))
        return box[0]

    def check_in_sync(self, module: nn.Module) -> None:
        """Raise ``ValueError`` unless every trainer's ``module`` has the same parameters."""
        mine = torch.tensor([int(digest(module), 16) >> 1], dtype=torch.int64)
        every = [torch.zeros_like(mine) for _ in range(self.size)]
        dist.all_gather(every, mine)
        if len({int(value) for value in every}) > 1:
            raise ValueError("the trainers' parameters differ after a step: the policy's "
                             "analyze must run its network through policy.approximation(...) "
                             "(a SingleModelPytorchPolicy's: through self.net(...)) for DDP to "
                             "average the gradients")
