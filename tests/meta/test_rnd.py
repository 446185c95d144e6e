"""RND and NovelD against synthetic metrics dictionaries."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch import nn

from looprl.core import SampleBatch
from looprl.meta.rnd import RND, NovelD
from looprl.nn.fields import image_extractor

CENTER = torch.tensor([2.0, 0.0, 0.0, 0.0])


def cluster(center: torch.Tensor, n: int) -> torch.Tensor:
    return center + 0.1 * torch.randn(n, center.shape[0])


def replay_batch(next_obs: torch.Tensor) -> SampleBatch:
    """A batch as looprl's replay buffers give trainers (one-step windows ``[2, n]``)."""
    n = len(next_obs)
    no = torch.zeros(2, n, dtype=torch.bool)
    return SampleBatch(obs=torch.stack((torch.zeros_like(next_obs), next_obs)),
                       action=torch.zeros(2, n, dtype=torch.long), reward=torch.zeros(2, n),
                       done=no, truncated=no)


def small_rnd(**kwargs) -> RND:
    return RND(seed=0, feature_dim=32, hidden=(64, 64), **kwargs)


def seen_and_novel_errors(rnd: RND) -> tuple[float, float]:
    errors = rnd.rnd_net.get_error
    return errors(cluster(CENTER, 256)).mean().item(), errors(cluster(-CENTER, 256)).mean().item()


def test_rnd_rewards_novel_states_more_than_often_seen_ones():
    torch.manual_seed(0)
    rnd = small_rnd(obs_shape=(4,))
    seen_before, novel_before = seen_and_novel_errors(rnd)
    assert seen_before > 0.5 * novel_before  # untrained: no preference for the far cluster
    for _ in range(200):
        rnd.update_predictor({"batch": replay_batch(cluster(CENTER, 64)), "losses": {}})
    seen, novel = seen_and_novel_errors(rnd)
    assert seen < 0.05 * novel
    assert novel > 0.5 * novel_before  # the far cluster stays novel

    metrics = {"transition": {"next_state": torch.stack([CENTER, -CENTER]),
                              "reward": torch.zeros(2)}}
    rnd.get_reward(metrics)
    bonus = metrics["transition"]["intrinsic_reward"]
    assert bonus[1] > 10 * bonus[0]


def test_seed_get_reward_example_as_written():
    """Seed 001: networks built lazily from next_state's shape; intrinsic_reward is
    weight * rnd_net.get_error(next_state) and the reward grows by the same amount."""
    torch.manual_seed(1)
    rnd = RND(internal_reward_weight=0.5)
    assert rnd.rnd_net is None
    next_state = torch.randn(3, 5)
    reward = torch.tensor([1.0, -1.0, 0.0])
    metrics = {"transition": {"state": torch.randn(3, 5), "next_state": next_state,
                              "reward": reward.clone()}}
    assert rnd.post_step_methods == [rnd.get_reward]
    for method in rnd.post_step_methods:
        metrics = method(metrics)
    assert rnd.rnd_net is not None and rnd.obs_shape == (5,)
    error = rnd.rnd_net.get_error(next_state)
    assert error.shape == (3,) and bool((error > 0).all())
    torch.testing.assert_close(metrics["transition"]["intrinsic_reward"], 0.5 * error)
    torch.testing.assert_close(metrics["transition"]["reward"], reward + 0.5 * error)
    assert metrics["transition"]["reward"].shape == (3,)


def test_normalized_bonus_divides_by_running_std_of_errors():
    torch.manual_seed(2)
    rnd = small_rnd(internal_reward_weight=2.0, normalize=True)
    observed = []
    for _ in range(3):
        next_state = torch.randn(4, 3)
        metrics = {"transition": {"next_state": next_state, "reward": torch.zeros(4)}}
        rnd.get_reward(metrics)
        observed.append(rnd.rnd_net.get_error(next_state))
    # the statistics of all 12 errors seen and RunningMeanStd's prior (mean 0, variance 1)
    # of pseudo-count 1e-4
    values = torch.cat(observed).double()
    count = len(values) + 1e-4
    mean = values.sum() / count
    var = (1e-4 * (1.0 + mean**2) + (values - mean).pow(2).sum()) / count
    expected = 2.0 * observed[-1] / (var + 1e-8).sqrt().float()
    torch.testing.assert_close(metrics["transition"]["intrinsic_reward"], expected)


def test_normalized_bonus_is_the_error_itself_until_two_were_seen():
    torch.manual_seed(2)
    rnd = small_rnd(internal_reward_weight=2.0, normalize=True)
    next_state = torch.randn(1, 3)
    metrics = {"transition": {"next_state": next_state, "reward": torch.zeros(1)}}
    rnd.get_reward(metrics)
    expected = 2.0 * rnd.rnd_net.get_error(next_state)
    torch.testing.assert_close(metrics["transition"]["intrinsic_reward"], expected)
    empty = {"transition": {"next_state": torch.zeros(0, 3), "reward": torch.zeros(0)}}
    assert rnd.get_reward(empty)["transition"]["intrinsic_reward"].shape == (0,)
    assert rnd.reward_stats.count == pytest.approx(1 + 1e-4)  # (no rows: left alone)
    assert torch.isfinite(rnd.reward_stats.var)


def test_mean_intrinsic_reward_of_a_long_interval_counts_every_bonus():
    """Episodes that do not end (one logging interval): the bonuses' running sum was float32,
    which stops growing by 1 at 2**24 (the mean of bonuses of 1 fell below 1)."""
    rnd, metrics = RND(), {}
    rnd.log_bonus(metrics, torch.ones(2**24))
    for _ in range(1000):
        rnd.log_bonus(metrics, torch.ones(1))
    assert float(metrics["log/rnd/intrinsic_reward_mean"]) == 1.0


def test_predictor_trains_on_segments_and_on_buffered_states():
    for make_batch in (replay_batch, lambda obs: None):
        torch.manual_seed(3)
        rnd = small_rnd(batch_size=64)
        for _ in range(200):
            obs = cluster(CENTER, 64)
            rnd.get_reward({"transition": {"next_state": obs, "reward": torch.zeros(64)}})
            metrics = {"batch": make_batch(obs), "losses": {}}
            rnd.update_predictor(metrics)
        assert "rnd" in metrics["losses"]
        seen, novel = seen_and_novel_errors(rnd)
        assert seen < 0.05 * novel


def test_predictor_uses_the_batch_not_the_buffer():
    """A replay batch's next states are what the predictor learns, even when the recent
    transitions were elsewhere."""
    torch.manual_seed(4)
    rnd = small_rnd(obs_shape=(4,))
    rnd.get_reward({"transition": {"next_state": cluster(-CENTER, 64), "reward": torch.zeros(64)}})
    assert rnd.recent.size == 64
    for _ in range(200):
        rnd.update_predictor({"batch": replay_batch(cluster(CENTER, 64))})
    seen, novel = seen_and_novel_errors(rnd)
    assert seen < 0.05 * novel
    assert rnd.recent is None  # batches hold observations: no more buffering
    rnd.get_reward({"transition": {"next_state": cluster(-CENTER, 8), "reward": torch.zeros(8)}})


def test_image_observations_uint8_and_feature_extractor_and_factory():
    torch.manual_seed(5)
    frames = torch.randint(0, 256, (2, 3, 7, 7), dtype=torch.uint8)
    rnd = RND(seed=0)
    metrics = {"transition": {"next_state": frames, "reward": torch.zeros(2)}}
    rnd.get_reward(metrics)
    assert isinstance(rnd.rnd_net.target[0].layers[0], nn.Conv2d)
    # uint8 frames are scaled by 1/255: the same error as the float frames / 255
    torch.testing.assert_close(rnd.rnd_net.get_error(frames),
                               rnd.rnd_net.get_error(frames.float() / 255.0))
    atari = RND(network="nature", obs_shape=(4, 84, 84))
    assert atari.rnd_net.get_error(torch.zeros(2, 4, 84, 84, dtype=torch.uint8)).shape == (2,)

    def factory(shape):
        return nn.Sequential(nn.Flatten(), nn.Linear(int(np.prod(shape)), 8))

    custom = RND(network=factory, obs_shape=(2, 3))
    assert custom.rnd_net.predictor[1].out_features == 8


def test_image_networks_are_the_image_encoder_of_looprls_policies():
    """``"cnn"`` (and ``"auto"`` for images) is ``nn.fields.image_extractor``: the Nature
    CNN for Atari frames, a small CNN for grid worlds, then a linear layer."""
    for shape in ((4, 84, 84), (3, 7, 7)):
        for network in ("auto", "cnn"):
            rnd = RND(network=network, obs_shape=shape, seed=0, feature_dim=16)
            layers = [type(m) for m in rnd.rnd_net.target.modules()]
            assert layers[1:-1] == [type(m) for m in image_extractor(shape).modules()]
            assert layers[-1] is nn.Linear and rnd.rnd_net.target[-1].out_features == 16


def test_bad_networks_raise_clear_errors():
    with pytest.raises(ValueError, match="Unknown RND network 'resnett'.*mlp"):
        RND(network="resnett")
    with pytest.raises(ValueError, match=r"does not fit inputs of shape \(4, 10, 10\)"):
        RND(network="nature", obs_shape=(4, 10, 10))


@pytest.mark.parametrize(("kwargs", "message"), [
    # were: UnboundLocalError at the first update, ZeroDivisionError at the first step, NaN
    # bonuses (blamed on the environment), fewer rows than asked, cells of floor(obs / 0)
    ({"gradient_steps": 0}, "gradient_steps must be positive"),
    ({"buffer_size": 0}, "buffer_size must be positive"),
    ({"feature_dim": 0}, "feature_dim must be positive"),
    ({"batch_size": -3}, "batch_size must be positive"),
    ({"internal_reward_weight": float("nan")},
     r"^NovelD's internal_reward_weight must be finite and >= 0, got nan$"),
    ({"resolution": 0.0}, r"^NovelD's resolution must be positive \(> 0\), got 0.0$"),
    # were: NaN rewards, the optimizer's "Invalid learning rate" at the first step, "'int'
    # object is not iterable", torch's list of device types
    ({"alpha": float("nan")}, r"^NovelD's alpha must be finite and >= 0, got nan$"),
    ({"lr": -1e-3}, r"^NovelD's lr must be positive \(> 0\), got -0.001$"),
    ({"lr": 0}, r"^NovelD's lr must be positive \(> 0\), got 0$"),
    ({"lr": float("nan")}, r"^NovelD's lr must be finite and positive \(> 0\), got nan$"),
    ({"hidden": 64}, r"hidden must be a sequence of layer sizes like \(256, 256\), got 64"),
    ({"hidden": (64, 0)}, r"hidden\[1\] must be positive"),
    ({"device": "gpu"}, "Unknown device 'gpu'"),
    # were taken: a bonus of N(s') + N(s), a novelty penalty, an infinite learning rate
    ({"alpha": -1}, r"^NovelD's alpha must be >= 0, got -1$"),
    ({"internal_reward_weight": -0.1}, r"^NovelD's internal_reward_weight must be >= 0, got -0.1$"),
    ({"lr": float("inf")}, r"^NovelD's lr must be finite and positive \(> 0\), got inf$"),
    ({"resolution": float("inf")}, r"^NovelD's resolution must be finite and positive"),
])
def test_bad_arguments_are_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message):
        NovelD(**kwargs)


def test_state_dict_round_trip_gives_identical_rewards():
    torch.manual_seed(6)
    rnd = small_rnd(normalize=True)
    for _ in range(5):
        obs = torch.randn(8, 4)
        rnd.get_reward({"transition": {"next_state": obs, "reward": torch.zeros(8)}})
        rnd.update_predictor({"batch": replay_batch(obs)})
    buffer = io.BytesIO()
    torch.save(rnd.state_dict(), buffer)
    buffer.seek(0)
    restored = RND(feature_dim=32, hidden=(64, 64), normalize=True)
    restored.load_state_dict(torch.load(buffer, weights_only=False))

    batch, probe = replay_batch(torch.randn(8, 4)), torch.randn(8, 4)
    for component in (rnd, restored):  # one more update must also match (optimizer state)
        component.update_predictor({"batch": batch})
    rewards = []
    for component in (rnd, restored):
        metrics = {"transition": {"next_state": probe, "reward": torch.zeros(8)}}
        component.get_reward(metrics)
        rewards.append(metrics["transition"]["intrinsic_reward"])
    torch.testing.assert_close(rewards[0], rewards[1], rtol=0, atol=0)


def noveld_metrics(state: torch.Tensor, next_state: torch.Tensor) -> dict:
    return {"transition": {"state": state, "next_state": next_state,
                           "reward": torch.ones(len(state))}}


def test_noveld_bonus_is_clipped_novelty_difference():
    torch.manual_seed(7)
    noveld = NovelD(alpha=0.5, episodic=False, internal_reward_weight=0.3, seed=0,
                    obs_shape=(4,))
    near, far = torch.zeros(1, 4), 5 * torch.ones(1, 4)
    state = torch.cat([near, far, torch.randn(4, 4)])
    next_state = torch.cat([far, near, torch.randn(4, 4)])
    metrics = noveld_metrics(state, next_state)
    noveld.get_reward(metrics)
    error = noveld.rnd_net.get_error
    expected = 0.3 * (error(next_state) - 0.5 * error(state)).clamp_min(0.0)
    bonus = metrics["transition"]["intrinsic_reward"]
    torch.testing.assert_close(bonus, expected)
    assert bonus[0] > 0 and bonus[1] == 0  # into the unexplored: bonus; back: none
    torch.testing.assert_close(metrics["transition"]["reward"], 1.0 + expected)


def test_noveld_episodic_bonus_only_on_first_visit_until_episode_ends():
    torch.manual_seed(8)
    noveld = NovelD(alpha=0.0, episodic=True, seed=0, obs_shape=(2,), resolution=0.5)
    state = torch.zeros(2, 2)
    next_state = torch.tensor([[3.0, 1.0], [-2.0, 4.0]])

    def bonus(next_obs: torch.Tensor) -> torch.Tensor:
        metrics = noveld_metrics(state, next_obs)
        for method in noveld.post_step_methods:
            method(metrics)
        return metrics["transition"]["intrinsic_reward"]

    first = bonus(next_state)
    assert bool((first > 0).all())
    assert bool((bonus(next_state + 0.1) == 0).all())  # same cells again: no bonus
    for method in noveld.post_episode_methods:
        method({"ended": torch.tensor([True, False])})
    again = bonus(next_state)
    assert again[0] > 0 and again[1] == 0
    torch.testing.assert_close(again[0], first[0])
    assert noveld.post_episode_methods == [noveld.reset_episodes]
    assert NovelD(episodic=False).post_episode_methods == []


def test_noveld_counts_visits_per_env_copy_when_copies_step_apart():
    """A Ray actor steps its env copies in groups, one row per transition (was: every row
    counted in the first copy's visits, and a copy's episode end cleared another's)."""
    noveld = NovelD(alpha=0.0, episodic=True, seed=0, obs_shape=(2,))
    cell = torch.ones(1, 2)

    def bonus(copy: int) -> float:
        metrics = noveld_metrics(torch.zeros(1, 2), cell)
        metrics["transition"]["env_index"] = torch.tensor([copy])
        noveld.get_reward(metrics)
        return metrics["transition"]["intrinsic_reward"].item()

    assert bonus(0) > 0 and bonus(1) > 0  # each copy's first visit of the cell
    assert bonus(1) == 0
    noveld.reset_episodes({"ended": torch.tensor([False, True])})  # copy 1's episode ends
    assert bonus(1) > 0 and bonus(0) == 0


def test_noveld_two_rows_of_one_copy_in_a_batch_visit_a_cell_first_once():
    """NovelD's ``1[N_e(s') = 1]``: a copy's second row of a cell in one batch (two agents of
    a game, or steps grouped) is no first visit (was: both rows were)."""
    noveld = NovelD(seed=0, obs_shape=(2,))
    cells = torch.tensor([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [2.0, 2.0]])
    assert noveld.first_visits(cells, torch.tensor([0, 0, 1, 0])).tolist() == [1, 0, 1, 1]


def test_noveld_state_dict_keeps_visits():
    noveld = NovelD(seed=0, obs_shape=(2,))
    noveld.get_reward(noveld_metrics(torch.zeros(1, 2), torch.ones(1, 2)))
    restored = NovelD(obs_shape=(2,))
    restored.load_state_dict(noveld.state_dict())
    metrics = noveld_metrics(torch.zeros(1, 2), torch.ones(1, 2))
    restored.get_reward(metrics)
    assert metrics["transition"]["intrinsic_reward"].item() == 0.0


_SAVE_VISITS = """
import sys, torch
from looprl.meta.rnd import NovelD
noveld = NovelD(seed=0, obs_shape=(2,))
noveld.get_reward({"transition": {"state": torch.zeros(1, 2), "next_state": torch.ones(1, 2),
                                  "reward": torch.zeros(1)}})
torch.save(noveld.state_dict(), sys.argv[1])
"""


def test_noveld_visits_survive_a_resume_in_another_process(tmp_path):
    """Visits saved by a process with another string-hash seed still count (were: keyed by
    ``hash(bytes)``, so a resumed run rewarded the cells its episode had visited)."""
    seed = str(int(os.environ.get("PYTHONHASHSEED", "0") or 0) + 1)  # not this process's
    path = tmp_path / "noveld.pt"
    subprocess.run([sys.executable, "-c", _SAVE_VISITS, str(path)], check=True,
                   env={**os.environ, "PYTHONHASHSEED": seed})
    restored = NovelD(obs_shape=(2,))
    restored.load_state_dict(torch.load(path, weights_only=False))
    metrics = noveld_metrics(torch.zeros(1, 2), torch.ones(1, 2))
    restored.get_reward(metrics)
    assert metrics["transition"]["intrinsic_reward"].item() == 0.0


def test_update_every_trains_the_predictor_at_every_nth_update_only():
    torch.manual_seed(5)
    rnd = small_rnd(obs_shape=(4,), update_every=3)
    losses = []
    for _ in range(7):
        metrics = {"batch": replay_batch(cluster(CENTER, 16)), "losses": {}}
        rnd.update_predictor(metrics)
        losses.append("rnd" in metrics["losses"])
    assert losses == [False, False, True, False, False, True, False]
    with pytest.raises(ValueError, match="update_every must be positive"):
        RND(update_every=0)


def test_a_batch_of_another_observation_shape_is_one_line():
    """The update hooks' batch holds the observation rows the step hooks saw; a batch of
    other rows (another agent's) is refused in one line, not trained on or skipped."""
    rnd = small_rnd(obs_shape=(4,))
    with pytest.raises(ValueError, match=r"networks take observations of shape \(4,\), but "
                                         r"the batch holds \(3,\)"):
        rnd.update_predictor({"batch": replay_batch(torch.zeros(8, 3))})
    # a step's observations of another shape than obs_shape (looprl run meta.rnd.obs_shape=[3]
    # on CartPole) were torch's "mat1 and mat2 shapes cannot be multiplied", a traceback
    with pytest.raises(ValueError, match=r"networks take observations of shape \(4,\) "
                                         r"\(obs_shape\), but the environment's have shape "
                                         r"\(3,\): give obs_shape=\[3\], or none"):
        rnd.get_reward({"transition": {"next_state": torch.zeros(2, 3), "reward": torch.zeros(2)}})


def test_a_seeded_run_builds_the_same_networks_in_every_process() -> None:
    """``seed_run`` (the collector's, and a Ray trainer's) seeds RND's networks from the run's
    seed, whatever else a process drew from torch's generator, so an actor's and the trainer's
    copies start alike; an RND given a ``seed`` keeps it."""
    def weights(rnd: RND, run_seed: int, process: int) -> list[torch.Tensor]:
        torch.manual_seed(process)  # (a process's draws so far: the actor's, the trainer's)
        rnd.seed_run(run_seed)
        rnd.initialize_networks((4,))
        return [p.detach().clone() for p in rnd.rnd_net.parameters()]

    actor, trainer = weights(RND(), 3, process=0), weights(RND(), 3, process=1)
    assert all(torch.equal(a, b) for a, b in zip(actor, trainer, strict=True))
    assert not torch.equal(weights(RND(), 4, process=0)[0], actor[0])
    assert torch.equal(weights(RND(seed=7), 3, 0)[0], weights(RND(seed=7), 4, 1)[0])


def test_a_restored_rnd_goes_on_counting_its_update_calls():
    """``update_every`` counts on across a checkpoint (was: a resumed run counted from 0)."""
    rnd = small_rnd(obs_shape=(4,), update_every=3)
    for _ in range(2):
        rnd.update_predictor({"batch": replay_batch(torch.zeros(4, 4))})
    restored = small_rnd(obs_shape=(4,), update_every=3)
    restored.load_state_dict(rnd.state_dict())
    metrics = {"batch": replay_batch(torch.zeros(4, 4)), "losses": {}}
    restored.update_predictor(metrics)
    assert "rnd" in metrics["losses"]  # the third call trains
