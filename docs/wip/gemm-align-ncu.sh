#!/usr/bin/env bash
# Issue 30: what a misaligned operand costs the wide kernel, and what cuBLAS runs instead: Nsight Compute on one
# launch each of oxtile-wide, oxtile-wide-c2 and cuBLASLt at 4096³ and 4096×4096×4040 (tn: both operands' rows
# 8080 bytes apart, off 128-byte lines). Reports to $OUT, one file per run; kernel names and durations printed.
# NCU_EXTRA: more ncu arguments, e.g. `--clock-control none` (the boost clocks the benchmark runs at).
set -uo pipefail
cd gpu-pack
for pack in *.tar.xz; do [ -e "$pack" ] && xz -dc "$pack" | tar -xf -; done
exe=./${BUILD:-main}/oxtile
for shape in 4096x4096x4096 4096x4096x4040; do
  for impl in oxtile-wide oxtile-wide-c2 cublasLt; do
    # shellcheck disable=SC2086
    timeout 120 ncu ${NCU_EXTRA:-} --metrics lts__t_requests.sum,lts__t_sectors.sum --kernel-name regex:'gemm|nvjet|xmma|cutlass|sm90' --launch-skip 3 --launch-count 1 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
      "$exe" bench gemm --shapes "$shape" --layout tn --only "$impl" --no-check --warmup 4 --runs 2 --rounds 1 \
      > "$OUT/ncu-$impl-$shape.txt" 2>&1
    echo "=== $impl $shape"
    grep -E '^\s+[a-zA-Z_0-9]+.*\(\d+, \d+, \d+\)x|^  [a-z_0-9]+.*Context|Duration|SM Frequency|lts__t_|DRAM Throughput|L2 Cache Throughput|L1/TEX Hit|L2 Hit Rate|Mem Busy|Max Bandwidth|Compute \(SM\) Throughput' "$OUT/ncu-$impl-$shape.txt" | head -16
    grep -m1 -E '^  [A-Za-z_].*\(' "$OUT/ncu-$impl-$shape.txt"
  done
done
