#!/usr/bin/env bash
# Session 64's GEMM call (issue 30): the pack `both` (main at 87e17d1 with gemm-square192-c2.patch and
# gemm-flat64-splitk.patch applied together; oxtile and tests/gemm as `gemm`): tests/gemm, the three sanitizers over
# both patches' tests, then the flat rows (flat64 contenders, the flat rule's two shapes) and the 192-row pair rows.
#   bash docs/wip/gemm-s64-call.sh      (the run tool: carry ["gpu-pack"])
set -uo pipefail
peers=cublasLt,cublasLt-tuned,cublasGemmEx
start=$SECONDS
root=$(pwd)
cd gpu-pack && xz -dc both.tar.xz | tar -xf - && cd both
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
echo "=== tests/gemm"
timeout "${TESTS_LIMIT:-200}" ./gemm --include-ignored --test-threads=2 > "$OUT/tests-gemm.log" 2>&1
echo "rc=$? at $((SECONDS - start)) s"; grep -E "test result|panicked|FAILED" "$OUT/tests-gemm.log" | head -8
echo "=== sanitizers"
bash "$root/docs/wip/sanitizers.sh" ./gemm "${SAN_LIMIT:-110}" three_consumer_tiles_match_reference_at_their_edges \
  stream_k_on_few_row_tiles_matches_reference_where_tiles_are_split
cd "$root"
echo "=== flat rows at $((SECONDS - start)) s"
WORK=$OUT/rows-flat SWEEP_FILE=docs/wip/s64-flat-rows.txt RUNS=20 ROUNDS=4 CLASSES="model-decode model-mid" \
  ONLY="oxtile,oxtile-flat-sk,oxtile-flat,oxtile-flat-64,oxtile-flat-64-sk,oxtile-skinny,oxtile-square-sk,$peers" \
  bash docs/wip/gemm-sweep-run.sh both 1 $((${FLAT_END:-430} - (SECONDS - start))) tn,tt 2>&1
echo "=== 192-row pairs at $((SECONDS - start)) s"
WORK=$OUT/rows-sq SWEEP_FILE=docs/wip/s64-sq192c2-rows.txt RUNS=10 ROUNDS=2 CLASSES="square ragged model-large" \
  ONLY="oxtile,oxtile-square-192,oxtile-square-192-c2,oxtile-wide-c2,oxtile-streamk-c2,oxtile-wide-192,$peers" \
  bash docs/wip/gemm-sweep-run.sh both 1 $((${BENCH_END:-575} - (SECONDS - start))) tn 2>&1
cd "$OUT" && tar -czf rows.tgz rows-* && rm -rf rows-*
