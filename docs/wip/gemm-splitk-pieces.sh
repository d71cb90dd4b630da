#!/usr/bin/env bash
# Session 62: split-K piece sizes on the small-N, deep-K rows (docs/wip/splitk-rows.txt). Pack `pieces`: oxtile built
# with MIN_SPLIT_K_PIECE_K_TILES = 4 (main), 14 and 28 (at most 8 and 4 pieces at K = 7168). Each binary times Auto,
# the split 64×128 and 128×128 tiles and the three cuBLAS peers in one process, tn; the binaries take turns twice.
set -uo pipefail
cd gpu-pack && xz -dc pieces.tar.xz | tar -xf - && cd ..
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
for round in 1 2; do
  for p in 4 14 28; do
    gpu-pack/pieces/oxtile-p$p bench gemm --sweep --sweep-file docs/wip/splitk-rows.txt --layout tn --no-check \
      --only oxtile,oxtile-flat-sk,oxtile-square-sk,cublasLt,cublasLt-tuned,cublasGemmEx --runs 20 --rounds 3 \
      --warmup 3 --json "$OUT/p$p-r$round.json" > "$OUT/p$p-r$round.txt" 2>&1
    echo "p$p round $round rc=$? at $SECONDS s"
  done
done
# Then the binary with Variant::square_or_split_wide192 and Variant::flat (oxtile-sq): Auto beside the tilings they weigh, on the
# shapes it moves and four it keeps (docs/wip/square-split-rows.txt), tn and tt.
gpu-pack/pieces/oxtile-sq bench gemm --sweep --sweep-file docs/wip/square-split-rows.txt --layout tn,tt --no-check \
  --only oxtile,oxtile-square,oxtile-wide-192-sk,oxtile-flat,oxtile-flat-sk,cublasLt,cublasLt-tuned,cublasGemmEx --runs 20 --rounds 3 --warmup 3 \
  --json "$OUT/sq.json" > "$OUT/sq.txt" 2>&1
echo "sq rc=$? at $SECONDS s"
