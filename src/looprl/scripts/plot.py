"""``looprl-plot [--logdir DIR] [--timesteps N]``: ALL's ``all-plot``, as ``looprl plot``."""

from looprl import cli


def main(argv: list[str] | None = None) -> int:
    parser = cli.ArgumentParser(prog="looprl-plot", description="looprl-plot: ALL's all-plot")
    parser.add_argument("--logdir", default="runs", help="the runs to plot")
    parser.add_argument("--timesteps", type=cli.number(1), default=-1,
                        help="the final point is fixed to this x-value")

    def run(argv: list[str]) -> int:
        args = parser.parse_args(argv)
        args.runs_dir = args.logdir
        return cli.guarded(lambda: cli.cmd_plot(args), parser.prog)

    return cli.main(argv, run, parser.prog)


if __name__ == "__main__":
    raise SystemExit(main())
