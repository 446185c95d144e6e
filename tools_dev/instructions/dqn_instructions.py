"""CPU instructions per step of the CartPole DQN preset against the bare-PyTorch floor.

The twin of ``ppo_instructions.py`` (same callgrind helper, ``callgrind_totals``), for the DQN
preset on the collector with one env copy, after its replay warm-up:

* acting: one env step through ``ParallelEnvExperiment`` (the collector, ``DQNPolicy.rollout``
  on the actor's stream, the rows, the segments into the replay) with the learner's steps
  switched off, against the floor's (raw Gymnasium step, one no-grad forward, ``argmax``);
* a gradient step: one ``Learner`` step (sample, gather, ``DQNTrainer.step``: the targets,
  the Huber loss, backward, clipping, Adam, the target network) over ``--grad-steps``, against
  the floor's (target forward, forward, loss, backward, fused Adam) on the same networks and
  batch (``benchmarks/speed_cartpole.py``'s ``discrete_floor``).

``--whole`` counts the preset's ``experiment.train`` from frame 1,000 to 1,512 instead (512 env
steps and two update phases, 256 gradient steps), and nothing of the current code's internals:
run it with another revision's ``src`` first on ``PYTHONPATH`` to compare revisions
(``238f1cf``, the act loop). It takes about 10 CPU minutes.

    python tools_dev/instructions/dqn_instructions.py [--steps 256] [--grad-steps 32] [--whole]
"""

from __future__ import annotations

import ctypes
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ppo_instructions import arguments, callgrind_totals, counted  # noqa: E402

PARTS = ("looprl acting", "floor acting", "looprl gradient", "floor gradient")
WARM = 1000  # frames before counting: the replay's start (its first update phase: 1,024)
WHOLE = 512  # frames counted by --whole: two update phases of the preset


def experiment(logdir: str):
    """The preset's experiment on CartPole-v1, seeded, ``WARM`` frames in (no gradient step
    yet)."""
    import torch

    from looprl.environments import GymEnvironment
    from looprl.experiments import make_experiment
    from looprl.experiments.experiment import seed_everything
    from looprl.presets.classic_control import dqn

    torch.set_num_threads(1)
    seed_everything(0)
    env = GymEnvironment("CartPole-v1")
    preset = dqn.env(env).device("cpu").build()
    run = make_experiment(preset, env, train_steps=10**9, logdir=logdir, quiet=True,
                          verbose=False, seed=0)
    run.train(frames=WARM)
    return run


def measure_whole(counter: ctypes.CDLL) -> None:
    """Count ``WHOLE`` frames of ``experiment.train`` (any revision's)."""
    with tempfile.TemporaryDirectory() as logdir:
        run = experiment(logdir)
        counter.start()
        run.train(frames=WARM + WHOLE)
        counter.stop()
        run.close()  # (its files written before the folder goes)


def measure(counter: ctypes.CDLL, steps: int, grad_steps: int) -> None:
    """The four ``PARTS``, each between ``counter.start`` and ``stop``."""
    from looprl.agents.learner import Learner

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from speed_cartpole import discrete_floor, flushed_denormals

    with tempfile.TemporaryDirectory() as logdir:
        run = experiment(logdir)
        learner = run.agent.unwrapped.learner
        train, Learner.train = Learner.train, lambda self: None  # acting only
        type(run)._log_episode = lambda self, episode: None
        counted(counter, lambda n: run.train(frames=WARM + n), 64, 64 + steps)
        Learner.train = train

        floor_act, floor_update, _, _ = discrete_floor("dqn")
        counted(counter, floor_act, 64, steps)

        learner.owed = 4
        learner.train()
        learner.owed = grad_steps
        counter.start()
        learner.train()
        counter.stop()

        with flushed_denormals():
            counted(counter, floor_update, 4, grad_steps)
        run.close()


def main() -> None:
    parser = arguments(__doc__, 256, WHOLE)
    parser.add_argument("--grad-steps", type=int, default=32, help="gradient steps counted")
    args = parser.parse_args()
    if args.measure:
        counter = ctypes.CDLL(args.measure)
        if args.whole:
            return measure_whole(counter)
        return measure(counter, args.steps, args.grad_steps)
    if args.whole:
        total = callgrind_totals(__file__, ["--whole"], 1)[0]
        print(f"experiment.train: {total / WHOLE:,.0f} instructions per env step "
              f"({WHOLE} steps, {WHOLE // 2} gradient steps)")
        return
    totals = callgrind_totals(__file__, ["--steps", str(args.steps), "--grad-steps",
                                         str(args.grad_steps)], len(PARTS))
    per = [totals[0] / args.steps, totals[1] / args.steps, totals[2] / args.grad_steps,
           totals[3] / args.grad_steps]
    print("| per | looprl | floor | floor / looprl |\n|---|---|---|---|")
    print(f"| acting step (1 copy) | {per[0]:,.0f} | {per[1]:,.0f} | {per[1] / per[0]:.2f} |")
    print(f"| gradient step | {per[2]:,.0f} | {per[3]:,.0f} | {per[3] / per[2]:.2f} |")
    floor = 50_000 * per[1] + 24_448 * per[3]  # the benchmark's 50,000 steps and the
    ours = 50_000 * per[0] + 24_448 * per[2]  # 191 update phases of 128 gradient steps
    print(f"| a 50,000-step run | {ours / 1e9:,.1f} G | {floor / 1e9:,.1f} G | "
          f"{floor / ours:.2f} |")


if __name__ == "__main__":
    main()
