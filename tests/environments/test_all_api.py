"""ALL 0.9's environment API, written as an ALL user writes it (``from all.environments
import ...`` with ``looprl`` in place of ``all``)."""

import copy
import pickle

import gymnasium
import numpy as np
import pytest
import torch

from looprl.environments import (
    AtariEnvironment,
    DuplicateEnvironment,
    GymEnvironment,
    GymVectorEnvironment,
    MultiagentPettingZooEnv,
    VectorEnvironment,
)


def test_duplicate_environment_over_a_list_of_environments() -> None:
    envs = [GymEnvironment("CartPole-v1", device="cpu") for _ in range(3)]
    env = DuplicateEnvironment(envs, device="cpu")
    assert isinstance(env, VectorEnvironment)
    assert env.name == "CartPole-v1" and env.num_envs == 3 and env.device == "cpu"
    assert env.state_space == envs[0].env.observation_space
    state = env.reset(seed=7)
    assert state.shape == (3,) and state.observation.shape == (3, 4)
    alone = GymEnvironment("CartPole-v1")
    assert torch.equal(state.observation[1], alone.reset(seed=8).observation)  # seed + i
    resets = 0
    for _ in range(40):  # always pushing left ends every episode within 40 steps
        done = state.done
        state = env.step(torch.zeros(3, dtype=torch.long))
        assert env.state_array is env.state
        assert torch.equal(state.reward, (~done).float())  # a done row resets, reward 0
        resets += int(done.sum())
    assert resets >= 3
    copy = env.copy()
    assert copy.reset().shape == (3,) and copy.envs[0].env is not env.envs[0].env


def test_duplicate_environment_steps_the_given_wrapped_environments() -> None:
    def wrap(env: gymnasium.Env) -> gymnasium.Env:
        return gymnasium.wrappers.TransformReward(env, lambda r: 10 * r)

    env = DuplicateEnvironment([GymEnvironment("CartPole-v1", wrap_env=wrap) for _ in range(2)])
    env.reset(seed=0)
    assert env.step(torch.tensor([0, 1])).reward.tolist() == [10.0, 10.0]


def test_duplicate_environment_bad_input() -> None:
    env = GymEnvironment("CartPole-v1")
    with pytest.raises(TypeError, match="list of environments"):
        DuplicateEnvironment(env)
    with pytest.raises(ValueError, match="same environment more than once"):
        DuplicateEnvironment([env, env])
    with pytest.raises(TypeError, match="duplicate"):
        DuplicateEnvironment([object()])


def test_duplicate_environment_of_different_environments_is_one_line() -> None:
    """Two games of one observation shape (Breakout's 4 actions, Pong's 6) played silently in
    the first one's action space."""
    pytest.importorskip("ale_py")
    with pytest.raises(ValueError, match=r"^DuplicateEnvironment steps copies of one "
                       r"environment, but Pong .*Discrete\(6\), Breakout .*Discrete\(4\)"):
        DuplicateEnvironment([AtariEnvironment("Breakout"), AtariEnvironment("Pong")])
    with pytest.raises(ValueError, match=r"MountainCar-v0 has observations .*\(2,\)"):
        DuplicateEnvironment([GymEnvironment("CartPole-v1"), GymEnvironment("MountainCar-v0")])
    one = np.ones(1, np.float32)  # (other bounds of one shape: a copy of another context)
    bounds = GymEnvironment("Pendulum-v1", wrap_env=lambda env: gymnasium.wrappers.RescaleAction(
        env, -one, one))
    assert DuplicateEnvironment([GymEnvironment("Pendulum-v1"), bounds]).num_envs == 2


def test_gym_vector_environment_with_alls_signature() -> None:
    vec_env = gymnasium.make_vec("CartPole-v1", num_envs=2, vectorization_mode="sync")
    env = GymVectorEnvironment(vec_env, "cartpole", device="cpu")
    assert env.name == "cartpole" and env.num_envs == 2 and env.env is vec_env
    state = env.reset(seed=1)
    assert state.shape == (2,) and state.observation.dtype == torch.float32
    state = env.step(torch.tensor([1, 0]))
    assert state.reward.tolist() == [1.0, 1.0] and state.mask.tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="name second"):
        GymVectorEnvironment(vec_env, 2)
    ours = GymVectorEnvironment("CartPole-v1", 3)  # looprl's signature keeps working
    assert ours.n_envs == 3 and ours.reset().shape == (3,)
    with pytest.raises(TypeError, match="n_envs"):
        GymVectorEnvironment("CartPole-v1")


def test_a_vector_environment_over_an_async_vector_env_refuses_copies_and_keeps_working() -> None:
    vec_env = gymnasium.make_vec("CartPole-v1", num_envs=2, vectorization_mode="async")
    env = GymVectorEnvironment(vec_env, "cartpole")
    try:
        with pytest.raises(TypeError, match="^cartpole: .*AsyncVectorEnv.*make a new one"):
            copy.deepcopy(env)
        with pytest.raises(TypeError, match="cannot be copied or pickled"):
            pickle.dumps(env)
        assert env.reset(seed=0).shape == (2,)  # (a half-made copy closed its pipes)
        sync = GymVectorEnvironment("CartPole-v1", 2)
        assert copy.deepcopy(sync).reset().shape == (2,)
    finally:
        env.close()


def test_a_vector_environment_over_a_wrapped_spawned_async_vector_env_refuses_copies() -> None:
    vec_env = gymnasium.wrappers.vector.RecordEpisodeStatistics(gymnasium.make_vec(
        "CartPole-v1", num_envs=1, vectorization_mode="async", vector_kwargs={"context": "spawn"}))
    env = GymVectorEnvironment(vec_env, "cartpole")
    try:
        assert env.reset(seed=0).shape == (1,)
        with pytest.raises(TypeError, match="^cartpole: .*AsyncVectorEnv.*make a new one"):
            copy.deepcopy(env)
        with pytest.raises(TypeError, match="cannot be copied or pickled"):
            pickle.dumps(env)
        assert env.step(torch.tensor([1])).shape == (1,)  # (a half-made copy closed its pipes)
    finally:
        env.close()


def test_gym_environment_with_alls_keywords() -> None:
    seen = []

    def wrap_env(env: gymnasium.Env) -> gymnasium.Env:
        seen.append(env)
        return gymnasium.wrappers.TransformObservation(
            env, lambda obs: obs * 0, env.observation_space)

    env = GymEnvironment("CartPole-v1", device="cpu", name="wrapped", legacy_gym=False,
                         wrap_env=wrap_env, max_episode_steps=5)
    assert env.name == "wrapped" and len(seen) == 1
    assert torch.equal(env.reset(seed=0).observation, torch.zeros(4))
    for _ in range(5):
        state = env.step(0)
    assert state.done  # gym_make_kwargs reached gymnasium.make
    copies = env.duplicate(2)  # every copy wrapped alike
    assert len(seen) == 3 and copies.name == "wrapped"
    assert torch.equal(copies.reset(seed=0).observation, torch.zeros(2, 4))


def test_legacy_gym_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="legacy_gym=True"):
        GymEnvironment("CartPole-v1", legacy_gym=True)
    with pytest.raises(TypeError, match="wrap_env"):
        GymEnvironment("CartPole-v1", wrap_env="not a function")


def test_duplicate_environment_of_atari_environments() -> None:
    pytest.importorskip("ale_py")
    env = DuplicateEnvironment([AtariEnvironment("Pong") for _ in range(2)])
    state = env.reset(seed=0)
    assert state.observation.shape == (2, 4, 84, 84) and state.observation.dtype == torch.uint8
    assert env.step(torch.tensor([0, 1])).shape == (2,)


def test_seed_seeds_the_next_reset_and_the_copies_as_alls() -> None:
    seeded = GymEnvironment("CartPole-v1", seed=3)
    first = seeded.reset().observation
    env = GymEnvironment("CartPole-v1")
    env.seed(3)
    assert torch.equal(env.reset().observation, first)
    assert not torch.equal(env.reset().observation, first)  # (one reset only)
    copies = seeded.duplicate(2).reset().observation
    env.seed(3)
    assert torch.equal(env.duplicate(2).reset().observation, copies)
    with pytest.raises(ValueError, match=r"CartPole-v1: a seed is a whole number from 0 to "
                                         r"2\*\*32 - 1, got -1"):
        env.seed(-1)


def test_seed_of_a_duplicate_environment_seeds_its_next_reset() -> None:
    """ALL's ``env.seed(s)`` on a ``DuplicateEnvironment`` was taken and did nothing."""
    env = DuplicateEnvironment([GymEnvironment("CartPole-v1") for _ in range(2)])
    seeded = DuplicateEnvironment([GymEnvironment("CartPole-v1") for _ in range(2)])
    env.seed(3)
    first = seeded.reset(seed=3).observation
    assert torch.equal(env.reset().observation, first)
    assert not torch.equal(env.reset().observation, first)  # (one reset only)


def test_a_duplicate_environment_takes_the_last_seed() -> None:
    """``reset(seed=2**32 - 1)`` seeded copy 1 with 2**32, past every seed's range (a
    ValueError naming a seed the user never gave)."""
    env = DuplicateEnvironment([GymEnvironment("CartPole-v1") for _ in range(2)])
    observation = env.reset(seed=2**32 - 1).observation
    from looprl.environments.base import wrapped_seed
    for i in range(2):  # (wrapped as every seed looprl derives: ale-py's 32-bit seeds take them)
        alone = GymEnvironment("CartPole-v1").reset(seed=wrapped_seed(2**32 - 1 + i)).observation
        assert torch.equal(observation[i], alone)


def test_seed_of_a_multiagent_environment_seeds_its_next_reset() -> None:
    from pettingzoo.classic import rps_v2

    env = MultiagentPettingZooEnv(rps_v2.env(), name="rps")
    seeds: list[int] = []
    env.adapter.seed = seeds.append
    env.seed(1)
    env.reset()
    env.reset()
    assert seeds == [1]
    with pytest.raises(TypeError, match=r"rps: a seed is a whole number from 0 to 2\*\*32 - 1, "
                                         r"got 1.5"):
        env.seed(1.5)


def test_reset_passes_gymnasiums_options_as_alls_reset_kwargs() -> None:
    env = GymEnvironment("CartPole-v1")
    state = env.reset(seed=0, options={"low": -0.001, "high": 0.001})
    assert state.observation.abs().max() <= 0.001  # (CartPole's default range is 0.05)


def test_mujoco_no_info_is_true_or_false() -> None:
    from looprl.environments import MujocoEnvironment

    with pytest.raises(ValueError, match="^no_info must be True or False, got 'no'"):
        MujocoEnvironment("HalfCheetah", no_info="no")  # (was: taken as True)


def test_mujoco_environment_refuses_gymnasiums_other_ids() -> None:
    """MujocoEnvironment('CartPole-v1') was taken and played CartPole; 'CartPole' was
    "Unknown environment 'CartPole-v5'". A MuJoCo id, ALL's 'HalfCheetah-v4' too, is taken."""
    from looprl.environments import MujocoEnvironment

    for env_id, family, shown in (("CartPole-v1", "classic-control", "CartPole-v1"),
                                  ("CartPole", "classic-control", "CartPole-v1"),
                                  ("LunarLander-v3", "box2d", "LunarLander-v3")):
        with pytest.raises(ValueError, match=rf"^MujocoEnvironment takes MuJoCo ids \(.*\), got "
                                             rf"'{env_id}', a {family} environment: use "
                                             rf"GymEnvironment\('{shown}'\)$"):
            MujocoEnvironment(env_id)
    assert MujocoEnvironment("HalfCheetah-v4").name == "HalfCheetah-v4"


def test_copies_of_mujoco_environments_stay_mujoco_ones() -> None:
    from looprl.environments import MujocoEnvironment

    envs = DuplicateEnvironment([MujocoEnvironment("Hopper") for _ in range(2)]).copy().envs
    assert all(type(env) is MujocoEnvironment and env.no_info for env in envs)  # (was: Gym's)
