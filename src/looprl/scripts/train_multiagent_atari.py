"""``looprl-multiagent-atari ENV AGENT AGENT ...``: ALL's ``all-multiagent-atari``, one preset
per agent of a PettingZoo game (``multiagent.independent``): for an Atari game (``pong_v3 dqn
rainbow``) the Atari presets on ALL's ``MultiagentAtariEnv``; for another game
(``tictactoe_v3 dqn dqn``) the ``multiagent`` family's."""

from __future__ import annotations

import argparse

from looprl import cli
from looprl.environments.multiagent import MultiagentAtariEnv
from looprl.presets.catalog import make_env, resolve_agent
from looprl.presets.multiagent import independent
from looprl.scripts.train import entry, family_agent, train_args, train_parser


def train(args: argparse.Namespace) -> int:
    """``looprl train``'s run of ``independent({agent: preset})`` over the game's agents in turn,
    after ALL's check of their count."""
    env = make_env("multiagent.independent", args.env,
                   render_mode="human" if args.render else None)
    agents = env.possible_agents
    family = "atari" if isinstance(env, MultiagentAtariEnv) else "multiagent"
    try:
        if len(agents) != len(args.agents):
            raise ValueError(f"Must specify {len(agents)} agents for {args.env} ({family} "
                             f"presets, e.g. {args.env} {' '.join(['dqn'] * len(agents))}), "
                             f"got {len(args.agents)}")
        builders = {agent: resolve_agent(family_agent(family, name))
                    for agent, name in zip(agents, args.agents, strict=True)}
    except ValueError:
        env.close()
        raise
    if family == "multiagent":  # (the single-agent builder each of its agents plays)
        builders = {agent: builder.builders for agent, builder in builders.items()}
    builder = independent(builders, name="_".join(["independent", *dict.fromkeys(args.agents)]))
    if "replay_buffer_size" in builder.hyperparameter_defaults:
        builder = builder.hyperparameters(replay_buffer_size=args.replay_buffer_size)
    return cli.train_built(builder, env, train_args(args, f"{family}.independent", []))


parser = train_parser("looprl-multiagent-atari", 40e6)
parser.add_argument("env", help="the PettingZoo game, e.g. pong_v3")
parser.add_argument("agents", nargs="*", help="the preset of each agent, e.g. dqn rainbow")
parser.add_argument("--replay_buffer_size", type=cli.number(1), default=100000)
parser.add_argument("--logdir", default="runs")
main = entry(parser, train)

if __name__ == "__main__":
    raise SystemExit(main())
