"""Presets: configured algorithms, built with ``preset.env(env).hyperparameters(...).build()``."""

from __future__ import annotations

import torch

from looprl.core import Preset
from looprl.presets import atari, classic_control, continuous, multiagent
from looprl.presets.builder import PresetBuilder, UnknownHyperparameterError, default_device


def load_preset(filename: str, device: str | None = None) -> Preset:
    """Load a preset saved with ``preset.save(filename)``, weights included.

    Args:
        device: where to put its networks (default: the saved device if available, else CPU).
    """
    preset = torch.load(filename, weights_only=False, map_location="cpu")
    device = device or (preset.device if str(preset.device) == "cpu" else default_device())
    preset.device = device
    for value in vars(preset).values():
        if isinstance(value, torch.nn.Module):
            value.to(device)
    return preset


__all__ = [
    "atari",
    "PresetBuilder",
    "UnknownHyperparameterError",
    "classic_control",
    "continuous",
    "default_device",
    "load_preset",
    "multiagent",
]
