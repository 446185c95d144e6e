#!/bin/bash
# Builds .gpu/ (ignored by git) for the device tool's GPU machine, whose image has Python 3.12,
# PyTorch and pytest but none of looprl's other dependencies, and no network: the wheels of
# those dependencies, and Ray 2.60 as a tarball trimmed of Java, RLlib, Serve, LLM and the
# dashboard's web client (the whole wheel is over the 64 MiB the tool carries).
# Then, with the device tool: run(command="bash .gpu/check.sh", carry=[".gpu"], timeout_s=590)
# (the GPU tests, the presets on CUDA, then the suite: 475 s on an H200), or .gpu/check_short.sh.
set -eu
cd "$(git rev-parse --show-toplevel)"
mkdir -p .gpu/wheels && grep -qx '/.gpu/' .git/info/exclude || echo /.gpu/ >> .git/info/exclude
pip="$PWD/.venv/bin/pip"
target=(--no-deps --python-version 3.12 --only-binary=:all: --platform manylinux2014_x86_64
        --platform manylinux_2_17_x86_64 --platform manylinux_2_27_x86_64
        --platform manylinux_2_28_x86_64 -d .gpu/wheels)
"$pip" download "${target[@]}" aiohttp-cors ale-py alembic annotated-types cma colorful colorlog \
  farama-notifications glfw gymnasium==1.4.0 hydra-core==1.3.8 hydra-joblib-launcher \
  hydra-submitit-launcher jsonschema jsonschema-specifications mako mujoco==4.0.0 \
  mujoco-core==4.0.0 omegaconf==2.3.1 optuna==5.0.0 pettingzoo==1.27.0 platformdirs pydantic \
  pydantic-core pyopengl pytest-randomly referencing rpds-py smart-open sqlalchemy submitit \
  tensorboardx typing-inspection tzdata greenlet
"$pip" wheel --no-deps -w .gpu/wheels antlr4-python3-runtime==4.9.3  # an sdist only
tmp=$(mktemp -d)
"$pip" download "${target[@]/.gpu\/wheels/$tmp}" ray==2.60.0
(cd "$tmp" && unzip -q ray-*.whl && rm ray-*.whl \
  && rm -rf ray/jars ray/rllib ray/llm ray/serve ray/dashboard/client/build \
  && tar cf - . | xz -T0 -6 > "$OLDPWD/.gpu/ray.tar.xz")
rm -rf "$tmp"
cp tools_dev/gpu/setup.sh tools_dev/gpu/check.sh tools_dev/gpu/check_short.sh tools_dev/gpu/cuda_act.py .gpu/
du -sh .gpu  # with the repository, under the tool's 64 MiB
