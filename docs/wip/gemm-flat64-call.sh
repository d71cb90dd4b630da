#!/usr/bin/env bash
# Issue 30, for docs/wip/gemm-flat64-splitk.patch (pack flat64: oxtile, tests/gemm as `gemm`): 64×64 tiles with a
# 12-stage ring, data-parallel and split over K, as tune candidates. tests/gemm's every-variant and few-row stream-K
# tests, the three sanitizers over the latter, then the 64×64 split-K beside the 64×128 one, the skinny kernel, Auto
# and the three peers on docs/wip/flat64-rows.txt (tn, tt) until BENCH_END seconds (default 560). Build:
# `git apply docs/wip/gemm-flat64-splitk.patch`, `cargo build --release --locked -p oxtile --bins --tests`; pack
# oxtile and the newest target/release/deps/gemm-*. (It and gemm-square192-c2.patch both change the check counts in
# host/src/verify.rs and the bf16-only list in tests/gpu_bench.rs: apply one, or merge those hunks by hand.)
set -uo pipefail
start=$SECONDS
root=$(pwd)
cd gpu-pack && xz -dc flat64.tar.xz | tar -xf - && cd flat64
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
timeout 200 ./gemm --include-ignored --test-threads=2 bf16_matches_reference_in_every_layout \
  stream_k_on_few_row_tiles > "$OUT/tests-gemm.log" 2>&1
echo "tests rc=$? at $((SECONDS - start)) s"; grep -E "test result|panicked|FAILED" "$OUT/tests-gemm.log" | head -8
bash "$root/docs/wip/sanitizers.sh" ./gemm 120 stream_k_on_few_row_tiles_matches_reference_where_tiles_are_split
cd "$root"
left=$((${BENCH_END:-560} - (SECONDS - start)))
WORK=$OUT/rows SWEEP_FILE=docs/wip/flat64-rows.txt RUNS=20 ROUNDS=4 CLASSES="model-decode model-mid" \
  ONLY=oxtile,oxtile-flat-sk,oxtile-flat-64-sk,oxtile-flat,oxtile-flat-64,oxtile-skinny,cublasLt,cublasLt-tuned,cublasGemmEx \
  bash docs/wip/gemm-sweep-run.sh flat64 1 "$left" tn,tt 2>&1
cd "$OUT" && tar -czf rows.tgz rows && rm -rf rows
