#!/bin/bash
# Short GPU check: the CUDA tests of the Ray runtime and of PBT.
set -u
source .gpu/setup.sh
timeout 300 python3 -m pytest -q -p no:randomly -p no:cacheprovider tests/distributed/test_gpu.py \
  tests/runners/test_pbt.py -k "gpu or cuda" > $OUT/pytest_gpu.log 2>&1
echo "pytest rc=$?"
grep -E "passed|failed" $OUT/pytest_gpu.log | tail -3
grep -E "^(FAILED|ERROR)|^E " $OUT/pytest_gpu.log | cut -c1-220 | head -40
