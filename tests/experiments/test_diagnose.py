"""A loss that turns NaN because the environment returned NaN names the environment and the
field, instead of advising a lower learning rate."""

from __future__ import annotations

from pathlib import Path

import gymnasium
import numpy as np
import pytest
import torch

from looprl.environments import GymEnvironment
from looprl.experiments import run_experiment
from looprl.experiments.diagnose import explain_divergence, kind_of
from looprl.meta import MetaComponent
from looprl.presets.classic_control import dqn, ppo

SMALL_DQN = dqn.hyperparameters(replay_start_size=32, minibatch_size=16, hidden=16)
SMALL_PPO = ppo.hyperparameters(n_envs=2, n_steps=16, minibatch_size=16, hidden=16)


class Corrupt(gymnasium.Wrapper):
    """CartPole whose ``field`` ('reward' or 'observation') becomes NaN from step ``after``."""

    def __init__(self, field: str, after: int = 50):
        super().__init__(gymnasium.make("CartPole-v1"))
        self.field, self.after, self.steps = field, after, 0

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        if self.steps >= self.after:
            if self.field == "reward":
                reward = float("nan")
            else:
                obs = np.full_like(obs, np.nan)
        return obs, reward, terminated, truncated, info


def _env(field: str) -> GymEnvironment:
    return GymEnvironment(Corrupt(field), name="CorruptCartPole")


@pytest.mark.parametrize("field", ["reward", "observation"])
@pytest.mark.parametrize("preset", [SMALL_DQN, SMALL_PPO], ids=["dqn", "ppo"])
def test_nan_from_the_environment_is_named(field: str, preset, tmp_path: Path) -> None:
    torch.manual_seed(0)
    with pytest.raises(FloatingPointError) as raised:
        run_experiment(preset, _env(field), 3000, logdir=str(tmp_path), quiet=True,
                       test_episodes=0, seed=0)
    message = str(raised.value)
    assert f"CorruptCartPole returned NaN or infinite {field}s" in message
    assert "learning rate" not in message.split(";")[0] and "Logs until then" in message
    if field == "reward":
        assert "first in training episode" in message or "in an episode running" in message


class NaNReward(MetaComponent):
    """A meta component that makes every transition's reward NaN (a user's bug)."""

    hook = "post_step"

    def __init__(self):
        super().__init__()
        self.methods(self.hook).append(self.corrupt)

    def corrupt(self, metrics):
        metrics["transition"]["reward"] = metrics["transition"]["reward"] * float("nan")
        return metrics


class NaNObservation(NaNReward):
    """A meta component that makes the observations of every batch NaN (a user's bug)."""

    hook = "pre_update"

    def corrupt(self, metrics):
        metrics["batch"].obs = metrics["batch"].obs * float("nan")
        return metrics


@pytest.mark.parametrize("preset, component, message", [
    # (was: "The environment CartPole-v1 returned NaN or infinite rewards")
    *[(preset, NaNReward, r"reached training at frame \d+, though CartPole-v1 returned finite "
                          r"ones: a meta component of the run \(NaNReward\) wrote them into "
                          r"metrics\['transition'\]") for preset in (SMALL_DQN, SMALL_PPO)],
    # (was: "... returned NaN or infinite observations": the environment's are not watched, so
    # both sources are named)
    (SMALL_DQN, NaNObservation, r"NaN or infinite observations reached training at frame "
                                r"[\d,]+: CartPole-v1 returned them, or a meta component of the "
                                r"run \(NaNObservation\) wrote them"),
], ids=["dqn", "ppo", "dqn-observations"])
def test_nan_data_a_meta_component_wrote_is_its_too(preset, component, message,
                                                    tmp_path) -> None:
    torch.manual_seed(0)
    with pytest.raises(FloatingPointError, match=message):
        run_experiment(preset, GymEnvironment("CartPole-v1"), 3000, logdir=str(tmp_path),
                       quiet=True, test_episodes=0, seed=0, meta=[component()])


def test_a_ray_trainer_that_cannot_see_the_returns_names_both_sources() -> None:
    code = compile("def update(reward):\n    raise FloatingPointError('the loss is nan')\n",
                   "looprl/trainer.py", "exec")  # (a frame of looprl's, holding the rewards)
    space: dict = {}
    exec(code, space)
    try:
        space["update"](torch.tensor([1.0, float("nan")]))
    except FloatingPointError as error:
        message = explain_divergence(error, "CartPole-v1", 10, components=[NaNReward()])
        plain = explain_divergence(error, "CartPole-v1", 10)
    assert message.startswith("NaN or infinite rewards reached training at frame 10: "
                              "CartPole-v1 returned them, or a meta component of the run "
                              "(NaNReward) wrote them")
    assert plain.startswith("The environment CartPole-v1 returned NaN or infinite rewards")


class Scaled(gymnasium.Wrapper):
    """CartPole whose rewards are multiplied by ``scale``: finite, but their squares are not."""

    def __init__(self, scale: float):
        super().__init__(gymnasium.make("CartPole-v1"))
        self.scale = scale

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward * self.scale, terminated, truncated, info


@pytest.mark.parametrize("preset", [SMALL_DQN, SMALL_PPO], ids=["dqn", "ppo"])
def test_huge_rewards_from_the_environment_are_named(preset, tmp_path: Path) -> None:
    """Rewards of 1e38 diverged at the first update, where no learning rate has acted yet,
    and the message advised a lower learning rate."""
    with pytest.raises(FloatingPointError) as raised:
        run_experiment(preset, GymEnvironment(Scaled(1e38), name="BigCartPole"), 3000,
                       logdir=str(tmp_path), quiet=True, test_episodes=0, seed=0)
    message = str(raised.value)
    assert "BigCartPole returned rewards as large as 1.0e+38, and training diverged" in message
    assert "learning rate" not in message.split(";")[0] and "Logs until then" in message


def test_a_plain_divergence_keeps_the_learning_rate_advice() -> None:
    error = FloatingPointError("the loss is nan. Try a lower learning rate")
    assert explain_divergence(error, "CartPole-v1", 10) == (
        f"Training diverged at frame 10 on CartPole-v1: {error}")


def test_a_diverging_experiment_names_the_run_the_frame_and_its_logs(tmp_path: Path) -> None:
    """What ``looprl run`` and the runners train, ``Experiment.train``, said only
    "Approximation 'q': the loss is inf at update 0; ..." (no run, frame or log directory:
    ``run_experiment`` alone added the logs)."""
    from looprl.experiments import make_experiment

    env = GymEnvironment("CartPole-v1")
    preset = SMALL_DQN.hyperparameters(lr=1e12, clip_grad=0).env(env).build()
    experiment = make_experiment(preset, env, logdir=str(tmp_path), quiet=True, seed=0)
    with pytest.raises(FloatingPointError) as raised:
        experiment.train(frames=3000)
    message = str(raised.value)
    assert message.startswith(f"dqn: Training diverged at frame {experiment.frame:,} on "
                              "CartPole-v1: Approximation 'q': the loss is ")
    assert "lower learning rate" in message and len(message.splitlines()) == 1
    assert message.endswith(f" Logs until then: {experiment.logger.log_dir}")


def test_kinds_of_batch_fields() -> None:
    assert kind_of("batch[3].reward") == "rewards" and kind_of("rewards") == "rewards"
    assert kind_of("minibatch.observation") == "observations"
    assert kind_of("next_states.mask") is None and kind_of("loss") is None
    assert kind_of("next_obs") == "observations" and kind_of("frames[0]") == "observations"


def test_nan_in_a_network_output_is_not_blamed_on_the_environment() -> None:
    """Rainbow with ``eps=1e-45`` diverged in its own ``probs`` (NaN parameters), which was
    read as 'obs' and reported as CartPole returning NaN observations."""
    assert kind_of("probs") is None and kind_of("next_probs.target") is None


class NaNOnce(gymnasium.Wrapper):
    """CartPole whose 50th step (over all copies) returns a NaN reward, once."""

    def __init__(self, steps: list[int]):
        super().__init__(gymnasium.make("CartPole-v1"))
        self.steps = steps  # (shared by the copies)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.steps[0] += 1
        return (obs, float("nan") if self.steps[0] == 50 else reward, terminated, truncated,
                info)


def test_a_short_run_that_diverges_between_logged_updates_is_not_reported_finished(
        tmp_path: Path) -> None:
    """A2C takes one update per segment: 1,000 frames are 25 updates, fewer than the 100
    between two logged ones. Its loss turns NaN at the one NaN reward; the run stops there
    (was: it finished, saving NaN parameters, and printed its evaluation)."""
    from looprl.presets.classic_control import a2c

    torch.manual_seed(0)
    env = GymEnvironment(NaNOnce([0]), name="NaNOnceCartPole")
    with pytest.raises(FloatingPointError) as raised:
        run_experiment(a2c, env, 1000, logdir=str(tmp_path), quiet=True, test_episodes=0,
                       seed=0)
    assert "NaNOnceCartPole returned NaN or infinite rewards" in str(raised.value)
