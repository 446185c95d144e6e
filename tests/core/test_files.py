"""Files that an older looprl saved load (``looprl.core.files``)."""

from __future__ import annotations

import importlib
import io
import zipfile

import pytest
import torch

from looprl.core.files import load_file
from looprl.core.imports import MERGED, import_object

#: classes of modules merged since (module then, class)
MERGED_CLASSES = [
    *[(f"presets.atari.{module}", name) for module, name in (
        ("a2c", "A2CAtariPreset"), ("c51", "C51AtariPreset"), ("common", "AtariReplayPreset"),
        ("common", "NatureActorCritic"), ("ddqn", "DDQNAtariPreset"), ("dqn", "DQNAtariPreset"),
        ("ppg", "PPGAtariPreset"), ("ppo", "PPOAtariPreset"), ("rainbow", "RainbowAtariPreset"),
        ("vac", "VACAtariPreset"), ("vpg", "VPGAtariPreset"), ("vqn", "OnlineAtariPreset"),
        ("vsarsa", "VSarsaAtariPreset"))],
    *[(f"presets.classic_control.{module}", f"{name}ClassicControlPreset") for module, name in (
        ("c51", "C51"), ("rainbow", "Rainbow"), ("vsarsa", "VSarsa"), ("vac", "VAC"),
        ("vpg", "VPG"), ("ppg", "PPG"))],
    ("presets.continuous.sac", "SACContinuousPreset"),
    ("presets.continuous.td3", "TD3ContinuousPreset"),
    ("approximation.identity", "Identity"), ("approximation.v_network", "VModule"),
    ("approximation.feature_network", "FeatureModule"),
    ("approximation.checkpointer", "PeriodicCheckpointer"),
    ("nn.noisy", "NoisyFactorizedLinear"), ("nn.actor_critic", "SharedActorCritic"),
    ("policies.gaussian", "GaussianPolicyNetwork"), ("policies.softmax", "SoftmaxPolicyNetwork"),
    ("policies.exploration", "EZGreedyPolicy"), ("memory.advantages", "GeneralizedAdvantageBuffer"),
    ("meta.space", "SPaCE"), ("meta.transition_log", "TransitionMeans")]


@pytest.mark.parametrize(("module", "name"), MERGED_CLASSES)
def test_files_saved_before_their_modules_merged_load(module: str, name: str) -> None:
    """A preset or network saved when its class lived in a module of its own
    (``looprl.presets.atari.dqn``, ``looprl.nn.noisy``, ...) loads: the class is found where it
    is now (was: one line, 'written by another version of looprl')."""
    cls = getattr(importlib.import_module(MERGED[f"looprl.{module}"]), name)
    saved, old = io.BytesIO(), io.BytesIO()
    torch.save(cls, saved, pickle_protocol=2)
    with zipfile.ZipFile(saved) as new, zipfile.ZipFile(old, "w") as moved:
        for entry in new.namelist():  # (the class where an older looprl had it)
            moved.writestr(entry, new.read(entry).replace(cls.__module__.encode(),
                                                          f"looprl.{module}".encode()))
    assert load_file("old.pt", "looprl preset", "train it again", data=old.getvalue()) is cls


@pytest.mark.parametrize(("module", "name"), MERGED_CLASSES)
def test_import_paths_of_merged_modules_still_import(module: str, name: str) -> None:
    """A config's import path into a merged module (``_target_=looprl.meta.space.SPaCE``)
    names the class where it is now (was: 'cannot import looprl.meta.space')."""
    cls = getattr(importlib.import_module(MERGED[f"looprl.{module}"]), name)
    assert import_object(f"looprl.{module}.{name}", "meta component") is cls
    assert import_object(f"looprl.{module}:{name}", "meta component") is cls
