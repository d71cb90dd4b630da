#!/usr/bin/env bash
# Issue 30: are operands whose rows are not a multiple of 128 bytes what slows the single-block GEMM variants?
# Each misaligned shape next to an aligned twin of about its size, every variant forced beside Auto and the
# cuBLAS peers, in one process per layout. BUILD: a pack of gpu-pack/ (docs/wip/build-pack.sh).
set -uo pipefail
build=${1:-main}
cd gpu-pack
for pack in *.tar.xz; do [ -e "$pack" ] && xz -dc "$pack" | tar -xf -; done
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv
shapes=${SHAPES:-1000x1000x1000,1024x1024x1024,2000x2000x2000,2048x2048x2048,3000x3000x3000,3072x3072x3072,4000x4000x4000,4096x4096x4096,777x1560x3112,768x1536x3072,3001x5000x2008,3072x5120x2048,2500x9000x3504,2560x8960x3456,12345x4320x1000,12288x4352x1024,511x16376x1536,512x16384x1536,6000x6000x104,6016x6016x128,4096x4040x4096,4096x4096x4040,1500x1500x1500,2500x2500x2500,5000x5000x5000,7000x7000x7000,8000x8000x8000,1234x5680x2344,3333x2224x4440,640x2000x8000,2000x640x6000,6000x6000x6000}
only=${ONLY:-oxtile,oxtile-wide,oxtile-wide-c2,oxtile-square,oxtile-square-c2,oxtile-pingpong,oxtile-pingpong-c2,oxtile-narrow,oxtile-narrow-c2,oxtile-flat,oxtile-streamk,oxtile-streamk-c2,cublasLt,cublasLt-tuned,cublasGemmEx}
for layout in ${LAYOUTS:-tn tt}; do
  echo "=== layout $layout"
  timeout 290 "./$build/oxtile" bench gemm --shapes "$shapes" --layout "$layout" --only "$only" --rounds 2 --runs 20 \
    --json "$OUT/align-$build-$layout.json" 2>&1
done
