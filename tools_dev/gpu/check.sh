#!/bin/bash
# GPU check: the whole suite with CUDA visible, and every preset on CUDA (cuda_act.py).
set -u
source .gpu/setup.sh
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
python3 -c "import torch, ray; print('torch', torch.__version__, torch.cuda.get_device_name(0), 'ray', ray.__version__)"
python3 -c "from looprl.presets.builder import default_device as d; print('presets build on', d())"
timeout 100 python3 .gpu/cuda_act.py cuda > $OUT/cuda_act.log 2>&1; echo "cuda_act rc=$?"
grep -E "^(ok|FAIL)|failures" $OUT/cuda_act.log | cut -c1-160
timeout 390 python3 -m pytest -q -p no:randomly -p no:cacheprovider -n 14 --durations=15 tests \
  > $OUT/pytest.log 2>&1
echo "pytest rc=$?"
grep -E "passed|failed" $OUT/pytest.log | tail -3
grep -E "^(FAILED|ERROR)" $OUT/pytest.log | cut -c1-220 | head -60
