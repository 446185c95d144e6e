#!/bin/bash
# Short GPU re-check: the CUDA tests of the Ray runtime after the replay-device fix.
set -u
python3 -m pip install --quiet --no-index --no-deps --force-reinstall .gpu/wheels/*.whl 2>&1 | tail -2
mkdir -p /tmp/site && tar xJf .gpu/ray.tar.xz -C /tmp/site
export PYTHONPATH=$PWD/src:/tmp/site PYTHONDONTWRITEBYTECODE=1 RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0
timeout 300 python3 -m pytest -q -p no:randomly -p no:cacheprovider tests/distributed/test_gpu.py \
  tests/runners/test_pbt.py -k "gpu or cuda" > $OUT/pytest_gpu.log 2>&1
echo "pytest rc=$?"
grep -E "passed|failed" $OUT/pytest_gpu.log | tail -3
grep -E "^(FAILED|ERROR)|^E " $OUT/pytest_gpu.log | cut -c1-220 | head -40
