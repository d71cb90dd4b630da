#!/usr/bin/env bash
# Session 66, prepared and never run: `gemm-tile-decode.patch` (TileScheduler::tile decodes (m, n) from the item's
# place in its group: one division by a run-time value per tile instead of two). Pack `gdec` (main 8c5d0f3 + the
# patch: oxtile, tests/gemm as `gemm`) against `base` (main 59e802a's oxtile; its GEMM kernels are main's, and its
# Auto differs from main's only where K ≤ 2624 on few-tile shapes, none of the rows below). (1) tests/gemm's
# tests over every variant's schedule, (2) the sanitizers over the odd and edge shapes, (3) A/B on rows with many
# tiles and short K, where a tile's fixed cost weighs most (tn and tt; in-process cuBLASLt in every run).
#   bash docs/wip/gemm-tile-decode.sh      (the run tool: carry ["gpu-pack"])
set -uo pipefail
start=$SECONDS
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
root=$(pwd)
cd gpu-pack && for p in base gdec; do [ -d "$p" ] || xz -dc "$p.tar.xz" | tar -xf -; done && cd "$root"
echo "=== tests/gemm (gdec) at $((SECONDS - start)) s"
timeout "${TESTS_LIMIT:-150}" gpu-pack/gdec/gemm --include-ignored --test-threads=1 bf16_matches_reference \
  three_consumer_tiles ping_pong_kernels stream_k_matches split_k_pieces stream_k_plans_reset \
  > "$OUT/tests-gemm.log" 2>&1
echo "rc=$?"; grep -E "test result|panicked|FAILED" "$OUT/tests-gemm.log" | head -8
echo "=== sanitizers (gdec) at $((SECONDS - start)) s"
bash docs/wip/sanitizers.sh gpu-pack/gdec/gemm "${SAN_LIMIT:-120}" bf16_matches_reference_in_every_layout_on_odd
echo "=== A/B at $((SECONDS - start)) s"
AB_OUT=$OUT/gdec timeout "${AB_LIMIT:-200}" bash scripts/gpu-ab.sh gpu-pack/base/oxtile gpu-pack/gdec/oxtile 2 \
  --layout tn,tt --shapes 8192x32768x512,2048x32768x512,1024x24576x1536,2048x7168x2048,4096x4096x1024,3072x3072x3072,8192x8192x8192,16384x4096x768 \
  2>&1 | grep -vE "^#|^===" | tail -24
echo "=== done at $((SECONDS - start)) s"
