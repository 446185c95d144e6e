"""Tests of the Nature CNN and its heads (looprl.nn.cnn)."""

from __future__ import annotations

import pytest
import torch

from looprl.nn.cnn import (
    NatureCNN,
    NatureConv,
    SharedActorCritic,
    nature_actor_critic,
    nature_categorical_dqn,
    nature_dqn,
    nature_dueling_dqn,
    nature_features,
)


def _frames(n: int = 3) -> torch.Tensor:
    generator = torch.Generator().manual_seed(0)
    return torch.randint(0, 256, (n, 4, 84, 84), dtype=torch.uint8, generator=generator)


def test_nature_conv_shapes_and_scaling() -> None:
    torch.manual_seed(0)
    conv = NatureConv()
    assert conv.out_features == 64 * 7 * 7
    frames = _frames()
    features = conv(frames)
    assert features.shape == (3, 3136)
    # scaled to [0, 1] (float32 rounding of x / 255 against x * (1 / 255) is the tolerance)
    torch.testing.assert_close(conv.layers(frames.float() / 255.0), features, rtol=1e-4,
                               atol=1e-5)
    torch.testing.assert_close(conv(frames[0]), features[0], rtol=1e-4, atol=1e-5)
    cnn = NatureCNN()
    assert cnn.out_features == 512 and cnn(frames).shape == (3, 512)
    assert (cnn(frames) >= 0).all()  # ends with a ReLU


def test_heads() -> None:
    frames = _frames()
    assert nature_dqn(6)(frames).shape == (3, 6)
    assert nature_dqn(6)(frames[0]).shape == (6,)
    assert nature_categorical_dqn(6, atoms=51)(frames).shape == (3, 6 * 51)
    dueling = nature_dueling_dqn(6)
    q = dueling(frames)
    _, head = dueling
    features = dueling[0](frames)
    value = head.value_model(features)
    assert q.shape == (3, 6) and torch.allclose(q.mean(-1, keepdim=True), value, atol=1e-5)
    model = nature_actor_critic(6)
    assert isinstance(model, SharedActorCritic)
    logits, values, aux, memory = model(frames)
    assert logits.shape == (3, 6) and values.shape == (3,) and aux is None and memory is None
    assert logits.abs().max() < 0.5  # the policy head starts near uniform (gain 0.01)


def test_unknown_feature_extractor() -> None:
    with pytest.raises(ValueError, match="Unknown feature extractor 'resnett'.*'resnet'"):
        nature_features("resnett")


def test_qdist_over_the_c51_network_gives_probabilities() -> None:
    """``QDist(nature_categorical_dqn(...))`` (logits) and ``QDist(nature_c51(...))``
    (probabilities): each action's atoms sum to 1 and are the softmax of the logits."""
    from looprl.approximation import QDist
    from looprl.core import StateArray

    torch.manual_seed(0)
    frames = _frames()
    state = StateArray({"observation": frames, "mask": torch.ones(3)}, (3,))
    logits = nature_categorical_dqn(6, atoms=11)
    q = QDist(logits, torch.optim.Adam(logits.parameters()), 6, 11, -10.0, 10.0)
    probs = q.no_grad(state)
    assert probs.shape == (3, 6, 11)
    torch.testing.assert_close(probs.sum(-1), torch.ones(3, 6))
    torch.testing.assert_close(probs, torch.softmax(logits(frames).view(3, 6, 11), -1))


def _gain(layer: torch.nn.Linear) -> float:
    """The gain of an orthogonal ``layer``: its singular values, which are all equal."""
    singular = torch.linalg.svdvals(layer.weight.detach())
    torch.testing.assert_close(singular, singular[:1].expand_as(singular))
    return float(singular[0])


def test_one_builder_per_head_on_any_body() -> None:
    """The heads the presets share, on an MLP body as on the Nature CNN: DQN's linear layer
    (gain 1), and the actor-critic's policy (gain 0.01) and value (gain 1) heads."""
    from looprl.nn import feature_extractor
    from looprl.nn.cnn import actor_critic_heads, linear_head, shared_actor_critic

    torch.manual_seed(0)
    body = feature_extractor({"type": "mlp", "hidden": [16]}, (4,))
    q = linear_head(body, 3)
    assert q[0] is body and q(torch.ones(5, 4)).shape == (5, 3)
    assert _gain(q[1]) == pytest.approx(1.0) and not q[1].bias.any()
    policy, value = actor_critic_heads(16, 3)
    assert (policy.in_features, policy.out_features, value.out_features) == (16, 3, 1)
    assert _gain(policy) == pytest.approx(0.01) and _gain(value) == pytest.approx(1.0)
    model = shared_actor_critic(body, 3)
    assert model.body is body and _gain(model.policy_head) == pytest.approx(0.01)
    logits, values, _, _ = model(torch.ones(5, 4))
    assert logits.shape == (5, 3) and values.shape == (5,)


@pytest.mark.parametrize("orthogonal", [True, False])
def test_rainbow_network_initializes_its_plain_layers_as_asked(orthogonal: bool) -> None:
    """Without noise, the streams' layers are orthogonal (gains sqrt(2), then 1: the Nature
    preset's) or ``nn.Linear``'s own (the classic-control preset's); the torso is the caller's."""
    from looprl.nn.cnn import rainbow_network

    torch.manual_seed(0)
    torso = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU())
    net = rainbow_network(torso, 8, 3, hidden=8, noisy=False, distributional=False,
                          orthogonal=orthogonal)
    first, _, last = net[1].value_model
    assert net[0] is torso and net(torch.ones(2, 4)).shape == (2, 3)
    if orthogonal:
        assert _gain(first) == pytest.approx(2 ** 0.5) and _gain(last) == pytest.approx(1.0)
        assert not first.bias.any()
    else:  # nn.Linear's uniform(-1/sqrt(in), 1/sqrt(in)), biases too
        assert first.bias.abs().min() > 0 and first.weight.abs().max() <= 8 ** -0.5
    probs = rainbow_network(torso, 8, 3, atoms=5, hidden=8)(torch.ones(2, 4))
    assert probs.shape == (2, 3, 5) and torch.allclose(probs.sum(-1), torch.ones(2, 3))


def test_the_classic_rainbow_keeps_torchs_initialization() -> None:
    """The classic-control Rainbow without noise: every layer as ``nn.Linear`` draws it."""
    from looprl.presets.classic_control.dqn import rainbow, rainbow_model

    hp = {**rainbow.default_hyperparameters, "noisy": False, "hidden": 8, "atoms": 5}
    torch.manual_seed(0)
    model = rainbow_model(4, 2, hp)
    torch.manual_seed(0)
    expected = [torch.nn.Linear(4, 8), *(torch.nn.Linear(8, n) for n in (8, 5, 8, 2 * 5))]
    got = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert len(got) == len(expected)
    for mine, reference in zip(got, expected, strict=True):
        assert torch.equal(mine.weight, reference.weight) and torch.equal(mine.bias, reference.bias)
