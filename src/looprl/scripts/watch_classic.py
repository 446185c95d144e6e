"""``looprl-watch-classic``: ALL's ``all-watch-classic``."""

from looprl.scripts.watch import script

main = script("looprl-watch-classic", 60, "CartPole-v0")

if __name__ == "__main__":
    raise SystemExit(main())
