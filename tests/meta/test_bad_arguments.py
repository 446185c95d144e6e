"""Mighty-style mistakes in the Python API of the meta components and runners: each is one
line when it is made (they ran on silently, or failed later in Python's words)."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pytest
import torch

from looprl.meta import PLR, RND, HPSchedule, MetaComponent, NovelD
from looprl.meta.registry import make_component
from looprl.presets.classic_control import ppo
from looprl.runners import OnlineRunner, PBTRunner

SMALL_PPO = ppo.hyperparameters(n_envs=2, n_steps=16, minibatch_size=16, epochs=1)


def one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert "\n" not in message, message
    return message


class Hook(MetaComponent):
    """A user's component running ``fn(metrics)`` at ``hook``."""

    def __init__(self, hook: str, fn: Any):
        super().__init__()
        self.fn = fn
        getattr(self, f"{hook}_methods").append(self.call)

    def call(self, metrics: dict[str, Any]) -> None:
        self.fn(metrics)


def online(tmp_path, meta: list[Any]) -> Any:
    return OnlineRunner(SMALL_PPO, "CartPole-v1", num_steps=128, meta=meta, eval_episodes=0,
                        quiet=True, logdir=str(tmp_path), seed=0).run()


@pytest.mark.parametrize("make, line", [
    (lambda: RND(normalize="no"), "RND's normalize must be True or False, got 'no'"),
    (lambda: NovelD(episodic="no"), "NovelD's episodic must be True or False, got 'no'"),
    (lambda: HPSchedule("hp/epochs", "linear", 2, 4, duration=10, integer="no"),
     "HPSchedule's integer must be True or False, got 'no'"),
    (lambda: RND(obs_shape="44"), "RND's obs_shape is the observations' shape, a sequence of "
                                  "sizes like (4,), got '44'"),
    (lambda: RND(internal_reward_weight="0.1"), "RND's internal_reward_weight must be >= 0, "
                                                "got '0.1'; give it as a number, not text"),
], ids=["rnd-normalize", "noveld-episodic", "schedule-integer", "rnd-obs-shape", "rnd-weight"])
def test_a_switch_shape_or_number_given_as_text_is_refused(make, line):
    """'no' switched the option on (text is true); '44' was the shape (4, 4); '0.1' was
    refused as not >= 0, which it looks to be."""
    with pytest.raises(ValueError) as error:
        make()
    assert one_line(error) == line


@pytest.mark.parametrize("make, line", [
    (lambda: RND(rnd_output_dim=64), "'rnd_output_dim' is not an argument of RND. Did you mean "
                                     "'feature_dim' (Mighty's 'rnd_output_dim')? Valid: "),
    (lambda: PLR(sample_strategy="random"), "'sample_strategy' is not an argument of PLR. Did "
                                            "you mean 'strategy' (Mighty's 'sample_strategy')?"),
    (lambda: NovelD(lrr=1e-3), "'lrr' is not an argument of NovelD. Did you mean 'lr'?"),
    (lambda: Hook("post_step", print, scale=2), "'scale' is not an argument of Hook. Valid: "
                                                "hook, fn"),
], ids=["rnd-mighty-name", "plr-mighty-name", "noveld-typo", "users-component"])
def test_an_argument_a_component_does_not_take_names_those_it_takes(make, line):
    """As looprl run's meta.rnd.rnd_output_dim says it (was Python's "RND.__init__() got an
    unexpected keyword argument 'rnd_output_dim'", no word of feature_dim)."""
    with pytest.raises(TypeError) as error:
        make()
    assert one_line(error).startswith(line)


def test_a_component_that_keeps_any_keyword_keeps_it_and_a_subclass_is_checked_whole():
    class Options(MetaComponent):
        def __init__(self, **options: Any):
            super().__init__()
            self.options = options

    class Bigger(RND):
        def __init__(self, extra: int = 1, **kwargs: Any):
            super().__init__(**kwargs)
            self.extra = extra

    assert Options(anything=3).options == {"anything": 3}
    assert Bigger(extra=2, feature_dim=8).extra == 2  # (RND's arguments through **kwargs)
    with pytest.raises(TypeError, match="^'feature_dimm' is not an argument of Bigger. Did you "
                                        "mean 'feature_dim'\\? Valid: extra, internal_reward"):
        Bigger(extra=2, feature_dimm=8)


def test_make_component_takes_a_component_class_as_its_name():
    """Was: 'cannot import "<class 'looprl.meta.rnd"'."""
    assert isinstance(make_component(RND, normalize=True), RND)
    assert isinstance(make_component(Hook, hook="post_step", fn=print), Hook)


@pytest.mark.parametrize("value", [torch.tensor(-1.0), np.float32(-1.0), np.float32("nan")])
def test_a_hook_that_writes_a_bad_learning_rate_as_a_tensor_or_numpy_number_is_refused(
        tmp_path, value):
    """A tensor or a NumPy number passed the range check: training went on at lr -1."""
    writes = Hook("pre_update", lambda metrics: metrics.__setitem__("hp/lr", value))
    with pytest.raises(ValueError) as error:
        online(tmp_path, [writes])
    assert "Hook at pre_update: hp/lr must be >= 0, got" in one_line(error)


def test_a_hook_that_removes_the_batch_says_so(tmp_path):
    """Was: KeyError 'batch'."""
    removes = Hook("pre_update", lambda metrics: metrics.pop("batch"))
    with pytest.raises(TypeError) as error:
        online(tmp_path, [removes])
    assert "A meta component removed metrics['batch']; it must stay a SampleBatch" in \
        one_line(error)
    empties = Hook("pre_update", lambda metrics: metrics.__setitem__("batch", {}))
    with pytest.raises(TypeError, match=r"wrote metrics\['batch'\] as a dict; it must stay"):
        online(tmp_path, [empties])


def test_one_instance_attached_twice_is_refused(tmp_path):
    """Its hooks ran twice per call: RND's bonus was added twice."""
    rnd = RND()
    with pytest.raises(ValueError) as error:
        online(tmp_path, [rnd, rnd])
    assert one_line(error) == ("the same RND instance is attached twice: attach each component "
                               "once (two of a kind: two instances)")


def test_run_experiment_takes_one_component_as_the_runners_do(tmp_path):
    """Was: "'RND' object is not iterable"."""
    from looprl.environments import GymEnvironment
    from looprl.experiments import run_experiment

    result, = run_experiment([SMALL_PPO], [GymEnvironment("CartPole-v1")], 64, meta=RND(),
                             logdir=str(tmp_path), quiet=True, test_episodes=0)
    assert result.frames >= 64


def test_runner_arguments_of_the_wrong_kind_are_one_line(caplog):
    with pytest.raises(TypeError) as error:
        OnlineRunner(ppo, "CartPole-v1", run_info="x")
    assert one_line(error) == "run_info is a dict of what to note in the run's files, got str 'x'"
    with pytest.raises(ValueError) as error:  # (-1 is true: its members would ask for CUDA)
        PBTRunner(ppo, "CartPole-v1", {"hp/lr": (1e-5, 1e-2)}, gpus_per_member=-1)
    assert "gpus_per_member is the GPUs each member reserves, a number >= 0" in one_line(error)
    with caplog.at_level(logging.WARNING, logger="looprl.runners.pbt"):
        PBTRunner(ppo, "CartPole-v1", {"hp/lr": (1e-5, 1e-2)}, num_steps=1000,
                  perturbation_interval=5000)
    assert "perturbation_interval=5000 is not below num_steps=1000" in caplog.text


def test_a_hook_method_that_takes_no_argument_is_refused_when_attached():
    """Was Python's "takes 0 positional arguments but 1 was given" at its first call."""
    from looprl.meta.component import MetaStack

    class NoArgument(MetaComponent):
        def __init__(self):
            super().__init__()
            self.post_step_methods.append(self.count)

        def count(self):
            pass

    with pytest.raises(TypeError) as error:
        MetaStack([NoArgument()])
    assert "which is not callable with one argument: append methods that take the metrics " \
        "dictionary" in one_line(error)


def test_a_hook_that_narrows_the_observations_is_named_by_the_trainer(tmp_path):
    """Was torch's "mat1 and mat2 shapes cannot be multiplied (16x2 and 4x16)"."""
    def narrow(metrics):
        metrics["batch"].obs = metrics["batch"].obs[..., :2]

    with pytest.raises(ValueError) as error:
        online(tmp_path, [Hook("pre_update", narrow)])
    assert "cannot learn from observations of shape" in one_line(error)


def test_a_hook_that_cuts_terminated_is_named_for_it(tmp_path):
    """The line blamed the reward (its rows were compared with terminated's)."""
    def cut(metrics):
        metrics["transition"]["terminated"] = metrics["transition"]["terminated"][:1]

    with pytest.raises(ValueError) as error:
        online(tmp_path, [Hook("post_step", cut)])
    assert one_line(error) == ("A meta component wrote transition['terminated'] with 1 rows; "
                               "it must keep its 2, one per environment copy")


def test_a_test_env_of_other_spaces_is_refused_before_training():
    """Was found at the evaluation, after the whole training budget."""
    with pytest.raises(ValueError) as error:
        OnlineRunner(ppo, "CartPole-v1", test_env="MountainCar-v0")
    assert one_line(error) == ("test_env MountainCar-v0 has Box(2,), Discrete(3), env "
                               "CartPole-v1 Box(4,), Discrete(2): a held-out environment has the "
                               "spaces (and agents) of the one trained in")
