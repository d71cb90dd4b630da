#!/usr/bin/env bash
# Session 64's second call: (1) tests/gemm on main with the 64×64 split-K rule (pack s64: oxtile, tests/gemm as
# `gemm`); (2) the rule's rows (docs/wip/s64-narrow-rows.txt, tn and tt) with Auto beside every few-row kernel and
# the peers; (3) issue 25's table in one process: the wheel (gpu-pack/wheel) installed into a folder of its own,
# `python -m oxtile.bench attn` over torch_reference.py's suite plus head dim 256 (oxtile, cuDNN and the flash
# backend taking turns, held timing); (4) consumers at 240 registers against main (gpu-pack/r240, the patch
# docs/wip/attn-registers-240.patch), head dims 128 and 256; (5) our ablations per shape, in-process.
#   bash docs/wip/s64-call2.sh      (the run tool: carry ["gpu-pack"])
set -uo pipefail
start=$SECONDS
root=$(pwd)
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
cd gpu-pack && xz -dc s64.tar.xz | tar -xf - && cd s64
echo "=== tests/gemm"
timeout "${TESTS_LIMIT:-100}" ./gemm --include-ignored --test-threads=2 stream_k_on_few_row auto_ persistent_grids bf16_matches_reference > "$OUT/tests-gemm.log" 2>&1
echo "rc=$? at $((SECONDS - start)) s"; grep -E "test result|panicked|FAILED" "$OUT/tests-gemm.log" | head -8
cd "$root"
echo "=== narrow rows at $((SECONDS - start)) s"
WORK=$OUT/rows-narrow SWEEP_FILE=docs/wip/s64-narrow-rows.txt RUNS=20 ROUNDS=4 CLASSES="model-decode model-mid" \
  ONLY="oxtile,oxtile-flat-sk,oxtile-flat-64-sk,oxtile-flat,oxtile-skinny,cublasLt,cublasLt-tuned,cublasGemmEx" \
  bash docs/wip/gemm-sweep-run.sh s64 1 150 tn,tt 2>&1
echo "=== attention in one process at $((SECONDS - start)) s"
pip install --quiet --no-deps --target /tmp/oxtile-py gpu-pack/wheel/oxtile-*.whl 2>&1 | tail -2
suite=$(python3 -c "import sys; sys.path.insert(0, '$root/../shared/bench'); import torch_reference as t; print(' '.join(t.ATTN_SUITE))")
d256="8,16,2048,256,full 8,16,2048,256,causal 2,16,8192,256,full 2,16,8192,256,causal"
(cd /tmp && PYTHONPATH=/tmp/oxtile-py timeout 200 python3 -m oxtile.bench attn $suite $d256 --rounds 6 --iters 10) \
  > "$OUT/attn-inprocess.txt" 2>&1
echo "rc=$? at $((SECONDS - start)) s"; tail -5 "$OUT/attn-inprocess.txt"
echo "=== consumers at 240 registers (attn-registers-240.patch) against main at $((SECONDS - start)) s"
(cd gpu-pack && xz -dc r240.tar.xz | tar -xf -)
AB_OUT=$OUT/ab240 timeout 150 bash scripts/gpu-ab.sh --attn gpu-pack/s64/oxtile gpu-pack/r240/oxtile 2 --shapes \
  16,16,2048,128,full 8,16,4096,128,full 8,16,4096,128,causal 2,16,16384,128,full 32,16,1024,128,full \
  8,16,2048,256,full 2,16,8192,256,causal --rounds 2 --runs 30 > "$OUT/ab240.txt" 2>&1
echo "rc=$? at $((SECONDS - start)) s"; tail -12 "$OUT/ab240.txt"
echo "=== ablations at $((SECONDS - start)) s"
left=$((${END:-450} - (SECONDS - start)))
timeout "$left" gpu-pack/s64/oxtile bench attn --shapes $suite $d256 --no-stats --rounds 3 --runs 30 \
  --json "$OUT/attn-ablations.json" > "$OUT/attn-ablations.txt" 2>&1
echo "rc=$? at $((SECONDS - start)) s"
cd "$OUT" && tar -czf rows.tgz rows-* && rm -rf rows-*
