"""Issue 44, section 1: the Python API refuses wrong shapes and types in one line.

Each test feeds a kind of bad input to an entry point and asserts a ``TypeError`` or
``ValueError`` whose message is one line naming what was wrong (and no deep error later).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from looprl.approximation import Approximation, FixedTarget, PeriodicCheckpointer, QNetwork
from looprl.core import NamedArray, State, StateArray, namedarray
from looprl.distributed import DistributedRun, test_pipeline
from looprl.distributed.config import AlgorithmSpec
from looprl.experiments import run_experiment
from looprl.presets.classic_control import dqn, ppo


def one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert "\n" not in message, message
    return message


# -- State, StateArray, State.array --------------------------------------------------------
@pytest.mark.parametrize("observation", ["abc", b"abc", None])
def test_state_refuses_an_observation_that_is_no_array(observation):
    with pytest.raises((TypeError, KeyError)) as error:
        State(observation)
    assert "observation" in str(error.value)
    with pytest.raises(TypeError, match="observation"):
        State({"observation": "abc"})


@pytest.mark.parametrize("entry, value", [
    ("reward", [1.0, 2.0]), ("reward", torch.ones(2)), ("reward", "1"),
    ("done", np.array([True, False])), ("mask", [1.0]),
])
def test_single_state_takes_one_number_per_reward_done_mask(entry, value):
    with pytest.raises(TypeError) as error:
        State(torch.zeros(4), **{entry: value})
    assert entry in one_line(error) and "StateArray" in one_line(error)


def test_single_state_still_takes_numbers_of_every_kind():
    state = State(torch.zeros(4), reward=np.float32(1.5), done=np.bool_(True))
    assert state.reward == 1.5 and state.done and state.mask == 0.0
    assert State(torch.zeros(4), reward=torch.tensor(2.0), mask=torch.tensor([1.0])).reward == 2


@pytest.mark.parametrize("entries", [
    {"observation": torch.zeros(2, 4)},
    {"observation": torch.zeros(3, 4), "reward": torch.zeros(4)},
    {"observation": torch.zeros(3, 4), "done": torch.zeros(2, dtype=torch.bool)},
    {"observation": torch.zeros(3, 4), "mask": torch.ones(5)},
])
def test_state_array_entries_must_lead_with_its_shape(entries):
    with pytest.raises(ValueError) as error:
        StateArray(entries, (3,))
    assert "(3,)" in one_line(error)


def test_state_array_shape_is_a_tuple_of_ints():
    assert StateArray({"observation": torch.zeros(3, 4)}, 3).shape == (3,)
    with pytest.raises(TypeError, match="tuple of ints"):
        StateArray({"observation": torch.zeros(3, 4)}, "3")
    with pytest.raises(TypeError, match="^StateArray shape is a tuple"):  # (was torch's error)
        StateArray({"observation": torch.zeros(3, 4)}, (3.0,))
    scalar_mask = StateArray({"observation": torch.zeros(3, 4)}, (3,), mask=1.0)
    assert scalar_mask.shape == (3,)


def test_state_array_of_different_observation_shapes_names_the_entry():
    states = [State(torch.zeros(4)), State(torch.zeros(3))]
    with pytest.raises(ValueError) as error:
        State.array(states)
    assert "'observation'" in one_line(error) and "(3,)" in one_line(error)


# -- NamedArray ------------------------------------------------------------------------
@namedarray
class Rows:
    obs: np.ndarray
    reward: np.ndarray


def test_named_array_fields_share_their_leading_dimension():
    with pytest.raises(ValueError) as error:
        NamedArray(a=np.zeros(3), b=np.zeros(4))
    assert "a: 3, b: 4" in one_line(error)
    with pytest.raises(ValueError, match="leading"):
        NamedArray(a=torch.zeros(3, 2), inner=NamedArray(h=np.zeros((4, 1))))
    with pytest.raises(ValueError, match="leading"):
        Rows(np.zeros((3, 2)), np.zeros(4))  # positional: the slow path checks
    assert len(NamedArray(a=np.zeros(3), b=None, c=np.float32(1.0))) == 3


def test_a_named_array_of_different_lengths_says_so_when_built_or_set():
    """Built by keyword (the fast path) or with a field set since (was taken silently), it is
    refused; a field set behind its back is found when indexing fails."""
    with pytest.raises(ValueError, match="obs: 3, reward: 4"):
        Rows(obs=np.zeros((3, 2)), reward=np.zeros(4))
    rows = Rows(obs=np.zeros((3, 2)), reward=np.zeros(3))
    for set_field in (lambda: setattr(rows, "reward", np.zeros(4)),
                      lambda: rows.__setitem__("reward", np.zeros(4))):
        with pytest.raises(ValueError) as error:
            set_field()
        assert "obs: 3, reward: 4" in one_line(error)
    assert rows.reward.shape == (3,)  # (left as it was)
    rows.reward = np.ones(3)  # (the same rows: taken)
    rows.__dict__["reward"] = np.zeros(4)
    with pytest.raises(ValueError) as error:
        rows[[0, 3]]
    assert "obs: 3, reward: 4" in one_line(error)
    buffer = Rows(obs=np.zeros((5, 2)), reward=np.zeros(5))
    with pytest.raises(ValueError, match="obs: 3, reward: 4"):
        buffer[1:3] = rows
    assert rows[[0, 1]].reward.shape == (2,)  # rows both fields have are still readable


def test_writing_rows_of_another_shape_names_the_field():
    """NumPy's "could not broadcast input array from shape (3,) into shape (2,)" named none."""
    buffer = Rows(obs=np.zeros((5, 2)), reward=np.zeros(5))
    with pytest.raises(ValueError) as error:
        buffer[0:2] = Rows(obs=np.zeros((3, 2)), reward=np.zeros(3))
    assert "cannot write Rows field 'obs' at slice(0, 2, None): could not broadcast" in \
        one_line(error)


# -- Approximation -------------------------------------------------------------------------
def test_approximation_refuses_a_model_that_is_no_module():
    with pytest.raises(TypeError) as error:
        Approximation("model")
    assert "nn.Module" in one_line(error) and "str" in one_line(error)


def test_approximation_refuses_a_module_as_optimizer():
    model = nn.Linear(2, 1)
    with pytest.raises(TypeError) as error:
        Approximation(model, model)
    assert "torch.optim.Optimizer" in one_line(error) and "Linear" in one_line(error)
    with pytest.raises(TypeError, match="Optimizer"):
        Approximation(model, "adam")


def test_approximation_refuses_an_optimizer_of_another_models_parameters():
    torch.manual_seed(0)
    model, other = nn.Linear(2, 1), nn.Linear(2, 1)
    with pytest.raises(ValueError) as error:
        Approximation(model, torch.optim.Adam(other.parameters()))
    assert "none of the model's parameters" in one_line(error)
    # an optimizer over the model's parameters and more (shared features) is fine
    both = torch.optim.Adam([*model.parameters(), *other.parameters()])
    Approximation(model, both).reinforce(model(torch.ones(1, 2)).sum())


@pytest.mark.parametrize("clip_grad", [-1.0, "1", float("nan"), True])
def test_approximation_refuses_a_clip_grad_that_is_no_norm(clip_grad):
    with pytest.raises(ValueError) as error:
        Approximation(nn.Linear(2, 1), clip_grad=clip_grad)
    assert "clip_grad" in one_line(error)


@pytest.mark.parametrize("part, value", [
    ("target", FixedTarget), ("target", 1000), ("checkpointer", PeriodicCheckpointer),
    ("checkpointer", "q.pt")])
def test_approximation_refuses_a_target_or_checkpointer_that_is_no_instance(part, value):
    """(was: ``'int' object has no attribute 'init'``, or for the class ``init() missing 1
    required positional argument``)"""
    with pytest.raises(TypeError) as error:
        Approximation(nn.Linear(2, 1), **{part: value})
    assert f"Approximation's {part} is an object such as" in one_line(error)


def test_approximation_of_a_lazy_module_says_to_run_it_once_first():
    """(was: torch's ``Attempted to use an uninitialized parameter in <method 'numel'...>``)"""
    model = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.Linear(4, 1))
    optimizer = torch.optim.Adam(model.parameters())
    with pytest.raises(ValueError) as error:
        Approximation(model, optimizer)
    assert "call it once on a batch of observations" in one_line(error)
    model(torch.zeros(1, 3))
    Approximation(model, optimizer).reinforce(model(torch.ones(2, 3)).sum())


# -- run_experiment ------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, error_type, word", [
    ({"logdir": 123}, TypeError, "logdir"),
    ({"test_episodes": "3"}, TypeError, "test_episodes"),
    ({"test_episodes": 2.5}, TypeError, "test_episodes"),
    ({"test_episodes": -3}, ValueError, "test_episodes"),
    ({"seed": "1"}, TypeError, "seed"),
    ({"quiet": "False"}, TypeError, "quiet"),
])
def test_run_experiment_checks_its_arguments_before_running(tmp_path, kwargs, error_type,
                                                            word):
    kwargs.setdefault("logdir", str(tmp_path))
    with pytest.raises(error_type) as error:
        run_experiment(ppo.device("cpu"), "CartPole-v1", 100, **kwargs)
    assert word in one_line(error)
    assert not any(tmp_path.iterdir())  # nothing started


@pytest.mark.parametrize("agents, envs, word", [([], "CartPole-v1", "agents"), (ppo, [], "envs")])
def test_run_experiment_refuses_no_agents_or_no_envs(tmp_path, agents, envs, word):
    """An empty list ran nothing and returned ``[]``, silently."""
    with pytest.raises(ValueError) as error:
        run_experiment(agents, envs, 100, logdir=str(tmp_path))
    assert one_line(error).startswith(f"run_experiment got no {word} (an empty list)")


# -- seeds -----------------------------------------------------------------------------------
def _seeded() -> dict[str, Any]:
    """What takes a ``seed``, by name: a function of the seed (one that reset, drew or
    acted with it, where the seed was taken and refused later, or taken and misused)."""
    from looprl.environments import (
        ContextualEnvironment,
        GymEnvironment,
        GymVectorEnvironment,
        MultiagentPettingZooEnv,
        sample_contexts,
    )
    from looprl.meta import PLR, RND, SPaCE
    from looprl.policies import GreedyPolicy
    from looprl.runners import OnlineRunner

    spec = AlgorithmSpec("CartPole-v1", "q-network", "dqn",
                         policy_args={"obs_dim": 4, "action_dim": 2})
    return {
        "GymEnvironment": lambda s: GymEnvironment("CartPole-v1", seed=s).reset(),
        "reset(seed=)": lambda s: GymEnvironment("CartPole-v1").reset(seed=s),
        "GymVectorEnvironment": lambda s: GymVectorEnvironment("CartPole-v1", 2, seed=s).reset(),
        "DuplicateEnvironment": lambda s: GymEnvironment("CartPole-v1").duplicate(2).reset(
            seed=s),
        "ContextualEnvironment": lambda s: ContextualEnvironment("CartPole-v1", seed=s).reset(),
        "sample_contexts": lambda s: sample_contexts("CartPole-v1", 2, {"length": (0.2, 1.0)},
                                                     seed=s),
        "MultiagentPettingZooEnv": lambda s: MultiagentPettingZooEnv(
            "pettingzoo.classic.rps_v2", seed=s).reset(),
        "RND": lambda s: RND(seed=s),
        "PLR": lambda s: PLR(seed=s),
        "SPaCE": lambda s: SPaCE(seed=s),
        "GreedyPolicy": lambda s: GreedyPolicy(QNetwork(nn.Linear(4, 2)), 2, 0.5, seed=s),
        "OnlineRunner": lambda s: OnlineRunner(dqn, "CartPole-v1", seed=s),
        "DistributedRun": lambda s: DistributedRun(spec, logdir=None, seed=s),
        "test_pipeline": lambda s: test_pipeline(spec, episodes=1, max_frames=200, seed=s),
    }


@pytest.mark.parametrize("name", list(_seeded()))
def test_every_seeded_constructor_checks_its_seed_in_one_line(name):
    """A seed that is no whole number from 0 to 2**32 - 1 was Gymnasium's error at the first
    reset, NumPy's or torch's (a RuntimeError), or taken: ``SPaCE('a')`` until its first
    reset, a bool, ``Runner(seed=1.5)`` as 1; a NumPy integer was refused by Gymnasium."""
    made = _seeded()[name]
    for seed, error_type in (("abc", TypeError), (1.5, TypeError), (True, TypeError),
                             (-1, ValueError), (2**32, ValueError)):
        with pytest.raises(error_type) as error:
            made(seed)
        assert "a seed is a whole number from 0 to 2**32 - 1" in one_line(error), name
    made(np.int64(3))


@pytest.mark.parametrize("name", ["DistributedRun", "test_pipeline"])
def test_a_distributed_seed_is_never_none(name):
    """Their seed has no "unseeded" meaning: ``None`` was ``unsupported operand type(s) for
    +: 'NoneType' and 'int'`` (DistributedRun) or ``int() argument must be...``
    (test_pipeline), once the run had started."""
    with pytest.raises(TypeError) as error:
        _seeded()[name](None)
    assert "a seed is a whole number from 0 to 2**32 - 1, got None" in one_line(error)


def test_test_pipeline_refuses_no_env_copies_in_one_line():
    """``n_envs=0`` was ``need 1 <= groups <= n_envs, got groups=1``: a groups never given."""
    with pytest.raises(ValueError) as error:
        test_pipeline(env="CartPole-v1", policy="q-network", trainer="dqn", n_envs=0)
    assert one_line(error).startswith("n_envs must be positive (a whole number), got 0")


@pytest.mark.parametrize("env", [123, None, object()])
def test_run_experiment_refuses_an_env_that_is_no_environment(tmp_path, env):
    preset = ppo.env("CartPole-v1").device("cpu").build()
    with pytest.raises(TypeError) as error:
        run_experiment(preset, env, 100, logdir=str(tmp_path))
    assert "envs are environments or Gymnasium ids" in one_line(error)


# -- PresetBuilder.env ---------------------------------------------------------------------
def test_builder_env_takes_a_gymnasium_id():
    preset = ppo.env("CartPole-v1").device("cpu").build()
    assert preset.env_name == "CartPole-v1"
    assert dqn.env("CartPole-v1").device("cpu").build().env_name == "CartPole-v1"


@pytest.mark.parametrize("env", [123, 1.5, ["CartPole-v1"], object()])
def test_builder_env_refuses_what_is_no_environment(env):
    with pytest.raises(TypeError) as error:
        ppo.env(env)
    assert "Gymnasium id" in one_line(error)


@pytest.mark.parametrize("builder", [dqn, ppo])
def test_agents_refuse_a_state_of_another_environment(builder):
    """A state of the wrong width is one line naming its shape (torch's error said matrices
    could not be multiplied), from the evaluation agent and the training agent alike."""
    preset = builder.env("CartPole-v1").device("cpu").build()
    for agent in (preset.test_agent(), preset.agent()):
        with pytest.raises(ValueError) as error:
            agent.act(State({"observation": torch.zeros(5), "reward": 0.0, "done": False}))
        assert "cannot act on an observation of shape (5,)" in one_line(error)
    assert preset.test_agent().act(State(torch.zeros(4))).shape == ()  # (the right width)


# -- AlgorithmSpec -------------------------------------------------------------------------
@pytest.mark.parametrize("kind, name, suggestion", [
    ("trainer", "ppoo", "ppo"), ("policy", "actor-critc", "actor-critic"),
])
def test_algorithm_spec_checks_names_at_construction(kind, name, suggestion):
    parts = {"policy": "actor-critic", "trainer": "ppo", kind: name}
    with pytest.raises(ValueError) as error:
        AlgorithmSpec(env="CartPole-v1", **parts)
    assert f"Did you mean '{suggestion}'" in one_line(error)


def test_algorithm_spec_takes_registered_names_and_factories():
    spec = AlgorithmSpec(env="CartPole-v1", policy="actor-critic", trainer="ppo")
    assert spec.on_device("cpu").trainer == "ppo"  # (``replace`` checks again)
    AlgorithmSpec(env="CartPole-v1", policy=lambda: None, trainer=lambda policy: None)


def test_an_agent_names_the_shape_of_an_observation_of_fields():
    """An SRL environment's observations (a ``NamedArray`` of fields) of another width than its
    declared space: the line said "unhashable type: 'slice'" (a dict's shape sliced)."""
    import numpy as np

    from looprl.agents.actor import Actor
    from looprl.core import NamedArray, Policy, RolloutRequest

    class Mine(Policy):  # (a user's: its rollout is checked as looprl's are)
        def rollout(self, request):
            raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (1x3 and 4x64)")

        def analyze(self, sample, target=None):
            pass

    request = RolloutRequest(obs=NamedArray(obs=np.zeros((1, 3), np.float32)))
    with pytest.raises(ValueError) as error:
        Actor(Mine()).rollout(request)
    assert "Mine cannot act on an observation of shape {'obs': (3,)} (mat1" in one_line(error)


def test_algorithm_spec_checks_its_buffer_and_test_copies_at_construction():
    """``buffer="xx"`` was a KeyError when the learner was built, ``test_copies=0`` taken."""
    with pytest.raises(ValueError) as error:
        AlgorithmSpec("CartPole-v1", "q-network", "dqn", buffer="prioritised")
    assert "Unknown AlgorithmSpec's buffer 'prioritised'. Did you mean 'prioritized'?" in (
        one_line(error))
    with pytest.raises(ValueError, match="test_copies must be positive"):
        AlgorithmSpec("CartPole-v1", "q-network", "dqn", test_copies=0)
    for buffer in ("independent", "uniform", None):
        AlgorithmSpec("CartPole-v1", "q-network", "dqn", buffer=buffer)


def test_a_distributed_run_refuses_more_exploration_rates_than_actors():
    """Rates past ``runtime.actors`` were silently unused (one per actor; fewer cycle)."""
    from looprl.distributed.config import RuntimeConfig

    spec = AlgorithmSpec("CartPole-v1", "q-network", "dqn", explorations=[0.1, 0.2, 0.3],
                         policy_args={"obs_dim": 4, "action_dim": 2})
    with pytest.raises(ValueError) as error:
        DistributedRun(spec, RuntimeConfig(actors=2), logdir=None)
    assert "got 3 for runtime.actors=2" in one_line(error)
    DistributedRun(spec, RuntimeConfig(actors=4), logdir=None)
    with pytest.raises(ValueError, match="a list .or tuple. of probabilities.*got a float"):
        AlgorithmSpec("CartPole-v1", "q-network", "dqn", explorations=0.1)  # (no list)


# -- two names of one argument (ours and ALL's) --------------------------------------------
def test_two_names_of_one_argument_with_different_values_are_refused():
    """``buffer_size`` and ``n_actions`` silently won over ``size`` and ``num_actions``."""
    from looprl.approximation import QDist
    from looprl.memory import PrioritizedReplayBuffer

    with pytest.raises(ValueError) as error:
        PrioritizedReplayBuffer(10, buffer_size=20)
    assert "size=10 and buffer_size=20 are one argument under two names" in one_line(error)
    with pytest.raises(ValueError, match="num_actions=3 and n_actions=2"):
        QDist(nn.Linear(4, 6), num_actions=3, n_actions=2, num_atoms=3)
    with pytest.raises(ValueError, match="num_atoms=3 and n_atoms=2"):
        QDist(nn.Linear(4, 6), num_atoms=3, n_atoms=2)
    assert PrioritizedReplayBuffer(buffer_size=20).size == PrioritizedReplayBuffer(20).size == 20
    assert QDist(nn.Linear(4, 6), n_actions=2, n_atoms=3).num_actions == 2
    assert QDist(nn.Linear(4, 102)).num_actions == 2  # (defaults 2 actions, 51 atoms)


# -- runners' search spaces ------------------------------------------------------------------
def test_a_dimension_refuses_an_unknown_kind_and_maps_its_choices():
    """``Dimension("lr", "flt", 0, 1)`` was taken; a categorical one decoded 0.5 as 0.5 and
    encoded a choice as "could not convert string to float"."""
    from looprl.runners.space import Dimension, SearchSpaceError

    with pytest.raises(SearchSpaceError) as error:
        Dimension("lr", "flt", 0, 1)
    assert "unknown type 'flt'. Did you mean 'float'? Valid: categorical, float, int" in (
        one_line(error))
    with pytest.raises(SearchSpaceError, match="non-empty list of 'choices'"):
        Dimension("c", "categorical")
    choices = Dimension("c", "categorical", choices=("a", "b"))
    assert [choices.decode(unit) for unit in (-1, 0.0, 0.49, 0.5, 1.0)] == list("aaabb")
    assert [choices.decode(choices.encode(c)) for c in "ab"] == ["a", "b"]
    assert choices.encode(None) == 0.5
    with pytest.raises(SearchSpaceError, match="'z' is none of its choices"):
        choices.encode("z")
    assert Dimension("n", "int", 1, 5).decode(0.5) == 3  # (numeric ranges as before)


def test_the_distributed_checks_refuse_counts_that_are_no_positive_number():
    """``test_environment(steps=-1)`` reported ``steps=-1``; ``test_pipeline(episodes=-1)``
    ran as if 0 had been given."""
    from looprl.distributed import test_environment

    with pytest.raises(ValueError) as error:
        test_environment("CartPole-v1", steps=-1)
    assert one_line(error) == "steps must be positive (a whole number), got -1"
    for count in ("episodes", "max_frames"):
        with pytest.raises(ValueError, match=f"{count} must be positive"):
            test_pipeline(env="CartPole-v1", policy="q-network", trainer="dqn", **{count: -1})


# -- sizes, counts and names of parts ----------------------------------------------------------
def test_parts_refuse_no_size_and_a_name_that_is_no_text(tmp_path):
    """``SumTree(0)``, ``CategoricalHead(0)``, ``apex_epsilons(0)``, ``Approximation(name=3)``
    and ``DistributedRun(logdir=5)`` were taken (failing later, or never)."""
    from looprl.memory.prioritized import SumTree
    from looprl.policies import apex_epsilons
    from looprl.policies.distributions import CategoricalHead

    for make, line in ((lambda: SumTree(0), "size must be positive (a whole number), got 0"),
                       (lambda: CategoricalHead(0), "n must be positive (a whole number), got 0"),
                       (lambda: apex_epsilons(0), "n must be positive (a whole number), got 0")):
        with pytest.raises(ValueError) as error:
            make()
        assert one_line(error) == line
    model = nn.Linear(4, 2)
    with pytest.raises(TypeError, match="Approximation's name is a str, got int 3"):
        Approximation(model, torch.optim.Adam(model.parameters()), name=3)
    spec = AlgorithmSpec("CartPole-v1", "q-network", "dqn",
                         policy_args={"obs_dim": 4, "action_dim": 2})
    with pytest.raises(TypeError, match=r"^DistributedRun's logdir is a directory path \(a str or "
                                        r"a Path\) or None, got int 5$"):
        DistributedRun(spec, logdir=5)
    assert DistributedRun(spec, logdir=tmp_path).logdir == tmp_path
    from looprl.environments import GymEnvironment
    from looprl.experiments import ParallelEnvExperiment
    from looprl.presets.classic_control import a2c
    env = GymEnvironment("CartPole-v1")
    with pytest.raises(TypeError, match="^the experiment's logdir is a directory path .* got "
                                        "NoneType None$"):  # (was os.path's TypeError)
        ParallelEnvExperiment(a2c.env(env).device("cpu").build(), env, logdir=None)
    assert len(apex_epsilons(1)) == SumTree(1).size == 1


# -- ALL's approximations, schedules, builder and watch -------------------------------------
def test_an_approximation_of_a_model_that_is_no_module_is_one_line():
    """``QNetwork('model')`` and the other wrappers took it: "'str' object is not callable" at
    the first call."""
    import gymnasium as gym

    from looprl.approximation import FeatureNetwork, VNetwork
    from looprl.policies import DeterministicPolicy, GaussianPolicy, SoftmaxPolicy

    box = gym.spaces.Box(-1.0, 1.0, (2,))
    for make in (QNetwork, VNetwork, FeatureNetwork, SoftmaxPolicy,
                 lambda model: GaussianPolicy(model, space=box),
                 lambda model: DeterministicPolicy(model, space=box)):
        with pytest.raises(TypeError) as error:
            make("model")
        assert "an approximation's model is a torch nn.Module" in one_line(error)
        assert "got a str 'model'" in one_line(error)


def test_a_linear_scheduler_of_text_is_refused_when_made():
    """Was: "unsupported operand type(s) for -: 'float' and 'str'" at the first read."""
    from looprl.approximation import LinearScheduler

    with pytest.raises(ValueError) as error:
        LinearScheduler("1", 0.1, 0, 10)
    assert one_line(error) == ("LinearScheduler's initial_value must be a finite number, got '1'; "
                               "give it as a number, not text")
    with pytest.raises(ValueError, match="decay_end is a step count, a number, got '10'"):
        LinearScheduler(1.0, 0.1, 0, "10")
    assert LinearScheduler(1.0, 0.0, 0, 10, name="epsilon")(5) == 0.5


def test_the_builders_hyperparameters_take_a_dict_and_its_name_takes_text():
    """``ppo(hyperparameters='lr=1e-3')`` said "argument after ** must be a mapping";
    ``ppo.hyperparameters({...})`` "takes 1 positional argument"; ``name(123)`` was met by the
    logger at the run."""
    assert ppo.hyperparameters({"lr": 5e-4}, epochs=2)._hyperparameters["lr"] == 5e-4
    assert ppo(hyperparameters={"lr": 5e-4})._hyperparameters["lr"] == 5e-4
    with pytest.raises(TypeError) as error:
        ppo(hyperparameters="lr=1e-3")
    assert one_line(error) == ("ppo.hyperparameters() takes name=value keywords or a dict of "
                               "them, got a str 'lr=1e-3'")
    with pytest.raises(TypeError) as error:
        ppo.name(123)
    assert one_line(error) == "ppo.name() takes the preset's display name as text, got an int 123"


def test_load_and_watch_of_an_environment_id_says_what_to_build(tmp_path):
    """Was: AttributeError "'str' object has no attribute 'name'" after loading the preset."""
    from looprl.experiments import load_and_watch

    with pytest.raises(TypeError) as error:
        load_and_watch(tmp_path / "preset.pt", "CartPole-v1")
    assert one_line(error).endswith("got str 'CartPole-v1': build one "
                                    "(GymEnvironment('CartPole-v1'))")


def test_a_v_network_of_more_than_one_output_is_one_line():
    """Its "values" were [B, 2], met as a broadcasting error in the user's loss."""
    from looprl.approximation import VNetwork

    v = VNetwork(nn.Linear(4, 2))
    with pytest.raises(ValueError) as error:
        v(StateArray({"observation": torch.zeros(3, 4)}, (3,)))
    assert one_line(error) == ("a VNetwork's model gives one value per state, of shape [..., 1], "
                               "got shape (3, 2): end it with a layer of 1 output")
    assert VNetwork(nn.Linear(4, 1))(StateArray({"observation": torch.zeros(3, 4)}, (3,))
                                     ).shape == (3,)


def test_a_replay_buffer_refuses_a_text_action():
    """Was NumPy's "can't convert np.ndarray of type numpy.str_"."""
    from looprl.memory import ExperienceReplayBuffer

    state = State({"observation": torch.zeros(4), "reward": 0.0, "done": False})
    with pytest.raises(TypeError) as error:
        ExperienceReplayBuffer(10).store(state, "left", state)
    assert "action is a number per state (or an array), got text 'left'" in one_line(error)


def test_an_epsilon_schedule_beyond_a_probability_is_refused():
    """A float epsilon was checked; a LinearScheduler's ends were not (1.5 explored always)."""
    from looprl.approximation import LinearScheduler
    from looprl.policies import GreedyPolicy

    q = QNetwork(nn.Linear(4, 2))
    with pytest.raises(ValueError) as error:
        GreedyPolicy(q, 2, epsilon=LinearScheduler(1.5, -0.5, 0, 5))
    assert one_line(error) == "epsilon is a probability in [0, 1], got a schedule from 1.5 to -0.5"
    assert GreedyPolicy(q, 2, epsilon=LinearScheduler(1.0, 0.1, 0, 5)).epsilon == 1.0
