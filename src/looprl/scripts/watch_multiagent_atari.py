"""``looprl-watch-multiagent-atari``: ALL's ``all-watch-multiagent-atari``."""

from looprl.scripts.watch import script

main = script("looprl-watch-multiagent-atari", 30, "pong_v3", reload=True)

if __name__ == "__main__":
    raise SystemExit(main())
