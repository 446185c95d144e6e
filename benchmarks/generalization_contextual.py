"""Generalization benchmark: uniform instance sampling vs PLR vs SPaCE on contextual CartPole.

CartPole-v1 with two physics parameters varied (``FEATURES``: the pole's half length and the
cart's mass; long poles are the hard instances). The training set is
``--train-size`` contexts drawn by ``sample_contexts`` with seed 0, the held-out test set
``--test-size`` contexts drawn from the same ranges with seed 1 (in-distribution held-out
instances: disjoint, since the draws are continuous, and checked). The main setting shows the
context to the agent (``hide_context=False``, appended to the observation): SPaCE orders
instances by the value of their start state, which depends on the context only when the agent
sees it. The hidden-context variant runs too (``--observe`` picks); there every instance has
the same start values, so SPaCE adds instances in the training set's order.

Every method trains the classic-control PPO preset with its default hyperparameters for the
same budget (``--steps`` env steps) and seeds; the methods differ only in who picks the
training instance of each episode:

- ``uniform``: the contextual environment's own uniform random choice;
- ``plr``: ``PLR(...)`` (the paper's defaults: value-L1 scores, replay probability 0.5,
  beta 0.1, rho 0.1; discount and GAE lambda the agent's);
- ``space``: ``SPaCE(...)`` (``SPACE_ARGS``: starts from the 4 instances of highest start
  value, adds 4 whenever the mean start value of the current set changes by at most ``eta``
  of itself).

After training, the runner's built-in evaluation (``OnlineRunner(..., test_env=held-out
set)``, as ``looprl run ... context.train=32 context.test=64`` does) plays ``--episodes``
episodes per test instance on the training set and on the test set (instances drawn at
random), and then ``--episodes`` episodes on each test instance alone (for the plot).
Writes a Markdown table (method x seed: mean return over the training instances, over the
test instances, and the gap) and a plot (test return per method with seed dots; test return
against pole length) to ``benchmarks/results/``. This is a report: there is no bar to reach.

    python benchmarks/generalization_contextual.py [--seeds 0 1 2] [--steps 150000]
        [--methods uniform plr space] [--observe visible hidden]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from harness import format_table  # noqa: E402
from looprl.environments.contextual import ContextualEnvironment, sample_contexts  # noqa: E402
from looprl.meta import PLR, MetaComponent, SPaCE  # noqa: E402
from looprl.presets.classic_control import ppo  # noqa: E402
from looprl.runners import OnlineRunner  # noqa: E402

ENV = "CartPole-v1"
FEATURES = {"length": (0.05, 2.0), "masscart": (0.5, 5.0)}
TRAIN_SEED, TEST_SEED = 0, 1
SPACE_ARGS = {"initial_size": 4, "increment": 4, "eta": 0.1, "check_every": 20}
METHODS = ("uniform", "plr", "space")


class SetSize(MetaComponent):
    """Notes the env step at which SPaCE's training set first reached each size."""

    def __init__(self):
        super().__init__()
        self.reached: dict[int, int] = {}
        self.post_episode_methods.append(self.note)

    def note(self, metrics: dict[str, Any]) -> dict[str, Any]:
        self.reached.setdefault(metrics["log/space/instance_set_size"], metrics["step"])
        return metrics


def components(method: str, seed: int) -> list[Any]:
    """The meta components that pick the training instances of ``method``."""
    if method == "plr":  # scored with the agent's own discount and GAE lambda
        hp = ppo.default_hyperparameters
        return [PLR(gamma=hp["discount_factor"], lam=hp["lam"], seed=seed)]
    if method == "space":
        return [SPaCE(**SPACE_ARGS, measure="value", seed=seed), SetSize()]
    return []


def per_instance(runner: OnlineRunner, contexts: dict, hidden: bool, episodes: int) -> dict:
    """Instance id -> mean return of the runner's test agent over ``episodes`` episodes on
    that instance alone (``Experiment.test`` in a one-instance environment)."""
    returns = {}
    for i, context in contexts.items():
        env = ContextualEnvironment(ENV, {i: context}, hide_context=hidden)
        returns[i] = float(np.mean(runner.experiment.test(episodes, env=env)))
        env.close()
    return returns


def curriculum(runner: OnlineRunner) -> str:
    """What the trained agent's instance-choosing component did, in a few words (the runner's
    copies of the components it was given)."""
    hub = runner.experiment.hub
    parts = {type(part): part for part in (hub.components if hub is not None else ())}
    part = parts.get(PLR) or parts.get(SPaCE)
    if part is None:
        return "-"
    if isinstance(part, PLR):
        replays = np.mean([replayed for *_, replayed in part.choices]) if part.choices else 0
        return f"{int(part.seen.sum())} levels seen, {replays:.0%} of choices replays"
    full = parts[SetSize].reached.get(len(part.contexts))
    when = f"full at step {full:,}" if full is not None else "never full"
    return f"set size {part.size} of {len(part.contexts)} ({when})"


def run(method: str, seed: int, hidden: bool, train: dict, test: dict, args: Any) -> dict:
    """Train one agent with ``method``; the runner's built-in evaluation plays the training
    and the held-out set (``test_env``), then each test instance alone (for the plot)."""
    start = time.perf_counter()
    env = ContextualEnvironment(ENV, train, hide_context=hidden, seed=seed)
    held_out = ContextualEnvironment(ENV, test, hide_context=hidden, seed=seed)
    parts = components(method, seed)
    runner = OnlineRunner(ppo.device("cpu"), env, num_steps=args.steps, seed=seed, meta=parts,
                          quiet=True, eval_episodes=args.episodes * len(test),
                          test_env=held_out)
    _, evaluation = runner.run()
    seconds = time.perf_counter() - start
    instances = per_instance(runner, test, hidden, args.episodes)
    chosen = curriculum(runner)
    runner.close()
    return {"method": method, "seed": seed, "observe": "hidden" if hidden else "visible",
            "train": evaluation["train_set"]["mean_eval_reward"],
            "test": evaluation["test_set"]["mean_eval_reward"], "per_instance": instances,
            "seconds": seconds, "curriculum": chosen}


def table(runs: list[dict]) -> str:
    """Method x seed rows, then one mean ± std (over seeds) row per method."""
    rows = []
    for observe in dict.fromkeys(r["observe"] for r in runs):
        for method in dict.fromkeys(r["method"] for r in runs):
            mine = [r for r in runs if (r["method"], r["observe"]) == (method, observe)]
            means = np.array([[r[k] for k in ("train", "test")] for r in mine])
            for r, (tr, te) in zip(mine, means):
                rows.append([method, observe, r["seed"], f"{tr:.1f}", f"{te:.1f}",
                             f"{tr - te:+.1f}", f"{r['seconds']:.0f}", r["curriculum"]])
            mean, std = means.mean(0), means.std(0)
            gap = means[:, 0] - means[:, 1]
            rows.append([f"**{method}**", observe, "mean ± std", f"{mean[0]:.1f} ± {std[0]:.1f}",
                         f"**{mean[1]:.1f} ± {std[1]:.1f}**", f"{gap.mean():+.1f}", "", ""])
    header = ["method", "context", "seed", "train-instance return", "test-instance return",
              "gap (train - test)", "train s", "curriculum at the end"]
    return format_table(rows, header)


def plot(runs: list[dict], test: dict, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(13, 4.8))
    FigureCanvasAgg(figure)
    bars, scatter = figure.add_subplot(1, 2, 1), figure.add_subplot(1, 2, 2)
    groups = list(dict.fromkeys((r["method"], r["observe"]) for r in runs))
    colors = {m: f"C{i}" for i, m in enumerate(dict.fromkeys(m for m, _ in groups))}
    lengths = np.array([test[i]["length"] for i in test])
    edges = np.linspace(*FEATURES["length"], 7)
    for x, (method, observe) in enumerate(groups):
        mine = [r for r in runs if (r["method"], r["observe"]) == (method, observe)]
        for k, (key, shade) in enumerate((("train", 0.35), ("test", 0.9))):
            values = [r[key] for r in mine]
            position = x + (k - 0.5) * 0.38
            bars.bar(position, np.mean(values), 0.36, color=colors[method], alpha=shade,
                     label=key if x == 0 else None)
            bars.scatter([position] * len(values), values, color="black", s=12, zorder=3)
        instances = np.mean([[r["per_instance"][i] for i in test] for r in mine], axis=0)
        which = np.digitize(lengths, edges[1:-1])
        binned = [instances[which == b].mean() for b in range(len(edges) - 1)]
        label = method if len(groups) == len(colors) else f"{method} ({observe})"
        style = "-" if observe == "visible" else "--"
        scatter.scatter(lengths, instances, color=colors[method], s=10, alpha=0.5)
        scatter.plot((edges[1:] + edges[:-1]) / 2, binned, color=colors[method],
                     linestyle=style, marker="o", label=label)
    bars.set_xticks(range(len(groups)), [f"{m}\n{o}" for m, o in groups])
    bars.set(ylabel="mean return over instances", ylim=(0, 520), xlabel="method / context",
             title="Train (light) and held-out test (dark) instances; dots: seeds")
    bars.legend(loc="upper right", fontsize=9)
    scatter.set(xlabel="pole half length (test instances)", ylabel="return (mean over seeds)",
                ylim=(0, 520), title="Test return per instance (dots) and per length bin (lines)")
    scatter.legend(fontsize=9)
    for axes in (bars, scatter):
        axes.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=150_000, help="env steps per run")
    parser.add_argument("--observe", nargs="+", default=["visible", "hidden"],
                        choices=["visible", "hidden"], help="the context in the observation")
    parser.add_argument("--train-size", type=int, default=32)
    parser.add_argument("--test-size", type=int, default=64)
    parser.add_argument("--episodes", type=int, default=5, help="evaluation episodes/instance")
    parser.add_argument("--results", default=str(Path(__file__).parent / "results"))
    parser.add_argument("--output", default="generalization_contextual")
    args = parser.parse_args()
    torch.set_num_threads(1)
    start = time.perf_counter()
    train = sample_contexts(ENV, args.train_size, FEATURES, seed=TRAIN_SEED)
    test = sample_contexts(ENV, args.test_size, FEATURES, seed=TEST_SEED)
    assert not {tuple(c.values()) for c in train.values()} & {
        tuple(c.values()) for c in test.values()}, "the test set must be held out"
    runs = []
    for observe in args.observe:
        for seed in args.seeds:
            for method in args.methods:
                runs.append(run(method, seed, observe == "hidden", train, test, args))
                r = runs[-1]
                print(f"{method} {observe} seed {seed}: train {r['train']:.1f}, test "
                      f"{r['test']:.1f} ({r['seconds']:.0f} s; "
                      f"{r['curriculum']})", flush=True)
    runs.sort(key=lambda r: (args.observe.index(r["observe"]), METHODS.index(r["method"]),
                             r["seed"]))
    report(runs, test, args, (time.perf_counter() - start) / 60, os.getloadavg()[2])


def report(runs: list[dict], test: dict, args: Any, minutes: float, load: float) -> None:
    """Write the runs (JSON), the plot and the Markdown table to ``args.results``."""
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    (results / f"{args.output}.json").write_text(json.dumps(runs))
    plot(runs, test, results / f"{args.output}.png")
    ranges = ", ".join(f"{name} in [{low}, {high}]" for name, (low, high) in FEATURES.items())
    text = table(runs)
    command = "python benchmarks/generalization_contextual.py " + " ".join(sys.argv[1:])
    (results / f"{args.output}.md").write_text(
        f"# Generalization on contextual CartPole: uniform vs PLR vs SPaCE\n\n"
        f"`{command.strip()}`: {minutes:.1f} min wall time on one CPU thread (torch "
        f"{torch.__version__}); the machine's 15-minute load average at the end was "
        f"{load:.1f} on {os.cpu_count()} cores (the wall time and `train s` grow with it).\n\n"
        f"CartPole-v1 with {ranges} (other physics at Gymnasium's defaults). Training set: "
        f"{args.train_size} contexts (`sample_contexts`, seed {TRAIN_SEED}); held-out test set:"
        f" {args.test_size} contexts from the same ranges (seed {TEST_SEED}). PPO "
        f"(classic-control preset defaults), {args.steps:,} env steps per run, the same for "
        f"every method. PLR: the paper's defaults (value-L1 scores, replay probability 0.5, "
        f"beta 0.1, rho 0.1) with the agent's discount and lambda; SPaCE: {SPACE_ARGS}, "
        f"value measure. Context `visible`: appended to the observation; `hidden`: not (there"
        f" all instances have the same start values, so SPaCE grows its set in the training "
        f"set's order). Returns: the deterministic test agent, {args.episodes} episodes per "
        f"instance of the test set, on each set (the runner's train-set / test-set "
        f"evaluation; 500 is the most).\n\n"
        f"{text}\n\n"
        f"![generalization]({args.output}.png)\n"
    )
    print(f"\n{text}\n\nwritten to {results}/{args.output}.md ({minutes:.1f} min)")

if __name__ == "__main__":
    main()
