#!/usr/bin/env bash
# Issue 30, session 61, one call: the 128×192 stream-K tile's tests (tests/gemm's every-variant and stream-K tests;
# memcheck, racecheck and synccheck over the stream-K test, side by side), then every variant beside Auto and the
# three cuBLAS peers on the sweep's losers (docs/wip/sweep-losers.txt, layout tn) until BENCH_END seconds (default
# 575) after the start.
set -uo pipefail
start=$SECONDS
root=$(pwd)
cd gpu-pack && xz -dc w192sk.tar.xz | tar -xf - && cd w192sk
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
echo "=== tests/gemm (every variant; stream-K)"
timeout 200 ./gemm --include-ignored --test-threads=2 bf16_matches_reference_in_every_layout stream_k_matches_reference \
  > "$OUT/tests-gemm.log" 2>&1
echo "rc=$? at $((SECONDS - start)) s"; grep -E "test result|panicked|FAILED|Wide192StreamK" "$OUT/tests-gemm.log" | head -8
echo "=== sanitizers over the stream-K test"
export OXTILE_UNDER_SANITIZER=1
for tool in memcheck racecheck synccheck; do
  extra=(); [ "$tool" = racecheck ] && extra=(--racecheck-report all)
  ( timeout 170 compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 99 ./gemm \
      stream_k_matches_reference_where_tiles_are_split_between_blocks --ignored --test-threads=1 \
      > "$OUT/san-$tool.log" 2>&1
    echo "rc=$?" >> "$OUT/san-$tool.log" ) &
done
wait
unset OXTILE_UNDER_SANITIZER
for tool in memcheck racecheck synccheck; do
  echo "--- $tool"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test result|rc=" "$OUT/san-$tool.log" | head -4
  cat "$OUT/san-$tool.log" >> "$OUT/sanitizers.log" && rm "$OUT/san-$tool.log"
done
echo "=== every variant on the losers, at $((SECONDS - start)) s"
cd "$root"
WORK=$OUT/losers SWEEP_FILE=docs/wip/sweep-losers.txt RUNS=10 ROUNDS=2 CLASSES="model-large model-mid square ragged model-decode" \
  ONLY=oxtile,oxtile-wide,oxtile-wide-c2,oxtile-wide-192,oxtile-wide-192-sk,oxtile-narrow,oxtile-flat,oxtile-flat-sk,oxtile-square,oxtile-square-c2,oxtile-square-sk,oxtile-pingpong,oxtile-pingpong-c2,oxtile-streamk,oxtile-streamk-c2,oxtile-skinny,cublasLt,cublasLt-tuned,cublasGemmEx \
  bash docs/wip/gemm-sweep-run.sh w192sk 1 $((${BENCH_END:-575} - (SECONDS - start))) tn 2>&1
