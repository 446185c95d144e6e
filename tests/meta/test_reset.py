"""NetworkReset: which layers change, how, and when."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from looprl.meta.component import MetaStack
from looprl.meta.reset import NetworkReset, layers_of
from looprl.nn import orthogonal_init


def model() -> nn.Module:
    torch.manual_seed(0)
    body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU())
    head = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    net = nn.Sequential()
    net.add_module("body", body)
    net.add_module("head", head)
    with torch.no_grad():  # away from the default init, so a reset is visible everywhere
        for p in net.parameters():
            p.add_(3.0)
    return net


def snapshot(net: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in net.state_dict().items()}


def changed(before: dict, net: nn.Module) -> set[str]:
    after = net.state_dict()
    return {k.rsplit(".", 1)[0] for k in before if not torch.equal(before[k], after[k])}


def expected_fresh(layer: nn.Module, seed: int) -> nn.Module:
    torch.manual_seed(seed)
    fresh = copy.deepcopy(layer)
    fresh.reset_parameters()
    return fresh


def test_layers_of_lists_parameter_owning_modules_in_order():
    assert list(layers_of(model())) == ["body.0", "body.2", "head.0", "head.2"]


def test_reset_by_prefix_gives_fresh_init_and_leaves_others_untouched():
    net = model()
    before = snapshot(net)
    reset = NetworkReset(every=1, layers=["head.2"])
    expected = expected_fresh(net.head[2], seed=11)
    torch.manual_seed(11)
    reset.maybe_reset({"model": net})
    assert changed(before, net) == {"head.2"}
    torch.testing.assert_close(net.head[2].weight, expected.weight, rtol=0, atol=0)
    torch.testing.assert_close(net.head[2].bias, expected.bias, rtol=0, atol=0)


def test_container_prefix_selects_all_its_layers():
    net = model()
    before = snapshot(net)
    NetworkReset(every=1, layers="head").maybe_reset({"model": net})
    assert changed(before, net) == {"head.0", "head.2"}


def test_last_k_layers():
    net = model()
    before = snapshot(net)
    NetworkReset(every=1, last=3).maybe_reset({"model": net})
    assert changed(before, net) == {"body.2", "head.0", "head.2"}
    net = model()
    before = snapshot(net)
    NetworkReset(every=1).maybe_reset({"model": net})  # default: the last layer
    assert changed(before, net) == {"head.2"}


def test_shrink_perturb_formula_exactly():
    net = model()
    old = net.head[0].weight.detach().clone(), net.head[0].bias.detach().clone()
    expected = expected_fresh(net.head[0], seed=5)
    reset = NetworkReset(every=1, layers=["head.0"], mode="shrink_perturb", shrink=0.3,
                         perturb=0.2)
    torch.manual_seed(5)
    reset.maybe_reset({"model": net})
    torch.testing.assert_close(net.head[0].weight, 0.3 * old[0] + 0.2 * expected.weight)
    torch.testing.assert_close(net.head[0].bias, 0.3 * old[1] + 0.2 * expected.bias)


def test_custom_initializer():
    net = model()
    NetworkReset(every=1, layers=["body.0"], initializer=lambda m: nn.init.zeros_(m.weight)
                 ).maybe_reset({"model": net})
    assert bool((net.body[0].weight == 0).all())
    NetworkReset(every=1, layers=["body.2"], initializer=lambda m: orthogonal_init(m, 1.0)
                 ).maybe_reset({"model": net})
    w = net.body[2].weight
    torch.testing.assert_close(w @ w.T, torch.eye(8), atol=1e-5, rtol=0)
    assert bool((net.body[2].bias == 0).all())


def zero_weights(layer: nn.Module) -> None:
    nn.init.zeros_(layer.weight)


def test_an_initializer_by_import_path_as_a_config_gives_it():
    """(was: the string kept, ``'str' object is not callable`` at the first reset)"""
    net = model()
    NetworkReset(every=1, layers=["body.0"], initializer=f"{__name__}:zero_weights"
                 ).maybe_reset({"model": net})
    assert bool((net.body[0].weight == 0).all())
    with pytest.raises(TypeError, match=r"^NetworkReset's initializer re-initializes a layer: a "
                                        r"function of the layer \(or its import path\), got 3$"):
        NetworkReset(every=1, initializer=3)
    with pytest.raises(ImportError, match=r"^NetworkReset's initializer 'torch.nn.init:nope'"):
        NetworkReset(every=1, initializer="torch.nn.init:nope")


def test_period_is_respected_through_the_hook():
    net = model()
    reset = NetworkReset(every=3, layers=["head.2"])
    stack, metrics = MetaStack([reset]), {"model": net}
    assert reset.post_update_methods == [reset.maybe_reset]
    changes = []
    for _ in range(7):
        before = snapshot(net)
        stack("post_update", metrics)
        changes.append(bool(changed(before, net)))
    assert changes == [False, False, True, False, False, True, False]
    assert reset.resets == 2
    for hook in ("pre_step", "post_step", "pre_update", "pre_episode", "post_episode"):
        before = snapshot(net)
        stack(hook, metrics)
        assert not changed(before, net)


def test_state_dict_keeps_the_period_phase():
    net = model()
    reset = NetworkReset(every=3)
    for _ in range(2):
        reset.maybe_reset({"model": net})
    resumed = NetworkReset(every=3)
    resumed.load_state_dict(reset.state_dict())
    before = snapshot(net)
    resumed.maybe_reset({"model": net})
    assert changed(before, net) == {"head.2"}


def test_bad_layer_names_and_options_raise_clearly():
    with pytest.raises(ValueError, match="no layer 'heads'.*body.0, body.2, head.0, head.2"):
        NetworkReset(every=1, layers=["heads"]).maybe_reset({"model": model()})
    with pytest.raises(ValueError, match="last=9, but the model has 4 layers"):
        NetworkReset(every=1, last=9).maybe_reset({"model": model()})
    with pytest.raises(KeyError, match="metrics\\['model'\\]"):
        NetworkReset(every=1).maybe_reset({"model": None})
    with pytest.raises(ValueError, match="Unknown mode 'shrink'"):
        NetworkReset(every=1, mode="shrink")
    with pytest.raises(ValueError, match="not both"):
        NetworkReset(every=1, layers=["head"], last=1)
    with pytest.raises(ValueError, match="every must be"):
        NetworkReset(every=0)
    # were: no layer reset without a word, and NaN weights at the first reset
    with pytest.raises(ValueError, match=r"layers=\[\] names no layer"):
        NetworkReset(every=1, layers=[])
    with pytest.raises(ValueError,
                       match=r"^NetworkReset's shrink must be finite and in \[0, 1\], got nan$"):
        NetworkReset(every=1, mode="shrink_perturb", shrink=float("nan"))
    with pytest.raises(ValueError,
                       match=r"^NetworkReset's perturb must be finite and >= 0, got inf$"):
        NetworkReset(every=1, mode="shrink_perturb", perturb=float("inf"))
    # were taken: weights flipped in sign, or the fresh ones subtracted
    with pytest.raises(ValueError, match=r"^NetworkReset's shrink must be in \[0, 1\], got -1$"):
        NetworkReset(every=1, mode="shrink_perturb", shrink=-1)
    with pytest.raises(ValueError, match=r"^NetworkReset's perturb must be >= 0, got -0.1$"):
        NetworkReset(every=1, mode="shrink_perturb", perturb=-0.1)


def test_the_trainer_workers_learner_resets_the_trained_policys_network():
    """On Ray, the update hooks run in the trainer worker's ``Learner``: ``metrics['model']``
    is the network its trainer trains (as locally), so a reset changes what is published."""
    from looprl.distributed import AlgorithmSpec
    from looprl.distributed.pipeline import trainer_core

    spec = AlgorithmSpec(env="CartPole-v1", policy="actor-critic-separate",
                         policy_args={"obs_dim": {"obs": 4}, "action_dim": 2},
                         trainer="ppo", buffer_args={"batch_streams": 1},
                         meta=[NetworkReset(every=1, last=1)])
    learner = trainer_core(spec)
    model = learner.hooks.metrics["model"]
    assert model is learner.policy.module
    before = [p.detach().clone() for p in model.parameters()]
    segment = _segment(learner.policy)
    learner.put(segment)
    assert learner.train() is not None and learner.hooks.stack.components[0].resets == 1
    assert any(not torch.equal(b, p) for b, p in zip(before, model.parameters()))


def _segment(policy):
    """A ``[5, 1]`` segment of CartPole observations with the policy's outputs."""
    from looprl.core import NamedArray, RolloutRequest, SampleBatch

    obs = torch.randn(5, 1, 4)
    result = policy.rollout(RolloutRequest(obs=NamedArray(obs=obs.reshape(5, 4))))
    zeros = torch.zeros(5, 1)
    return SampleBatch(obs=NamedArray(obs=obs), action=result.action.reshape(5, 1),
                       reward=zeros, done=zeros.bool(), truncated=zeros.bool(),
                       log_prob=result.log_prob.reshape(5, 1), value=result.value.reshape(5, 1))
