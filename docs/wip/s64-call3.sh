#!/usr/bin/env bash
# Session 64's third call (issue 30), run as session 65's first (the patch then landed as 59e802a): the 64×64 split ahead of the skinny kernel,
# docs/wip/gemm-narrow-over-skinny.patch (pack s64b: main with the patch applied; oxtile, tests/gemm as `gemm`): the GEMM tests it touches, memcheck / racecheck / synccheck over the flag-reset test (the 64×64 split-K
# launched three times per plan), then the 40 sweep shapes whose kernel it changes (docs/wip/s64-skinny-rows.txt,
# tn and tt) with Auto, the kernels it replaced and the peers; last, issue 25's in-process table again if time is left.
#   bash docs/wip/s64-call3.sh      (the run tool: carry ["gpu-pack"])
set -uo pipefail
start=$SECONDS
root=$(pwd)
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
cd gpu-pack && xz -dc s64b.tar.xz | tar -xf - && cd s64b
echo "=== tests/gemm"
timeout "${TESTS_LIMIT:-120}" ./gemm --include-ignored --test-threads=2 skinny stream_k_plans_reset stream_k_on_few_row persistent_grids \
  > "$OUT/tests-gemm.log" 2>&1
echo "rc=$? at $((SECONDS - start)) s"; grep -E "test result|panicked|FAILED" "$OUT/tests-gemm.log" | head -8
if [ "${SAN_LIMIT:-90}" -gt 0 ]; then
  echo "=== sanitizers"
  bash "$root/docs/wip/sanitizers.sh" ./gemm "${SAN_LIMIT:-90}" stream_k_plans_reset_their_flags_for_the_next_launch
fi
cd "$root"
echo "=== rows at $((SECONDS - start)) s"
WORK=$OUT/rows-skinny SWEEP_FILE=docs/wip/s64-skinny-rows.txt RUNS=20 ROUNDS=4 CLASSES="model-decode" \
  ONLY="oxtile,oxtile-skinny,oxtile-flat,oxtile-flat-64-sk,oxtile-flat-sk,cublasLt,cublasLt-tuned,cublasGemmEx" \
  bash docs/wip/gemm-sweep-run.sh s64b 1 "${ROWS_LIMIT:-120}" tn,tt 2>&1
left=$((${END:-400} - (SECONDS - start)))
echo "=== attention in one process at $((SECONDS - start)) s, $left s left"
if [ "$left" -gt 60 ]; then
  pip install --quiet --no-deps --target /tmp/oxtile-py gpu-pack/wheel/oxtile-*.whl > /dev/null 2>&1
  suite=$(python3 -c "print(' '.join([f'{16384 // s * 2},16,{s},128,{m}' for s in (512, 1024, 2048, 4096, 8192, 16384) for m in ('full', 'causal')] + [f'{16384 // s * 2},32,{s},64,{m}' for s in (512, 2048, 8192) for m in ('full', 'causal')]))")
  (cd /tmp && PYTHONPATH=/tmp/oxtile-py timeout "$left" python3 -m oxtile.bench attn $suite 8,16,2048,256,full \
    8,16,2048,256,causal 2,16,8192,256,full 2,16,8192,256,causal --rounds 6 --iters 10) > "$OUT/attn-inprocess.txt" 2>&1
  echo "rc=$? at $((SECONDS - start)) s"
fi
cd "$OUT" && tar -czf rows.tgz rows-* && rm -rf rows-*
