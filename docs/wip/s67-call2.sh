#!/usr/bin/env bash
# Session 67's call, in priority order, each step only while the call has time for it (LIMIT, default 560 s):
# tests/attention and the sanitizers of `div` (main + attn-divisor.patch) and of `ovl` (that + attn-d64-epilogue-
# overlap.patch: at head dim 64, an item's epilogue staged under the next item's first Q·Kᵀ); then A/B of `div`
# against `base` on rows of every head dim, of `ovl` against `div` on head-dim-64 rows, of `epi` and `twoq2`
# against `div`; then docs/wip/gemm-tile-decode.sh in what is left.
#   bash docs/wip/s67-call2.sh      (the run tool: carry ["gpu-pack"])
set -uo pipefail
start=$SECONDS
limit=${LIMIT:-560}
left() { echo $((limit - (SECONDS - start))); }
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
root=$(pwd)
cd gpu-pack && for p in base div ovl epi twoq2; do [ -d "$p" ] || xz -dc "$p.tar.xz" | tar -xf -; done && cd "$root"
source docs/wip/attn-ab-lib.sh
checks div
checks ovl
[ "$(left)" -gt 60 ] && AB_LIMIT=$(( $(left) < 100 ? $(left) : 100 )) ab div gpu-pack/base/oxtile gpu-pack/div/oxtile \
  64,16,512,128,full 64,16,512,128,causal 32,16,1024,128,full 64,32,512,64,full 64,32,512,64,causal \
  16,32,2048,64,full 4,32,8192,64,full 8,16,2048,256,causal
[ "$(left)" -gt 60 ] && AB_LIMIT=$(( $(left) < 80 ? $(left) : 80 )) ab ovl gpu-pack/div/oxtile gpu-pack/ovl/oxtile \
  64,32,512,64,full 64,32,512,64,causal 16,32,2048,64,full 16,32,2048,64,causal 4,32,8192,64,full
[ "$(left)" -gt 60 ] && AB_LIMIT=$(( $(left) < 80 ? $(left) : 80 )) ab epi gpu-pack/div/oxtile gpu-pack/epi/oxtile \
  64,16,512,128,full 64,16,512,128,causal 32,16,1024,128,full 64,32,512,64,full 8,16,2048,256,causal
[ "$(left)" -gt 60 ] && AB_LIMIT=$(( $(left) < 70 ? $(left) : 70 )) ab twoq2 gpu-pack/div/oxtile gpu-pack/twoq2/oxtile \
  64,16,512,128,full 64,16,512,128,causal 32,16,1024,128,full 16,16,2048,128,full
echo "=== attention done at $((SECONDS - start)) s, $(left) s left"
