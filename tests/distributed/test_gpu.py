"""The CUDA paths of the Ray runtime, where torch sees a GPU (skipped elsewhere; run with
``make test`` on a GPU machine, or ``pytest tests/distributed/test_gpu.py``). The CPU-only
checks of the same paths (one-line errors for GPUs a cluster or torch lacks) are in
test_pipeline.py, test_ray_runtime.py and test_multinode.py.

On a GPU machine the local presets build on CUDA by default, so the rest of the suite runs
the local agents there too."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from looprl.agents.learner import Learner, make_learner
from looprl.core import Policy, Trainer
from looprl.distributed import AlgorithmSpec, DistributedRun, RuntimeConfig, test_pipeline

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

CARTPOLE = {"obs_dim": {"obs": 4}, "action_dim": 2}


def ppo_spec() -> AlgorithmSpec:
    return AlgorithmSpec(
        env="CartPole-v1", policy="actor-critic-separate", policy_args={**CARTPOLE, "lr": 1e-3},
        trainer="ppo", trainer_args={"epochs": 4, "minibatch_size": 128, "entropy_coef": 0.0},
        buffer_args={"batch_streams": 8})


def tensors(value):
    """Every tensor in a checkpoint's nested dicts and lists."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from tensors(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from tensors(item)


def test_pipeline_trains_ppo_and_ape_x_dqn_on_cuda() -> None:
    report = test_pipeline(ppo_spec().on_device("cuda"), episodes=5, segment_length=16)
    assert report.train_steps >= 1 and "approx_kl" in report.stats
    dqn = AlgorithmSpec(env="CartPole-v1", policy="q-network",
                        policy_args={**CARTPOLE, "target_update": 10},
                        trainer="dqn", trainer_args={"n_step": 3, "double_q": True},
                        buffer_args={"batch": 8, "size": 400}, explorations=[0.5])
    report = test_pipeline(dqn.on_device("cuda"), episodes=3, segment_length=4)
    assert report.train_steps >= 1 and "td" in report.stats  # priorities came back


def test_pipeline_trains_the_sac_preset_on_cuda() -> None:
    """The SAC preset's Ray parts on CUDA: the trainer moves the batches of its replay (on
    the CPU) to the GPU, where the critics are."""
    from looprl.environments import GymEnvironment
    from looprl.presets.continuous import sac

    preset = sac.env(GymEnvironment("Pendulum-v1")).device("cuda").hyperparameters(
        hidden=32, minibatch_size=16, replay_start_size=50).build()
    spec, _ = AlgorithmSpec.of_preset(preset, frames=1_000)
    report = test_pipeline(spec, episodes=2, segment_length=8, max_frames=1_000)
    assert report.train_steps >= 1 and "critic" in " ".join(report.stats)


def test_a_trainer_checkpoint_from_a_gpu_is_refused_by_a_cpu_trainer() -> None:
    def core(device: str) -> Learner:
        policy = Policy(type_="actor-critic-separate", args={**CARTPOLE, "device": device})
        return make_learner(Trainer(type_="ppo", policy=policy))

    with pytest.raises(ValueError, match="trained on cuda and this one runs on cpu"):
        core("cpu").load_state_dict(core("cuda").state_dict())


def test_ppo_with_a_gpu_trainer_and_a_gpu_policy_worker_learns(local_ray, tmp_path):
    """The trainer and the batching policy worker share the GPU (half each); the actors, on
    the CPU, load the parameters the trainer publishes, and ``policy.pt`` loads anywhere."""
    runtime = RuntimeConfig(actors=2, envs_per_actor=4, segment_length=32, policy_workers=1,
                            gpus_per_trainer=0.5, gpus_per_policy=0.5, cpus_per_actor=1,
                            cpus_per_trainer=1, cpus_per_policy=1)
    result = DistributedRun(ppo_spec(), runtime, frames=36_000, logdir=str(tmp_path),
                            quiet=True, checkpoint_every=12_000).run()
    assert result.frames >= 36_000 and result.train_steps > 10
    best = max(sum(result.returns[i - 20:i]) / 20 for i in range(20, len(result.returns) + 1))
    assert best > 150, best  # random play: ~22
    checkpoint = torch.load(Path(result.log_dir) / "policy.pt", weights_only=False)
    assert {t.device.type for t in tensors(checkpoint)} == {"cpu"}
    assert (Path(result.log_dir) / "trainer_checkpoint.pt").exists()


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="NCCL needs one GPU per trainer")
def test_two_trainers_on_two_gpus_stay_in_sync(local_ray, tmp_path):
    runtime = RuntimeConfig(actors=2, trainers=2, envs_per_actor=4, segment_length=32,
                            gpus_per_trainer=1, cpus_per_actor=0.5, cpus_per_trainer=0.5)
    result = DistributedRun(ppo_spec(), runtime, frames=8_000, logdir=str(tmp_path),
                            quiet=True).run()
    steps = result.trainer_steps
    assert len(steps) == 2 and steps[0] == steps[1] > 0, steps
    assert result.trainers_in_sync
