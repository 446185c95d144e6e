"""A user's meta component written as seed 001 shows (hook lists, the metrics dictionary),
shared by the local and the Ray tests: it must run unchanged under both runtimes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch

from looprl.meta import MetaComponent


class ConstantBonus(MetaComponent):
    """Adds ``bonus`` to every reward and counts its hook calls in the metrics dictionary;
    with ``record`` (a directory), each copy writes its counts to a file of its own there."""

    def __init__(self, bonus: float = 100.0, record: str | None = None):
        super().__init__()
        self.bonus = bonus
        self.record = record
        self.pre_episode_methods.append(self.count_pre_episode)
        self.pre_step_methods.append(self.count_pre_step)
        self.post_step_methods.append(self.add_bonus)
        self.post_episode_methods.append(self.count_post_episode)
        self.pre_update_methods.append(self.read_batch)
        self.post_update_methods.append(self.count_post_update)

    def count(self, metrics: dict[str, Any], hook: str) -> None:
        calls = metrics.setdefault("calls", {})
        calls[hook] = calls.get(hook, 0) + 1
        if self.record is not None and hook in ("post_episode", "post_update"):
            path = Path(self.record) / f"{os.getpid()}-{id(self)}.json"
            path.write_text(json.dumps(calls))

    def count_pre_episode(self, metrics: dict[str, Any]) -> None:
        self.count(metrics, "pre_episode")

    def count_pre_step(self, metrics: dict[str, Any]) -> None:
        self.count(metrics, "pre_step")

    def add_bonus(self, metrics: dict[str, Any]) -> None:
        metrics["transition"]["reward"] = metrics["transition"]["reward"] + self.bonus
        self.count(metrics, "post_step")

    def count_post_episode(self, metrics: dict[str, Any]) -> None:
        self.count(metrics, "post_episode")

    def read_batch(self, metrics: dict[str, Any]) -> None:
        calls = metrics.setdefault("calls", {})
        reward = float(torch.as_tensor(metrics["batch"].reward).max())
        calls["max_batch_reward"] = max(calls.get("max_batch_reward", -1e9), reward)
        self.count(metrics, "pre_update")

    def count_post_update(self, metrics: dict[str, Any]) -> None:
        self.count(metrics, "post_update")


def records(directory: Path) -> list[dict[str, Any]]:
    """What every copy wrote to ``directory``."""
    return [json.loads(path.read_text()) for path in sorted(directory.glob("*.json"))]
