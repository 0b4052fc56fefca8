#!/usr/bin/env bash
# On a GPU (run on the GPU machine from the source tree, like bench/gpu_checks.sh):
# 1. the predictor's rank correlation: every variant of bench/problems that
#    bench/predictor_rank.py predicted here (docs/benchmarks/predicted-variants-1.json) is verified
#    and timed on the GPU, and Spearman's rho between predicted and measured time is computed
#    (target: 0.8; results $OUT/gpu-variants.json, $OUT/rank.json);
# 2. the offline search: a vector add launched with 16-element blocks over 16M elements, searched
#    for 8 steps on GPU time. Results: $OUT/{search.txt,search.patch}.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bench/results/gpu}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
if ! "$PY" -c "import tree_sitter, tree_sitter_python, platformdirs, rich" 2>/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/tritonsmith-site .whl/*.whl || { echo "carry the wheels in .whl/ (bench/README.md)"; exit 2; }
    export PYTHONPATH=/tmp/tritonsmith-site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
timeout 420 "$PY" bench/predictor_rank.py measure --json "$OUT/gpu-variants.json" 2>&1 | tail -n 100 > "$OUT/measure.txt"
"$PY" bench/predictor_rank.py compare docs/benchmarks/predicted-variants-1.json "$OUT/gpu-variants.json" \
    | tee "$OUT/rank.json"
work=$(mktemp -d)
touch "$work/pyproject.toml"
sed 's/^N_ELEMENTS = .*/N_ELEMENTS = 16_777_216/' tests/search/fixtures/slow_add.py > "$work/slow_add.py"
(cd "$work" && timeout 200 "$PY" -m tritonsmith optimize slow_add.py --kernel add_kernel --steps 8 \
    --device gpu --proposer offline --out search.patch) 2>&1 | tee "$OUT/search.txt"
cp "$work/search.patch" "$OUT/" 2>/dev/null
