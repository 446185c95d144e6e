"""``looprl-atari``: ALL's ``all-atari``."""

from looprl.scripts.train import script

main = script("looprl-atari", "atari", 40e6, "Pong")

if __name__ == "__main__":
    raise SystemExit(main())
