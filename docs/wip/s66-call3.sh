#!/usr/bin/env bash
# Session 66's third call, never run (no device time was left after the failed starts): tests/attention of `div`
# (main de32af2 + docs/wip/attn-divisor.patch: the work items decoded by multiply-high divisions, q_tiles from the
# host) and compute-sanitizer over three of its tests first; then the A/B of `div` against `base` (main 59e802a's
# attention, the same kernels as de32af2's) on rows of every head dim, then of `twoq2` (div +
# attn-d128-two-q-deferred.patch: head dim 128 with two Q buffers and O staged in Q, each buffer handed back at the
# next item's first Q·Kᵀ) against `div`, and of `epi` (div + attn-epilogue-stmatrix.patch: O staged by one
# `stmatrix.x4` per 16 columns, the row sums inverted by MUFU.RCP alone) against `div`; then tests/attention and the
# sanitizers of `epi`. Packs `base`, `div`, `twoq2` and `epi` (oxtile, tests/attention as `attention`) are in
# gpu-pack/ (git-ignored); about 250 s of wall time.
#   bash docs/wip/s66-call3.sh      (the run tool: carry ["gpu-pack"])
set -uo pipefail
start=$SECONDS
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
root=$(pwd)
cd gpu-pack && for p in base div twoq2 epi; do [ -d "$p" ] || xz -dc "$p.tar.xz" | tar -xf -; done && cd "$root"
source docs/wip/attn-ab-lib.sh
checks div
ab div gpu-pack/base/oxtile gpu-pack/div/oxtile 64,16,512,128,full 64,16,512,128,causal 32,16,1024,128,full \
  64,32,512,64,full 64,32,512,64,causal 16,32,2048,64,full 4,32,8192,64,full 8,16,2048,256,causal
ab epi gpu-pack/div/oxtile gpu-pack/epi/oxtile 64,16,512,128,full 64,16,512,128,causal 32,16,1024,128,full \
  64,32,512,64,full 16,32,2048,64,full 8,16,2048,256,causal
ab twoq2 gpu-pack/div/oxtile gpu-pack/twoq2/oxtile 64,16,512,128,full 64,16,512,128,causal 32,16,1024,128,full \
  16,16,2048,128,full
checks epi
echo "=== done at $((SECONDS - start)) s"
