"""ALL's watch scripts: ``ENV FILENAME [--device D] [--fps F]``, played as ``looprl watch``
plays (in a window, else into a GIF beside the preset)."""

from __future__ import annotations

import argparse
import sys

from looprl import cli
from looprl.scripts.train import DEVICE_HELP, Main, entry


def script(prog: str, fps: float, example: str, reload: bool = False) -> Main:
    """ALL's watch script ``prog`` (``reload``: with ALL's ``--reload``) on ``looprl watch``'s
    ``watch_saved``."""
    parser = cli.ArgumentParser(prog=prog, description=f"{prog}: ALL's all-{prog[7:]}")
    parser.add_argument("env", help=f"the environment, e.g. {example}")
    parser.add_argument("filename", help="the saved preset.pt (or its run directory)")
    parser.add_argument("--device", default=None, help=DEVICE_HELP)
    parser.add_argument("--fps", type=cli.number(0, float, above=True), default=fps)
    if reload:
        parser.add_argument("--reload", action="store_true", default=False,
                            help="reload the model from disk after every episode")
    parser.add_argument("--episodes", type=cli.number(1), default=None, help="looprl's: stop "
                        "after N episodes (default: forever in a window, as ALL; 1 into a GIF)")

    def run(given: argparse.Namespace) -> int:
        args = cli.build_parser().parse_args(["watch", given.filename])  # (its defaults)
        vars(args).update({k: v for k, v in vars(given).items() if k != "filename"})
        rounds = 1
        if getattr(given, "reload", False):  # (each round loads the file anew)
            rounds, args.episodes = given.episodes or sys.maxsize, 1
        for _ in range(rounds):  # (--reload: forever in a window; one round into a GIF)
            if cli.watch_saved(args) is not None and not given.episodes:
                break
        return 0

    return entry(parser, run)
