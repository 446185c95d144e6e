"""Atari Rainbow's evaluation: the noise-free network, against the noisy one it used to play.

Rainbow explores with noisy layers; its evaluation agent must act with their mean weights
(eval mode), with the preset's small ``test_exploration`` epsilon (0.001) on top. This
benchmark trains Rainbow on Breakout for a CPU-sized budget (default 20,000 agent steps =
80,000 frames, replay starting at 1,600 steps instead of 80,000, target copied every 2,000
updates; everything else the preset's defaults), then, with the same trained weights:

* acts 10 times on the same 512 states drawn from the replay buffer and counts, on average,
  the states whose action changed from one call to the next, and those whose action differs
  from the greedy action of the mean network (only epsilon's random rows may: about 0.4
  expected);
* plays 10 evaluation episodes each with the evaluation agent, with the noisy network it
  used to play before (greedy on noisy samples, same epsilon), and with random actions.

This is not a learning benchmark (published Rainbow scores need 200M frames); the
evaluation columns show what each way of evaluating reports for the same weights. The
table is printed and written to ``benchmarks/results/atari_rainbow_eval.md``.

    python benchmarks/atari_rainbow_eval.py [--steps 20000] [--episodes 10] [--threads 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
import harness  # noqa: E402
from harness import format_table  # noqa: E402
from looprl.agents.actor import Actor  # noqa: E402
from looprl.core import StateArray  # noqa: E402
from looprl.environments.atari import AtariEnvironment  # noqa: E402
from looprl.experiments import make_experiment  # noqa: E402
from looprl.experiments.experiment import seed_everything  # noqa: E402
from looprl.presets.atari import rainbow  # noqa: E402

GAME = "Breakout"
RESULTS = Path(__file__).parent / "results" / "atari_rainbow_eval.md"
OVERRIDES = {"replay_start_size": 1_600, "target_update_frequency": 2_000,
             "replay_buffer_size": 100_000}
MAX_EPISODE_STEPS = 4_500  # 18,000 frames: 5 minutes of play
CALLS = 10  # calls on the same states (a noisy network draws one noise sample per call)


def train(steps: int, seed: int, logdir: str = "/tmp/looprl-rainbow-eval"):
    """A Rainbow preset trained for ``steps`` agent steps, its replay buffer and wall seconds."""
    env = AtariEnvironment(GAME, seed=seed)
    seed_everything(seed)
    preset = rainbow.env(env).device("cpu").hyperparameters(**OVERRIDES).build()
    experiment = make_experiment(
        preset, env, train_steps=steps, logdir=logdir, quiet=True,
        verbose=False, seed=seed,
    )
    start = time.perf_counter()
    experiment.train(frames=steps)
    seconds = time.perf_counter() - start
    buffer = experiment.agent.unwrapped.replay_buffer  # (inside the DeepMind bodies)
    return preset, buffer, seconds


def replay_states(buffer, n: int, seed: int) -> StateArray:
    """``n`` stacked-frame observations sampled from the replay buffer (row 0 of its n-step
    windows)."""
    buffer.seed(seed)
    return StateArray({"observation": buffer.sample_batch(n).obs[0]}, (n,))


def noisy_agent(preset):
    """The evaluation agent as it was before the fix: greedy on a noisy sample (an actor in
    training mode, whose network draws its noise at every call), at the same epsilon."""
    policy = preset.test_agent().policy
    return Actor(type(policy)(policy.approximation, policy.num_actions,
                              epsilon=policy.evaluation_epsilon))


class RandomAgent:
    def __init__(self, n: int, seed: int):
        self.n, self.rng = n, np.random.default_rng(seed)

    def act(self, state) -> int:
        return int(self.rng.integers(self.n))


def play(agent, episodes: int, seed: int) -> list[float]:
    """Game scores (unclipped, all lives) of ``episodes`` episodes."""
    env = AtariEnvironment(GAME, seed=seed, max_episode_frames=4 * MAX_EPISODE_STEPS)
    scores = []
    for _ in range(episodes):
        state, score = env.reset(), 0.0
        while not state.done:
            state = env.step(agent.act(state))
            score += float(state.reward)
        scores.append(score)
    env.close()
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000, help="agent steps of training")
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    preset, buffer, seconds = train(args.steps, args.seed)
    print(f"trained {args.steps:,} steps in {seconds:.0f} s", flush=True)

    states = replay_states(buffer, 512, args.seed)
    agents = {"evaluation agent (mean network, epsilon 0.001)": preset.test_agent(),
              "noisy network (before the fix), epsilon 0.001": noisy_agent(preset)}
    mean = agents["evaluation agent (mean network, epsilon 0.001)"].policy.greedy.eval(states)
    rows = []
    for name, agent in agents.items():
        calls = [agent.act(states) for _ in range(CALLS)]
        between = np.mean([(a != b).sum().item() for a, b in zip(calls[:-1], calls[1:])])
        from_mean = np.mean([(a != mean).sum().item() for a in calls])
        scores = play(agent, args.episodes, args.seed + 1)
        rows.append([name, f"{between:.1f}", f"{from_mean:.1f}",
                     f"{np.mean(scores):.1f} +/- {np.std(scores):.1f}"])
        print(rows[-1], flush=True)
    scores = play(RandomAgent(preset.num_actions, args.seed), args.episodes, args.seed + 1)
    rows.append(["random actions", "-", "-", f"{np.mean(scores):.1f} +/- {np.std(scores):.1f}"])
    header = ["agent", "actions changed from one call to the next (of 512)",
              "actions differing from the mean network's greedy action (of 512)",
              f"score over {args.episodes} episodes"]
    harness.write_report(RESULTS, f"Atari Rainbow evaluation on {GAME}", [
        f"{harness.machine(args.threads)}. Rainbow preset defaults except "
        + ", ".join(f"{k}={v:,}" for k, v in OVERRIDES.items())
        + f"; trained {args.steps:,} agent steps ({4 * args.steps:,} frames, "
        f"{seconds:.0f} s), seed {args.seed}. States: 512 from the replay buffer, {CALLS} calls "
        "each (means). Scores: "
        f"game score over all lives, episodes cut at {MAX_EPISODE_STEPS:,} steps.",
    ], format_table(rows, header))


if __name__ == "__main__":
    main()
