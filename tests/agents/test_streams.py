"""``RandomStream``: a unit's random numbers do not depend on who else draws in its process."""

from __future__ import annotations

import torch

from looprl.agents.streams import RandomStream


def test_a_streams_draws_do_not_depend_on_draws_outside_it() -> None:
    torch.manual_seed(0)
    alone = RandomStream(5)
    with alone:
        first = torch.rand(3)
    with alone:
        second = torch.rand(3)
    shared = RandomStream(5)
    with shared:
        assert torch.equal(torch.rand(3), first)
    torch.rand(100)  # another unit of the process draws in between
    outer = torch.get_rng_state()
    with shared:
        assert torch.equal(torch.rand(3), second)
    assert torch.equal(torch.get_rng_state(), outer)  # the process's numbers go on untouched
