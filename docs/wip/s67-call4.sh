#!/usr/bin/env bash
# Session 67's last call: pack `eo` (main 26ecffc's attention + attn-epilogue-stmatrix-on-overlap.patch: O staged by
# `stmatrix.x4` in `stage_output`) — tests/attention and the three sanitizers over three tests, then A/B against
# pack `ovl` (the attention main 26ecffc landed) on rows of every head dim.
#   bash docs/wip/s67-call4.sh      (the run tool: carry ["gpu-pack"])
set -uo pipefail
start=$SECONDS
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
root=$(pwd)
cd gpu-pack && for p in ovl eo; do [ -d "$p" ] || xz -dc "$p.tar.xz" | tar -xf -; done && cd "$root"
source docs/wip/attn-ab-lib.sh
checks eo
AB_LIMIT=200 ab eo gpu-pack/ovl/oxtile gpu-pack/eo/oxtile 64,16,512,128,full 64,16,512,128,causal \
  32,16,1024,128,full 16,16,2048,128,causal 64,32,512,64,full 64,32,512,64,causal 16,32,2048,64,full \
  4,32,8192,64,full 8,16,2048,256,causal
echo "=== done at $((SECONDS - start)) s"
