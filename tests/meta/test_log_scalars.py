"""Scalars a meta component logs by writing a ``log/*`` key (docs/meta-components.md): the
loop writes them to TensorBoard and ``log.csv``; a run whose components write none does no
``log/`` work."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tests.meta.test_hub import SMALL_DQN, SMALL_PPO, BonusReward, _experiment

from looprl.meta import RND, MetaComponent
from looprl.meta.hub import MetaHub


def _scalars(log_dir: str) -> dict[str, list[tuple[int, float]]]:
    accumulator = EventAccumulator(log_dir, size_guidance={"scalars": 0})
    accumulator.Reload()
    return {tag: [(e.step, e.value) for e in accumulator.Scalars(tag)]
            for tag in accumulator.Tags()["scalars"]}


def _logged(experiment) -> tuple[dict[str, list[tuple[int, float]]],
                               dict[str, list[tuple[int, float]]]]:
    """Close ``experiment``; the TensorBoard scalars and the ``log.csv`` rows it wrote."""
    experiment.close()
    log_dir = experiment.logger.log_dir
    return _scalars(log_dir), _log_csv(log_dir)


def _log_csv(log_dir: str) -> dict[str, list[tuple[int, float]]]:
    rows: dict[str, list[tuple[int, float]]] = {}
    with open(Path(log_dir) / "log.csv", newline="") as file:
        for row in csv.DictReader(file):
            rows.setdefault(row["name"], []).append((int(row["frame"]), float(row["value"])))
    return rows


class LogStep(MetaComponent):
    """A user's component: logs the step it saw last and a tensor meaning its mean."""

    def __init__(self):
        super().__init__()
        self.post_step_methods.append(self.write)

    def write(self, metrics: dict[str, Any]) -> None:
        metrics["log/my_step"] = float(metrics["step"])
        metrics["log/my_bonus"] = torch.tensor([1.0, 3.0])


class Write(MetaComponent):
    """Writes the given keys before every step."""

    def __init__(self, values: dict[str, Any]):
        super().__init__()
        self.values = values
        self.pre_step_methods.append(lambda metrics: metrics.update(self.values))


@pytest.mark.parametrize("builder", [SMALL_DQN, SMALL_PPO], ids=["single-env", "parallel"])
def test_a_components_log_key_is_in_tensorboard_and_the_csv(builder, tmp_path: Path) -> None:
    experiment = _experiment(builder, "CartPole-v1", tmp_path, 300, meta=[LogStep()])
    scalars, table = _logged(experiment)
    steps = scalars["log/my_step"]
    # logged once per training episode end (several ending in one parallel step: once)
    assert 3 <= len(steps) <= experiment.episode
    assert all(frame == value for frame, value in steps)  # the step of the episode's end
    assert [value for _, value in scalars["log/my_bonus"]] == [2.0] * len(steps)  # the mean
    assert table == {"my_step": steps, "my_bonus": scalars["log/my_bonus"]}


def test_rnd_logs_its_intrinsic_rewards_and_predictor_loss(tmp_path: Path) -> None:
    rnd = RND(seed=0, feature_dim=8, hidden=(16,))
    experiment = _experiment(SMALL_PPO, "CartPole-v1", tmp_path, 300, meta=[rnd])
    experiment.close()
    scalars = _scalars(experiment.logger.log_dir)
    means = scalars["log/rnd/intrinsic_reward_mean"]
    maxima = scalars["log/rnd/intrinsic_reward_max"]
    assert len(means) == len(maxima) >= 3
    assert all(0 < mean <= high for (_, mean), (_, high) in zip(means, maxima))
    assert scalars["log/rnd/predictor_loss"] and all(
        loss > 0 for _, loss in scalars["log/rnd/predictor_loss"])


def test_without_a_log_key_the_loop_does_no_log_work(tmp_path: Path, monkeypatch) -> None:
    plain = _experiment(SMALL_DQN, "CartPole-v1", tmp_path / "plain", 200)
    plain.close()
    assert plain.hub is None and not (Path(plain.logger.log_dir) / "log.csv").exists()

    looks = []
    new_keys = MetaHub._new_keys
    monkeypatch.setattr(MetaHub, "_new_keys", lambda hub: looks.append(1) or new_keys(hub))
    hooked = _experiment(SMALL_DQN, "CartPole-v1", tmp_path / "hooked", 200,
                         meta=[BonusReward(1.0)])
    hooked.close()
    # the hub looked for new keys when the dictionary grew, not at each of ~400 hook calls
    assert hooked.hub._log_keys == set() and 0 < len(looks) <= 10
    assert not (Path(hooked.logger.log_dir) / "log.csv").exists()


def test_log_scalars_takes_the_values_once_and_rejects_what_is_no_number(tmp_path) -> None:
    values = {"log/a": torch.tensor([1.0, 3.0]), "log/b": 2, "log/empty": torch.zeros(0)}
    hub = _experiment(SMALL_DQN, "CartPole-v1", tmp_path, meta=[Write(values)]).hub
    hub.run("pre_step")
    assert hub.log_scalars() == {"log/a": 2.0, "log/b": 2.0}
    assert not any(key.startswith("log/") for key in hub.metrics)  # taken: logged once
    assert hub.log_scalars() == {}
    values.clear()
    values["log/text"] = "high"
    hub.run("pre_step")
    with pytest.raises(ValueError, match=r"metrics\['log/text'\] is a str: a log/ key holds"):
        hub.log_scalars()
    values["log/text"] = torch.ones(2, 2)
    hub.run("pre_step")
    with pytest.raises(ValueError, match=r"Tensor of shape \(2, 2\)"):
        hub.log_scalars()


class AddKeys(MetaComponent):
    """Seed 001's RND pattern: adds keys to the transition "to enable logging" (and logs the
    mean of its rows since its log key was last taken, to compare with)."""

    def __init__(self):
        super().__init__()
        self.post_step_methods.append(self.add)
        self.rows: list[float] = []

    def add(self, metrics: dict[str, Any]) -> None:
        transition = metrics["transition"]
        value = 0.5 + transition["env_index"].float()  # 0.5 on copy 0, 1.5 on copy 1
        transition["intrinsic_reward"] = value
        transition["note"] = "not a number"  # left out, no error
        if "log/reference" not in metrics:  # taken: a new logging interval
            self.rows = []
        self.rows += value.tolist()
        metrics["log/reference"] = sum(self.rows) / len(self.rows)


@pytest.mark.parametrize("builder", [SMALL_DQN, SMALL_PPO], ids=["single-env", "parallel"])
def test_a_key_a_component_adds_to_the_transition_is_logged_as_its_mean(
        builder, tmp_path: Path) -> None:
    experiment = _experiment(builder, "CartPole-v1", tmp_path, 300, meta=[AddKeys()])
    scalars, table = _logged(experiment)
    logged = scalars["log/transition/intrinsic_reward"]
    assert 3 <= len(logged) <= experiment.episode
    # the mean over the interval's rows (copies that reset take no step: not exactly 1.0)
    assert [frame for frame, _ in logged] == [frame for frame, _ in scalars["log/reference"]]
    assert [value for _, value in logged] == pytest.approx(
        [value for _, value in scalars["log/reference"]])
    if builder is SMALL_DQN:
        assert {value for _, value in logged} == {0.5}
    else:
        assert len({value for _, value in logged}) > 1
    assert [v for _, v in table["transition/intrinsic_reward"]] == pytest.approx(
        [v for _, v in logged]) and "log/transition/note" not in scalars


def test_rnd_intrinsic_reward_in_the_transition_is_logged(tmp_path: Path) -> None:
    rnd = RND(seed=0, feature_dim=8, hidden=(16,))
    experiment = _experiment(SMALL_PPO, "CartPole-v1", tmp_path, 300, meta=[rnd])
    experiment.close()
    scalars = _scalars(experiment.logger.log_dir)
    logged, own = scalars["log/transition/intrinsic_reward"], scalars[
        "log/rnd/intrinsic_reward_mean"]
    assert len(logged) >= 3 and [v for _, v in logged] == pytest.approx(
        [v for _, v in own], rel=1e-5)  # the same mean, two ways


def test_a_transition_keys_mean_over_more_than_2_24_rows_counts_every_row() -> None:
    """A long logging interval (episodes that do not end): the running sum was a float32
    tensor, which stops growing by 1 at 2**24 (the mean of ones fell below 1)."""
    from looprl.meta.hub import TransitionMeans

    means = TransitionMeans()
    means.add({"visit": torch.ones(2**24)}, 0)
    for _ in range(1000):
        means.add({"visit": torch.ones(1)}, 0)
    assert means.take() == {"log/transition/visit": 1.0}


def test_without_added_transition_keys_the_hub_keeps_no_sums(tmp_path: Path) -> None:
    hooked = _experiment(SMALL_DQN, "CartPole-v1", tmp_path, 200, meta=[BonusReward(1.0)])
    hooked.close()
    assert hooked.hub._means is None  # only the length was compared, per step


def test_a_schedule_logs_the_learning_rate_it_sets(tmp_path: Path) -> None:
    from looprl.meta import CosineLRSchedule

    schedule = CosineLRSchedule(initial_lr=1e-3, min_lr=1e-4, period=4)
    experiment = _experiment(SMALL_PPO, "CartPole-v1", tmp_path, 300, meta=[schedule])
    experiment.close()
    logged = [value for _, value in _scalars(experiment.logger.log_dir)["log/schedule/lr"]]
    values = [schedule.value(t) for t in range(4)]  # a cycle of four updates
    assert len(logged) >= 3 and len(set(logged)) > 1
    assert all(any(v == pytest.approx(w) for w in values) for v in logged)
