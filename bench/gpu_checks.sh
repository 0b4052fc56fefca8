#!/usr/bin/env bash
# The GPU checks, run on the GPU machine from the source tree in under five minutes:
# the `gpu`-marked tests, then every example verified and timed (bench/gpu_timings.py).
#
#   OUT=/some/folder bench/gpu_checks.sh
#
# That machine has torch and triton but no registry and no tree-sitter: carry the wheels in
# .whl/ (bench/README.md, "GPU checks"). Results: $OUT/{gpu.txt,pytest.txt,timings.json,timings.md}.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bench/results/gpu}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
if ! "$PY" -c "import tree_sitter, tree_sitter_python, platformdirs" 2>/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/tritonsmith-site .whl/*.whl || { echo "carry the wheels in .whl/ (bench/README.md)"; exit 2; }
    export PYTHONPATH=/tmp/tritonsmith-site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
{
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
    "$PY" -c "import sys, torch, triton; print(sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"
} 2>&1 | tee "$OUT/gpu.txt"
timeout 260 "$PY" -m pytest -m gpu -q -p no:cacheprovider -o addopts="" tests/evaluator/test_gpu.py 2>&1 | tee "$OUT/pytest.txt"
tests=${PIPESTATUS[0]}
timeout 200 "$PY" bench/gpu_timings.py --out "$OUT" 2>&1 | tee -a "$OUT/gpu.txt"
timings=${PIPESTATUS[0]}
echo "gpu tests exit $tests, timings exit $timings"
exit $(( tests != 0 || timings != 0 ))
