"""Feature extractors by spec (looprl.nn.features) and their use in presets."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from looprl.environments import GymEnvironment
from looprl.nn import ConvFeatures, MLPFeatures, ResNetFeatures, feature_extractor
from looprl.presets.classic_control import dqn, ppo


def test_mlp_features_follow_their_options() -> None:
    torch.manual_seed(0)
    body = feature_extractor({"type": "mlp", "hidden": [32, 16], "activation": "tanh"}, (4,))
    assert isinstance(body, MLPFeatures) and body.out_features == 16
    linears = [m for m in body.modules() if isinstance(m, nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(4, 32), (32, 16)]
    assert sum(isinstance(m, nn.Tanh) for m in body.modules()) == 2
    assert body(torch.randn(5, 4)).shape == (5, 16)
    assert body(torch.randn(4)).shape == (16,)  # one unbatched observation
    flat = feature_extractor("mlp", (2, 3))  # flattens its input
    assert flat(torch.randn(7, 2, 3)).shape == (7, 64)


def test_cnn_scales_uint8_images_and_follows_its_options() -> None:
    torch.manual_seed(0)
    body = feature_extractor({"type": "cnn", "channels": [8, 16], "kernels": [4, 3],
                              "strides": [2, 1]}, (3, 20, 20))
    assert isinstance(body, ConvFeatures)
    # 20 -> (20 - 4) / 2 + 1 = 9 -> 9 - 3 + 1 = 7: 16 * 7 * 7 features
    assert body.out_features == 16 * 7 * 7
    frames = torch.randint(0, 256, (2, 3, 20, 20), dtype=torch.uint8)
    assert torch.allclose(body(frames), body(frames.float() / 255.0), atol=1e-5)
    assert body(frames[0]).shape == (16 * 7 * 7,)


def test_resnet_is_the_impala_cnn() -> None:
    torch.manual_seed(0)
    body = feature_extractor({"type": "resnet", "features": 64}, (3, 64, 64))
    assert isinstance(body, ResNetFeatures) and body.out_features == 64
    pools = [m for m in body.modules() if isinstance(m, nn.MaxPool2d)]
    convs = [m for m in body.modules() if isinstance(m, nn.Conv2d)]
    assert len(pools) == 3 and len(convs) == 3 * (1 + 2 * 2)  # per stage: 1 + 2 blocks x 2
    assert body(torch.rand(2, 3, 64, 64)).shape == (2, 64)
    # a residual block adds its input back
    block = next(m for m in body.modules() if type(m).__name__ == "_Residual")
    for conv in block.block:
        if isinstance(conv, nn.Conv2d):
            nn.init.zeros_(conv.weight)
            nn.init.zeros_(conv.bias)
    x = torch.randn(1, 16, 8, 8)
    assert torch.equal(block(x), x)


def test_combinations_chain_their_parts() -> None:
    torch.manual_seed(0)
    body = feature_extractor(["resnet", {"type": "mlp", "hidden": [32]}], (3, 32, 32))
    assert isinstance(body[0], ResNetFeatures) and isinstance(body[1], MLPFeatures)
    assert body.out_features == 32 and body(torch.rand(4, 3, 32, 32)).shape == (4, 32)


@pytest.mark.parametrize("spec, shape, message", [
    ("resnett", (3, 32, 32), "Unknown feature extractor 'resnett'. Did you mean 'resnet'"),
    ({"type": "mlp", "hiden": [8]}, (4,), "'mlp' has no option 'hiden'; options: hidden"),
    ("cnn", (4,), "needs channels-first images .* got inputs of shape \\(4,\\); use 'mlp'$"),
    ("resnet", (2, 4), r"\(2, 4\); use 'mlp', which flattens them, or wrap .*FlattenObservation"),
    ("cnn", (3, 8, 8), "does not fit inputs of shape \\(3, 8, 8\\)"),
    # (channels last, Gymnasium's frames: were "too small for its kernels", "square frames")
    ("cnn", (84, 84, 3), r"got \(84, 84, 3\), channels last: move them first"),
    ("nature", (84, 84, 3), r"got \(84, 84, 3\), channels last: move them first"),
    ({"type": "mlp", "activation": "rel"}, (4,), "Unknown activation 'rel'"),
    ([], (4,), "empty list"),
    # (were torch's tracebacks: "'int' object is not iterable", "negative dimension -3")
    ({"type": "mlp", "hidden": 64}, (4,), r"hidden sizes are a list .* \(\[64, 64\]\), got 64"),
    ({"type": "mlp", "hidden": [-3]}, (4,), r"whole numbers >= 1.*got \[-3\]"),
    ({"type": "mlp", "hidden": [1.5]}, (4,), r"whole numbers >= 1.*got \[1.5\]"),
])
def test_bad_specs_say_what_is_wrong(spec, shape, message) -> None:
    with pytest.raises(ValueError, match=message):
        feature_extractor(spec, shape)


def test_presets_build_their_networks_from_a_spec() -> None:
    env = GymEnvironment("CartPole-v1")
    spec = {"type": "mlp", "hidden": [32, 32]}
    model = dqn.env(env).hyperparameters(features=spec).device("cpu").build().model
    assert isinstance(model[0], MLPFeatures) and model[1].out_features == 2
    preset = ppo.env(env).hyperparameters(features=spec, n_envs=2).device("cpu").build()
    logits, values, _, _ = preset.model(torch.zeros(3, 4))
    assert isinstance(preset.model.body, MLPFeatures)
    assert logits.shape == (3, 2) and values.shape == (3,)
    env.close()


def test_hidden_sizes_of_any_sequence_of_whole_numbers_build() -> None:
    """A NumPy array of sizes built before the size check, and builds again."""
    import numpy as np

    from looprl.nn.layers import dense_layers

    assert dense_layers(4, np.array([8, 16]), "relu")[1] == 16
    assert dense_layers(4, (8,), "relu")[1] == 8 and dense_layers(4, [], "relu")[1] == 4
