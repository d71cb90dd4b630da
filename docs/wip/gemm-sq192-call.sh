#!/usr/bin/env bash
# Issue 30, session 63, one call for the 192×192 tile (pack sq192: oxtile, tests/gemm as `gemm`): tests/gemm whole
# (every variant in every layout, the stream-K tests with Square192StreamK, and the session-62 refactor of the
# plans' Auto resolution), the three sanitizers over the stream-K test, then until BENCH_END seconds after the start
# (default 575) Auto, the 192×192 tiles, the tiles Auto chose before and the three cuBLAS peers on
# docs/wip/sq192-rows.txt, layout tn.
set -uo pipefail
start=$SECONDS
root=$(pwd)
cd gpu-pack && xz -dc sq192.tar.xz | tar -xf - && cd sq192
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
echo "=== tests/gemm"
timeout "${TESTS_LIMIT:-220}" ./gemm --include-ignored --test-threads=2 > "$OUT/tests-gemm.log" 2>&1
echo "rc=$? at $((SECONDS - start)) s"; grep -E "test result|panicked|FAILED" "$OUT/tests-gemm.log" | head -8
echo "=== sanitizers over the stream-K test"
bash "$root/docs/wip/sanitizers.sh" ./gemm "${SAN_LIMIT:-150}" stream_k_matches_reference_where_tiles_are_split_between_blocks
cd "$root"
left=$((${BENCH_END:-575} - (SECONDS - start)))
echo "=== measurement, at $((SECONDS - start)) s, $left s left"
WORK=$OUT/rows SWEEP_FILE=docs/wip/sq192-rows.txt RUNS=10 ROUNDS=2 \
  CLASSES="model-large square ragged model-mid" \
  ONLY=oxtile,oxtile-square-192,oxtile-square-192-sk,oxtile-wide-192,oxtile-wide-192-sk,oxtile-streamk,oxtile-wide-c2,oxtile-streamk-c2,cublasLt,cublasLt-tuned,cublasGemmEx \
  bash docs/wip/gemm-sweep-run.sh sq192 1 "$left" tn 2>&1
cd "$OUT" && tar -czf rows.tgz rows && rm -rf rows
