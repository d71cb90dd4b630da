#!/usr/bin/env bash
# Session 64's third call, if the consumers at 240 registers won in call 2: tests/attention of that build (pack
# r240: oxtile, tests/attention as `attention`) and the three sanitizers over its head-dim-128 and 256 tests.
#   bash docs/wip/s64-call3.sh      (the run tool: carry ["gpu-pack"])
set -uo pipefail
start=$SECONDS
root=$(pwd)
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
cd gpu-pack && xz -dc r240.tar.xz | tar -xf - && cd r240
echo "=== tests/attention"
timeout 200 ./attention --include-ignored --test-threads=2 > "$OUT/tests-attention.log" 2>&1
echo "rc=$? at $((SECONDS - start)) s"; grep -E "test result|panicked|FAILED" "$OUT/tests-attention.log" | head -8
echo "=== sanitizers"
bash "$root/docs/wip/sanitizers.sh" ./attention 200 sequence_lengths_off_the_tile_grid head_dim_256_on_lengths \
  grouped_and_multi_query_heads
echo "done at $((SECONDS - start)) s"
