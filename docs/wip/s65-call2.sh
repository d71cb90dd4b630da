#!/usr/bin/env bash
# Session 65, call 2: where an attention forward work item's time goes (pack `instr`: main 59e802a with cycle counters
# in the forward's statistics launch, an experiment build, not for main), then the GEMM shape where every variant
# loses against cuBLAS at 16384 rows (16384×24576×1536 and 8192×24576×1536, tn and tt), with the SM clock per row.
#   bash docs/wip/s65-call2.sh      (the run tool: carry ["gpu-pack"])
set -uo pipefail
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
cd gpu-pack && xz -dc instr.tar.xz | tar -xf - && cd instr
timeout 200 ./oxtile bench attn --only oxtile --runs 20 --warmup 5 --shapes 64,16,512,128,full 64,16,512,128,causal \
  32,16,1024,128,full 16,16,2048,128,full 4,16,8192,128,full 4,16,8192,128,causal 64,32,512,64,full \
  64,32,512,64,causal 16,32,2048,64,full 4,32,8192,64,full 8,16,2048,256,full 2>&1 | grep -vE "^#" | tail -40
timeout 150 ./oxtile bench gemm --shapes 16384x24576x1536,8192x24576x1536 --layout tn,tt --runs 10 --rounds 2 \
  --only oxtile,oxtile-pingpong,oxtile-wide-c2,oxtile-wide,cublasLt,cublasLt-tuned,cublasGemmEx 2>&1 | grep -vE "^#" | tail -30
