#!/usr/bin/env bash
# On the GPU machine (no cargo, no network): install the oxtile wheel built here (carried in wheelhouse/, git-ignored)
# next to the machine's torch, run the Python package's tests with the GPU expected, then its benchmarks.
#   bash scripts/gpu-python.sh [TEST_SECONDS]     (TESTS=DIR: the pytest folder, default python/tests)
# Logs go to $OUT (the device tool's folder) when it is set, else /tmp/oxtile-python.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-/tmp/oxtile-python}"
mkdir -p "$out"
site="$(mktemp -d)"
python3 -m pip install --quiet --no-index --no-deps --target "$site" wheelhouse/oxtile-*.whl || exit 1
export PYTHONPATH="$site" PYTHONUNBUFFERED=1 OXTILE_EXPECT_GPU=1
python3 -c 'import torch, oxtile; print("torch", torch.__version__, "oxtile", oxtile.__version__, oxtile.device_info(0))'
timeout "${1:-240}" python3 -m pytest -q -p no:cacheprovider -rs --durations=8 "${TESTS:-python/tests}" 2>&1 | tee "$out/pytest.log"
status=${PIPESTATUS[0]}
python3 -m oxtile.bench attn 8,16,4096,128,full 8,16,4096,128,causal 4,32:8,8192,128,causal 2>&1 | tee "$out/bench-attn.log"
python3 -m oxtile.bench gemm 8192x8192x8192 4096x4096x4096 --layout tt,tn 2>&1 | tee "$out/bench-gemm.log"
exit "$status"
