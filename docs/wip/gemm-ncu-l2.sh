#!/usr/bin/env bash
# Issue 30: where our GEMM's extra L2 sectors come from. At 4096³ tn oxtile-wide-c2 made 41.7 M L2 sector accesses
# against cuBLAS's 33.2 M with the same tile and a cluster sharing one operand (session 60, gemm-align-ncu.sh): the
# L2's sectors by operation and by source unit (the SMs, or the other L2 partition through the fabric), and DRAM
# bytes, for oxtile-wide, oxtile-wide-c2 and cuBLASLt at 4096³ and 4096×4096×4040 tn, boost clocks.
set -uo pipefail
cd gpu-pack
for pack in *.tar.xz; do [ -e "$pack" ] && xz -dc "$pack" | tar -xf -; done
exe=./${BUILD:-stage}/oxtile
metrics=lts__t_sectors.sum,lts__t_requests.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,lts__t_sectors_op_atom.sum,lts__t_sectors_op_red.sum,lts__t_sectors_srcunit_tex.sum,lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum
for shape in 4096x4096x4096 4096x4096x4040; do
  for impl in oxtile-wide oxtile-wide-c2 cublasLt; do
    timeout 120 ncu --clock-control none --metrics "$metrics" --kernel-name regex:'gemm|nvjet|xmma|cutlass|sm90' \
      --launch-skip 3 --launch-count 1 "$exe" bench gemm --shapes "$shape" --layout tn --only "$impl" --no-check \
      --warmup 4 --runs 2 --rounds 1 > "$OUT/l2-$impl-$shape.txt" 2>&1
    echo "=== $impl $shape"
    grep -E "^  [a-zA-Z_].*\(|lts__|dram__|gpu__time|ERR|rror" "$OUT/l2-$impl-$shape.txt" | head -20
  done
done
