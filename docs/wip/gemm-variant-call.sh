#!/usr/bin/env bash
# One device call for a GEMM tile or rule (issue 30): unpack PACK (oxtile, tests/gemm as `gemm`), run tests/gemm
# (TESTS: its test filters, default all), the three sanitizers over SAN_TEST, then the contenders ONLY on the rows of
# ROWS in LAYOUTS until BENCH_END seconds after the start (default 570), RUNS launches in ROUNDS rounds per row.
#   PACK=NAME SAN_TEST=TEST ROWS=FILE ONLY=a,b,... [TESTS="f1 f2"] [LAYOUTS=tn,tt] [CLASSES=...] [RUNS=10 ROUNDS=2] \
#     bash docs/wip/gemm-variant-call.sh
# Session 63's calls, as they ran:
# - sq192 (the 192×192 tile): PACK=sq192 SAN_TEST=stream_k_matches_reference_where_tiles_are_split_between_blocks
#   ROWS=docs/wip/sq192-rows.txt LAYOUTS=tn ONLY=oxtile,oxtile-square-192,oxtile-square-192-sk,oxtile-wide-192,
#   oxtile-wide-192-sk,oxtile-streamk,oxtile-wide-c2,oxtile-streamk-c2 plus the three peers;
# - s63 (the rules' A/B): PACK=s63 SAN_TEST=three_consumer_tiles_match_reference_at_their_edges
#   ROWS=docs/wip/s63-changed-rows.txt RUNS=20 ROUNDS=4 ONLY=oxtile,oxtile-streamk,oxtile-streamk-c2,oxtile-wide-c2,
#   oxtile-wide-192-sk,oxtile-wide-192,oxtile-wide,oxtile-square-192 plus the peers.
# For the patches: gemm-square192-c2.patch (PACK=sq192c2, SAN_TEST=three_consumer_tiles_match_reference_at_their_edges,
# ROWS=docs/wip/sq192-rows.txt, LAYOUTS=tn, ONLY=oxtile,oxtile-square-192,oxtile-square-192-c2,oxtile-wide-c2,
# oxtile-streamk-c2,oxtile-wide-192 plus the peers) and gemm-flat64-splitk.patch (PACK=flat64,
# TESTS="bf16_matches_reference_in_every_layout stream_k_on_few_row_tiles",
# SAN_TEST=stream_k_on_few_row_tiles_matches_reference_where_tiles_are_split, ROWS=docs/wip/flat64-rows.txt, RUNS=20
# ROUNDS=4, ONLY=oxtile,oxtile-flat-sk,oxtile-flat-64-sk,oxtile-flat,oxtile-flat-64,oxtile-skinny plus the peers).
# Build a pack: apply the patch, `cargo build --release --locked -p oxtile --bins --tests`, copy target/release/oxtile
# and the newest target/release/deps/gemm-* (as `gemm`) into gpu-pack/NAME, strip, `tar | xz` into NAME.tar.xz.
set -uo pipefail
: "${PACK:?}" "${SAN_TEST:?}" "${ROWS:?}" "${ONLY:?}"
peers=cublasLt,cublasLt-tuned,cublasGemmEx
start=$SECONDS
root=$(pwd)
cd gpu-pack && xz -dc "$PACK.tar.xz" | tar -xf - && cd "$PACK"
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
echo "=== tests/gemm"
# shellcheck disable=SC2086
timeout "${TESTS_LIMIT:-220}" ./gemm --include-ignored --test-threads=2 ${TESTS:-} > "$OUT/tests-gemm.log" 2>&1
echo "rc=$? at $((SECONDS - start)) s"; grep -E "test result|panicked|FAILED" "$OUT/tests-gemm.log" | head -8
echo "=== sanitizers over $SAN_TEST"
bash "$root/docs/wip/sanitizers.sh" ./gemm "${SAN_LIMIT:-120}" "$SAN_TEST"
cd "$root"
left=$((${BENCH_END:-570} - (SECONDS - start)))
echo "=== measurement, at $((SECONDS - start)) s, $left s left"
WORK=$OUT/rows SWEEP_FILE=$ROWS RUNS=${RUNS:-10} ROUNDS=${ROUNDS:-2} \
  CLASSES="${CLASSES:-model-decode model-mid model-large square ragged}" ONLY="$ONLY,$peers" \
  bash docs/wip/gemm-sweep-run.sh "$PACK" 1 "$left" "${LAYOUTS:-tn,tt}" 2>&1
cd "$OUT" && tar -czf rows.tgz rows && rm -rf rows
