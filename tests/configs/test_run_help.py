"""``looprl run --help`` lists the ``runtime=ray`` options (issue 44, 4): each
``runtime.NAME=DEFAULT`` of ``RuntimeConfig`` with what its docstring says of it."""

from __future__ import annotations

from dataclasses import fields

import pytest

pytest.importorskip("hydra")

from looprl.configs.app import main  # noqa: E402
from looprl.configs.runtimes import runtime_help  # noqa: E402
from looprl.distributed.config import RuntimeConfig  # noqa: E402


def test_looprl_run_help_lists_every_runtime_option(capsys) -> None:
    with pytest.raises(SystemExit):  # (as Hydra's help ends)
        main(["--help"])
    text = capsys.readouterr().out
    options = text.partition("== runtime=ray options ==")[2]
    assert options, text[-500:]
    for field in fields(RuntimeConfig):  # (a preset's segment length is its own)
        assert (f"runtime.{field.name}=" in options) == (field.name != "segment_length"), field
    lines = options.splitlines()
    # the default, and the first sentence of the docstring's description
    assert any(line.split() == ["runtime.envs_per_actor=4", "env", "copies", "per", "actor",
                                "worker."] for line in lines), options
    assert "runtime.max_lag=null" in options and "runtime.trials_in_parallel=null" in options
    assert "runtime.sync=false" in options


def test_runtime_help_describes_options_named_together_and_continued() -> None:
    text = runtime_help(width=200)
    [cpus] = [line for line in text.splitlines() if "runtime.cpus_per_trainer=" in line]
    assert cpus.split()[1:] == ["Ray", "CPUs", "each", "worker", "reserves."]
    [groups] = [line for line in text.splitlines() if "runtime.groups=" in line]
    assert groups.rstrip().endswith("(1: no overlap; null: 2, 1 for one env).")  # (joined)
    assert "``" not in text and "None" not in text  # as the command line writes them
