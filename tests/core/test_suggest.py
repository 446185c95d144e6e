"""``looprl.core.suggest``: the one-line checks and hints every layer uses."""

import numpy as np
import pytest
import torch

from looprl.core.suggest import (
    check_count,
    check_flag,
    check_positive,
    did_you_mean,
    warn_once,
    warnings_per_run,
)


def test_a_name_with_keys_under_it_suggests_them_when_they_are_few() -> None:
    agents = ["hp/epsilon/player_1", "hp/epsilon/player_2", "epsilon"]
    assert did_you_mean("hp/epsilon", agents) == (" Did you mean 'hp/epsilon/player_1', "
                                                  "'hp/epsilon/player_2'?")
    ids = [f"ALE/Game{i}-v5" for i in range(20)]  # (was a line listing all of them)
    assert did_you_mean("ALE", ids) == ""


@pytest.mark.parametrize("value", [True, np.True_])
def test_a_bool_is_no_count_and_a_flag_is_a_bool(value) -> None:
    with pytest.raises(ValueError, match="must be positive \\(a whole number\\)"):
        check_count(check_every=value)
    assert check_flag("hide_context", value) is True
    with pytest.raises(ValueError, match="^hide_context must be True or False, got 'no'$"):
        check_flag("hide_context", "no")


@pytest.mark.parametrize("value", [np.array([1, 2]), torch.tensor([1, 2])])
def test_an_array_is_no_count_and_not_positive(value) -> None:
    """(was NumPy's "truth value of an array ... is ambiguous", torch's the same of a tensor)"""
    with pytest.raises(ValueError, match="^every must be positive \\(a whole number\\), got"):
        check_count(every=value)
    with pytest.raises(ValueError, match="^scale must be positive, got"):
        check_positive(scale=value)


def test_warn_once_says_a_line_once_per_run(caplog) -> None:
    """Was once per process: a sweep's later run that met the same said nothing. A run
    inside a run is part of it (a search's trials)."""
    import logging

    log = logging.getLogger("tests.warn_once")

    def warn() -> int:
        warn_once(log, "a line of %s", "its run")
        return caplog.text.count("a line of its run")

    with caplog.at_level(logging.WARNING):
        with warnings_per_run():
            assert warn() == 1 and warn() == 1
            with warnings_per_run():  # (a search's trial)
                assert warn() == 1
        with warnings_per_run():  # the next run
            assert warn() == 2


def test_a_key_is_said_once_per_run_and_a_run_goes_on_with_what_it_said(caplog) -> None:
    """``key``: a budget's warning, whose frames grow with each ``train`` call of a run (was:
    said again at each); ``said``: the lines of a run that goes on in later blocks (an
    ``Experiment``'s ``train`` calls), which a new run does not share."""
    import logging

    log = logging.getLogger("tests.warn_once")
    said: set[str] = set()
    with caplog.at_level(logging.WARNING):
        for frames in (100, 200):
            with warnings_per_run(said=said):
                warn_once(log, "trained to %d", frames, key="past")
        with warnings_per_run():
            warn_once(log, "trained to %d", 300, key="past")
        inner: set[str] = set()
        with warnings_per_run():  # (a runner's run: another trial's line is not this one's)
            warn_once(log, "another trial's")
            with warnings_per_run(said=inner):
                warn_once(log, "its own")
        assert inner == {"its own"}
    assert caplog.messages == ["trained to 100", "trained to 300", "another trial's", "its own"]
