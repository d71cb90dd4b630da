#!/usr/bin/env bash
# Issue 30, session 63, second call (pack s63: oxtile, tests/gemm as `gemm`): tests/gemm whole, the three sanitizers
# over the 192×192 tile's test, then the A/B of the Auto rules on the shapes whose kernel they change
# (docs/wip/s63-changed-rows.txt, tn and tt): Auto, each kernel the old and the new rules run there, and the three
# cuBLAS peers in one process per class and layout, 20 launches in 4 rounds.
set -uo pipefail
start=$SECONDS
root=$(pwd)
cd gpu-pack && xz -dc s63.tar.xz | tar -xf - && cd s63
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
echo "=== tests/gemm"
timeout "${TESTS_LIMIT:-200}" ./gemm --include-ignored --test-threads=2 > "$OUT/tests-gemm.log" 2>&1
echo "rc=$? at $((SECONDS - start)) s"; grep -E "test result|panicked|FAILED" "$OUT/tests-gemm.log" | head -8
echo "=== sanitizers over the 192x192 tile's test"
bash "$root/docs/wip/sanitizers.sh" ./gemm "${SAN_LIMIT:-120}" three_consumer_tiles_match_reference_at_their_edges
cd "$root"
left=$((${BENCH_END:-560} - (SECONDS - start)))
echo "=== A/B, at $((SECONDS - start)) s, $left s left"
WORK=$OUT/rows SWEEP_FILE=docs/wip/s63-changed-rows.txt RUNS=20 ROUNDS=4 \
  CLASSES="model-mid model-large" \
  ONLY=oxtile,oxtile-streamk,oxtile-streamk-c2,oxtile-wide-c2,oxtile-wide-192-sk,oxtile-wide-192,oxtile-wide,oxtile-square-192,cublasLt,cublasLt-tuned,cublasGemmEx \
  bash docs/wip/gemm-sweep-run.sh s63 1 "$left" tn,tt 2>&1
cd "$OUT" && tar -czf rows.tgz rows && rm -rf rows
