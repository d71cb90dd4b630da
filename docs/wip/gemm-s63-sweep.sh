#!/usr/bin/env bash
# Issue 30, session 63, third call (pack s63b: oxtile, tests/gpu_bench as `gpu_bench`): the GEMM bench's GPU test
# (every contender in every layout and type), then the A/B of the 128×128 tile's 9/8 weight on the shapes it
# changes (docs/wip/s63-square-rows.txt, tn and tt: Auto, the 128×128 and 128×192 split-K tiles, the three cuBLAS
# peers, 20 launches in 4 rounds), then issue 30's sweep, every 2nd shape, in LAYOUTS (default tn): Auto and the
# three peers, 10 launches in 2 rounds, until BENCH_END seconds after the start (default 570).
set -uo pipefail
start=$SECONDS
cd gpu-pack && xz -dc s63b.tar.xz | tar -xf - && cd ..
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
echo "=== tests/gpu_bench (GEMM)"
timeout 150 gpu-pack/s63b/gpu_bench --include-ignored gemm > "$OUT/tests-gpu-bench.log" 2>&1
echo "rc=$? at $((SECONDS - start)) s"; grep -E "test result|panicked|FAILED" "$OUT/tests-gpu-bench.log" | head -6
WORK=$OUT/square SWEEP_FILE=docs/wip/s63-square-rows.txt RUNS=20 ROUNDS=4 CLASSES="model-mid model-large" \
  ONLY=oxtile,oxtile-square,oxtile-wide-192-sk,cublasLt,cublasLt-tuned,cublasGemmEx \
  bash docs/wip/gemm-sweep-run.sh s63b 1 120 tn,tt 2>&1
mv "$OUT/sweep-s63b.json" "$OUT/square.json"
left=$((${BENCH_END:-570} - (SECONDS - start)))
echo "=== sweep, at $((SECONDS - start)) s, $left s left"
WORK=$OUT/sweep RUNS=10 ROUNDS=2 bash docs/wip/gemm-sweep-run.sh s63b 2 "$left" "${LAYOUTS:-tn}" 2>&1
cd "$OUT" && tar -czf rows.tgz square sweep && rm -rf square sweep
