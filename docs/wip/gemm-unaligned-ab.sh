#!/usr/bin/env bash
# Issue 30: Auto with the unaligned-rows rule (pack `unal`) against main's Auto (pack `main`) on the sweep's ragged
# and square classes, cuBLAS's three peers in every run (scripts/gpu-ab.sh, builds alternating).
set -uo pipefail
cd gpu-pack
for pack in *.tar.xz; do [ -e "$pack" ] && xz -dc "$pack" | tar -xf -; done
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv
cd ..
AB_ONLY=oxtile,cublasLt,cublasLt-tuned,cublasGemmEx timeout 560 bash scripts/gpu-ab.sh gpu-pack/main/oxtile gpu-pack/unal/oxtile \
  ${PASSES:-1} --sweep --class ragged,square --layout tn,tt --rounds 2 --runs 20
