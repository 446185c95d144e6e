"""``looprl-mujoco``: ALL's ``all-mujoco``."""

from looprl.scripts.train import script

main = script("looprl-mujoco", "continuous", 10e6, "Ant-v4")

if __name__ == "__main__":
    raise SystemExit(main())
