#!/usr/bin/env bash
# Three device calls for the attention backward patches of sessions 36 and 37 (docs/wip/README.md):
# attn-bwd-staggered.patch (the deterministic mode's staggered order as kernels of their own), on top of it
# attn-bwd-d64-q128.patch (head dim 64 with 128-row query tiles) and attn-bwd-d256.patch (head dim 256, consumers
# splitting the head dim), and py-attention-backward.patch (oxtile.attention's autograd on the backward kernels).
# Needs, in gpu-pack/ (carried with `run`, carry ["gpu-pack"]; built by docs/wip/build-pack.sh): stag.tar.xz and
# d256.tar.xz, folders `stag` and `d256` holding the stripped release `oxtile` and tests/attention_backward binary
# (`attention_backward`) of main with the first patch, and with all three kernel patches (its head dim 64 and 128
# kernels are the q128 patch's, SASS-identical); for `python`, the wheel built with the Python patch (oxtile-*.whl)
# and that patch's python/tests copied to gpu-pack/pytests.
#
#   bash docs/wip/attn-bwd-call.sh check     # ~3 min: both builds' tests/attention_backward (both deterministic
#                                            # orders bit for bit, the fallback past residency, head dim 256 in
#                                            # d256)
#   bash docs/wip/attn-bwd-call.sh sanitize  # ~5 min: d256's tests under memcheck, racecheck and synccheck (the
#                                            # three at once, sanitizer-sized problems)
#   bash docs/wip/attn-bwd-call.sh python  # ~3 min: py-attention-backward.patch's wheel (gpu-pack/oxtile-*.whl)
#                                          # and its python/tests (gpu-pack/pytests) with the GPU expected
#   bash docs/wip/attn-bwd-call.sh time    # ~9 min: `gpu-ab.sh --attn stag d256 2 --backward` on d64 and d128
#                                          # rows: per build the plain kernel, the deterministic mode (staggered
#                                          # where it can) and its ascending order (rows oxtile-bwd, -det, -det-asc);
#                                          # then head dim 256 against cuDNN, adjacent in time
#   bash docs/wip/attn-bwd-call.sh ncu     # ~2 min, optional: Nsight Compute on one launch of the d128 and d256
#                                          # main kernels (speed of light, warp stalls, shared memory)
# Logs and JSON go to $OUT.
set -uo pipefail
export OXTILE_CUDA_TOOLS=/nonexistent   # no pip on the GPU machine; the static checks run in CI
root=$(pwd)
cd gpu-pack
for t in stag d256; do xz -dc "$t.tar.xz" | tar -xf -; done
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv
case "${1:-}" in
check)
  for t in stag d256; do
    echo "=== $t: tests/attention_backward"
    ( cd $t && timeout 240 ./attention_backward --include-ignored --test-threads=1 > "$OUT/tests-$t.log" 2>&1 )
    grep -E "^(ok|FAIL)|test result|FAILED|panicked" "$OUT/tests-$t.log" | head -60
  done
  ;;
sanitize)
  (
    cd d256
    export OXTILE_UNDER_SANITIZER=1
    for tool in memcheck racecheck synccheck; do
      extra=(); [ "$tool" = racecheck ] && extra=(--racecheck-report all)
      ( timeout 540 compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 99 ./attention_backward --ignored \
          --test-threads=1 > "$OUT/san-$tool.log" 2>&1; echo "rc=$?" >> "$OUT/san-$tool.log" ) &
    done
    wait
    for tool in memcheck racecheck synccheck; do
      echo "=== d256 under $tool"
      grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test result|rc=|FAILED|panicked" "$OUT/san-$tool.log" | head -6
    done
  )
  ;;
time)
  AB_OUT=$OUT/ab bash "$root/scripts/gpu-ab.sh" --attn stag/oxtile d256/oxtile 2 --backward --shapes \
    4,32,4096,64,full 4,32,4096,64,causal 16,32,1024,64,full 4,16,4096,128,full 4,16,4096,128,causal \
    1,16,16384,128,causal 2>&1 | tail -30
  echo "rows failing the reference check:"; grep -l "FAIL" "$OUT"/ab/*.log
  echo "=== head dim 256 (d256 build) against cuDNN, adjacent in time"
  timeout 240 bash "$root/scripts/adjacent_attn_bwd.sh" "$(pwd)/d256/oxtile" "$OUT/d256" 4,16,4096,256,full \
    4,16,4096,256,causal 16,16,1024,256,full 2>&1 | tail -8
  grep -h "FAIL" "$OUT"/d256/ours_*.txt ;;
ncu)
  # Where the backward's time goes (for the next kernel change; optional): one launch each of the head-dim-128 and
  # 256 main kernels under Nsight Compute, clocks left alone.
  for spec in "4,16,4096,128,full attn_bwd_bf16_d128_sm90" "4,16,4096,256,full attn_bwd_bf16_d256_sm90"; do
    set -- $spec
    echo "=== $2 ($1)"
    timeout 200 ncu --clock-control none -k "regex:^$2\$" -c 1 --section SpeedOfLight --section WarpStateStats \
      --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section Occupancy \
      ./d256/oxtile bench attn --backward --shapes "$1" --rounds 1 > "$OUT/ncu-$2.txt" 2>&1
    grep -E "Duration|SM Frequency|Compute \(SM\) Throughput|Memory Throughput|Stall|Warp Cycles Per|Issue Slots|Shared|Bank" \
      "$OUT/ncu-$2.txt" | head -40
  done ;;
python)
  site=$(mktemp -d)
  python3 -m pip install --quiet --no-index --no-deps --target "$site" oxtile-*.whl || exit 1
  PYTHONPATH="$site" OXTILE_EXPECT_GPU=1 timeout 280 python3 -m pytest -q -p no:cacheprovider -rs --durations=8 \
    pytests > "$OUT/pytest.log" 2>&1
  tail -30 "$OUT/pytest.log" ;;
*) echo "usage: $0 check|sanitize|time|python|ncu" >&2; exit 2 ;;
esac
