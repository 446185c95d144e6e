"""``looprl-watch-atari``: ALL's ``all-watch-atari``."""

from looprl.scripts.watch import script

main = script("looprl-watch-atari", 60, "Pong")

if __name__ == "__main__":
    raise SystemExit(main())
