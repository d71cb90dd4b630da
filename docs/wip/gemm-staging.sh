#!/usr/bin/env bash
# Issue 30: GEMM operands TMA cannot read in place, staged by the plan (host/src/ops/staging.rs). One call: the GEMM
# GPU tests, the bench harness's test, the new tests under memcheck, racecheck and synccheck, the Python tests, then
# staged shapes beside their in-place twins with cuBLAS's three peers in the same process.
#   gpu-pack/BUILD.tar.xz (BUILD, default `stage`): oxtile, gemm, gpu_bench; gpu-pack/oxtile-*.whl.
set -uo pipefail
cd gpu-pack
for pack in *.tar.xz; do [ -e "$pack" ] && xz -dc "$pack" | tar -xf -; done
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv
build=${BUILD:-stage}
wheel=$(ls "$(pwd)"/oxtile-*.whl 2>/dev/null | head -1)
cd "$build"
echo "=== tests/gemm"
timeout 300 ./gemm --include-ignored --test-threads=1 > "$OUT/tests-gemm.log" 2>&1
grep -E "^test .*(FAILED|ok)$|test result|panicked" "$OUT/tests-gemm.log" | grep -v "\.\.\. ok$" | head -20
grep -c "\.\.\. ok$" "$OUT/tests-gemm.log"
echo "=== tests/gpu_bench (the GEMM rows)"
timeout 120 ./gpu_bench oxtile_gemm_is_timed --include-ignored --test-threads=1 > "$OUT/tests-gpu-bench.log" 2>&1
grep -E "test result|panicked" "$OUT/tests-gpu-bench.log" | head -5
echo "=== sanitizers on the staged tests"
export OXTILE_UNDER_SANITIZER=1
for tool in memcheck racecheck synccheck; do
  extra=(); [ "$tool" = racecheck ] && extra=(--racecheck-report all)
  ( timeout 200 compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 99 ./gemm \
      staged --ignored --test-threads=1 > "$OUT/san-$tool.log" 2>&1; echo "rc=$?" >> "$OUT/san-$tool.log" ) &
done
wait
unset OXTILE_UNDER_SANITIZER
for tool in memcheck racecheck synccheck; do
  echo "--- $tool"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test result|rc=" "$OUT/san-$tool.log" | head -4
done
if [ -n "$wheel" ]; then
  echo "=== python"
  site=$(mktemp -d)
  python3 -m pip install --quiet --no-index --no-deps --target "$site" "$wheel"
  (cd ../.. && PYTHONPATH="$site" OXTILE_EXPECT_GPU=1 timeout 200 python3 -m pytest -q -p no:cacheprovider -rs \
    python/tests > "$OUT/pytest.log" 2>&1)
  tail -5 "$OUT/pytest.log"
fi
echo "=== bench: staged shapes beside in-place twins"
timeout "${BENCH_TIMEOUT:-200}" ./oxtile bench gemm --only oxtile,cublasLt,cublasLt-tuned,cublasGemmEx --layout tn,tt --rounds 3 --runs 20 --json "$OUT/bench.json" --shapes \
  1500x1500x1500,1504x1504x1504,1536x1536x1536,2500x2500x2500,2504x2504x2504,1001x999x1003,777x1560x3111,777x1560x3112,4096x4096x4095,4096x4096x4040,4096x4096x4096,16x4096x4095,16x4096x4096 \
  > "$OUT/bench.txt" 2>&1
grep -vE "^\s*$" "$OUT/bench.txt" | tail -60
