"""``looprl-plot [--logdir DIR] [--timesteps N]``: ALL's ``all-plot``, as ``looprl plot``."""

import argparse

from looprl import cli
from looprl.scripts.train import entry

parser = cli.ArgumentParser(prog="looprl-plot", description="looprl-plot: ALL's all-plot")
parser.add_argument("--logdir", default="runs", help="the runs to plot")
parser.add_argument("--timesteps", type=cli.number(1), default=-1,
                    help="the final point is fixed to this x-value")
main = entry(parser, lambda args: cli.cmd_plot(argparse.Namespace(runs_dir=args.logdir,
                                                                  timesteps=args.timesteps)))

if __name__ == "__main__":
    raise SystemExit(main())
