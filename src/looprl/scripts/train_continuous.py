"""``looprl-continuous``: ALL's ``all-continuous``."""

from looprl.scripts.train import script

main = script("looprl-continuous", "continuous", 10e6, "MountainCarContinuous-v0")

if __name__ == "__main__":
    raise SystemExit(main())
