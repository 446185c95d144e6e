"""ALL's ``train``: the arguments of its train scripts, trained as ``looprl train`` trains."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from looprl import cli
from looprl.core.suggest import did_you_mean
from looprl.presets.catalog import available_agents

DEVICE_HELP = "e.g. cpu, cuda, cuda:0 (default: cuda if there is one, else cpu)"
Main = Callable[..., int]


def entry(parser: cli.ArgumentParser, command: Callable[[argparse.Namespace], int]) -> Main:
    """A console script's ``main(argv=None)``: ``command`` on ``parser``'s arguments, run as
    ``cli.main`` and ``cli.guarded`` run the ``looprl`` commands (errors: one line)."""
    def run(argv: list[str]) -> int:
        return cli.guarded(lambda: command(parser.parse_args(argv)), parser.prog)

    return lambda argv=None: cli.main(argv, run, parser.prog)


def train_args(args: argparse.Namespace, agent: str, hparams: list[str]) -> argparse.Namespace:
    """``looprl train AGENT ENV``'s arguments (its defaults) with ALL's parsed ``args``
    (``train_parser``'s, ``logdir``) and ALL's 100 test episodes."""
    train = cli.build_parser().parse_args(["train", agent, args.env])
    vars(train).update(hparams=hparams, test_episodes=100, frames=args.frames,
                       device=args.device, render=args.render, save_freq=args.save_freq,
                       logdir=args.logdir)
    return train


def family_agent(family: str, name: str) -> str:
    """``family.name``, or a one-line ``ValueError`` naming ``family``'s presets."""
    names = [key.partition(".")[2] for key in available_agents() if key.startswith(f"{family}.")]
    if name not in names:
        raise ValueError(f"Unknown agent {name!r}.{did_you_mean(name, names)} The {family} "
                         f"presets: {', '.join(sorted(names))}")
    return f"{family}.{name}"


def train_parser(prog: str, default_frames: float) -> cli.ArgumentParser:
    """A parser with the options ALL's train scripts share."""
    parser = cli.ArgumentParser(prog=prog, description=f"{prog}: ALL's all-{prog[7:]}")
    parser.add_argument("--device", default=None, help=DEVICE_HELP)
    parser.add_argument("--frames", type=cli.number(1), default=default_frames)
    parser.add_argument("--render", action="store_true", default=False)
    parser.add_argument("--save_freq", type=cli.number(1), default=100,
                        help="how often to save the model, in episodes")
    return parser


def script(prog: str, family: str, default_frames: float, example: str) -> Main:
    """ALL's ``train(presets, ...)``: ``prog ENV AGENT [options]`` trains ``family.AGENT``."""
    parse = train_parser(prog, default_frames)
    parse.add_argument("env", help=f"the environment, e.g. {example}")
    parse.add_argument("agent", help="the preset, e.g. dqn (looprl list)")
    parse.add_argument("--logdir", default="runs")
    parse.add_argument("--hyperparameters", default=[], nargs="*", metavar="KEY=VALUE")
    return entry(parse, lambda args: cli.cmd_train(train_args(
        args, family_agent(family, args.agent), args.hyperparameters)))
