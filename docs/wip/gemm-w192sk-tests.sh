#!/usr/bin/env bash
# Issue 30, session 61: the 128×192 tile's stream-K (Variant::Wide192StreamK). Its GPU tests (tests/gemm: every
# variant on every layout's shapes, the stream-K edge cases; tests/gpu_bench: every contender's row), then memcheck, racecheck and synccheck over the
# single-block stream-K test (the new variant among its cases; sanitizer-sized), side by side.
set -uo pipefail
cd gpu-pack
for pack in *.tar.xz; do [ -e "$pack" ] && xz -dc "$pack" | tar -xf -; done
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv
cd "${PACK:-w192sk}"
echo "=== tests/gemm"
timeout 280 ./gemm --include-ignored --test-threads=1 > "$OUT/tests-gemm.log" 2>&1
echo "rc=$?"; grep -E "test result|panicked|FAILED|Wide192StreamK" "$OUT/tests-gemm.log" | head -12
echo "=== tests/gpu_bench"
timeout 150 ./gpu_bench --include-ignored --test-threads=1 > "$OUT/tests-gpu-bench.log" 2>&1
echo "rc=$?"; grep -E "test result|panicked|FAILED" "$OUT/tests-gpu-bench.log" | head -6
echo "=== sanitizers over the stream-K test"
export OXTILE_UNDER_SANITIZER=1
for tool in memcheck racecheck synccheck; do
  extra=(); [ "$tool" = racecheck ] && extra=(--racecheck-report all)
  ( timeout 250 compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 99 ./gemm \
      stream_k_matches_reference_where_tiles_are_split_between_blocks --ignored --test-threads=1 \
      > "$OUT/san-$tool.log" 2>&1
    echo "rc=$?" >> "$OUT/san-$tool.log" ) &
done
wait
for tool in memcheck racecheck synccheck; do
  echo "--- $tool"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test result|rc=" "$OUT/san-$tool.log" | head -4
done
