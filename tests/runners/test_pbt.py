"""PBTRunner on Ray Tune: a population trains, exploits and explores through hp/* keys."""

from __future__ import annotations

import os

import pytest
import torch

ray = pytest.importorskip("ray")
pytest.importorskip("ray.tune")

from looprl.runners import PBTRunner  # noqa: E402


@pytest.fixture(scope="module")
def local_ray():
    """One Ray instance for this module, on loopback, 2 CPUs, no dashboard."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_a_population_trains_and_the_best_member_holds_its_explored_values(
    small_ppo, tmp_path, local_ray
) -> None:
    runner = PBTRunner(small_ppo, "CartPole-v1", {"hp/lr": (1e-4, 1e-2, "log")},
                       population=2, num_steps=192, perturbation_interval=64,
                       quantile_fraction=0.5, eval_episodes=2, logdir=str(tmp_path), seed=0)
    train_results, eval_results = runner.run()
    members = train_results["members"]
    assert len(members) == 2
    best = train_results["best"]
    assert best["mean_eval_reward"] == max(m["mean_eval_reward"] for m in members)
    # the best member's agent is restored, trained to the end, with the lr its trial ended
    # with applied through the hp/lr setter (not the preset's 1e-3)
    assert runner.experiment.frame >= 192
    lr = runner.hyperparameters()["hp/lr"].get()
    assert lr == pytest.approx(best["hp"]["hp/lr"]) and lr != pytest.approx(1e-3)
    assert eval_results["episodes"] == 2


def test_bad_mutations_are_clear_errors(small_ppo) -> None:
    with pytest.raises(KeyError, match="'hp/lrr' is not a hyperparameter"):
        PBTRunner(small_ppo, "CartPole-v1", {"hp/lrr": (1e-4, 1e-2)})
    with pytest.raises(ValueError, match="empty or invalid range"):
        PBTRunner(small_ppo, "CartPole-v1", {"hp/lr": (1e-2, 1e-4)})
    with pytest.raises(ValueError, match="needs hp/\\* mutations"):
        PBTRunner(small_ppo, "CartPole-v1", {})


def test_members_train_on_the_gpus_ray_reserves_for_them(small_ppo, local_ray) -> None:
    with pytest.raises(ValueError, match=r"device='cuda' with gpus_per_member=0: PBT members "
                                         r"train on the GPUs Ray reserves"):
        PBTRunner(small_ppo, "CartPole-v1", {"hp/lr": (1e-4, 1e-2)}, device="cuda")
    # the runner's own checks build the agent on the CPU, whatever its members reserve
    runner = PBTRunner(small_ppo, "CartPole-v1", {"hp/lr": (1e-4, 1e-2)}, gpus_per_member=1)
    if ray.cluster_resources().get("GPU", 0) < 1:
        with pytest.raises(ValueError, match="gpus_per_member=1 but the Ray cluster has 0 GPUs"):
            runner.run()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_population_shares_a_gpu(small_ppo, tmp_path, local_ray) -> None:
    runner = PBTRunner(small_ppo, "CartPole-v1", {"hp/lr": (1e-4, 1e-2, "log")},
                       population=2, num_steps=128, perturbation_interval=64,
                       gpus_per_member=0.5, eval_episodes=1, logdir=str(tmp_path), seed=0)
    train_results, _ = runner.run()
    assert len(train_results["members"]) == 2
    assert str(runner.experiment.preset.device).startswith("cuda")
