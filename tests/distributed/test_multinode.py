"""Two Ray nodes on this machine, both on 127.0.0.1 (``ray.cluster_utils.Cluster``): a run
joins the cluster by address, places its workers on both nodes, and finishes."""

from __future__ import annotations

import pytest

from looprl.distributed import AlgorithmSpec, DistributedRun, RuntimeConfig

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def two_nodes():
    from ray.cluster_utils import Cluster

    from looprl.distributed.controller import loopback_only

    loopback_only()
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 2, "include_dashboard": False, "node_ip_address": "127.0.0.1"})
    try:
        cluster.add_node(num_cpus=2, node_ip_address="127.0.0.1")
        cluster.wait_for_nodes()
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def test_a_run_joins_a_two_node_cluster_and_uses_both_nodes(two_nodes, tmp_path):
    spec = AlgorithmSpec(env="CartPole-v1", policy="actor-critic-separate",
                         policy_args={"obs_dim": {"obs": 4}, "action_dim": 2}, trainer="ppo",
                         trainer_args={"epochs": 1}, buffer_args={"batch_streams": 4})
    runtime = RuntimeConfig(address=two_nodes.address, actors=2, envs_per_actor=2,
                            segment_length=16)
    nodes = []
    run = DistributedRun(spec, runtime, frames=1500, logdir=str(tmp_path), quiet=True)
    result = run.run(callback=lambda _: nodes.append(ray.nodes()) if not nodes else None)
    assert result.frames >= 1500 and result.train_steps >= 1
    actor_nodes = {result.nodes["actor0"], result.nodes["actor1"]}
    assert len(actor_nodes) == 2  # spread over both nodes
    assert len(nodes[0]) == 2
    assert {node["NodeManagerAddress"] for node in nodes[0]} == {"127.0.0.1"}
