"""Atari 2600 games as ale-py ships them: game names and ale-py's native vector env with the
DeepMind preprocessing; ale-py is imported only when a function needs it."""

from __future__ import annotations

import os
import re
from typing import Any

from looprl.core.ranges import COUNT, UNIT, WHOLE
from looprl.core.suggest import check_fits, check_flag, did_you_mean, is_number

#: Options of the DeepMind preprocessing and their defaults.
DEEPMIND_OPTIONS: dict[str, Any] = {
    "noop_max": 30,
    "frame_skip": 4,
    "frame_stack": 4,
    "screen_size": 84,
    "fire_reset": True,
    "clip_rewards": False,
    "repeat_action_probability": 0.0,
    "max_episode_frames": 108_000,
    "full_action_space": False,
}

#: The valid values of the numeric options (ale-py hangs or misbehaves out of them); others: bools.
OPTION_RANGES = {"noop_max": WHOLE, "frame_skip": COUNT, "frame_stack": COUNT,
                 "screen_size": COUNT, "repeat_action_probability": UNIT,
                 "max_episode_frames": WHOLE}


def _import_ale() -> Any:
    try:
        import ale_py
    except ImportError as error:
        raise ModuleNotFoundError("Atari environments need ale-py: pip install "
                                  "'looprl[atari]'") from error
    return ale_py


def ale_rom_folder() -> str | None:
    """The folder of ale-py's ROMs, where PettingZoo's Atari games find theirs (or ``None``)."""
    try:
        import ale_py.roms
    except ImportError:
        return None
    return os.path.dirname(ale_py.roms.__file__)  # (the .bin files lie beside it)


def _camel(rom_id: str) -> str:
    return "".join(part.capitalize() for part in rom_id.split("_"))


def atari_games() -> list[str]:
    """The games ale-py ships (their ROMs are inside the package), as ``'Breakout'`` names."""
    return sorted(_camel(rom) for rom in _import_ale().roms.get_all_rom_ids())


def game_name(name: str) -> str:
    """The game's name as ``AtariEnvironment`` shows it (``'ALE/MsPacman-v5'``: ``'MsPacman'``)."""
    return _camel(rom_id(name))


def atari_game(name: str) -> str | None:
    """``game_name(name)``, or ``None`` if it is no game ale-py ships (or ale-py is missing)."""
    try:
        return game_name(name)
    except (ImportError, ValueError):
        return None


def rom_id(name: str) -> str:
    """ale-py's ROM id of a game name (``'Breakout'``, ``'ALE/Breakout-v5'``: ``'breakout'``)."""
    if not isinstance(name, str):
        raise TypeError(f"An Atari game is named by text ('Breakout' or 'ALE/Breakout-v5'), "
                        f"got {type(name).__name__} {name!r:.40}")
    roms = set(_import_ale().roms.get_all_rom_ids())
    short = re.sub(r"^ALE/|-v\d+$", "", name.strip())
    short = re.sub(r"(NoFrameskip|Deterministic)$", "", short)
    candidate = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", short).lower()
    if candidate in roms:
        return candidate
    hint = did_you_mean(_camel(candidate), atari_games(), n=3)
    raise ValueError(f"Unknown Atari game {name!r}.{hint} (looprl.environments."
                     f"atari_games() lists the {len(roms)} games ale-py ships.)")


def make_ale_vector_env(name: str, n_envs: int, num_threads: int | None = None, **options: Any):
    """ale-py's ``AtariVectorEnv`` of ``n_envs`` copies (``options``: over ``DEEPMIND_OPTIONS``)."""
    ale_py = _import_ale()
    unknown = set(options) - set(DEEPMIND_OPTIONS)
    if unknown:
        valid = ", ".join(sorted(DEEPMIND_OPTIONS))
        raise TypeError(f"Unknown Atari options {sorted(unknown)}; valid: {valid}")
    o = {**DEEPMIND_OPTIONS, **options}
    for key, value in options.items():  # (as the Python types ale-py takes: 4.0 as 4)
        valid = OPTION_RANGES.get(key)
        if valid is None:
            o[key] = check_flag(f"Atari option {key}", value)
        elif is_number(value) and valid.holds(float(value)):
            o[key] = int(value) if valid.whole else float(value)
        else:
            raise ValueError(f"Atari option {key} must be {valid.text}, got {value!r}")
    threads = num_threads or max(1, min(n_envs, os.cpu_count() or 1))
    game = rom_id(name)
    size, frames = o["screen_size"], o["frame_stack"]
    nbytes = n_envs * frames * size**2  # (uint8 pixels; at least this much: the observations)
    copies, take = (f"{n_envs:,} copies of ", "take") if n_envs > 1 else ("", "takes")
    what = f"Atari: {copies}a frame stack of {frames:,} frames of {size:,}x{size:,} pixels {take}"
    remedy = (f"lower screen_size (default {DEEPMIND_OPTIONS['screen_size']}; the ALE screen is "
              f"210x160) or frame_stack (default {DEEPMIND_OPTIONS['frame_stack']})")
    check_fits(nbytes, what, remedy)
    try:
        return ale_py.AtariVectorEnv(
            game, n_envs, num_threads=threads,
            max_num_frames_per_episode=o["max_episode_frames"],
            repeat_action_probability=o["repeat_action_probability"],
            full_action_space=o["full_action_space"],
            img_height=size, img_width=size, stack_num=frames,
            frameskip=o["frame_skip"], noop_max=o["noop_max"],
            use_fire_reset=o["fire_reset"], reward_clipping=o["clip_rewards"],
            episodic_life=False, life_loss_info=False,
        )
    except MemoryError as error:  # (NumPy's, in the observation space ale-py makes)
        check_fits(nbytes, what, remedy, error=error)
