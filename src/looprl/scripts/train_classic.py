"""``looprl-classic``: ALL's ``all-classic``."""

from looprl.scripts.train import script

main = script("looprl-classic", "classic_control", 50000, "CartPole-v0")

if __name__ == "__main__":
    raise SystemExit(main())
