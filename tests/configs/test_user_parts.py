"""A user's own parts from the config: meta components and environments by import path."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("hydra")

from hydra import compose, initialize  # noqa: E402

from looprl.cli import main as cli  # noqa: E402
from looprl.configs import build, register  # noqa: E402
from looprl.meta import RND  # noqa: E402

USER = "configs.user_parts"


def _compose(overrides: list[str]):
    register(overrides)
    with initialize(version_base="1.3", config_path=None):
        return compose("looprl", overrides=overrides)


def test_a_component_by_import_path_with_its_arguments_as_keys() -> None:
    from configs.user_parts import ScaledReward

    built = build(_compose([f"meta=[rnd,{USER}:ScaledReward]", "meta.ScaledReward.scale=0.1",
                            "frames=64"]))
    rnd, scaled = built.meta
    assert isinstance(rnd, RND) and isinstance(scaled, ScaledReward)
    assert (scaled.scale, scaled.offset) == (0.1, 0.0)


def test_a_component_in_hydras_target_form() -> None:
    from configs.user_parts import ScaledReward

    built = build(_compose([f"+meta.mine._target_={USER}.ScaledReward", "+meta.mine.offset=2",
                            "frames=64"]))
    (scaled,) = built.meta
    assert isinstance(scaled, ScaledReward) and (scaled.scale, scaled.offset) == (1.0, 2)


@pytest.mark.parametrize("overrides, message", [
    ([f"meta=[{USER}:Missing]"], f"module '{USER}' has no attribute 'Missing'"),
    (["meta=[no_such_package.module:X]"], "cannot import 'no_such_package.module'"),
    ([f"meta=[{USER}:NotAComponent]"], "is a type, not a subclass of looprl.meta.MetaComponent"),
    ([f"meta=[{USER}:ScaledReward]", "meta.ScaledReward.scal=1"],
     "'scal' is not an argument of"),
    ([f"meta=[{USER}:ScaledReward]", "meta.Scaled.scale=1"], "which is not attached"),
    ([f"+meta.mine._target_={USER}.ScaledReward", "+meta.mine.scal=1"],
     "'scal' is not an argument of ScaledReward. Did you mean 'scale'?"),
    ([f"+meta.mine._target_={USER}.Nope"], "has no attribute 'Nope'"),
])
def test_bad_import_paths_fail_in_one_line(overrides, message, capsys, tmp_path) -> None:
    assert cli(["run", *overrides, f"hydra.run.dir={tmp_path}"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and message in error[0], error


def test_a_run_with_a_users_component(tmp_path: Path) -> None:
    from looprl.configs.app import main as run

    run([f"meta=[{USER}:ScaledReward]", "meta.ScaledReward.scale=0.0", "frames=128",
         "test_episodes=1", "algorithm.n_envs=2", "algorithm.n_steps=32", "algorithm.hidden=8",
         "logging.quiet=true", "hydra/job_logging=none", "hydra/hydra_logging=none",
         f"hydra.run.dir={tmp_path}"])
    config = (tmp_path / ".hydra" / "config.yaml").read_text()
    assert f"_target_: {USER}:ScaledReward" in config and "scale: 0.0" in config
