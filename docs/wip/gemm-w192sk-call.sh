#!/usr/bin/env bash
# Issue 30, session 61, one call for docs/wip/gemm-wide192-sk.patch (pack w192sk: oxtile, tests/gemm as `gemm`): the
# 128×192 stream-K tile's tests (tests/gemm's every-variant and stream-K tests; the three sanitizers over the stream-K
# test), then a measurement until BENCH_END seconds after the start (default 575):
# - MODE=losers (default): every variant beside Auto and the three cuBLAS peers on the sweep's losers
#   (docs/wip/sweep-losers.txt, layout tn; the large class first, which holds the shapes the patch changes);
# - MODE=short: Auto, the tiles it chose between and the peers on docs/wip/w192sk-rows.txt, tn and tt, with shorter
#   test limits, for a call with little device time left.
set -uo pipefail
start=$SECONDS
root=$(pwd)
mode=${MODE:-losers}
tests_limit=200 san_limit=170
[ "$mode" = short ] && tests_limit=110 san_limit=95
cd gpu-pack && xz -dc w192sk.tar.xz | tar -xf - && cd w192sk
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
echo "=== tests/gemm (every variant; stream-K)"
timeout "$tests_limit" ./gemm --include-ignored --test-threads=2 bf16_matches_reference_in_every_layout \
  stream_k_matches_reference > "$OUT/tests-gemm.log" 2>&1
echo "rc=$? at $((SECONDS - start)) s"; grep -E "test result|panicked|FAILED|Wide192StreamK" "$OUT/tests-gemm.log" | head -8
echo "=== sanitizers over the stream-K test"
bash "$root/docs/wip/sanitizers.sh" ./gemm "$san_limit" stream_k_matches_reference_where_tiles_are_split_between_blocks
cd "$root"
left=$((${BENCH_END:-575} - (SECONDS - start)))
echo "=== $mode measurement, at $((SECONDS - start)) s"
if [ "$mode" = short ]; then
  timeout "$left" gpu-pack/w192sk/oxtile bench gemm --sweep --sweep-file docs/wip/w192sk-rows.txt --layout tn,tt \
    --no-check --runs 10 --rounds 2 --warmup 3 --json "$OUT/w192sk.json" \
    --only oxtile,oxtile-streamk,oxtile-wide-192,oxtile-wide-192-sk,cublasLt,cublasLt-tuned,cublasGemmEx \
    > "$OUT/w192sk.txt" 2>&1
  echo "rc=$?"; grep -E "^ *[0-9]+x|geomean" "$OUT/w192sk.txt" | head -60
else
  WORK=$OUT/losers SWEEP_FILE=docs/wip/sweep-losers.txt RUNS=10 ROUNDS=2 \
    CLASSES="model-large model-mid square ragged model-decode" \
    ONLY=oxtile,oxtile-wide,oxtile-wide-c2,oxtile-wide-192,oxtile-wide-192-sk,oxtile-narrow,oxtile-flat,oxtile-flat-sk,oxtile-square,oxtile-square-c2,oxtile-square-sk,oxtile-pingpong,oxtile-pingpong-c2,oxtile-streamk,oxtile-streamk-c2,oxtile-skinny,cublasLt,cublasLt-tuned,cublasGemmEx \
    bash docs/wip/gemm-sweep-run.sh w192sk 1 "$left" tn 2>&1
fi
