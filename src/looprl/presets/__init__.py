"""Presets: configured algorithms, built with ``preset.env(env).hyperparameters(...).build()``."""

from __future__ import annotations

from pathlib import Path

from looprl.core import ParallelPreset, Preset
from looprl.core.files import load_file
from looprl.core.suggest import a_type
from looprl.presets import atari, classic_control, continuous, multiagent
from looprl.presets.builder import (
    ParallelPresetBuilder,
    PresetBuilder,
    UnknownHyperparameterError,
    check_device,
    default_device,
)
from looprl.presets.common import to_device
from looprl.presets.multiagent.independent import IndependentMultiagentPreset


def load_preset(filename: str, device: str | None = None) -> Preset:
    """Load a preset saved with ``preset.save(filename)``, weights included, on ``device``
    (default: the saved device if available, else CPU)."""
    preset = load_file(filename, "looprl preset", "save one with preset.save(filename), or "
                       "train one with looprl train", map_location="cpu")
    if not isinstance(preset, Preset):
        run = Path(filename).parent
        fix = (f"a distributed run's file: watch the run with looprl watch {run}"
               if (run / "algorithm.pt").exists() else "save one with preset.save(filename)")
        raise ValueError(f"{filename} holds {a_type(preset)}, not a looprl preset ({fix})")
    if device is not None:
        check_device(device)
    to_device(preset, device or (preset.device if str(preset.device) == "cpu"
                                 else default_device()))
    return preset


__all__ = ["atari", "IndependentMultiagentPreset", "ParallelPreset", "ParallelPresetBuilder",
           "Preset", "PresetBuilder", "UnknownHyperparameterError", "classic_control", "continuous",
           "check_device", "default_device", "load_preset", "multiagent"]
