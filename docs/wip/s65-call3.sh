#!/usr/bin/env bash
# Session 65, call 3: (1) the attention forward's per-item phases, finer (pack `instr`: cycle counters in the
# statistics launch, experiment build); (2) A/B against main (pack `base`) of `e12`: the producer publishes each work
# item decoded (the consumers divide nothing) and head dim 128 has two Q buffers with O staged in Q; (3)
# tests/attention of e12 (as `attention`), memcheck, racecheck and synccheck over three of them. Alternating processes (scripts/gpu-ab.sh --attn), every row checked against the GPU reference.
#   bash docs/wip/s65-call3.sh      (the run tool: carry ["gpu-pack"])
set -uo pipefail
start=$SECONDS
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
root=$(pwd)
cd gpu-pack && for p in *.tar.xz; do xz -dc "$p" | tar -xf -; done && cd "$root"
timeout 100 gpu-pack/instr/oxtile bench attn --only oxtile --runs 10 --warmup 3 --shapes 64,16,512,128,full \
  64,16,512,128,causal 4,16,8192,128,full 64,32,512,64,full 4,32,8192,64,full 2>&1 | grep -E "timing|split"
d128=$(python3 -c "print(' '.join([f'{16384 // s * 2},16,{s},128,{m}' for s in (512, 1024, 2048, 4096, 8192, 16384) for m in ('full', 'causal')]))")
d64="64,32,512,64,full 64,32,512,64,causal 16,32,2048,64,full 16,32,2048,64,causal 4,32,8192,64,full 8,16,2048,256,full"
echo "=== e12 against base at $((SECONDS - start)) s"
AB_OUT=$OUT/e12 timeout "${AB_LIMIT:-200}" bash scripts/gpu-ab.sh --attn gpu-pack/base/oxtile gpu-pack/e12/oxtile 2 \
  --only oxtile --runs 30 --shapes $d128 $d64 2>&1 | grep -vE "^#|^===|^op |^attn " | tail -22
echo "=== checks"; grep -hE "^attn " $OUT/e12/ab-*.log | awk '{print $(NF-1), $NF}' | sort | uniq -c | head
echo "=== tests/attention (e12) at $((SECONDS - start)) s"
timeout "${TESTS_LIMIT:-150}" gpu-pack/e12/attention --include-ignored --test-threads=1 > "$OUT/tests-attention.log" 2>&1
echo "rc=$?"; grep -E "test result|panicked|FAILED" "$OUT/tests-attention.log" | head -8
left=$((${END:-540} - (SECONDS - start)))
echo "=== sanitizers at $((SECONDS - start)) s, $left s left"
[ "$left" -gt 40 ] && bash docs/wip/sanitizers.sh gpu-pack/e12/attention $((left - 10)) \
  sequence_lengths_off_the_tile_grid seq_q_and_seq_k_differ_both_ways grouped_and_multi_query_heads
