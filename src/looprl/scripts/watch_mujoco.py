"""``looprl-watch-mujoco``: ALL's ``all-watch-mujoco``."""

from looprl.scripts.watch import script

main = script("looprl-watch-mujoco", 120, "Ant-v4")

if __name__ == "__main__":
    raise SystemExit(main())
