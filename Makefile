# looprl: `make demo` sets up and trains PPO on CartPole-v1; `make test` sets up and runs the tests.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml Makefile | cksum | cut -d' ' -f1)

.PHONY: setup demo test lint bench clean

setup: $(STAMP)

# pip installs torch 2.13.0 (the CPU wheel on the machine's disk, which uv does not look at) and
# uv, which installs the rest several times faster than pip, keeping that torch (the project's
# range admits it). Nothing is compiled to bytecode on install: Python compiles a module the first
# time it is imported and keeps its bytecode, which is the quarter of the installed files that
# looprl imports (compiling them all took a minute). PYTHONDONTWRITEBYTECODE, set on some machines,
# is unset for what make runs: every Ray worker and subprocess of the tests would otherwise
# compile again each module it imports.
unexport PYTHONDONTWRITEBYTECODE

UV := $(BIN)/python -m uv pip install --python $(BIN)/python --quiet

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --no-compile torch==2.13.0 uv
	$(UV) -e '.[dev,atari,mujoco,multiagent,hpo,config,distributed,wandb]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

demo: setup
	$(BIN)/looprl train ppo CartPole-v1 --frames 60000 --seed 0 --logdir runs/demo

test: setup
	$(BIN)/ruff check --no-cache src tests benchmarks
	$(BIN)/python -m pytest -q -n 2 tests

lint: setup
	$(BIN)/ruff check --no-cache src tests benchmarks

bench: setup
	$(UV) -e '.[dev,bench]'
	$(BIN)/python benchmarks/speed_cartpole.py
	$(BIN)/python benchmarks/learning_cartpole.py
	$(BIN)/python benchmarks/learning_classic_control.py
	$(BIN)/python benchmarks/learning_continuous.py
	$(BIN)/python benchmarks/atari_throughput.py

clean:
	rm -rf $(VENV) runs .pytest_cache .ruff_cache
