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
