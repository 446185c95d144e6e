"""The presets on Ray (``looprl run algorithm=... runtime=ray``, ``DistributedRun(preset, ...)``):
the workers build the preset's own policy and trainer, with the same hyperparameters."""

from __future__ import annotations

import math

import pytest
import torch

pytest.importorskip("hydra")
from hydra import compose, initialize  # noqa: E402

from looprl.agents import ActorCriticPolicy  # noqa: E402
from looprl.agents.actor import Actor  # noqa: E402
from looprl.agents.learner import make_learner  # noqa: E402
from looprl.configs import build_distributed, register  # noqa: E402
from looprl.core import Preset  # noqa: E402
from looprl.distributed import (  # noqa: E402
    AlgorithmSpec,
    DistributedRun,
    RuntimeConfig,
    test_pipeline,
)
from looprl.environments import GymEnvironment  # noqa: E402
from looprl.memory import PrioritizedAtariReplayBuffer  # noqa: E402
from looprl.policies.distributions import GaussianHead  # noqa: E402
from looprl.presets.classic_control import a2c, ppg, ppo, vac, vpg  # noqa: E402


def distributed(tmp_path, *overrides: str):
    register()
    with initialize(version_base="1.3", config_path=None):
        cfg = compose("looprl", overrides=["runtime=ray", *overrides])
    return build_distributed(cfg, str(tmp_path))


def same_parameters(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters(), strict=True))


SMALL = {"ppo": (ppo, {"n_envs": 2, "n_steps": 16, "minibatch_size": 16, "hidden": 16}),
         "ppg": (ppg, {"n_envs": 2, "n_steps": 16, "minibatch_size": 16, "hidden": 16,
                       "n_policy": 1, "aux_minibatch_size": 16}),
         "a2c": (a2c, {"n_envs": 2, "n_steps": 5, "hidden": 16}),
         "vac": (vac, {"n_envs": 2, "hidden": 16})}


@pytest.mark.parametrize("name", list(SMALL))
def test_ray_workers_build_the_presets_own_policy_and_trainer(name):
    builder, hyperparameters = SMALL[name]
    env = GymEnvironment("CartPole-v1")
    preset = builder.hyperparameters(**hyperparameters).env(env).device("cpu").build()
    run = DistributedRun(preset, RuntimeConfig(actors=1), frames=10_000, logdir=None,
                         quiet=True)
    spec, local = run.spec, preset.agent(train_steps=10_000)
    assert run.name == name and spec.env == "CartPole-v1"
    assert run.runtime.segment_length == preset.n_steps  # the preset's rollout
    assert spec.buffer_args == {"batch_streams": 2}
    policy = spec.make_policy()
    assert isinstance(policy, ActorCriticPolicy) and policy.module is not preset.model
    assert type(policy.module) is type(preset.model) and same_parameters(policy.module,
                                                                         preset.model)
    trainer = spec.make_trainer(policy)
    assert type(trainer) is type(local.trainer)
    for key in ("epochs", "minibatch_size", "discount_factor", "gae_lambda", "entropy_coef",
                "total_updates"):
        assert getattr(trainer, key) == getattr(local.trainer, key), key
    groups = policy.approximation.optimizer.param_groups
    local_groups = local.policy.approximation.optimizer.param_groups
    assert [g["lr"] for g in groups] == [g["lr"] for g in local_groups]
    assert policy.approximation._clip_grad == local.policy.approximation._clip_grad
    report = test_pipeline(spec, episodes=10**6, max_frames=4 * preset.n_envs * preset.n_steps,
                           n_envs=preset.n_envs, segment_length=preset.n_steps)
    assert report.train_steps >= 1 and math.isfinite(report.stats["policy"])
    env.close()


@pytest.mark.parametrize("family", ["classic_control", "atari"])
def test_vpg_runs_on_ray_on_segments_of_whole_episodes(tmp_path, family):
    """VPG on Ray: the preset's policy and ``A2CTrainer(gae_lambda=1)``, stepping on one
    stream of whole episodes of at least ``min_batch_size`` steps at a time."""
    if family == "atari":
        pytest.importorskip("ale_py")
        run = distributed(tmp_path, "algorithm=atari/vpg", "env=Breakout",
                          "algorithm.min_batch_size=20")
    else:
        preset = vpg.hyperparameters(min_batch_size=60, hidden=16).env(
            GymEnvironment("CartPole-v1")).device("cpu").build()
        run = DistributedRun(preset, RuntimeConfig(actors=1), frames=10_000, logdir=None,
                             quiet=True)
    spec = run.spec
    assert run.name == "vpg" and spec.whole_episodes
    assert (spec.buffer, spec.buffer_args) == ("on_policy", {"batch_streams": 1})
    size = run.runtime.segment_length
    assert size == (20 if family == "atari" else 60)  # min_batch_size
    policy = spec.make_policy()
    trainer = spec.make_trainer(policy)
    assert isinstance(policy, ActorCriticPolicy) and type(trainer).__name__ == "A2CTrainer"
    assert trainer.gae_lambda == 1.0
    lrs = [group["lr"] for group in policy.approximation.optimizer.param_groups]
    assert lrs == ([1e-4, 5e-4] if family == "atari" else [3e-3, 5e-3])
    report = test_pipeline(spec, episodes=1, n_envs=1, segment_length=size)
    assert report.train_steps >= 1 and math.isfinite(report.stats["policy"])
    assert report.stats["valid_rows"] >= size  # whole episodes: at least min_batch_size

def test_atari_ppo_runs_on_the_atari_environment_with_the_nature_cnn(tmp_path):
    pytest.importorskip("ale_py")
    run = distributed(tmp_path, "algorithm=atari/ppo", "env=Breakout", "algorithm.n_envs=2",
                      "algorithm.n_steps=16")
    spec = run.spec
    assert (spec.env, spec.env_args) == ("atari", {"game": "Breakout"})  # (true scores)
    assert spec.env_label == "Breakout"  # the run directory's name
    assert spec.buffer_args == {"batch_streams": 2} and run.runtime.segment_length == 16
    trainer = spec.make_trainer(spec.make_policy())
    assert trainer.epochs == 4 and trainer.clip(0.0) == 0.1
    report = test_pipeline(spec, episodes=10**6, max_frames=48, n_envs=2, segment_length=16)
    assert report.train_steps >= 1 and "approx_kl" in report.stats
    cnn = [m for m in spec.make_policy().module.modules() if type(m).__name__ == "Conv2d"]
    assert [c.out_channels for c in cnn] == [32, 64, 64]  # Nature


class LocalOnly(Preset):
    """A preset of no family: it says nothing of how it learns (no ``learning``)."""

    def agent(self, logger=None, train_steps=math.inf):
        raise NotImplementedError

    def test_agent(self):
        raise NotImplementedError


@pytest.mark.parametrize(("override", "expected"), [
    ("test_episodes=-1", "test_episodes must be an integer >= 0"),
    ("frames=0", "frames must be an integer >= 1"),
    ("keep_checkpoints=2", "keep_checkpoints=2 keeps the checkpoints checkpoint_every saves"),
    ("logging.wandb=5", "wandb is wandb.init's arguments"),
])
def test_bad_or_local_only_values_with_runtime_ray_are_one_line_before_training(
        tmp_path, override, expected):
    """Checked as a local run checks them, before any worker starts (not after training), and
    never silently ignored."""
    with pytest.raises((TypeError, ValueError), match=expected):
        distributed(tmp_path, override)


def test_logging_wandb_reaches_a_ray_runs_logger(tmp_path):
    """(Was: one line, 'logging.wandb is for runtime=local'.) The driver's logger, which writes
    every scalar of the run, mirrors them to W&B as a local run's does."""
    run = distributed(tmp_path, "logging.wandb={project: p, mode: disabled}", "frames=1000")
    assert run.wandb == {"project": "p", "mode": "disabled"}
    with pytest.raises(ValueError, match="^wandb logging needs a logdir"):
        DistributedRun(run.spec, frames=100, logdir=None, wandb={"project": "p"})


def test_checkpoint_replay_reaches_a_ray_run(tmp_path):
    """(What it does: tests/distributed/test_ray_logs.py.)"""
    assert distributed(tmp_path, "frames=1000").checkpoint_replay is True
    assert distributed(tmp_path, "checkpoint_replay=false", "frames=1000").checkpoint_replay \
        is False


def test_logging_verbose_false_reaches_a_ray_runs_logger(tmp_path):
    from looprl.distributed.run_state import open_run_log

    run = distributed(tmp_path, "logging.verbose=false", "frames=1000")
    assert run.verbose is False
    log = open_run_log(run.name, run.spec, str(tmp_path), run.verbose)
    assert log.verbose is False  # (no loss or hp/* events written)
    log.close()


def test_a_preset_the_ray_runtime_cannot_build_is_one_line():
    with pytest.raises(ValueError, match=r"^runtime=ray runs every preset of the families .*; "
                                         r"'mine' \(LocalOnly\) is none of them"):
        AlgorithmSpec.of_preset(LocalOnly("mine", "cpu", {}), frames=1000)


def test_a_segment_length_other_than_the_presets_is_one_line():
    preset = ppo.hyperparameters(n_envs=2, n_steps=8).env(GymEnvironment("CartPole-v1")).build()
    with pytest.raises(ValueError, match=r"^a preset's segments are its own \(8 steps: its "
                                         r"n_steps .*got RuntimeConfig\(segment_length=99\)"):
        DistributedRun(preset, RuntimeConfig(segment_length=99), frames=100, logdir=None)
    run = DistributedRun(preset, RuntimeConfig(segment_length=8), frames=100, logdir=None)
    assert run.runtime.segment_length == 8


ATARI_SMALL = {"replay_buffer_size": 300, "replay_start_size": 16, "minibatch_size": 8,
               "update_frequency": 8}
ATARI_REPLAY = {"dqn": {}, "ddqn": {"prioritized": True, "n_steps": 3},
                "c51": {"atoms": 11}, "rainbow": {"atoms": 11, "hidden": 32}}


@pytest.mark.parametrize("name", list(ATARI_REPLAY))
def test_atari_replay_presets_run_on_ray_with_the_local_frame_ring(name):
    """The Atari DQN family on Ray: the local agent's policy, trainer and frame ring (each
    frame stored once, uniform or prioritized, its n-step windows), filled from the actors'
    segments of the ``atari`` environment."""
    pytest.importorskip("ale_py")
    from looprl.environments.atari import AtariEnvironment
    from looprl.presets import atari

    env = AtariEnvironment("Breakout", device="cpu", seed=0)
    builder = getattr(atari, name).hyperparameters(**ATARI_SMALL, **ATARI_REPLAY[name])
    preset = builder.env(env).device("cpu").build()
    run = DistributedRun(preset, RuntimeConfig(actors=1), frames=10_000, logdir=None,
                         quiet=True)
    spec, local = run.spec, preset.agent(train_steps=10_000).agent.agent  # inside the bodies
    assert (spec.env, spec.env_args) == ("atari", {"game": "Breakout"})  # (true scores)
    policy = spec.make_policy()
    assert type(policy) is type(local.policy) and policy.module is not local.policy.module
    assert same_parameters(policy.module, local.policy.module)
    start = preset.hyperparameters["initial_exploration"]  # the preset's epsilon schedule
    assert policy.greedy.epsilon == local.policy.greedy.epsilon == start
    trainer = spec.make_trainer(policy)
    assert type(trainer) is type(local.trainer)
    for key in ("discount_factor", "n_step", "update", "double", "double_q"):
        assert getattr(trainer, key, None) == getattr(local.trainer, key, None), key
    replay = type(local.replay_buffer)
    kind = "atari_prioritized" if replay is PrioritizedAtariReplayBuffer else "atari_uniform"
    assert spec.buffer == kind and replay.__name__.endswith("AtariReplayBuffer")
    assert spec.buffer_args["n_step"] == local.replay_buffer.n_step == preset.n_step
    assert (spec.buffer_args["size"], spec.buffer_args["batch"], spec.buffer_args["min_size"]
            ) == (300, 8, 16)
    core = make_learner(trainer, spec.buffer, spec.buffer_args)
    assert type(core.buffer) is replay and core.buffer.n_step == preset.n_step
    report = test_pipeline(spec, episodes=10**6, max_frames=48, n_envs=2, segment_length=8)
    assert 1 <= report.train_steps <= (48 + 16 - 16) / 8 + 1  # the update ratio
    assert all(math.isfinite(value) for value in report.stats.values()), report.stats
    env.close()


def test_continuous_ppo_runs_with_gaussian_actions_on_the_env_bounds(tmp_path):
    run = distributed(tmp_path, "algorithm=continuous/ppo", "env=Pendulum-v1",
                      "algorithm.n_envs=2", "algorithm.n_steps=32")
    policy = run.spec.make_policy()
    assert isinstance(policy.head, GaussianHead) and policy.continuous_action
    assert (policy.head.bounds.low.tolist(), policy.head.bounds.high.tolist()) == ([-2.0], [2.0])
    assert torch.equal(policy.module.actor.log_std, torch.zeros(1))  # log_std_init 0
    report = test_pipeline(run.spec, episodes=1, n_envs=2, segment_length=32)
    assert report.train_steps >= 1 and math.isfinite(report.stats["policy"])


REPLAY_SMALL = {"hidden": 16, "replay_start_size": 40, "minibatch_size": 8,
                "replay_buffer_size": 500}
REPLAY = {"dqn": ("classic_control", {"update_frequency": 4, "gradient_steps": 2}),
          "ddqn": ("classic_control", {"buffer": "nstep", "n_steps": 3}),
          "c51": ("classic_control", {"prioritized": True, "atoms": 11}),
          "rainbow": ("classic_control", {"atoms": 11}),
          "vqn": ("classic_control", {"n_envs": 2, "hidden": 16}),
          "vsarsa": ("classic_control", {"n_envs": 2, "hidden": 16}),
          "ddpg": ("continuous", {}), "td3": ("continuous", {}), "sac": ("continuous", {})}


@pytest.mark.parametrize("name", list(REPLAY))
def test_ray_workers_build_the_replay_presets_own_policy_trainer_and_replay(name):
    """Value-based and continuous presets on Ray: the local agent's policy (with its
    exploration) and trainer classes and settings, its replay and its update ratio."""
    import importlib

    family, hyperparameters = REPLAY[name]
    builder = getattr(importlib.import_module(f"looprl.presets.{family}"), name)
    online = name in ("vqn", "vsarsa")
    hyperparameters = {**({} if online else REPLAY_SMALL), **hyperparameters}
    env = GymEnvironment("Pendulum-v1" if family == "continuous" else "CartPole-v1")
    preset = builder.hyperparameters(**hyperparameters).env(env).device("cpu").build()
    run = DistributedRun(preset, RuntimeConfig(actors=2), frames=10_000, logdir=None,
                         quiet=True)
    spec, local = run.spec, preset.agent(train_steps=10_000)
    assert run.name == name and spec.explorations is None  # the policy's own exploration
    policy = spec.make_policy()
    assert type(policy) is type(local.policy) and policy.module is not local.policy.module
    assert same_parameters(policy.module, local.policy.module)
    trainer = spec.make_trainer(policy)
    assert type(trainer) is type(local.trainer)
    for key in ("discount_factor", "n_step", "update", "double", "policy_delay",
                "target_entropy"):
        assert getattr(trainer, key, None) == getattr(local.trainer, key, None), key
    if online:  # one-step batches of n_envs streams, as the local agent's
        assert (spec.buffer, spec.buffer_args) == ("on_policy", {"batch_streams": 2})
        assert run.runtime.segment_length == 1
        segment = 1
    else:
        buffer = local.replay_buffer
        kind = "prioritized" if "Prioritized" in type(getattr(buffer, "buffer", buffer)).__name__ \
            else "uniform"
        assert spec.buffer == kind and spec.buffer_args["n_step"] == preset.n_step
        # one schedule: the trainer worker's learner steps as the local agent's does
        remote = make_learner(trainer, spec.buffer, spec.buffer_args)
        assert remote.schedule == local.learner.schedule
        assert (remote.schedule.batch_size, remote.schedule.min_size) == (8, 40)
        assert policy.random_steps == 40 if family == "continuous" else True
        segment = 8
    # (past the first training phase: the classic presets train every 256 transitions)
    report = test_pipeline(spec, episodes=10**6, max_frames=120 if online else 320, n_envs=2,
                           segment_length=segment)
    assert report.train_steps >= 1
    assert all(math.isfinite(value) for value in report.stats.values()), report.stats
    if not online:  # the schedule's steps for the transitions of the segments put (the
        # trainer counts whole segments: up to one per env ahead of the actor's frames)
        assert report.train_steps <= remote.schedule.steps(0, report.frames + 2 * segment)
    env.close()


def test_ape_x_is_an_explicit_option_of_the_dqn_presets():
    """``apex=True``: prioritized n-step replay and one exploration rate per actor; without
    it, dqn on Ray is the local dqn (uniform one-step replay, the preset's epsilon)."""
    from looprl.policies import apex_epsilons
    from looprl.presets.classic_control import dqn

    env = GymEnvironment("CartPole-v1")
    preset = dqn.hyperparameters(**REPLAY_SMALL, apex=True, n_steps=3).env(env).device(
        "cpu").build()
    spec = DistributedRun(preset, RuntimeConfig(actors=3), logdir=None, quiet=True).spec
    assert spec.explorations == apex_epsilons(3) and spec.buffer == "prioritized"
    assert spec.buffer_args["n_step"] == 3 and spec.make_trainer(spec.make_policy()).n_step == 3
    assert preset.agent().replay_buffer.n_step == 3
    # past the first training phase (every 256 transitions, as locally)
    report = test_pipeline(spec, episodes=10**6, max_frames=300, segment_length=8)
    assert report.train_steps >= 1
    env.close()


@pytest.mark.parametrize("family,name", [("classic_control", "dqn"),
                                         ("classic_control", "c51")])
def test_a_ray_actors_epsilon_counts_the_env_steps_of_all_its_copies(family, name):
    """``final_exploration_step`` counts env steps, on Ray each actor's: an actor stepping
    ``envs_per_actor`` copies asks for their rows at once, and its epsilon is where the local
    agent's is after as many env steps (it stayed 4 times higher with 4 copies: an actor's
    exploration ran 4 times the preset's, and DQN's training returns stayed a random
    policy's)."""
    import importlib

    from looprl.core import RolloutRequest

    builder = getattr(importlib.import_module(f"looprl.presets.{family}"), name)
    env = GymEnvironment("CartPole-v1")
    preset = builder.hyperparameters(**REPLAY_SMALL, final_exploration_step=400).env(
        env).device("cpu").build()
    spec = DistributedRun(preset, RuntimeConfig(actors=1), frames=10_000, logdir=None,
                          quiet=True).spec
    remote, local = spec.make_policy(), preset.policy()  # a Ray actor's, the local agent's
    for _ in range(50):  # 50 requests of 4 copies' rows, 200 single rows: 200 env steps each
        remote.rollout(RolloutRequest(obs=torch.zeros(4, 4)))
    for _ in range(200):
        local.rollout(RolloutRequest(obs=torch.zeros(1, 4)))
    epsilon = remote.hyperparameters()["hp/epsilon"].get()
    start = REPLAY_SMALL["replay_start_size"]  # (epsilon stays 1 until then)
    assert epsilon == local.hyperparameters()["hp/epsilon"].get() == pytest.approx(
        1.0 + (200 - start) / (400 - start) * (preset.hyperparameters["final_exploration"] - 1.0))
    env.close()


def test_ray_actors_make_the_presets_environment_with_its_arguments_and_meta():
    """A preset built on ``GymEnvironment(id, **kwargs)`` and given meta components through
    its builder: the spec's actors make the same env (its ``gym.make`` arguments) and run
    copies of the same components."""
    from looprl.meta import RND
    from looprl.presets.classic_control import dqn

    env = GymEnvironment("looprl/DeepSea-v0", size=5, mapping_seed=3)
    preset = dqn.hyperparameters(**REPLAY_SMALL).env(env).meta(RND(seed=0)).device(
        "cpu").build()
    spec = DistributedRun(preset, RuntimeConfig(actors=1), logdir=None, quiet=True).spec
    assert spec.env == "looprl/DeepSea-v0" and spec.env_args == {"size": 5, "mapping_seed": 3}
    remote = spec.make_env()
    assert remote.env.unwrapped.size == 5
    assert (remote.env.unwrapped.action_mapping == env.env.unwrapped.action_mapping).all()
    assert [type(component) for component in spec.make_meta()] == [RND]
    env.close()


def test_an_environment_named_for_logs_is_made_by_its_id_and_named_as_locally():
    """``GymEnvironment(id, name=...)`` and ``MultiagentPettingZooEnv(game, name=...)``: Ray's
    actors make the id (not the name, which no registry knows), and the run is labelled with
    the name, as a local run's directory is."""
    pytest.importorskip("pettingzoo")
    from looprl.environments import MultiagentPettingZooEnv
    from looprl.presets.classic_control import dqn
    from looprl.presets.multiagent import dqn as multiagent_dqn

    env = GymEnvironment("CartPole-v1", name="cart")
    preset = dqn.hyperparameters(**REPLAY_SMALL).env(env).device("cpu").build()
    spec = DistributedRun(preset, RuntimeConfig(actors=1), logdir=None, quiet=True).spec
    assert (spec.env, spec.env_label) == ("CartPole-v1", "cart")
    assert spec.make_env().agent_count == 1  # (made by the id)
    game = MultiagentPettingZooEnv("tictactoe_v3", name="ttt")
    preset = multiagent_dqn.hyperparameters(**MULTIAGENT["dqn"]).env(game).device("cpu").build()
    spec = DistributedRun(preset, RuntimeConfig(actors=1), logdir=None, quiet=True).spec
    assert spec.env_label == "ttt" == game.name
    env.close()


def test_an_environment_ray_cannot_make_again_is_one_line_before_the_run():
    """A ``gymnasium.Env`` given built, or an id wrapped by a ``wrap_env`` that does not
    pickle: Ray's actors make environments from an id, and they stepped the bare id's
    environment (the user's wrappers silently dropped). A ``wrap_env`` that pickles goes with
    the id (``GymnasiumEnvironment`` takes it)."""
    import gymnasium as gym

    from looprl.environments.wrappers import Wrappers
    from looprl.presets.classic_control import dqn

    wrapped = lambda env: gym.wrappers.TransformReward(env, lambda r: 2 * r)  # noqa: E731
    for env, message in (
            (GymEnvironment(gym.make("CartPole-v1")), "CartPole-v1 was given as a gymnasium.Env, "
             "which Ray's actors cannot make again .* or run it locally$"),
            (GymEnvironment("CartPole-v1", wrap_env=wrapped), "CartPole-v1's wrap_env .* does not "
             "pickle, so Ray's actors cannot wrap their copies: .* not a lambda or a local "
             "function$")):
        preset = dqn.hyperparameters(**REPLAY_SMALL).env(env).device("cpu").build()
        with pytest.raises(ValueError, match=f"^{message}"):
            AlgorithmSpec.of_preset(preset, frames=1000)
        env.close()
    time_feature = Wrappers(["gymnasium.wrappers.TimeAwareObservation"])
    env = GymEnvironment("CartPole-v1", wrap_env=time_feature)
    preset = dqn.hyperparameters(**REPLAY_SMALL).env(env).device("cpu").build()
    spec, _ = AlgorithmSpec.of_preset(preset, frames=1000)
    made = spec.make_env()
    assert made.reset()[0].obs["obs"].shape == (5,)  # (the time feature added)
    made.close()
    env.close()


@pytest.mark.parametrize("name", ["vqn", "vsarsa"])
def test_atari_online_presets_run_on_the_atari_environment(tmp_path, name):
    pytest.importorskip("ale_py")
    run = distributed(tmp_path, f"algorithm=atari/{name}", "env=Breakout", "algorithm.n_envs=2")
    spec = run.spec
    assert (spec.env, spec.env_args) == ("atari", {"game": "Breakout"})  # (true scores)
    assert run.runtime.segment_length == 1 and spec.buffer_args == {"batch_streams": 2}
    trainer = spec.make_trainer(spec.make_policy())
    assert trainer.update == ("sarsa" if name == "vsarsa" else "q_learning")
    report = test_pipeline(spec, episodes=10**6, max_frames=8, n_envs=2, segment_length=1)
    assert report.train_steps >= 1


MULTIAGENT = {"ppo": {"n_steps": 16, "minibatch_size": 16, "hidden": 16},
              "dqn": {"replay_start_size": 40, "minibatch_size": 8, "hidden": 16,
                      "replay_buffer_size": 500}}


def multiagent_preset(name: str):
    pytest.importorskip("pettingzoo")
    from looprl.environments import MultiagentPettingZooEnv
    from looprl.presets import multiagent

    env = MultiagentPettingZooEnv("tictactoe_v3")
    builder = getattr(multiagent, name).hyperparameters(**MULTIAGENT[name])
    return builder.env(env).device("cpu").build()


def learner(agent):
    while not hasattr(agent, "trainer"):
        agent = agent.agent  # through MaskedAgent and SingleStateAgent
    return agent


@pytest.mark.parametrize("name", list(MULTIAGENT))
def test_ray_workers_build_each_agents_own_policy_trainer_and_buffer(name):
    """Independent learners on Ray: per agent, the local agent's policy (a copy of its masked
    network) and trainer, and its own buffer (on-policy batches, or its replay and update
    ratio); the actors step tictactoe's SRL adapter, observations flattened as locally."""
    from looprl.agents.independent import IndependentPolicy, IndependentTrainer

    preset = multiagent_preset(name)
    run = DistributedRun(preset, RuntimeConfig(actors=2), frames=10_000, logdir=None,
                         quiet=True)
    spec, local = run.spec, preset.agent(train_steps=10_000)
    assert run.name == f"independent_{name}" and spec.buffer == "independent"
    assert (spec.env, spec.env_args) == ("pettingzoo", {"env": "tictactoe_v3", "flatten": True})
    assert spec.env_label == "tictactoe_v3"  # the run directory's name
    policy = spec.make_policy()
    trainer = spec.make_trainer(policy)
    assert isinstance(policy, IndependentPolicy) and isinstance(trainer, IndependentTrainer)
    assert policy.names == ["player_1", "player_2"] and policy.masked == [True, True]
    for i, agent in enumerate(policy.names):
        mine, theirs = policy.policies[i], learner(local.agents[agent])
        assert type(mine) is type(theirs.policy) and mine.module is not theirs.policy.module
        assert same_parameters(mine.module, theirs.policy.module)  # its masked network
        assert type(trainer.trainers[i]) is type(theirs.trainer)
        for key in ("epochs", "minibatch_size", "discount_factor", "total_updates", "n_step",
                    "update"):
            assert getattr(trainer.trainers[i], key, None) == getattr(theirs.trainer, key,
                                                                      None), key
    (kind, args), second = spec.buffer_args["agents"]
    assert second == (kind, args)
    segment = run.runtime.segment_length
    if name == "ppo":  # each agent steps on its own n_envs (1) segments of n_steps
        assert (kind, args) == ("on_policy", {"batch_streams": 1}) and segment == 16
    else:
        segment = 8
        dqn = learner(local.agents["player_1"])
        remote = make_learner(trainer.trainers[0], kind, args)
        assert kind == "uniform" and remote.schedule == dqn.learner.schedule
        assert (remote.schedule.batch_size, remote.schedule.min_size) == (8, 40)
    report = test_pipeline(spec, episodes=10**6, max_frames=100 if name == "ppo" else 160,
                           n_envs=2, segment_length=segment)
    assert report.train_steps >= 2 and report.stats
    assert all(math.isfinite(value) for value in report.stats.values()), report.stats


def test_independent_learners_run_in_one_trainer_worker():
    preset = multiagent_preset("ppo")
    with pytest.raises(ValueError, match=r"^'independent_ppo' \(independent learners\) trains "
                                         r"in one trainer worker; set runtime.trainers=1"):
        DistributedRun(preset, RuntimeConfig(actors=2, trainers=2), logdir=None, quiet=True)


def test_independent_learners_run_meta_components_per_agent_on_both_sides():
    """Each agent has its own copy of the components in the actor (its own rows, returns and
    ``metrics['agent']``) and in the trainer (around its own learner's steps), as locally;
    what the trainer's copy learns reaches the same agent's copy in the actor."""
    from looprl.collector import EnvRunner
    from looprl.distributed.pipeline import collect, load_shared_state, trainer_core
    from looprl.meta import RND

    preset = multiagent_preset("dqn")
    preset.meta = [RND(seed=0)]
    spec, _ = AlgorithmSpec.of_preset(preset, frames=1000)
    policy = spec.make_policy()
    core = trainer_core(spec, policy)
    runner = EnvRunner(spec.make_env, None, 2, 8, None, meta=spec.make_meta(), policy=policy,
                       agent_names=spec.agent_names(policy))
    names = ["player_1", "player_2"]
    assert [hub.metrics["agent"] for hub in runner.hooks.hubs] == names
    assert [c.hooks.metrics["agent"] for c in core.cores] == names
    while core.cores[0].updates == 0 or core.cores[1].updates == 0:
        collect(runner, Actor(policy))
        for sample in runner.segments():
            core.put(sample)
        core.train()
    load_shared_state(runner.hooks.components, core.shared_state())
    for a in range(2):
        actor_rnd = runner.hooks.hubs[a].stack.components[0]
        trainer_rnd = core.cores[a].hooks.stack.components[0]
        for mine, theirs in zip(actor_rnd.rnd_net.parameters(),
                                trainer_rnd.rnd_net.parameters(), strict=True):
            assert torch.equal(mine, theirs)
    collect(runner, Actor(policy))
    transitions = [hub.metrics.get("transition") for hub in runner.hooks.hubs]
    acted = [t for t in transitions if t is not None]
    assert acted and all("intrinsic_reward" in t for t in acted)
    scalars = runner.meta_scalars()
    assert scalars and all(key.endswith(("/player_1", "/player_2")) for key in scalars)
