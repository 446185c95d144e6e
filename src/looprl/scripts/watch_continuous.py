"""``looprl-watch-continuous``: ALL's ``all-watch-continuous``."""

from looprl.scripts.watch import script

main = script("looprl-watch-continuous", 120, "LunarLanderContinuous-v2")

if __name__ == "__main__":
    raise SystemExit(main())
