"""``looprl.core.suggest``: the one-line checks and hints every layer uses."""

import numpy as np
import pytest
import torch

from looprl.core.suggest import (
    check_count,
    check_fits,
    check_flag,
    check_positive,
    did_you_mean,
    is_out_of_memory,
    one_line,
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


# torch's texts, as a full H100 gave them (2026-12-05)
CUDA_ERROR = ("CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported at "
              "some other API call, so the stacktrace below might be incorrect.\nFor debugging "
              "consider passing CUDA_LAUNCH_BLOCKING=1\nCompile with `TORCH_USE_CUDA_DSA` to "
              "enable device-side assertions.\n")
CUDA_OOM = ("CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.18 "
            "GiB of which 1.44 MiB is free. Process 767 has 830.00 MiB memory in use. Process 764 "
            "has 60.25 GiB memory in use. Of the allocated memory 65.12 MiB is allocated by "
            "PyTorch, and 902.50 KiB is reserved by PyTorch but unallocated. If reserved but "
            "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:"
            "True to avoid fragmentation.  See documentation for Memory Management  (https://docs."
            "pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-"
            "alloc-conf)")


def test_cuda_errors_are_their_summary_without_torchs_advice() -> None:
    """A trainer worker on a full GPU failed "to start: Compile with `TORCH_USE_CUDA_DSA` to
    enable device-side assertions." (the last line of torch's advice); a full GPU's error was
    one line of some 700 characters, each process's share and a link included."""
    from looprl.distributed.cluster import error_line

    error = torch.AcceleratorError(CUDA_ERROR)
    assert one_line(error) == "CUDA error: out of memory" and is_out_of_memory(error)
    assert is_out_of_memory(RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling "
                                         "`cublasCreate(handle)`"))
    assert not is_out_of_memory(RuntimeError("CUDA error: device-side assert triggered"))
    try:  # as Ray wraps it: a traceback, then the original message's lines
        raise RuntimeError(f"ray.exceptions.RayTaskError(AcceleratorError): ray::Worker\n"
                           f"  File \"x.py\", line 1\n{CUDA_ERROR}")
    except RuntimeError as raised:
        wrapped = type("RayTaskError", (RuntimeError,), {"__module__": "ray.exceptions"})(
            str(raised))
    assert error_line(wrapped) == "CUDA error: out of memory"
    assert one_line(torch.OutOfMemoryError(CUDA_OOM)) == (
        "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.18 "
        "GiB of which 1.44 MiB is free.")


def test_sizes_are_in_the_unit_they_fill(monkeypatch) -> None:
    """A 5.7 MiB replay on a full GPU said it needed "0.0 GiB"."""
    with pytest.raises(ValueError, match=r"^100,000 items of 60 bytes need 5\.7 MiB on cuda, which "
                                         r"could not be allocated \(CUDA out of memory\. .* is "
                                         r"free\.\); lower size$"):
        check_fits(6_000_000, "100,000 items of 60 bytes need", "lower size", "cuda",
                   torch.OutOfMemoryError(CUDA_OOM))
    from looprl.core import suggest

    monkeypatch.setattr(suggest, "memory_limit", lambda device: 1536)
    with pytest.raises(ValueError, match=r"^need 2\.0 GiB, more than the 1\.5 KiB of memory this "
                                         r"process can have on cpu; lower size$"):
        check_fits(2**31, "need", "lower size")
