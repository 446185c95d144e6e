"""``single_field`` and ``observation_tensor``: the one reading of an observation as a tensor
(DQN's, DDPG's and the actor-critic networks' acting)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from looprl.core.namedarray import NamedArray
from looprl.nn.fields import observation_tensor, single_field

OBS = np.arange(8, dtype=np.float32).reshape(2, 4)


@pytest.mark.parametrize("obs", [OBS, torch.from_numpy(OBS), NamedArray(obs=OBS),
                                 {"obs": OBS, "extra": None}])
def test_one_field_is_read_as_its_tensor(obs) -> None:
    tensor = observation_tensor(obs, "cpu")
    assert isinstance(tensor, torch.Tensor) and torch.equal(tensor, torch.from_numpy(OBS))


def test_several_fields_are_an_error_or_fields_on_the_device() -> None:
    two = {"obs": OBS, "goal": OBS[:, :2]}
    with pytest.raises(ValueError, match="one observation tensor"):
        observation_tensor(two, "cpu")
    with pytest.raises(ValueError, match="one observation tensor"):
        single_field(NamedArray(**two))
    fields = observation_tensor(two, "cpu", strict=False)
    assert isinstance(fields, NamedArray) and isinstance(fields.goal, torch.Tensor)
    assert single_field(fields, strict=False) is fields
