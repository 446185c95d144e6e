"""Two Ray nodes on this machine, both on 127.0.0.1 (``ray.cluster_utils.Cluster``): a run
joins the cluster by address, places its workers on both nodes, and finishes; the user's
code reaches them through ``runtime.runtime_env``."""

from __future__ import annotations

import pytest
import torch

from looprl.distributed import AlgorithmSpec, DistributedRun, RuntimeConfig

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def two_nodes():
    from ray.cluster_utils import Cluster

    from looprl.distributed.controller import local_instance_settings

    local_instance_settings()
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 2, "include_dashboard": False, "node_ip_address": "127.0.0.1"})
    try:
        cluster.add_node(num_cpus=2, num_gpus=1,  # Ray's only: torch sees none
                         node_ip_address="127.0.0.1")
        cluster.wait_for_nodes()
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


USER_ENV = """
from looprl.environments.srl_adapters import GymnasiumEnvironment


class UserCartPole(GymnasiumEnvironment):
    def __init__(self):
        super().__init__("CartPole-v1")
"""


def test_runtime_env_ships_the_users_code_to_both_nodes_of_a_cluster(two_nodes, tmp_path,
                                                                     monkeypatch):
    """An environment registered by its ``"module:Class"`` path from a package only this
    process can import: the workers fail to build it, in one line with a hint, until
    ``runtime.runtime_env`` ships the package (``py_modules``) to the cluster's nodes. The
    run joins the cluster by address and spreads its actors over both nodes."""
    from looprl.environments import srl

    package = tmp_path / "user_envs"
    package.mkdir()
    (package / "__init__.py").write_text(USER_ENV)
    monkeypatch.syspath_prepend(str(tmp_path))  # here only: workers do not see this sys.path
    monkeypatch.setattr(srl, "_REGISTRY", dict(srl._REGISTRY))
    srl.register("user-cartpole", "user_envs:UserCartPole")
    spec = AlgorithmSpec(env="user-cartpole", policy="actor-critic-separate",
                         policy_args={"obs_dim": {"obs": 4}, "action_dim": 2}, trainer="ppo",
                         trainer_args={"epochs": 1}, buffer_args={"batch_streams": 4})
    options = dict(address=two_nodes.address, actors=2, envs_per_actor=2, segment_length=16)
    with pytest.raises(RuntimeError, match="No module named 'user_envs'.*runtime_env"):
        DistributedRun(spec, RuntimeConfig(**{**options, "actors": 1}), frames=600,
                       logdir=None, quiet=True).run()  # (one actor fails as two would)
    shipped = RuntimeConfig(**options, runtime_env={"py_modules": [str(package)]})
    nodes = []
    run = DistributedRun(spec, shipped, frames=600, logdir=str(tmp_path), quiet=True)
    result = run.run(callback=lambda _: nodes.append(ray.nodes()) if not nodes else None)
    assert result.frames >= 600 and result.returns and result.train_steps >= 1
    actor_nodes = {result.nodes["actor0"], result.nodes["actor1"]}
    assert len(actor_nodes) == 2  # spread over both nodes
    assert len(nodes[0]) == 2
    assert {node["NodeManagerAddress"] for node in nodes[0]} == {"127.0.0.1"}


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_a_gpu_worker_whose_torch_sees_no_cuda_is_one_line(two_nodes, tmp_path):
    """The second node declares a GPU to Ray that torch cannot use: the trainer that reserves
    it is placed there, and says so in one line instead of failing deep inside torch."""
    spec = AlgorithmSpec(env="CartPole-v1", policy="actor-critic-separate",
                         policy_args={"obs_dim": {"obs": 4}, "action_dim": 2}, trainer="ppo")
    runtime = RuntimeConfig(address=two_nodes.address, actors=1, gpus_per_trainer=1)
    with pytest.raises(RuntimeError, match=r"^trainer worker failed to start: RuntimeError: "
                                           r"the trainer worker reserved runtime.gpus_per_"
                                           r"trainer=1 GPU\(s\), but torch .* sees no CUDA "
                                           r"device \(CUDA_VISIBLE_DEVICES='0'\): install"):
        DistributedRun(spec, runtime, frames=1000, logdir=str(tmp_path), quiet=True).run()


def test_a_worker_larger_than_every_node_is_one_line_that_says_so(two_nodes):
    """The cluster holds 4 CPUs, but an actor that reserves 3 fits on none of its nodes: the
    error names the option and the largest node, not an overloaded machine."""
    spec = AlgorithmSpec(env="CartPole-v1", policy="actor-critic-separate",
                         policy_args={"obs_dim": {"obs": 4}, "action_dim": 2}, trainer="ppo")
    runtime = RuntimeConfig(address=two_nodes.address, actors=1, cpus_per_actor=3,
                            placement_timeout=3)
    with pytest.raises(RuntimeError, match=r"^no node of the cluster can place actor workers: "
                                           r"each reserves 3 CPUs and 0 GPUs \(runtime.cpus_per"
                                           r"_actor\) and the largest node has 2 CPUs"):
        DistributedRun(spec, runtime, frames=1000, logdir=None, quiet=True).run()

