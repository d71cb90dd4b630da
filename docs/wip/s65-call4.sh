#!/usr/bin/env bash
# Session 65, call 4 (call 3 cut to the device time left): the attention forward's per-item phases, finer (pack
# `instr`, docs/wip/attn-item-phases-instr.patch), then the A/B of `e12` (attn-work-slot.patch's first form, whose
# head dim 256 spilled 16 bytes, plus attn-d128-two-q.patch: work items published decoded, head dim 128 with two Q
# buffers and O staged in Q) against main 59e802a (pack `base`) on ten rows, alternating processes, every row checked
# against the GPU reference; tests/attention of e12 if time is left. Never ran: no machine after call 2.
#   bash docs/wip/s65-call4.sh      (the run tool: carry ["gpu-pack"])
set -uo pipefail
start=$SECONDS
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
root=$(pwd)
cd gpu-pack && for p in *.tar.xz; do xz -dc "$p" | tar -xf -; done && cd "$root"
timeout 60 gpu-pack/instr/oxtile bench attn --only oxtile --runs 5 --warmup 2 --shapes 64,16,512,128,full \
  64,16,512,128,causal 4,16,8192,128,full 64,32,512,64,full 4,32,8192,64,full 2>&1 | grep -E "timing|split"
echo "=== e12 against base at $((SECONDS - start)) s"
AB_OUT=$OUT/e12 timeout "${AB_LIMIT:-130}" bash scripts/gpu-ab.sh --attn gpu-pack/base/oxtile gpu-pack/e12/oxtile 2 \
  --only oxtile --runs 20 --shapes 64,16,512,128,full 64,16,512,128,causal 32,16,1024,128,full \
  32,16,1024,128,causal 16,16,2048,128,full 4,16,8192,128,full 64,32,512,64,full 64,32,512,64,causal \
  16,32,2048,64,full 8,16,2048,256,full 2>&1 | grep -vE "^#|^===|^op |^attn " | tail -14
echo "=== checks"; grep -hE "^attn " $OUT/e12/ab-*.log | awk '{print $(NF-1), $NF}' | sort | uniq -c | head
left=$((${END:-240} - (SECONDS - start)))
echo "=== tests/attention (e12) at $((SECONDS - start)) s, $left s left"
if [ "$left" -gt 30 ]; then
  timeout "$left" gpu-pack/e12/attention --include-ignored --test-threads=1 > "$OUT/tests-attention.log" 2>&1
  echo "rc=$?"; grep -E "test result|panicked|FAILED" "$OUT/tests-attention.log" | head -8
fi
