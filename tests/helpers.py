"""Test helpers: replay an agent's evaluation episodes independently of the experiment code
(so that tests can compare ``Experiment.test`` with what the agent really scores); a
trainer that records its batches instead of training; a meta component that records what
every hook sees; an env that counts its steps (``CountingEnv``); a callback that kills a
worker of a distributed run; the smallest user policy of seed 004 (``LinearPolicy``); seed
003's supervised example (``fit_sum``); a preset's save and load (``saved_and_loaded``) and a
Pendulum preset's, with its evaluation (``check_pendulum_round_trip``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np
import torch
from torch import nn

from looprl.agents import SingleModelPytorchPolicy
from looprl.core import Trainer, TrainerStepResult
from looprl.environments import GymEnvironment, GymVectorEnvironment
from looprl.meta import HOOKS, MetaComponent


class LinearPolicy(SingleModelPytorchPolicy):
    """The smallest user policy (seed 004's ``SingleModelPytorchPolicy``): one linear layer,
    3 inputs to 2 outputs, its weights seeded with ``seed``."""

    def __init__(self, seed: int = 0, device: str = "cpu"):
        torch.manual_seed(seed)
        super().__init__(nn.Linear(3, 2), device=device)

    def rollout(self, requests: Any, **kwargs: Any) -> Any:
        return self.net(requests)

    def analyze(self, sample: Any, target: str | None = None, **kwargs: Any) -> Any:
        return self.net(sample)


class CountingEnv(gymnasium.Env):
    """A Gymnasium env of two actions counting its steps since ``reset`` (``t``), which returns
    float32 zeros of ``observation_space``'s shape: subclasses set that space and ``step``."""

    action_space = gymnasium.spaces.Discrete(2)

    def reset(self, seed: int | None = None, options: Any = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(self.observation_space.shape, np.float32), {}


class RecordingTrainer(Trainer):
    """Records (copies of) the batches it is given instead of training."""

    def __init__(self, policy):
        self._policy = policy
        self.batches: list = []

    @property
    def policy(self):
        return self._policy

    def step(self, batch) -> TrainerStepResult:
        self.batches.append(batch.clone())  # a local agent's batch views its buffer
        return TrainerStepResult({}, len(self.batches))


def replay_episodes(agent, env_id: str, seed: int, episodes: int) -> list[float]:
    """Returns of ``agent`` in ``episodes`` episodes of ``env_id`` after a ``reset(seed=seed)``."""
    env = GymEnvironment(env_id)
    env.reset(seed=seed)
    returns = []
    for _ in range(episodes):
        state, total = env.reset(), 0.0
        while not state.done:
            state = env.step(agent.act(state))
            total += state.reward
        returns.append(total)
    env.close()
    return returns


def replay_first_episodes(agent, env_id: str, n_envs: int, seed: int,
                          quota: list[int]) -> list[float]:
    """Returns of the first ``quota[i]`` episodes of copy ``i`` of a vector ``env_id`` reset
    with ``seed``, in the order the episodes end (copy order within a step)."""
    env = GymVectorEnvironment(env_id, n_envs)
    state = env.reset(seed=seed)
    running, left, returns = [0.0] * n_envs, quota + [0] * (n_envs - len(quota)), []
    while any(left):
        state = env.step(agent.act(state))
        for i in range(n_envs):
            running[i] += float(state.reward[i])
            if state.done[i]:
                if left[i]:
                    returns.append(running[i])
                    left[i] -= 1
                running[i] = 0.0
    env.close()
    return returns


def fit_sum(f: Any, steps: int = 200) -> list[float]:
    """Seed 003's supervised example as written: ``steps`` steps of ``f`` (an ``Approximation``
    of 16 features) fitting the sum of 16 random features; the losses."""
    losses = []
    for _ in range(steps):
        x = torch.randn((16, 16))
        y = x.sum(1, keepdim=True)
        y_hat = f(x)
        loss = nn.functional.mse_loss(y_hat, y)
        f.reinforce(loss)
        losses.append(float(loss.detach()))
    return losses


def saved_and_loaded(preset: Any, folder: Any) -> Any:
    """``preset`` saved to ``folder / "preset.pt"`` and loaded back: of its type, with its
    hyperparameters."""
    from looprl.presets import load_preset

    path = folder / "preset.pt"
    preset.save(str(path))
    loaded = load_preset(str(path))
    assert type(loaded) is type(preset) and loaded.hyperparameters == preset.hyperparameters
    return loaded


def check_pendulum_round_trip(preset: Any, experiment: Any, path: str,
                              replay: Callable[[Any], list[float]]) -> None:
    """``preset`` (trained on Pendulum-v1 by ``experiment``) saved to ``path`` and loaded acts
    as it does (five observations and one ``State``), and ``experiment.test(episodes=2)`` is
    ``replay`` of the loaded test agent (its returns in fresh environments)."""
    import pytest

    from looprl.core import State, StateArray
    from looprl.presets import load_preset

    preset.save(path)
    loaded = load_preset(path, device="cpu")
    obs = torch.randn(5, 3, generator=torch.Generator().manual_seed(0))
    states = StateArray({"observation": obs}, (5,))
    expected = preset.test_agent().act(states)
    assert expected.shape == (5, 1) and (expected.abs() <= 2).all()
    assert torch.allclose(loaded.test_agent().act(states), expected)
    assert loaded.test_agent().act(State(obs[0])).shape == (1,)
    replayed = replay(loaded.test_agent())
    # (the experiment sums the env's float64 rewards, the replay the states' float32 ones)
    assert experiment.test(episodes=2) == pytest.approx(replayed, rel=1e-6)


class Recorder(MetaComponent):
    """Records ``(tag, hook, keys of the metrics dictionary)`` at every hook."""

    def __init__(self, tag: str, log: list):
        super().__init__()
        self.tag, self.log = tag, log
        for hook in HOOKS:
            self.methods(hook).append(self._recorder(hook))

    def _recorder(self, hook: str):
        def record(metrics: dict[str, Any]) -> None:
            self.log.append((self.tag, hook, dict(metrics)))

        return record


def kill_worker_when(worker: str, counter: str, at: int) -> tuple[Any, list[int]]:
    """A ``DistributedRun`` callback that kills ``worker`` once (Ray restarts it) when the
    run's ``counter`` (``"frames"`` or ``"train_steps"``) reaches ``at``, and the list it
    records that count in."""
    killed: list[int] = []

    def kill(run: Any) -> None:
        import ray

        if not killed and getattr(run.result, counter) >= at:
            killed.append(getattr(run.result, counter))
            ray.kill(run.workers[worker], no_restart=False)

    return kill, killed



def fail_allocations(monkeypatch: Any, name: str, rows: int, module: Any = torch) -> None:
    """``torch.<name>`` (``"zeros"``, ``"empty"``; ``module=np``: NumPy's) fails as torch's
    (NumPy's) CPU allocator does for storage of ``rows`` leading rows; other calls allocate as
    before."""
    allocate = getattr(module, name)

    def failing(*shape: Any, **kwargs: Any) -> Any:
        if shape[0] == rows and module is np:
            raise MemoryError(f"Unable to allocate {rows} rows for an array")
        if isinstance(shape[0], tuple) and shape[0][0] == rows:
            raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate")
        return allocate(*shape, **kwargs)

    monkeypatch.setattr(module, name, failing)


def evaluations_until(experiment: Any, frames: int, eval_every: int, bar: float,
                      evaluate: Callable[[], float] | None = None) -> list[float]:
    """The mean returns of 10 test episodes (or what ``evaluate()`` returns) every ``eval_every``
    frames of ``experiment`` up to ``frames``, until one reaches ``bar``; the experiment is
    closed."""
    evaluations: list[float] = []
    for target in range(eval_every, frames + 1, eval_every):
        experiment.train(frames=target)
        evaluations.append(sum(experiment.test(episodes=10)) / 10 if evaluate is None
                           else evaluate())
        if evaluations[-1] >= bar:
            break
    experiment.close()
    return evaluations


def leaves_global_random_numbers(call: Callable[[], Any]) -> Any:
    """``call()``'s result, asserting that Python's, NumPy's and torch's global generators go on
    after it as if it had drawn none (the caller's sweep draws new values after a seeded run)."""
    import random

    def draws() -> tuple[float, float, float]:
        return random.random(), float(np.random.rand()), float(torch.rand(()))

    random.seed(7), np.random.seed(7), torch.manual_seed(7)
    expected = draws()
    random.seed(7), np.random.seed(7), torch.manual_seed(7)
    result = call()
    assert draws() == expected
    return result
