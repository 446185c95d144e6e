#!/bin/bash
# GPU check: the GPU tests first, then every preset on CUDA (cuda_act.py), then the rest of the
# suite with CUDA visible, in the time left of the 590 s the device call gives it.
set -u
export PYTHONUNBUFFERED=1
t0=$(date +%s)
source .gpu/setup.sh
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
python3 -c "import torch, ray; print('torch', torch.__version__, torch.cuda.get_device_name(0), 'ray', ray.__version__)"
python3 -c "from looprl.presets.builder import default_device as d; print('presets build on', d())"
echo "setup $(( $(date +%s) - t0 )) s"
timeout 170 python3 -m pytest -q -p no:randomly -p no:cacheprovider --durations=8 tests/distributed/test_gpu.py \
  tests/runners/test_pbt.py -k "gpu or cuda" > $OUT/pytest_gpu.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - t0 )) s"
grep -E "passed|failed" $OUT/pytest_gpu.log | tail -3
grep -E "^(FAILED|ERROR)|^E " $OUT/pytest_gpu.log | cut -c1-220 | head -40
timeout 90 python3 .gpu/cuda_act.py cuda > $OUT/cuda_act.log 2>&1; echo "cuda_act rc=$? at $(( $(date +%s) - t0 )) s"
grep -E "^(ok|FAIL)|failures" $OUT/cuda_act.log | cut -c1-160
left=$(( 555 - ($(date +%s) - t0) ))
echo "suite gets $left s"
timeout $left python3 -m pytest -q -p no:randomly -p no:cacheprovider -n 14 --durations=10 tests \
  --ignore=tests/distributed/test_gpu.py > $OUT/pytest.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - t0 )) s"
grep -E "passed|failed" $OUT/pytest.log | tail -3
grep -E "^(FAILED|ERROR)" $OUT/pytest.log | cut -c1-220 | head -60
