#!/usr/bin/env bash
# Session 66, call 2: (1) A/B of `twoq` (main de32af2 + attn-d128-two-q.patch: head dim 128 with two Q buffers and O
# staged in Q, alone, without the work-slot patch it was timed with in call 1) against `base` (main 59e802a, the same
# attention kernels as de32af2) on head-dim-128 rows; (2) A/B of `div` (the work items decoded by multiply-high
# divisions with the host's divisors, oxtile-abi's `divisor`) against `base` on rows of every head dim; (3)
# tests/attention of `div` and compute-sanitizer over three of its tests. Alternating processes, every row checked
# against the GPU reference.
#   bash docs/wip/s66-call1.sh      (the run tool: carry ["gpu-pack"])
set -uo pipefail
start=$SECONDS
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
root=$(pwd)
cd gpu-pack && for p in base twoq div; do [ -d "$p" ] || xz -dc "$p.tar.xz" | tar -xf -; done && cd "$root"
source docs/wip/attn-ab-lib.sh   # (as it ran, `ab` was defined here, with a 120 s limit and 12 lines of table;
                                 # the `twoq` pack, main de32af2 + the deleted attn-d128-two-q.patch, is gone)
ab div gpu-pack/base/oxtile gpu-pack/div/oxtile 64,16,512,128,full 64,16,512,128,causal 32,16,1024,128,full \
  16,16,2048,128,causal 64,32,512,64,full 64,32,512,64,causal 16,32,2048,64,full 8,16,2048,256,causal
ab twoq gpu-pack/base/oxtile gpu-pack/twoq/oxtile 64,16,512,128,full 64,16,512,128,causal 32,16,1024,128,full \
  32,16,1024,128,causal 16,16,2048,128,full 4,16,8192,128,full
echo "=== tests/attention (div) at $((SECONDS - start)) s"
timeout "${TESTS_LIMIT:-90}" gpu-pack/div/attention --include-ignored --test-threads=1 > "$OUT/tests-attention.log" 2>&1
echo "rc=$?"; grep -E "test result|panicked|FAILED" "$OUT/tests-attention.log" | head -8
echo "=== sanitizers (div) at $((SECONDS - start)) s"
bash docs/wip/sanitizers.sh gpu-pack/div/attention "${SAN_LIMIT:-150}" grouped_and_multi_query_heads \
  seq_q_and_seq_k_differ_both_ways head_dim_256_with_seq_q_and_seq_k_apart_and_grouped_heads
echo "=== done at $((SECONDS - start)) s"
