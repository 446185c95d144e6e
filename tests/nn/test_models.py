"""Tests of looprl.nn: MLP initialization, RLNetwork and the small layers."""

from __future__ import annotations

import functools
import math

import torch
from torch import nn

from looprl.core import State, StateArray
from looprl.nn import MLP, Dueling, Flatten, Linear0, RLNetwork, orthogonal_init


def _linears(model: nn.Module) -> list[nn.Linear]:
    return [m for m in model.modules() if isinstance(m, nn.Linear)]


def test_mlp_structure_and_zero_biases():
    model = MLP(4, 3, hidden=(32, 16), activation=nn.ReLU)
    assert isinstance(model, nn.Sequential)
    linears = _linears(model)
    assert [(m.in_features, m.out_features) for m in linears] == [(4, 32), (32, 16), (16, 3)]
    assert sum(isinstance(m, nn.ReLU) for m in model) == 2
    for layer in linears:
        assert torch.count_nonzero(layer.bias) == 0
    assert model(torch.randn(5, 4)).shape == (5, 3)


def test_mlp_orthogonal_gains():
    model = MLP(8, 4, hidden=(64,), output_gain=0.01)
    hidden, output = _linears(model)
    # hidden weight is 64x8: its columns are orthonormal up to the gain sqrt(2)
    gram = hidden.weight.T @ hidden.weight
    assert torch.allclose(gram, 2.0 * torch.eye(8), atol=1e-5)
    # output weight is 4x64: its rows are orthonormal up to the gain 0.01
    gram = output.weight @ output.weight.T
    assert torch.allclose(gram, 1e-4 * torch.eye(4), atol=1e-8)


def test_mlp_default_output_gain_is_one_and_no_hidden():
    model = MLP(3, 3, hidden=())
    (layer,) = _linears(model)
    assert torch.allclose(layer.weight @ layer.weight.T, torch.eye(3), atol=1e-5)


def test_orthogonal_init_sets_bias():
    layer = orthogonal_init(nn.Linear(3, 3), gain=1.0, bias=0.5)
    assert torch.all(layer.bias == 0.5)


def test_rlnetwork_restores_batch_shape_and_masks():
    net = RLNetwork(nn.Linear(4, 2))
    obs = torch.randn(2, 3, 4)
    mask = torch.ones(2, 3)
    mask[1, 2] = 0.0
    out = net(StateArray({"observation": obs, "mask": mask}, (2, 3)))
    assert out.shape == (2, 3, 2)
    assert torch.all(out[1, 2] == 0)
    assert torch.allclose(out[0, 0], net.model(obs[0, 0]))
    single = net(State(obs[0, 0]))
    assert single.shape == (2,)


def test_linear0_flatten_dueling():
    layer = Linear0(5, 2)
    assert torch.all(layer(torch.randn(3, 5)) == 0)
    assert Flatten()(torch.zeros(2, 3, 4)).shape == (2, 12)
    dueling = Dueling(nn.Linear(4, 1), nn.Linear(4, 3))
    x = torch.randn(6, 4)
    q = dueling(x)
    assert q.shape == (6, 3)
    # the mean over actions of Q equals V
    assert torch.allclose(q.mean(-1, keepdim=True), dueling.value_model(x), atol=1e-6)


def test_mlp_hidden_gain_constant():
    assert math.isclose(
        torch.linalg.matrix_norm(MLP(4, 1, hidden=(4,))[0].weight, ord=2).item(),
        math.sqrt(2),
        rel_tol=1e-4,
    )


def test_mlp_forward_is_the_sequential_forward_in_values_and_gradients():
    torch.manual_seed(0)
    in_place = functools.partial(nn.ReLU, inplace=True)
    for activation in (nn.Tanh, nn.ReLU, in_place, nn.Sigmoid, nn.ELU):  # (ELU: as a module)
        model = MLP(4, 3, hidden=(8, 8), activation=activation)
        x = torch.randn(5, 4)
        fast = model(x)
        (fast.square().sum()).backward()
        grads = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        slow = nn.Sequential.forward(model, x)
        (slow.square().sum()).backward()
        assert torch.equal(fast, slow)
        assert all(torch.equal(a, p.grad) for a, p in zip(grads, model.parameters(), strict=True))


def test_mlp_forward_runs_the_hooks_of_its_layers():
    model = MLP(4, 2, hidden=(8,))
    seen: list[str] = []
    handle = model[1].register_forward_hook(lambda *_: seen.append("tanh"))
    model(torch.zeros(1, 4))
    handle.remove()
    handle = model[0].register_forward_pre_hook(lambda *_: seen.append("linear"))
    model(torch.zeros(1, 4))
    handle.remove()
    handle = nn.modules.module.register_module_forward_hook(
        lambda module, *_: seen.append(type(module).__name__))
    try:
        model(torch.zeros(1, 4))
    finally:
        handle.remove()
    assert seen == ["tanh", "linear", "Linear", "Tanh", "Linear", "MLP"]
    model[1] = nn.Tanh()  # (and replaced layers: read at each call)
    model[0].weight.data.zero_()
    model[0].bias.data.fill_(1.0)
    expected = nn.Sequential.forward(model, torch.ones(2, 4))
    assert torch.equal(model(torch.ones(2, 4)), expected)
