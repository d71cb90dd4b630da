#!/usr/bin/env bash
# Issue 30, session 61, the short call (little device time left): the 128×192 stream-K tile's tests (tests/gemm's
# every-variant and stream-K tests; memcheck, racecheck and synccheck over the stream-K test, side by side), then Auto
# beside the tiles it chose between and the three cuBLAS peers on docs/wip/w192sk-rows.txt, tn and tt.
set -uo pipefail
start=$SECONDS
root=$(pwd)
cd gpu-pack && xz -dc w192sk.tar.xz | tar -xf - && cd w192sk
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
echo "=== tests/gemm (every variant; stream-K)"
timeout 110 ./gemm --include-ignored --test-threads=2 bf16_matches_reference_in_every_layout stream_k_matches_reference \
  > "$OUT/tests-gemm.log" 2>&1
echo "rc=$? at $((SECONDS - start)) s"; grep -E "test result|panicked|FAILED|Wide192StreamK" "$OUT/tests-gemm.log" | head -8
echo "=== sanitizers over the stream-K test"
export OXTILE_UNDER_SANITIZER=1
for tool in memcheck racecheck synccheck; do
  extra=(); [ "$tool" = racecheck ] && extra=(--racecheck-report all)
  ( timeout 95 compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 99 ./gemm \
      stream_k_matches_reference_where_tiles_are_split_between_blocks --ignored --test-threads=1 \
      > "$OUT/san-$tool.log" 2>&1
    echo "rc=$?" >> "$OUT/san-$tool.log" ) &
done
wait
unset OXTILE_UNDER_SANITIZER
for tool in memcheck racecheck synccheck; do
  echo "--- $tool"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test result|rc=" "$OUT/san-$tool.log" | head -4
done
echo "=== Auto and the tiles it chose between, at $((SECONDS - start)) s"
cd "$root"
timeout $((260 - (SECONDS - start))) gpu-pack/w192sk/oxtile bench gemm --sweep --sweep-file docs/wip/w192sk-rows.txt \
  --layout tn,tt --no-check --runs 10 --rounds 2 --warmup 3 \
  --only oxtile,oxtile-streamk,oxtile-wide-192,oxtile-wide-192-sk,cublasLt,cublasLt-tuned,cublasGemmEx \
  --json "$OUT/w192sk.json" > "$OUT/w192sk.txt" 2>&1
echo "rc=$? at $((SECONDS - start)) s"
grep -E "^ *[0-9]+x|geomean" "$OUT/w192sk.txt" | head -60
