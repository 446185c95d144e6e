"""Bodies: agent-side preprocessing, as in the autonomous-learning-library: the environment
reports true scores while the agent learns from, e.g., clipped rewards."""

from __future__ import annotations

from typing import Any

import torch

from looprl.core import Agent, AgentWrapper, ParallelAgent, State
from looprl.core.suggest import check_count, check_positive

__all__ = [
    "Body", "EpisodicLife", "FrameStack", "ObservationNormalization", "RewardClipping",
    "RunningMeanStd", "TimeFeature", "body_states", "deepmind_atari_body", "deepmind_atari_states",
]


class Body(AgentWrapper, Agent, ParallelAgent):
    """Wraps an agent: ``act`` is ``process_action(agent.act(process_state(state)))``."""

    def act(self, state: Any) -> Any:
        return self.process_action(self.agent.act(self.process_state(state)))

    def eval(self, state: Any) -> Any:
        """ALL's ``eval``: the wrapped agent's evaluation action, through the body."""
        return self.process_action(self.agent.eval(self.process_state(state)))

    def process_state(self, state: Any) -> Any:
        """The state the wrapped agent sees."""
        return state

    def process_action(self, action: Any) -> Any:
        """The action sent to the environment."""
        return action

    def __getattr__(self, name: str) -> Any:
        if name == "agent":  # (else the wrapped agent's attributes)
            raise AttributeError(name)
        return getattr(self.agent, name)


class FrameStack(Body):
    """The last ``size`` observations concatenated along their first axis after the batch ones, as
    ALL's ``FrameStack``; a new episode starts with ``size`` copies of its first observation."""

    def __init__(self, agent: Any, size: int = 4):
        super().__init__(agent)
        check_count(size=size)
        self.size = int(size)
        self._frames: torch.Tensor | None = None
        self._done: torch.Tensor | None = None

    def process_state(self, state: State) -> State:
        observation = state.observation
        axis = len(state.shape)  # the batch dimensions
        new = observation.unsqueeze(axis)
        stacked = (*observation.shape[:axis], self.size, *observation.shape[axis:])
        if self._frames is None or self._frames.shape != stacked:  # (a new batch or shape)
            frames = new.expand(*stacked)
        else:
            frames = torch.cat((self._frames.narrow(axis, 1, self.size - 1), new), dim=axis)
            if bool(self._done.any()):  # restart the rows whose previous state was done
                view = self._done.view(*self._done.shape, *([1] * (frames.dim() - axis)))
                frames = torch.where(view, new.expand_as(frames), frames)
        self._frames = frames.contiguous()
        self._done = torch.as_tensor(state.done, device=observation.device).bool()
        if observation.dim() == axis:  # 0-d observations: the stack is the concatenation
            return state.update("observation", self._frames)
        return state.update("observation", self._frames.flatten(axis, axis + 1))


class RewardClipping(Body):
    """Rewards clipped to their sign, ``-1``, ``0`` or ``1`` (Mnih et al., 2015)."""

    def process_state(self, state: State) -> State:
        reward = state.reward
        if isinstance(reward, torch.Tensor):
            return state.update("reward", torch.sign(reward))
        return state.update("reward", float(reward > 0) - float(reward < 0))  # (NumPy scalars too)


class EpisodicLife(Body):
    """A lost life (``state['life_lost']``) is terminal for learning; the game goes on."""

    def process_state(self, state: State) -> State:
        if "life_lost" not in state:
            return state
        lost = state["life_lost"]
        if not isinstance(lost, torch.Tensor) and state.shape:  # (a list of a batch's flags)
            lost = torch.as_tensor(lost, dtype=torch.bool, device=state.done.device)
        if not isinstance(lost, torch.Tensor):  # (a single State's flag)
            return state.update(done=True, mask=0.0) if lost else state
        if not bool(lost.any()):
            return state
        return state.update(done=state.done | lost, mask=state.mask * (~lost).float())


class TimeFeature(Body):
    """Append the time ``t`` to flat observations: ``1 - t / max_steps``, else ``scale * t``."""

    def __init__(self, agent: Any, scale: float = 0.001, max_steps: int | None = None):
        super().__init__(agent)
        check_count(optional=True, max_steps=max_steps)
        check_positive(scale=scale)
        self.scale = scale
        self.max_steps = max_steps
        self._t: torch.Tensor | None = None

    def process_state(self, state: State) -> State:
        observation = state.observation
        if observation.dim() != len(state.shape) + 1:
            raise ValueError(f"TimeFeature appends to flat observations, got observations of "
                             f"shape {tuple(observation.shape[len(state.shape):])}: flatten "
                             "them first, or leave TimeFeature out")
        done = torch.as_tensor(state.done, device=observation.device).bool()
        if self._t is None or self._t.shape != done.shape:
            self._t = torch.zeros(done.shape, device=observation.device)
        t = self._t
        feature = 1.0 - t / self.max_steps if self.max_steps else self.scale * t
        observation = torch.cat((observation.float(), feature.unsqueeze(-1).float()), dim=-1)
        self._t = torch.where(done, torch.zeros_like(t), t + 1)
        return state.update("observation", observation)


class RunningMeanStd:
    """Running mean and variance of batches of ``shape`` observations, from a count ``epsilon``."""

    def __init__(self, shape: tuple[int, ...] | torch.Size, epsilon: float = 1e-4):
        self.mean = torch.zeros(shape, dtype=torch.float64)
        self.var = torch.ones(shape, dtype=torch.float64)
        self.count = epsilon

    def update(self, batch: torch.Tensor) -> None:
        """Fold a batch ``(n, *shape)`` into the statistics."""
        batch = batch.detach().to("cpu", torch.float64)
        n = batch.shape[0]
        mean, var = batch.mean(0), batch.var(0, unbiased=False)
        delta = mean - self.mean
        total = self.count + n
        self.mean = self.mean + delta * n / total
        m2 = self.var * self.count + var * n + delta.square() * self.count * n / total
        self.var = m2 / total
        self.count = total


class ObservationNormalization(Body):
    """``clip((obs - mean) / sqrt(var + epsilon), -clip, clip)`` with the running statistics
    ``stats`` (``None``: made from the first observation), updated unless ``update=False``."""

    def __init__(self, agent: Any, stats: RunningMeanStd | None = None, update: bool = True,
                 clip: float = 10.0, epsilon: float = 1e-8):
        super().__init__(agent)
        check_positive(clip=clip, epsilon=epsilon)
        if stats is not None and not isinstance(stats, RunningMeanStd):
            raise TypeError(f"ObservationNormalization's stats must be a RunningMeanStd (or None:"
                            f" made from the first observation), got {type(stats).__name__}")
        self.stats = stats
        self.update = update
        self.clip = clip
        self.epsilon = epsilon

    def process_state(self, state: State) -> State:
        observation = state.observation
        batch = observation.reshape(-1, *observation.shape[len(state.shape) :])
        if self.stats is None:
            self.stats = RunningMeanStd(batch.shape[1:])
        if batch.shape[1:] != self.stats.mean.shape:
            raise ValueError(f"ObservationNormalization: an observation of shape "
                             f"{tuple(batch.shape[1:])}, but its statistics are of shape "
                             f"{tuple(self.stats.mean.shape)}; one ObservationNormalization (and "
                             "RunningMeanStd) per observation shape")
        if self.update and batch.is_floating_point() and not torch.isfinite(batch).all():
            raise ValueError("ObservationNormalization: the environment's observation holds NaN "
                             "or inf (the running statistics were left as they were); make the "
                             "environment return finite observations, or wrap it to replace them "
                             "(e.g. gymnasium.wrappers.TransformObservation)")
        if self.update:
            self.stats.update(batch)
        mean = self.stats.mean.to(observation.device, torch.float32)
        std = (self.stats.var + self.epsilon).sqrt().to(observation.device, torch.float32)
        normalized = ((observation.float() - mean) / std).clamp(-self.clip, self.clip)
        return state.update("observation", normalized)


def deepmind_atari_body(agent: Any, episodic_life: bool = True, clip_rewards: bool = True) -> Any:
    """The agent-side half of the DeepMind Atari preprocessing."""
    if clip_rewards:
        agent = RewardClipping(agent)
    if episodic_life:
        agent = EpisodicLife(agent)
    return agent


def deepmind_atari_states(episodic_life: bool = True, clip_rewards: bool = True
                          ) -> BodyStates | None:
    """``body_states`` of ``deepmind_atari_body(None, episodic_life, clip_rewards)``."""
    return body_states(deepmind_atari_body(None, episodic_life, clip_rewards))


class BodyStates:
    """A state as the agent inside ``bodies`` sees it: each body's ``process_state`` in turn."""

    def __init__(self, bodies: list[Body]):
        self.bodies = bodies

    def __call__(self, state: Any) -> Any:
        for body in self.bodies:
            state = body.process_state(state)
        return state


def body_states(agent: Any) -> BodyStates | None:
    """``BodyStates`` of the bodies ``agent`` wears (``None``: none); none may change actions."""
    bodies = []
    while isinstance(agent, Body):
        if type(agent).process_action is not Body.process_action:
            raise ValueError(f"{type(agent).__name__} changes the agent's actions "
                             "(process_action); the parallel experiments send the policy's "
                             "actions as they are: change them in an environment wrapper")
        bodies.append(agent)
        agent = agent.agent
    return BodyStates(bodies) if bodies else None
