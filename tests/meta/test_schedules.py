"""Schedules against hand-computed values, written in the hook they claim."""

from __future__ import annotations

import pytest

from looprl.meta.component import HOOKS, MetaStack
from looprl.meta.schedules import CosineLRSchedule, HPSchedule

COS_PI_4 = 0.7071067811865476  # cos(pi / 4)
COS_PI_16 = 0.9807852804032304  # cos(pi / 16)


def run(component, hook: str, calls: int, **metrics) -> list[float]:
    """The values ``component`` writes in ``calls`` calls of ``hook`` through a stack."""
    stack, metrics, written = MetaStack([component]), dict(metrics), []
    for _ in range(calls):
        stack(hook, metrics)
        written.append(metrics[getattr(component, "key", "hp/lr")])
    return written


def test_cosine_lr_with_warm_restarts_matches_hand_computed_values():
    schedule = CosineLRSchedule(initial_lr=1.1, min_lr=0.1, period=4, period_mult=2)
    lrs = run(schedule, "pre_update", 14)
    expected = {
        0: 1.1,
        1: 0.1 + 0.5 * (1 + COS_PI_4),  # 0.95355...
        2: 0.6,
        3: 0.1 + 0.5 * (1 - COS_PI_4),
        4: 1.1,  # restart: the second cycle lasts 8 updates
        5: 0.1 + 0.5 * (1 + 0.9238795325112867),  # cos(pi / 8)
        6: 0.1 + 0.5 * (1 + COS_PI_4),
        8: 0.6,
        11: 0.1 + 0.5 * (1 - 0.9238795325112867),  # cos(7 pi / 8)
        12: 1.1,  # restart: the third cycle lasts 16
        13: 0.1 + 0.5 * (1 + COS_PI_16),
    }
    for t, lr in expected.items():
        assert lrs[t] == pytest.approx(lr, abs=1e-12), t
    assert schedule.updates == 14


def test_cosine_lr_constant_period_restarts_every_period():
    lrs = run(CosineLRSchedule(initial_lr=1.0, period=3), "pre_update", 7)
    assert lrs == pytest.approx([1.0, 0.75, 0.25, 1.0, 0.75, 0.25, 1.0], abs=1e-12)


def test_cosine_lr_writes_only_before_updates_and_resumes_from_state_dict():
    schedule = CosineLRSchedule(initial_lr=1.0, period=4, key="hp/lr/actor")
    assert [h for h in HOOKS if schedule.methods(h)] == ["pre_update"]
    metrics: dict = {}
    for hook in ("pre_step", "post_step", "post_update", "pre_episode", "post_episode"):
        MetaStack([schedule])(hook, metrics)
    assert metrics == {}
    run(schedule, "pre_update", 3)
    resumed = CosineLRSchedule(initial_lr=1.0, period=4, key="hp/lr/actor")
    resumed.load_state_dict(schedule.state_dict())
    assert run(resumed, "pre_update", 1) == pytest.approx([0.5 * (1 - COS_PI_4)])


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        (dict(kind="linear", start=1.0, end=0.1, duration=10),
         {0: 1.0, 5: 0.55, 10: 0.1, 15: 0.1}),
        (dict(kind="cosine", start=1.0, end=0.0, duration=4),
         {0: 1.0, 1: 0.5 * (1 + COS_PI_4), 2: 0.5, 4: 0.0, 9: 0.0}),
        (dict(kind="step", start=1.0, factor=0.5, every=3),
         {0: 1.0, 2: 1.0, 3: 0.5, 5: 0.5, 6: 0.25, 9: 0.125}),
        (dict(kind="step", start=1.0, factor=0.5, every=3, end=0.3),
         {3: 0.5, 6: 0.3, 12: 0.3}),
        (dict(kind="exponential", start=2.0, decay=0.9),
         {0: 2.0, 1: 1.8, 3: 1.458}),
        (dict(kind="exponential", start=2.0, decay=0.9, end=1.5),
         {2: 1.62, 3: 1.5, 10: 1.5}),
        (dict(kind="step", start=32, factor=2, every=2, end=100, integer=True),
         {0: 32, 2: 64, 4: 100}),
    ],
)
def test_hp_schedule_kinds_match_hand_computed_values(kwargs, expected):
    values = run(HPSchedule("hp/x", per="update", **kwargs), "pre_update", 16)
    for t, value in expected.items():
        assert values[t] == pytest.approx(value, abs=1e-12), t
    if kwargs.get("integer"):
        assert all(isinstance(v, int) for v in values)


def test_hp_schedule_hook_follows_per():
    per_step = HPSchedule("hp/epsilon", "linear", 1.0, 0.0, duration=2, per="step")
    assert per_step.pre_step_methods == [per_step.write]
    assert [h for h in HOOKS if per_step.methods(h)] == ["pre_step"]
    metrics: dict = {}
    MetaStack([per_step])("pre_update", metrics)
    assert "hp/epsilon" not in metrics
    assert run(per_step, "pre_step", 3) == pytest.approx([1.0, 0.5, 0.0])
    per_update = HPSchedule("hp/epsilon", "linear", 1.0, 0.0, duration=2)
    assert [h for h in HOOKS if per_update.methods(h)] == ["pre_update"]


def test_hp_schedule_metrics_clock_reads_the_loops_counter():
    schedule = HPSchedule("hp/epsilon", "linear", 1.0, 0.0, duration=100, per="step",
                          clock="metrics")
    metrics = {"step": 40}
    MetaStack([schedule])("pre_step", metrics)
    assert metrics["hp/epsilon"] == pytest.approx(0.6)
    metrics["step"] = 48  # a vector env of 8 copies took one step
    MetaStack([schedule])("pre_step", metrics)
    assert metrics["hp/epsilon"] == pytest.approx(0.52)
    with pytest.raises(KeyError, match="metrics\\['update'\\]"):
        HPSchedule("hp/lr", "exponential", 1.0, decay=0.5, clock="metrics").write({})


def test_growing_hp_schedules_stop_at_their_end_in_a_long_run():
    """10**6 steps on: a growing step or exponential schedule overflowed a float (an
    OverflowError) instead of staying at its end."""
    metrics = {"step": 10**6}
    for schedule in (HPSchedule("hp/batch_size", "exponential", 32, end=512, decay=1.001,
                                per="step", clock="metrics", integer=True),
                     HPSchedule("hp/batch_size", "step", 32, end=512, factor=2, every=10,
                                per="step", clock="metrics", integer=True)):
        MetaStack([schedule])("pre_step", metrics)
        assert metrics["hp/batch_size"] == 512
    assert HPSchedule("hp/x", "exponential", -1.0, decay=2.0).value(10**6) == -float("inf")
    assert HPSchedule("hp/x", "step", 0.0, factor=2.0, every=1).value(10**6) == 0.0


def test_hp_schedule_state_dict_resumes():
    schedule = HPSchedule("hp/lr", "exponential", 1.0, decay=0.5)
    run(schedule, "pre_update", 3)
    resumed = HPSchedule("hp/lr", "exponential", 1.0, decay=0.5)
    resumed.load_state_dict(schedule.state_dict())
    assert run(resumed, "pre_update", 1) == [0.125]


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (("hp/lr", "cosin", 1.0), dict(end=0.0, duration=5),
         "Unknown schedule kind 'cosin'. Did you mean 'cosine'.*linear, cosine, step, "
         "exponential"),
        (("lr", "linear", 1.0), dict(end=0.0, duration=5), "'hp/<name>'.*got 'lr'"),
        (("hp/lr", "linear", 1.0), dict(end=0.0), "'linear' schedule needs duration"),
        (("hp/lr", "step", 1.0), dict(every=3), "needs factor"),
        # (one check each, in Range.check's words: were two, "duration must be positive, got
        # 0" or "HPSchedule's start must be a finite number", and Range.check's)
        (("hp/lr", "linear", 1.0), dict(end=0.0, duration=0),
         r"^HPSchedule's duration must be positive \(> 0\), got 0$"),
        (("hp/lr", "step", 1.0), dict(every=-1, factor=0.5),
         r"^HPSchedule's every must be positive \(> 0\), got -1$"),
        (("hp/lr", "exponential", 1.0), dict(decay=float("nan")),
         r"^HPSchedule's decay must be finite and positive \(> 0\), got nan$"),
        # (were: "could not convert string to float", or a TypeError mid-training)
        (("hp/lr", "linear", "abc"), dict(end=0.0, duration=5),
         r"^HPSchedule's start must be a finite number, got 'abc'; give it as a number, "
         r"not text$"),
        (("hp/lr", "linear", None), dict(end=0.0, duration=5),
         r"^HPSchedule's start must be a finite number, got None$"),
        (("hp/lr", "step", 1.0), dict(every=3, factor="abc"),
         r"^HPSchedule's factor must be a finite number, got 'abc'; give it as a number, "
         r"not text$"),
        (("hp/lr", "step", 1.0), dict(every=3, factor=float("-inf")),
         r"^HPSchedule's factor must be a finite number, got -inf$"),
        (("hp/lr", "linear", 1.0), dict(end=float("nan"), duration=5),
         r"^HPSchedule's end must be a finite number, got nan$"),
        # (were taken: a schedule that never moved, infinite values, values the agent refused
        # only at the first step)
        (("hp/lr", "linear", 1.0), dict(end=0.0, duration=float("inf")),
         r"^HPSchedule's duration must be finite and positive \(> 0\), got inf$"),
        (("hp/lr", "exponential", 1.0), dict(decay=float("inf")), "decay must be finite"),
        (("hp/epsilon", "linear", 2.0), dict(end=0.1, duration=5),
         r"^HPSchedule's start \(a value of hp/epsilon\) must be in \[0, 1\], got 2.0$"),
        (("hp/lr/actor", "linear", 1e-3), dict(end=-1e-3, duration=5),
         r"^HPSchedule's end \(a value of hp/lr/actor\) must be >= 0, got -0.001$"),
        (("hp/batch_size", "linear", 64), dict(end=0.4, duration=5, integer=True),
         r"end \(a value of hp/batch_size\) must be a whole number >= 1, got 0.4, which "
         r"integer=True rounds to 0$"),  # (was "got 0": what the user gave, rounded)
        (("hp/batch_size", "linear", 64), dict(end=-2, duration=5, integer=True),
         r"end \(a value of hp/batch_size\) must be a whole number >= 1, got -2$"),
        (("hp/lr", "linear", 1.0), dict(end=0.0, duration=5, per="episode"),
         "Unknown per 'episode'.*step, update"),
        (("hp/lr", "linear", 1.0), dict(end=0.0, duration=5, clock="own"),
         "Unknown clock 'own'.*calls, metrics"),
    ],
)
def test_hp_schedule_bad_inputs_raise(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        HPSchedule(*args, **kwargs)


def test_cosine_lr_starts_from_the_agents_learning_rate():
    """Without initial_lr, the first update's hp/lr (the agent's) is where cycles start."""
    lrs = run(CosineLRSchedule(period=4), "pre_update", 5, **{"hp/lr": 3e-4})
    assert lrs[0] == pytest.approx(3e-4) and lrs[2] == pytest.approx(1.5e-4)
    assert lrs[4] == pytest.approx(3e-4)  # the restart returns to the agent's rate
    with pytest.raises(KeyError, match="give initial_lr"):
        run(CosineLRSchedule(), "pre_update", 1)


def test_cosine_lr_bad_inputs_raise():
    with pytest.raises(ValueError, match="period must be positive"):
        CosineLRSchedule(period=0)
    with pytest.raises(ValueError, match="CosineLRSchedule.s period_mult must be >= 1, got"):
        CosineLRSchedule(period_mult=0.5)
    with pytest.raises(ValueError, match="period_mult must be >= 1, got 'abc'"):
        CosineLRSchedule(period_mult="abc")  # (was a TypeError about '<' on a str)
    with pytest.raises(ValueError, match="min_lr must be >= 0, got 'abc'"):
        CosineLRSchedule(min_lr="abc")
    for name, value in (("initial_lr", float("inf")), ("min_lr", float("inf")),
                        ("period_mult", float("inf")), ("initial_lr", float("nan"))):
        with pytest.raises(ValueError, match=rf"^CosineLRSchedule's {name} must be finite and"):
            CosineLRSchedule(**{name: value})  # (were taken)
    for initial_lr in (0, -1.0):  # (one check, Range.check's: were two)
        with pytest.raises(ValueError, match=r"^CosineLRSchedule's initial_lr must be positive "
                                             rf"\(> 0\), got {initial_lr}$"):
            CosineLRSchedule(initial_lr=initial_lr)
    with pytest.raises(ValueError, match="min_lr=0.01 must not exceed initial_lr=0.001"):
        CosineLRSchedule(initial_lr=1e-3, min_lr=1e-2)
    with pytest.raises(ValueError, match="'hp/<name>'"):
        CosineLRSchedule(key="lr")


@pytest.mark.parametrize("schedule", [
    CosineLRSchedule(initial_lr=1.0, period=4, key="hp/lr/actor"),
    HPSchedule("hp/epsilon", "linear", start=1.0, end=0.0, duration=4, per="update"),
], ids=["cosine", "hp"])
def test_schedules_log_the_value_they_set(schedule):
    metrics: dict = {}
    for _ in range(3):
        MetaStack([schedule])("pre_update", metrics)
        name = "log/schedule/" + schedule.key[3:]  # hp/lr/actor -> log/schedule/lr/actor
        assert metrics[name] == metrics[schedule.key]
    assert metrics[name] == pytest.approx(0.5)


def test_cosine_lr_value_before_it_knows_its_initial_lr_is_one_line():
    """``value(t)`` without ``initial_lr``, before the first update read the agent's, was
    ``TypeError: unsupported operand type(s) for -: 'NoneType' and 'float'``."""
    with pytest.raises(ValueError, match="initial_lr is read from the agent at the first update"):
        CosineLRSchedule(period=10).value(3)
    assert CosineLRSchedule(initial_lr=1.0, period=10).value(0) == pytest.approx(1.0)
