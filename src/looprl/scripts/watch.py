"""ALL's watch scripts: ``ENV FILENAME [--device D] [--fps F]``, played as ``looprl watch``
plays (in a window, else into a GIF beside the preset)."""

from __future__ import annotations

import sys

from looprl import cli
from looprl.scripts.train import DEVICE_HELP, Main


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

    def run(argv: list[str]) -> int:
        given = parser.parse_args(argv)  # (on looprl watch's defaults)
        args = cli.build_parser().parse_args(["watch", given.filename])
        vars(args).update({k: v for k, v in vars(given).items() if k != "filename"})
        gif_written = False

        def play() -> int:
            nonlocal gif_written
            gif_written = cli.watch_saved(args) is not None
            return 0

        if not getattr(args, "reload", False):
            return cli.guarded(play, prog)
        rounds, args.episodes = args.episodes or sys.maxsize, 1  # (each loads the file anew)
        for _ in range(rounds):  # (forever in a window; one round into a GIF)
            if code := cli.guarded(play, prog):
                return code
            if gif_written and not given.episodes:
                break
        return 0

    return lambda argv=None: cli.main(argv, run, prog)
