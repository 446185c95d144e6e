"""ALL 0.9's ``watch`` and ``load_and_watch``, called as an ALL user calls them
(``from all.experiments import load_and_watch, watch``)."""

from typing import Any

import pytest
import torch

from looprl.environments import GymEnvironment
from looprl.experiments import load_and_watch, watch
from looprl.presets import classic_control


class _Left:
    def act(self, state: Any) -> torch.Tensor:
        return torch.tensor(0)


def test_watch_is_callable_as_alls() -> None:
    env = GymEnvironment("CartPole-v1")
    returns, path = watch(_Left(), env, fps=1e6, n_episodes=2)
    assert len(returns) == 2 and path is None
    assert len(watch(_Left(), env, 1e6, 3)[0]) == 3  # (ALL's order: fps, n_episodes; was 1e6
    # episodes at 3 frames a second)
    assert all(5 <= r <= 30 for r in returns)  # always pushing left falls quickly
    assert callable(watch.watch_env)  # the module's helpers stay
    with pytest.raises(ValueError, match="watch plays a whole number of episodes >= 1"):
        watch(_Left(), GymEnvironment("CartPole-v1"), n_episodes=0)
    with pytest.raises(ValueError, match="episodes=3 and n_episodes=2 are one argument under two"):
        watch(_Left(), GymEnvironment("CartPole-v1"), episodes=3, n_episodes=2)  # (2 won)


def test_watch_of_a_preset_or_a_builder_says_to_give_its_test_agent() -> None:
    """``watch(preset, env)`` (was: ``AttributeError: ... has no attribute 'act'`` mid-play)."""
    env = GymEnvironment("CartPole-v1")
    preset = classic_control.dqn.env(env).device("cpu").hyperparameters(hidden=8).build()
    with pytest.raises(TypeError, match=r"watch plays an agent.*got DQNClassicControlPreset: "
                       r"give its test agent, preset.test_agent\(\)"):
        watch(preset, env, fps=1e6)
    with pytest.raises(TypeError, match=r"got PresetBuilder: build the preset .*"
                       r"dqn.env\(env\).build\(\).test_agent\(\)"):
        watch(classic_control.dqn, env, fps=1e6)
    with pytest.raises(TypeError, match="got NoneType"):
        watch(None, env, fps=1e6)
    assert watch(preset.test_agent(), env, fps=1e6)[0]  # (its test agent plays)


def test_watch_without_a_window_or_gif_warns_once(caplog: Any, tmp_path: Any) -> None:
    """``watch(agent, GymEnvironment('CartPole-v1'))`` (no ``render_mode``) played unseen
    without a word."""
    watch.offscreen_rendering()
    with caplog.at_level("WARNING", logger="looprl"):
        watch(_Left(), GymEnvironment("CartPole-v1"), fps=1e6)
        watch(_Left(), GymEnvironment("CartPole-v1"), fps=1e6)  # (was: a warning each time)
        watch(_Left(), GymEnvironment("CartPole-v1", render_mode="rgb_array"), fps=1e6,
              gif=tmp_path / "a.gif")  # (a GIF: nothing to say)
    lines = [r.getMessage() for r in caplog.records if "shows no window" in r.getMessage()]
    assert len(lines) == 1, lines
    assert "GymEnvironment('CartPole-v1', render_mode='human')" in lines[0]
    assert "watch(..., gif=PATH)" in lines[0]


def test_load_and_watch_a_saved_preset(tmp_path: Any) -> None:
    torch.manual_seed(0)
    env = GymEnvironment("CartPole-v1")
    preset = classic_control.dqn.env(env).device("cpu").build()
    preset.save(str(tmp_path / "preset.pt"))
    returns, _ = load_and_watch(tmp_path / "preset.pt", GymEnvironment("CartPole-v1"),
                                fps=1e6, n_episodes=2)
    assert len(returns) == 2 and all(r >= 1 for r in returns)
    with pytest.raises(FileNotFoundError, match="preset.save"):
        load_and_watch(tmp_path / "missing.pt", env, n_episodes=1)


WATCH_FOREVER = """
from looprl.environments import GymEnvironment
from looprl.experiments import watch


class Left:
    def act(self, state):
        print("acting", flush=True)
        return 0


watch(Left(), GymEnvironment("CartPole-v1", render_mode="human"), fps=1000, n_episodes=10**9)
"""


def test_a_window_watched_forever_stops_at_sigterm() -> None:
    """ALL's watch_classic.py under a scheduler: SDL made SIGTERM a quit event that nothing
    read, and the watch played on."""
    import os
    import signal
    import subprocess
    import sys

    pytest.importorskip("pygame")
    env = {**os.environ, "SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy"}
    env.pop("SDL_NO_SIGNAL_HANDLERS", None)
    process = subprocess.Popen([sys.executable, "-c", WATCH_FOREVER], env=env,
                               stdout=subprocess.PIPE, text=True)
    try:
        for _ in range(3):  # (its window drawn: pygame started)
            assert process.stdout.readline() == "acting\n"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=300) == -signal.SIGTERM
    finally:
        process.kill()
        process.wait()
