"""Tests of looprl.experiments.watch: environment per family, GIF output, step cap."""

from __future__ import annotations

import importlib.util
import os
import warnings
from functools import partial

import numpy as np
import pytest
import torch

from looprl.environments import GymEnvironment
from looprl.experiments import watch


class _Right:
    def act(self, state):
        return torch.tensor(1)


def test_max_steps_cuts_the_episode(tmp_path) -> None:
    watch.offscreen_rendering()
    env = GymEnvironment("CartPole-v1", render_mode="rgb_array")
    returns, path = watch.watch(_Right(), env, episodes=2, gif=tmp_path / "a.gif", max_steps=3)
    assert returns == [3.0, 3.0]
    assert path.read_bytes()[:6] == b"GIF89a"


def test_episodes_played_unseen_do_not_wait_at_the_frame_rate(monkeypatch, caplog) -> None:
    """(was: 280 CartPole steps with no window took 6 s, one sleep of 1/fps per step)"""
    slept: list[float] = []
    monkeypatch.setattr(watch.time, "sleep", slept.append)
    env = GymEnvironment("CartPole-v1")  # (no render_mode: no window)
    returns, path = watch.watch(_Right(), env, episodes=1, max_steps=5)
    assert returns == [5.0] and path is None and slept == []
    assert "plays unseen" in caplog.text or "play unseen" in caplog.text
    shown = GymEnvironment("CartPole-v1")
    monkeypatch.setattr(watch, "warn_unseen", lambda env: False)  # (as with a window)
    watch.watch(_Right(), shown, episodes=1, max_steps=5, fps=25)
    assert len(slept) >= 5 and set(slept) == {1 / 25}  # (a frame each: the steps, the reset)


def test_a_render_that_raises_names_the_environment_and_render(tmp_path) -> None:
    # was the user's bare exception (looprl watch: "looprl: error: the user's bug")
    from looprl.environments import EnvironmentFailure

    def crash():
        raise KeyError("the user's bug")

    env = GymEnvironment("CartPole-v1", render_mode="rgb_array")
    env.env.render = crash
    with pytest.raises(EnvironmentFailure, match=r"CartPole-v1\.render\(\) raised KeyError: "
                       r"\"the user's bug\"") as info:
        watch.watch(_Right(), env, episodes=1, gif=tmp_path / "a.gif", max_steps=3)
    assert info.value.method == "render"


def test_a_render_without_offscreen_opengl_says_what_to_install(tmp_path) -> None:
    """A MuJoCo render on a machine with neither EGL nor OSMesa (nor a display) raised
    "FatalError: an OpenGL platform library has not been loaded": the line says what to do."""
    from looprl.environments import EnvironmentFailure

    def no_gl():  # (MUJOCO_GL=glfw without a display: GLFW warned twice first)
        warnings.warn_explicit("(65550) b'X11: Failed to open display '", UserWarning,
                               "glfw/__init__.py", 917, module="glfw")
        raise RuntimeError("an OpenGL platform library has not been loaded into this process")

    env = GymEnvironment("CartPole-v1", render_mode="rgb_array")
    env.env.render = no_gl
    with warnings.catch_warnings(record=True) as caught, pytest.raises(
            EnvironmentFailure, match=r"loaded into this process; no offscreen OpenGL here: "
                                      r"install EGL or OSMesa .* set MUJOCO_GL=egl or osmesa$"):
        warnings.simplefilter("always")
        watch.watch(_Right(), env, episodes=1, gif=tmp_path / "a.gif", max_steps=3)
    assert not [w for w in caught if "X11" in str(w.message)]  # (looprl's line says it)


def test_a_gif_path_that_cannot_be_written_is_one_line_before_the_episodes_play(
        tmp_path, monkeypatch) -> None:
    # was: every episode played, then "[Errno 21] Is a directory: 'runs.tmp' -> 'runs'" (a
    # runs.tmp left beside it), or "[Errno 2] No such file or directory: '/proc/x'"
    from looprl.core.files import write_atomically

    played = []
    monkeypatch.setattr(watch, "play_episodes", lambda *args: played.append(args))
    env = GymEnvironment("CartPole-v1", render_mode="rgb_array")
    with pytest.raises(ValueError, match=f"cannot write the GIF at {tmp_path}: it is a "
                       r"directory; give another file \(looprl watch --gif PATH"):
        watch.watch(_Right(), env, gif=tmp_path)
    with pytest.raises(ValueError, match="cannot write the GIF at out.png: its name does not "
                       "end in .gif; give another file"):
        watch.watch(_Right(), env, gif="out.png")  # (was GIF bytes in out.png)
    if os.path.isdir("/proc/self"):
        with pytest.raises(ValueError, match="cannot write the GIF at /proc/x/a.gif: .* "
                           r"\(/proc/x\); give another file"):
            watch.watch(_Right(), GymEnvironment("CartPole-v1"), gif="/proc/x/a.gif")
    assert not played
    (tmp_path / "runs").mkdir()
    with pytest.raises(OSError):  # (the temporary is removed when the rename fails too)
        write_atomically(tmp_path / "runs", lambda temporary: temporary.write_text("GIF"))
    assert os.listdir(tmp_path) == ["runs"]


@pytest.mark.parametrize(("option", "message"), [
    ({"max_steps": 0}, "max_steps must be positive"), ({"fps": -1}, "fps must be positive"),
    ({"fps": -1, "gif": "a.gif"}, "fps must be positive")])
def test_watch_refuses_a_count_or_speed_the_command_line_refuses(tmp_path, option, message):
    """``watch(..., max_steps=0)`` played (and returned) one step; a negative ``fps`` was
    ``time.sleep``'s error, or an ``OverflowError`` writing the GIF."""
    watch.offscreen_rendering()
    env = GymEnvironment("CartPole-v1", render_mode="rgb_array")
    if "gif" in option:
        option = {**option, "gif": tmp_path / option["gif"]}
    with pytest.raises(ValueError, match=message):
        watch.watch(_Right(), env, **option)


def test_a_preset_watched_in_an_environment_of_other_spaces_is_one_line(tmp_path) -> None:
    from looprl.cli import main as cli
    from looprl.presets.classic_control import dqn

    preset = dqn.env(GymEnvironment("CartPole-v1")).hyperparameters(hidden=8).build()
    preset.save(str(tmp_path / "preset.pt"))
    with pytest.raises(ValueError, match=r"built for CartPole-v1 .*Box\(4,\), Discrete\(2\)\), "
                       r"Acrobot-v1 has Box\(6,\), Discrete\(3\)"):
        watch.load_and_watch(tmp_path / "preset.pt", GymEnvironment("Acrobot-v1"))
    assert cli(["watch", str(tmp_path), "--env", "Acrobot-v1", "--gif",
                str(tmp_path / "a.gif")]) == 2


def test_a_watch_leaves_the_rendering_variables_as_it_found_them(tmp_path, monkeypatch) -> None:
    """A GIF watch (``looprl watch --gif``, ``watch(..., gif=)``) left pygame's dummy drivers,
    ``MUJOCO_GL`` and ``SDL_NO_SIGNAL_HANDLERS`` set for the rest of the process: a later watch
    in a window (a notebook's next cell) drew on no screen."""
    from looprl.cli import main as cli
    from looprl.presets.classic_control import dqn

    for name in watch.RENDERING_VARIABLES:  # (set, then unset: monkeypatch puts them back)
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    monkeypatch.setenv("SDL_AUDIODRIVER", "pulse")  # a user's own value: kept
    monkeypatch.setattr(watch.ctypes.util, "find_library", {"EGL": "libEGL.so.1"}.get)
    before = {name: os.environ.get(name) for name in watch.RENDERING_VARIABLES}
    during = []
    play = watch.play_and_show
    monkeypatch.setattr(watch, "play_and_show", lambda *args: during.append(
        {name: os.environ.get(name) for name in before}) or play(*args))
    dqn.env(GymEnvironment("CartPole-v1")).hyperparameters(hidden=8).build().save(
        str(tmp_path / "preset.pt"))
    assert cli(["watch", str(tmp_path), "--gif", str(tmp_path / "a.gif"), "--max-steps",
                "2"]) == 0
    env = GymEnvironment("CartPole-v1", render_mode="rgb_array")
    watch.watch(_Right(), env, gif=tmp_path / "b.gif", max_steps=2)
    assert during == [{"SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "pulse", "MUJOCO_GL": "egl",
                       "SDL_NO_SIGNAL_HANDLERS": "1"},
                      {**before, "SDL_NO_SIGNAL_HANDLERS": "1"}]
    assert {name: os.environ.get(name) for name in before} == before


@pytest.mark.parametrize(("found", "backend"), [
    ({"EGL": "libEGL.so.1", "OSMesa": "libOSMesa.so"}, "egl"),
    ({"OSMesa": "libOSMesa.so"}, "osmesa"),
    ({}, None),
])
def test_offscreen_mujoco_backend_is_one_this_machine_has(monkeypatch, found, backend) -> None:
    """Without the backend's library, ``MUJOCO_GL`` stays unset: a backend that is not there
    would break ``import mujoco`` for the rest of the process (as on a GPU machine without
    libEGL); a user's choice is kept."""
    monkeypatch.setenv("MUJOCO_GL", "")  # so that the variable's state comes back after the
    monkeypatch.delenv("MUJOCO_GL")  # test (a backend left set broke later `import mujoco`)
    monkeypatch.setattr(watch.ctypes.util, "find_library", found.get)
    watch.offscreen_rendering()
    assert os.environ.get("MUJOCO_GL") == backend
    monkeypatch.setenv("MUJOCO_GL", "glfw")
    watch.offscreen_rendering()
    assert os.environ["MUJOCO_GL"] == "glfw"


def test_watch_env_per_family(monkeypatch) -> None:
    from looprl.presets.classic_control import ppo

    preset = ppo.env(GymEnvironment("CartPole-v1")).device("cpu").build()
    env, window = watch.watch_env(preset, "CartPole-v1", window=False)
    assert type(env) is GymEnvironment and env.env.render_mode == "rgb_array"
    assert not window and not watch.draws_window(env)
    env.close()
    monkeypatch.setenv("DISPLAY", ":0")
    env, window = watch.watch_env(preset, "CartPole-v1", window=True)
    assert window and watch.draws_window(env)
    env.close()
    monkeypatch.delenv("DISPLAY")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    env, window = watch.watch_env(preset, "CartPole-v1", window=True)  # no display: frames
    assert not window and env.env.render_mode == "rgb_array"
    env.close()


def test_watch_env_plays_a_contextual_run_on_its_instances() -> None:
    """Was: the plain environment, refused for the preset's spaces with the context visible
    (and with default physics with it hidden)."""
    from looprl.environments.contextual import ContextualEnvironment
    from looprl.presets.classic_control import ppo

    trained = ContextualEnvironment("CartPole-v1", {3: {"length": 0.3}}, hide_context=False)
    preset = ppo.env(trained).device("cpu").build()
    env, window = watch.watch_env(preset, "CartPole-v1", window=False)
    assert not window and env.observation_space.shape == (10,)
    env.reset()
    assert env.contextual.instance_id == 3 and env.contextual.unwrapped.length == 0.3
    assert env.render().ndim == 3
    env.close()


def test_watch_env_builds_a_class_without_render_mode_as_training_does(monkeypatch) -> None:
    """An import-path environment whose ``__init__`` takes no ``render_mode`` is built
    without one (as ``make_env`` built it to train), and renders its own frames."""
    from looprl.presets.catalog import make_env
    from looprl.presets.classic_control import ppo

    monkeypatch.setenv("DISPLAY", ":0")
    path = "tests.experiments.watched_envs:Frames"
    trained = make_env("ppo", path)
    preset = ppo.env(trained).device("cpu").build()
    for window in (False, True):
        env, shown = watch.watch_env(preset, path, window)
        assert type(env) is type(trained) and env.name == trained.name == path
        assert not shown and not watch.draws_window(env)
        env.reset()
        assert env.render().shape == (8, 8, 3)
        env.close()


class _Built:
    """An environment ``render_env`` builds: its ``render_mode``, and whether it was closed."""

    def __init__(self, render_mode: str | None = None, refuses: type[Exception] | None = None,
                 keeps_mode: bool = True):
        if refuses is not None and render_mode == "human":
            raise refuses("no window")
        self.render_mode = render_mode if keeps_mode else None
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_render_env_draws_a_window_only_where_the_environment_draws_one(monkeypatch) -> None:
    """The one way every watch builds its environment: a window where the constructor takes
    ``render_mode='human'`` and then draws one; frames offscreen otherwise (a constructor
    that refuses the mode, or takes none and so draws nothing, built once more for frames)."""
    monkeypatch.setenv("SDL_VIDEODRIVER", "")  # (so that the variable's state comes back)
    monkeypatch.delenv("SDL_VIDEODRIVER")
    built: list[_Built] = []

    def build(**options):
        built.append(_Built(**options))
        return built[-1]

    env, window = watch.render_env(build, window=True)
    assert window and env.render_mode == "human" and len(built) == 1
    assert "SDL_VIDEODRIVER" not in os.environ  # (a window: pygame draws on the display)
    env, window = watch.render_env(build, window=False)
    assert not window and env.render_mode == "rgb_array"
    assert os.environ["SDL_VIDEODRIVER"] == "dummy"  # frames offscreen
    for refuses in (TypeError, ValueError):  # (no such mode; Atari's refusal)
        env, window = watch.render_env(partial(build, refuses=refuses), window=True)
        assert not window and env.render_mode == "rgb_array"
    built.clear()
    env, window = watch.render_env(partial(build, keeps_mode=False), window=True)
    assert not window and [b.closed for b in built] == [True, False] and env is built[-1]


def test_watch_env_for_atari_and_mujoco() -> None:
    pytest.importorskip("ale_py")
    pytest.importorskip("mujoco")
    from looprl.environments import AtariEnvironment, MujocoEnvironment
    from looprl.presets.atari import dqn
    from looprl.presets.continuous import sac

    atari = dqn.env(AtariEnvironment("Breakout")).device("cpu").build()
    env, window = watch.watch_env(atari, "Breakout", window=True)
    assert isinstance(env, AtariEnvironment) and not window  # (Atari: a GIF, even with a display)
    cheetah = sac.env(MujocoEnvironment("HalfCheetah-v5")).device("cpu").build()
    env, window = watch.watch_env(cheetah, "HalfCheetah-v5", window=False)
    assert isinstance(env, MujocoEnvironment) and not window
    env.reset()
    assert env.render().shape[-1] == 3
    env.close()


def test_watch_env_builds_an_atari_game_with_the_options_it_trained_with() -> None:
    """Was: ``looprl watch`` of ``looprl run env=Pong +env_kwargs.frame_stack=2`` built Pong
    with the default options, and refused the run's own preset for its 2-frame stacks."""
    pytest.importorskip("ale_py")
    from looprl.environments import AtariEnvironment
    from looprl.presets.atari import dqn

    trained = AtariEnvironment("Pong", frame_stack=2, max_episode_frames=200)
    preset = dqn.env(trained).device("cpu").build()
    for env_id in ("Pong", "ALE/Pong-v5"):
        env, _ = watch.watch_env(preset, env_id, window=False)
        assert env.options == {"frame_stack": 2, "max_episode_frames": 200}
        assert env.observation_space.shape == (2, 84, 84)
        env.close()


def test_watch_multiagent_preset_plays_turns_into_a_gif(tmp_path) -> None:
    from looprl.agents import IndependentMultiagent, RandomAgent
    from looprl.environments import MultiagentPettingZooEnv
    from looprl.presets.multiagent import dqn

    preset = dqn.env(MultiagentPettingZooEnv("tictactoe_v3")).device("cpu").build()
    env, _ = watch.watch_env(preset, "tictactoe_v3", window=False)
    assert isinstance(env, MultiagentPettingZooEnv)
    players = {name: RandomAgent(env.action_space(name), seed=i)
               for i, name in enumerate(env.possible_agents)}
    returns, path = watch.watch(IndependentMultiagent(players), env, episodes=3,
                                gif=tmp_path / "game.gif")
    assert len(returns) == 3
    for episode in returns:
        assert set(episode) == {"player_1", "player_2"}
        assert sum(episode.values()) == 0.0  # a zero-sum game: win/loss +-1 or a draw
        assert set(episode.values()) <= {-1.0, 0.0, 1.0}
    assert any(v != 0.0 for episode in returns for v in episode.values())  # someone won
    assert path.read_bytes()[:6] == b"GIF89a"


def test_watch_multiagent_max_steps_cuts_the_game(tmp_path) -> None:
    from looprl.agents import IndependentMultiagent, RandomAgent
    from looprl.environments import MultiagentPettingZooEnv
    from looprl.environments.multiagent import make_zoo_env

    env = MultiagentPettingZooEnv(make_zoo_env("tictactoe_v3", render_mode="rgb_array"))
    players = {name: RandomAgent(env.action_space(name)) for name in env.possible_agents}
    returns, _ = watch.watch(IndependentMultiagent(players), env, max_steps=2,
                             gif=tmp_path / "cut.gif")
    assert returns == [{"player_1": 0.0, "player_2": 0.0}]
    from PIL import Image

    with Image.open(tmp_path / "cut.gif") as image:
        assert image.n_frames == 3  # two turns played, then the cut


def test_default_fps_is_the_environments_real_time() -> None:
    from looprl.environments import AtariEnvironment, MultiagentPettingZooEnv

    assert watch.default_fps(GymEnvironment("CartPole-v1")) == 50.0
    assert watch.default_fps(MultiagentPettingZooEnv("tictactoe_v3")) == 1.0
    if importlib.util.find_spec("ale_py") is not None:
        assert watch.default_fps(AtariEnvironment("Breakout")) == 15.0


def test_small_frames_are_enlarged_in_the_gif(tmp_path) -> None:
    from PIL import Image

    frames = [np.full((84, 84, 3), i * 40, dtype=np.uint8) for i in range(3)]
    watch.write_gif(frames, tmp_path / "atari.gif", fps=15)
    with Image.open(tmp_path / "atari.gif") as image:
        assert image.size == (336, 336) and image.n_frames == 3


def test_an_interrupted_gif_write_leaves_the_earlier_gif_whole(tmp_path, monkeypatch) -> None:
    """Ctrl-C while ``looprl watch`` writes ``watch.gif`` truncated the earlier GIF there."""
    from PIL import Image

    path = tmp_path / "watch.gif"
    frames = [np.full((300, 300, 3), value, dtype=np.uint8) for value in (0, 255)]
    watch.write_gif(frames, path, fps=15)
    written = path.read_bytes()

    def interrupted(image, fp, *args, **kwargs) -> None:
        with open(fp, "wb") as file:
            file.write(b"GIF89a")
        raise KeyboardInterrupt

    monkeypatch.setattr(Image.Image, "save", interrupted)
    with pytest.raises(KeyboardInterrupt):
        watch.write_gif(frames[::-1], path, fps=15)
    assert path.read_bytes() == written and os.listdir(tmp_path) == ["watch.gif"]


def test_atari_presets_are_watched_in_a_gif_even_with_a_display(monkeypatch) -> None:
    pytest.importorskip("ale_py")
    from looprl.environments import AtariEnvironment
    from looprl.presets.atari import dqn
    from looprl.presets.classic_control import ppo

    monkeypatch.setenv("DISPLAY", ":0")
    atari = dqn.env(AtariEnvironment("Breakout")).device("cpu").build()
    assert not watch.shows_in_window(atari)
    assert watch.shows_in_window(ppo.env(GymEnvironment("CartPole-v1")).device("cpu").build())
    monkeypatch.delenv("DISPLAY")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert not watch.shows_in_window(ppo.env(GymEnvironment("CartPole-v1")).device("cpu").build())
