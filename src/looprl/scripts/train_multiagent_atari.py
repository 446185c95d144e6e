"""``looprl-multiagent-atari ENV AGENT AGENT ...``: ALL's ``all-multiagent-atari``, training
one ``multiagent`` preset (``dqn``, ``ppo``) for every agent of a PettingZoo game."""

from __future__ import annotations

import argparse

from looprl import cli
from looprl.presets.catalog import make_env, resolve_agent
from looprl.scripts.train import family_agent, run_train, train_parser


def train(args: argparse.Namespace) -> int:
    """``run_train`` with the preset ``multiagent.AGENT``, after ALL's check of the count."""
    if len(set(args.agents)) != 1:
        raise ValueError("looprl trains one multiagent preset (dqn, ppo) for every agent: give "
                         f"its name once per agent (e.g. {args.env} dqn dqn), got "
                         f"{' '.join(args.agents) or 'none'}")
    agent = family_agent("multiagent", args.agents[0])
    builder, env = resolve_agent(agent), make_env(agent, args.env)
    count = len(env.possible_agents)
    env.close()
    if count != len(args.agents):
        raise ValueError(f"Must specify {count} agents for {args.env}, got {len(args.agents)}")
    keys = builder.hyperparameter_defaults
    size = [f"replay_buffer_size={args.replay_buffer_size}"] * ("replay_buffer_size" in keys)
    return run_train(args, agent, size)


def main(argv: list[str] | None = None) -> int:
    parse = train_parser("looprl-multiagent-atari", 40e6)
    parse.add_argument("env", help="the PettingZoo game, e.g. pong_v3")
    parse.add_argument("agents", nargs="*", help="the preset of each agent, e.g. dqn dqn")
    parse.add_argument("--replay_buffer_size", type=cli.number(1), default=100000)
    return cli.main(argv, lambda argv: cli.guarded(lambda: train(parse.parse_args(argv)),
                                                   parse.prog), parse.prog)


if __name__ == "__main__":
    raise SystemExit(main())
