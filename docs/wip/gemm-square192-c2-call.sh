#!/usr/bin/env bash
# Issue 30, for docs/wip/gemm-square192-c2.patch (pack sq192c2: oxtile, tests/gemm as `gemm`): the 192×192 tile in
# pairs side by side along N sharing A (K-major: tn, tt). tests/gemm whole, the three sanitizers over the 192×192
# tests, then the pairs beside the single 192×192 tile, the 128×256 pairs and Auto on docs/wip/sq192-rows.txt (tn)
# until BENCH_END seconds (default 570). Build: `git apply docs/wip/gemm-square192-c2.patch`, then
# `cargo build --release --locked -p oxtile --bins --tests`; pack oxtile and the newest target/release/deps/gemm-*.
set -uo pipefail
start=$SECONDS
root=$(pwd)
cd gpu-pack && xz -dc sq192c2.tar.xz | tar -xf - && cd sq192c2
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
timeout 220 ./gemm --include-ignored --test-threads=2 > "$OUT/tests-gemm.log" 2>&1
echo "tests rc=$? at $((SECONDS - start)) s"; grep -E "test result|panicked|FAILED" "$OUT/tests-gemm.log" | head -8
bash "$root/docs/wip/sanitizers.sh" ./gemm 120 three_consumer_tiles_match_reference_at_their_edges
cd "$root"
left=$((${BENCH_END:-570} - (SECONDS - start)))
WORK=$OUT/rows SWEEP_FILE=docs/wip/sq192-rows.txt RUNS=10 ROUNDS=2 CLASSES="model-large square ragged model-mid" \
  ONLY=oxtile,oxtile-square-192,oxtile-square-192-c2,oxtile-wide-c2,oxtile-streamk-c2,oxtile-wide-192,cublasLt,cublasLt-tuned,cublasGemmEx \
  bash docs/wip/gemm-sweep-run.sh sq192c2 1 "$left" tn 2>&1
cd "$OUT" && tar -czf rows.tgz rows && rm -rf rows
