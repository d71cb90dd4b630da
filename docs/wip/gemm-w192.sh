#!/usr/bin/env bash
# Issue 30, session 60: the 128×192 tile (Variant::Wide192). Its GPU tests (tests/gemm: every variant, among them the
# new one, on every layout's shapes), memcheck, racecheck and synccheck over the every-variant test
# (sanitizer-sized), then an A/B of Auto against the build before it (pack `stage`) on docs/wip/w192-rows.txt, the
# three cuBLAS peers in every run, and the two tiles side by side on the same rows.
set -uo pipefail
root=$(pwd)
cd gpu-pack
for pack in *.tar.xz; do [ -e "$pack" ] && xz -dc "$pack" | tar -xf -; done
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv
(
  cd w192
  echo "=== tests/gemm"
  timeout 300 ./gemm --include-ignored --test-threads=1 > "$OUT/tests-gemm.log" 2>&1
  grep -E "test result|panicked|FAILED" "$OUT/tests-gemm.log" | head -10
  echo "=== sanitizers over every variant"
  export OXTILE_UNDER_SANITIZER=1
  for tool in memcheck racecheck synccheck; do
    extra=(); [ "$tool" = racecheck ] && extra=(--racecheck-report all)
    ( timeout 240 compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 99 ./gemm \
        bf16_matches_reference_in_every_layout --ignored --test-threads=1 > "$OUT/san-$tool.log" 2>&1
      echo "rc=$?" >> "$OUT/san-$tool.log" ) &
  done
  wait
  for tool in memcheck racecheck synccheck; do
    echo "--- $tool"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test result|rc=" "$OUT/san-$tool.log" | head -4
  done
)
cd "$root"
echo "=== A/B: stage (before) vs w192"
AB_ONLY=oxtile,cublasLt,cublasLt-tuned,cublasGemmEx timeout "${AB_TIMEOUT:-200}" bash scripts/gpu-ab.sh \
  gpu-pack/stage/oxtile gpu-pack/w192/oxtile "${PASSES:-2}" --sweep --sweep-file docs/wip/w192-rows.txt \
  --layout tn,tt --rounds 2 --runs 20 2>&1 | tail -45
echo "=== the two tiles side by side (w192 build)"
timeout 150 gpu-pack/w192/oxtile bench gemm --only oxtile-wide,oxtile-wide-192,cublasLt --no-check --sweep \
  --sweep-file docs/wip/w192-rows.txt --layout tn,tt --rounds 2 --runs 20 --json "$OUT/tiles.json" \
  > "$OUT/tiles.txt" 2>&1
grep -E "oxtile-wide|geomean" "$OUT/tiles.txt" | awk '{print $2, $3, $5, $6, $9}' | head -80
