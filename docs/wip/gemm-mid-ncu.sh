#!/usr/bin/env bash
# Issue 30: the mid-sized aligned shapes where oxtile reads 0.57-0.76 of cuBLAS (session 60): which kernel each side
# runs (name, grid, block, registers, shared memory) and how long it takes under Nsight Compute at boost clocks, with
# the SMs' active cycles (how much of the GPU the grid keeps busy) and tensor-pipe activity.
set -uo pipefail
cd gpu-pack
for pack in *.tar.xz; do [ -e "$pack" ] && xz -dc "$pack" | tar -xf -; done
exe=./${BUILD:-stage}/oxtile
metrics=gpu__time_duration.sum,sm__cycles_active.avg,sm__cycles_elapsed.max,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__cluster_dim_x,launch__cluster_dim_y
for shape in ${SHAPES:-1536x1536x1536 1504x1504x1504 2504x2504x2504 777x1560x3112 1000x1000x1000 3072x3072x3072}; do
  for impl in oxtile cublasLt cublasLt-tuned; do
    timeout 100 ncu --clock-control none --metrics "$metrics" --kernel-name regex:'gemm|nvjet|xmma|cutlass|sm90|splitK|reduce' \
      --launch-skip 8 --launch-count 2 "$exe" bench gemm --shapes "$shape" --layout tt --only "$impl" --no-check \
      --warmup 8 --runs 4 --rounds 1 > "$OUT/mid-$impl-$shape.txt" 2>&1
    echo "=== $impl $shape"
    grep -E "^  [a-zA-Z_].*\(|gpu__time|sm__cycles|tensor_op|launch__" "$OUT/mid-$impl-$shape.txt" | head -13 \
      | sed -E 's/ +/ /g'
  done
done
