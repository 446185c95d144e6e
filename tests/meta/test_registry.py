"""Meta components by name."""

from __future__ import annotations

import pytest

from looprl.meta.plr import PLR, SPaCE
from looprl.meta.registry import COMPONENTS, accepted_parameters, make_component
from looprl.meta.reset import NetworkReset
from looprl.meta.rnd import RND, NovelD
from looprl.meta.schedules import CosineLRSchedule, HPSchedule


def test_every_name_builds_its_class():
    built = {
        "rnd": make_component("rnd", internal_reward_weight=0.2),
        "noveld": make_component("noveld", alpha=0.3, lr=1e-4),  # RND's arguments too
        "cosine_lr": make_component("cosine_lr", initial_lr=0.1, period=10),
        "hp_schedule": make_component("hp_schedule", key="hp/epsilon", kind="linear",
                                      start=1.0, end=0.1, duration=10),
        "network_reset": make_component("network_reset", every=5, last=2),
        "plr": make_component("plr", strategy="gae"),
        "space": make_component("space", increment=2),
    }
    classes = {"rnd": RND, "noveld": NovelD, "cosine_lr": CosineLRSchedule,
               "hp_schedule": HPSchedule, "network_reset": NetworkReset, "plr": PLR,
               "space": SPaCE}
    assert set(COMPONENTS) == set(classes)
    for name, component in built.items():
        assert type(component) is classes[name]
    assert built["noveld"].alpha == 0.3 and built["noveld"].lr == 1e-4


def test_unknown_name_lists_valid_ones_with_a_suggestion():
    with pytest.raises(ValueError, match="unknown meta component 'novel_d'. Did you mean "
                                         "'noveld'.*cosine_lr, hp_schedule, network_reset"):
        make_component("novel_d")


def test_unknown_argument_lists_accepted_ones():
    with pytest.raises(ValueError) as error:
        make_component("noveld", alfa=0.5)
    message = str(error.value)
    assert "'alfa'" in message and "Did you mean 'alpha'" in message
    assert "internal_reward_weight" in message and "\n" not in message
    assert list(accepted_parameters(NovelD))[:3] == ["alpha", "episodic", "resolution"]


@pytest.mark.parametrize("name, argument", [("plr", "replay_prob"), ("space", "eta"),
                                            ("network_reset", "shrink"), ("noveld", "alpha")])
def test_text_for_a_number_names_the_argument(name, argument):
    """A config's ``meta.plr.replay_prob=abc`` (was: "'<=' not supported between instances
    of 'float' and 'str'", "could not convert string to float: 'abc'", or accepted)."""
    kwargs = {"every": 2} if name == "network_reset" else {}
    with pytest.raises(ValueError, match=f"argument {argument} must be a number .*got 'abc'"):
        make_component(name, **kwargs, **{argument: "abc"})
    make_component("space", seed=None)  # (None where a number is the default: the class says)


@pytest.mark.parametrize("name, argument", [("rnd", "normalize"), ("noveld", "episodic"),
                                            ("hp_schedule", "integer")])
def test_text_for_a_switch_names_the_argument(name, argument):
    """A config's ``meta.rnd.normalize=maybe`` (was taken: text is true in Python)."""
    kwargs = dict(key="hp/lr", kind="linear", start=1e-3, end=0.0, duration=10) if (
        name == "hp_schedule") else {}
    with pytest.raises(ValueError, match=f"argument {argument} must be True or False, got "
                                         "'maybe'$"):
        make_component(name, **kwargs, **{argument: "maybe"})


def test_a_missing_required_argument_is_named() -> None:
    """``make_component('network_reset')`` names ``every`` (was Python's "missing 1 required
    positional argument")."""
    with pytest.raises(ValueError, match=r"'network_reset' \(NetworkReset\) needs the "
                                         r"argument\(s\) every, e.g. every=\.\.\."):
        make_component("network_reset")
    assert make_component("network_reset", every=10).every == 10


def test_a_component_whose_init_raises_is_one_line(monkeypatch) -> None:
    """(was: the user's traceback through Hydra's app)"""
    from looprl.meta import MetaComponent, MetaComponentFailure

    class Broken(MetaComponent):
        def __init__(self):
            super().__init__()
            raise RuntimeError("cannot start")

    monkeypatch.setitem(globals(), "Broken", Broken)
    with pytest.raises(MetaComponentFailure, match=r"^.*Broken.__init__ at construction raised "
                                                   r"RuntimeError: cannot start \(.*test_"
                                                   r"registry.py:\d+\)$"):
        make_component("broken", _target_=f"{__name__}:Broken")
