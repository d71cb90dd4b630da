#!/usr/bin/env bash
# Device calls for the attention backward (issue 26; docs/wip/README.md). Each mode unpacks the packs of gpu-pack/
# it finds (carried with `run`, carry ["gpu-pack"]; built by docs/wip/build-pack.sh: a folder per build holding its
# stripped release `oxtile` and tests/attention_backward binary `attention_backward`) and names the ones it uses.
# Sessions 36-37 ran check, sanitize, time, python and ncu over stag (main + the staggered patch) and d256 (+ q128,
# d256, the finite-dS clamp); session 38 ran ab (stag, nofin, d256), table 128 (d256), final (nofin, sat = main as
# landed, the wheel in gpu-pack/oxtile-*.whl with gpu-pack/pytests); `writer` is the next one (writer, sat).
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
for t in stag d256 nofin sat base writer; do [ -f "$t.tar.xz" ] && xz -dc "$t.tar.xz" | tar -xf -; done
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
ab)
  # Session 38: where the d256 pack's head-dim-128 loss comes from. nofin = stag + q128 + d256 without the finite-dS
  # clamp: stag against nofin is q128's code placement alone, nofin against d256 the clamp alone.
  echo "=== nofin: tests/attention_backward"
  ( cd nofin && timeout 120 ./attention_backward --include-ignored --test-threads=1 > "$OUT/tests-nofin.log" 2>&1 )
  grep -E "test result|FAILED|panicked" "$OUT/tests-nofin.log" | head -20
  echo "=== stag against nofin (q128's placement at head dim 128)"
  AB_OUT=$OUT/ab1 bash "$root/scripts/gpu-ab.sh" --attn stag/oxtile nofin/oxtile 2 --backward --shapes \
    4,16,4096,128,full 4,16,4096,128,causal 1,16,16384,128,causal 2>&1 | tail -14
  echo "=== nofin against d256 (the finite-dS clamp)"
  AB_OUT=$OUT/ab2 bash "$root/scripts/gpu-ab.sh" --attn nofin/oxtile d256/oxtile 2 --backward --shapes \
    4,16,4096,128,full 4,16,4096,128,causal 1,16,16384,128,causal 4,32,4096,64,full 2>&1 | tail -18
  echo "rows failing the reference check:"; grep -l "FAIL" "$OUT"/ab1/*.log "$OUT"/ab2/*.log ;;
final)
  # Session 38: sat = stag + q128 + d256 + dS packed with cvt.rn.satfinite (the NaN fix at no cost, PTX 8.1): its
  # tests, the three sanitizers, the A/B against nofin (the same without the fix), then head dim 64's table.
  echo "=== sat: tests/attention_backward"
  ( cd sat && timeout 120 ./attention_backward --include-ignored --test-threads=1 > "$OUT/tests-sat.log" 2>&1 )
  grep -E "test result|FAILED|panicked" "$OUT/tests-sat.log" | head -20
  (
    cd sat
    export OXTILE_UNDER_SANITIZER=1
    for tool in memcheck racecheck synccheck; do
      extra=(); [ "$tool" = racecheck ] && extra=(--racecheck-report all)
      ( timeout 200 compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 99 ./attention_backward --ignored \
          --test-threads=1 > "$OUT/san-$tool.log" 2>&1; echo "rc=$?" >> "$OUT/san-$tool.log" ) &
    done
    wait
    for tool in memcheck racecheck synccheck; do
      echo "=== sat under $tool"
      grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test result|rc=|FAILED|panicked" "$OUT/san-$tool.log" | head -6
    done
  )
  echo "=== nofin against sat"
  AB_OUT=$OUT/ab3 bash "$root/scripts/gpu-ab.sh" --attn nofin/oxtile sat/oxtile 2 --backward --shapes \
    4,16,4096,128,full 4,16,4096,128,causal 1,16,16384,128,causal 4,32,4096,64,full 2>&1 | tail -16
  echo "=== python (the wheel of main with every backward patch)"
  (cd "$root" && bash docs/wip/attn-bwd-call.sh python 2>&1 | tail -6)
  if [ -n "${WITH_TABLE:-}" ]; then
    echo "=== head dim 64 table (sat)"
    (cd "$root" && TABLE_BUILD=sat TABLE_TIMEOUT=$((560 - SECONDS)) bash docs/wip/attn-bwd-call.sh table 64 2>&1 | tail -14)
  fi ;;
writer)
  # Session 38: attn-bwd-dq-writer.patch (the dQ reductions and the deterministic mode's turns moved to a writer
  # warp) against main's kernels: its tests, the three sanitizers, the A/B (BASE, default sat: main's kernels).
  b=${BASE:-sat}
  echo "=== writer: tests/attention_backward"
  ( cd writer && timeout 120 ./attention_backward --include-ignored --test-threads=1 > "$OUT/tests-writer.log" 2>&1 )
  grep -E "test result|FAILED|panicked" "$OUT/tests-writer.log" | head -20
  (
    cd writer
    export OXTILE_UNDER_SANITIZER=1
    for tool in memcheck racecheck synccheck; do
      extra=(); [ "$tool" = racecheck ] && extra=(--racecheck-report all)
      ( timeout 200 compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 99 ./attention_backward --ignored \
          --test-threads=1 > "$OUT/san-$tool.log" 2>&1; echo "rc=$?" >> "$OUT/san-$tool.log" ) &
    done
    wait
    for tool in memcheck racecheck synccheck; do
      echo "=== writer under $tool"
      grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test result|rc=|FAILED|panicked" "$OUT/san-$tool.log" | head -6
    done
  )
  echo "=== $b against writer"
  AB_OUT=$OUT/ab4 bash "$root/scripts/gpu-ab.sh" --attn $b/oxtile writer/oxtile 2 --backward --shapes \
    4,16,4096,128,full 4,16,4096,128,causal 4,32,4096,64,full 4,16,4096,256,full 2>&1 | tail -16 ;;
table)
  # Issue 26's table: the $TABLE_BUILD pack's (default d256) backward against cuDNN, adjacent in time, over head dim ${2:-128} x S 1024 ...
  # 16384 x full/causal (32k tokens a batch, as scripts/torch_attn_bwd.py's suite; 16 heads at 128, 32 at 64).
  d=${2:-128}; h=$((2048 / d)); shapes=()
  for s in 1024 2048 4096 8192 16384; do
    for mask in full causal; do shapes+=("$((32768 / s)),$h,$s,$d,$mask"); done
  done
  timeout "${TABLE_TIMEOUT:-580}" bash "$root/scripts/adjacent_attn_bwd.sh" "$(pwd)/${TABLE_BUILD:-d256}/oxtile" "$OUT/table$d" "${shapes[@]}" 2>&1 | tail -14
  grep -h "FAIL" "$OUT"/table$d/ours_*.txt ;;
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
*) echo "usage: $0 check|sanitize|time|python|ncu|ab|table [64|128]|final|writer" >&2; exit 2 ;;
esac
