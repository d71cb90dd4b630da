#!/usr/bin/env bash
# Device calls for the attention backward (issue 26; docs/wip/README.md), over the builds in gpu-pack/ (carried with
# `run`, carry ["gpu-pack"]; made by docs/wip/build-pack.sh: NAME.tar.xz, a folder NAME holding that build's
# stripped release `oxtile` and its tests/attention_backward binary `attention_backward`). Every pack found is
# unpacked; the modes name the builds they use. Logs and JSON go to $OUT.
#
#   bash docs/wip/attn-bwd-call.sh tests BUILD        # tests/attention_backward with the GPU (~15 s)
#   bash docs/wip/attn-bwd-call.sh sanitize BUILD     # the same, sanitizer-sized, under memcheck, racecheck and
#                                                     # synccheck at once (~45 s)
#   bash docs/wip/attn-bwd-call.sh ab A B [SHAPE...]  # `gpu-ab.sh --attn A B 2 --backward` (~30 s a shape): per
#                                                     # row the plain kernel, the deterministic mode and its
#                                                     # ascending order; default shapes: head dims 128, 64, 256
#   bash docs/wip/attn-bwd-call.sh checks BUILD...    # tests and sanitize of each build (~1 minute a build)
#   bash docs/wip/attn-bwd-call.sh abf A B [SHAPE...] # the forward's A/B (`gpu-ab.sh --attn A B 2`)
#   bash docs/wip/attn-bwd-call.sh table D BUILD      # issue 26's table at head dim D: BUILD's backward against
#                                                     # cuDNN adjacent in time, both settled (scripts/adjacent_attn.sh
#                                                     # --backward), S 1024 ... 16384, full and causal
#   bash docs/wip/attn-bwd-call.sh ncu BUILD          # Nsight Compute on one launch of the d128 (plain and staggered)
#                                                     # and d256 kernels
#   bash docs/wip/attn-bwd-call.sh split BUILD [SHAPE...]  # each of a call's kernels' durations (ncu)
#   bash docs/wip/attn-bwd-call.sh ncufwd BUILD [SHAPE]  # Nsight Compute (base clocks) on one launch of our forward
#                                                     # and one of cuDNN's (torch SDPA) on the same shape: cycles,
#                                                     # instructions, pipes, stalls side by side (issue 25)
#   bash docs/wip/attn-bwd-call.sh fwdtable BUILD [SHAPE...]  # issue 25's table: scripts/adjacent_attn.sh (both
#                                                     # sides settled, SETTLE_MS) over torch_reference.py's suite
#                                                     # plus the head-dim-256 rows
#   bash docs/wip/attn-bwd-call.sh python             # gpu-pack/oxtile-*.whl with gpu-pack/pytests, GPU expected
#
# Earlier sessions' calls (the staggered order, q128, head dim 256, the dS clamp and its saturating replacement, the
# Python backward, the uniform roles) are in docs/perf-notes.md; this script ran them in modes since folded into these.
set -uo pipefail
export OXTILE_CUDA_TOOLS=/nonexistent   # no pip on the GPU machine; the static checks run in CI
root=$(pwd)
cd gpu-pack
for pack in *.tar.xz; do [ -e "$pack" ] && xz -dc "$pack" | tar -xf -; done
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv

# BUILD [TEST]: the build's test binary TEST (default attention_backward; the packs hold the ones named to
# build-pack.sh) with the GPU.
tests_of() {
  local t=${2:-attention_backward}
  echo "=== $1: tests/$t"
  ( cd "$1" && timeout 120 "./$t" --include-ignored --test-threads=1 > "$OUT/tests-$1-$t.log" 2>&1 )
  grep -E "test result|FAILED|panicked" "$OUT/tests-$1-$t.log" | head -20
}

# BUILD [TEST]: the same GPU tests, sanitizer-sized, under memcheck, racecheck and synccheck at once.
sanitize_build() {
  local t=${2:-attention_backward}
  (
    cd "$1"
    export OXTILE_UNDER_SANITIZER=1
    for tool in memcheck racecheck synccheck; do
      extra=(); [ "$tool" = racecheck ] && extra=(--racecheck-report all)
      ( timeout 200 compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 99 "./$t" \
          --ignored --test-threads=1 > "$OUT/san-$1-$t-$tool.log" 2>&1; echo "rc=$?" >> "$OUT/san-$1-$t-$tool.log" ) &
    done
    wait
    for tool in memcheck racecheck synccheck; do
      echo "=== $1 ($t) under $tool"
      grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test result|rc=|FAILED|panicked" "$OUT/san-$1-$t-$tool.log" | head -6
    done
  )
}

ab() {
  local a=$1 b=$2
  shift 2
  [ $# -gt 0 ] || set -- 4,16,4096,128,full 4,16,4096,128,causal 4,32,4096,64,full 4,16,4096,256,full
  echo "=== $a against $b"
  AB_OUT=$OUT/ab-$a-$b bash "$root/scripts/gpu-ab.sh" --attn "$a/oxtile" "$b/oxtile" 2 --backward --shapes "$@" 2>&1 |
    tail -$((4 * $# + 4))
  echo "rows failing the reference check:"; grep -l "FAIL" "$OUT/ab-$a-$b"/*.log || echo none
}

# The forward's A/B (`gpu-ab.sh --attn A B 2`), default shapes head dims 64, 128 and 256, full and causal.
ab_forward() {
  local a=$1 b=$2
  shift 2
  [ $# -gt 0 ] || set -- 16,32,2048,64,full 16,32,2048,64,causal 8,16,4096,128,full 8,16,4096,128,causal \
    32,16,1024,128,full 16,16,2048,256,full 16,16,2048,256,causal
  echo "=== forward: $a against $b"
  AB_OUT=$OUT/abf-$a-$b bash "$root/scripts/gpu-ab.sh" --attn "$a/oxtile" "$b/oxtile" 2 --shapes "$@" 2>&1 |
    tail -$((8 * $# + 4))
  echo "rows failing the reference check:"; grep -l "FAIL" "$OUT/abf-$a-$b"/*.log || echo none
}

mode=${1:-}
shift || true
case "$mode" in
tests) tests_of "${1:?BUILD}" "${2:-attention_backward}" ;;
sanitize) sanitize_build "${1:?BUILD}" "${2:-attention_backward}" ;;
ab) ab "$@" ;;
checks)
  for build in "$@"; do
    tests_of "$build"
    sanitize_build "$build"
  done ;;
abf) ab_forward "$@" ;;
table)
  # 32k tokens a batch; 16 heads at 128, 32 at 64, 8 at 256.
  d=${1:?D}; build=${2:?BUILD}; h=$((2048 / d)); shapes=()
  for s in 1024 2048 4096 8192 16384; do
    for mask in full causal; do shapes+=("$((32768 / s)),$h,$s,$d,$mask"); done
  done
  timeout "${TABLE_TIMEOUT:-580}" bash "$root/scripts/adjacent_attn.sh" --backward "$(pwd)/$build/oxtile" "$OUT/table$d" \
    "${shapes[@]}" 2>&1 | tail -14
  grep -h "FAIL" "$OUT"/table"$d"/ours_*.txt ;;
ncu)
  build=${1:?BUILD}
  for spec in "4,16,4096,128,full attn_bwd_bf16_d128_sm90" "4,16,4096,128,full attn_bwd_bf16_d128_staggered_sm90" \
    "4,16,4096,256,full attn_bwd_bf16_d256_sm90"; do
    set -- $spec
    echo "=== $2 ($1)"
    timeout 200 ncu --clock-control none -k "regex:^$2\$" -c 1 --section SpeedOfLight --section WarpStateStats \
      --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section Occupancy \
      "./$build/oxtile" bench attn --backward --shapes "$1" --rounds 1 > "$OUT/ncu-$2.txt" 2>&1
    grep -E "Duration|SM Frequency|Compute \(SM\) Throughput|Memory Throughput|Stall|Warp Cycles Per|Issue Slots|Shared|Bank" \
      "$OUT/ncu-$2.txt" | head -40
  done ;;
split)
  # Where one backward call's time goes among its kernels (preprocessing, main, the split walks' sum where there is
  # one, dQ conversion): each launch's duration under Nsight Compute, clocks left alone, on the given shapes
  # (default: the short rows that lose most).
  build=${1:?BUILD}; shift
  [ $# -gt 0 ] || set -- 32,16,1024,128,full 32,16,1024,128,causal 16,32,2048,64,full
  for shape in "$@"; do
    echo "=== $shape"
    timeout 200 ncu --clock-control none -k "regex:^attn_bwd_(preprocess_|convert_dq_|sum_pieces_|bf16_d)" -c 8 --section SpeedOfLight \
      "./$build/oxtile" bench attn --backward --shapes "$shape" --rounds 1 > "$OUT/split-$shape.txt" 2>&1
    grep -E "^  attn_bwd_|Duration" "$OUT/split-$shape.txt" | head -16
  done ;;
fwdtable)
  build=${1:?BUILD}; shift
  if [ $# -eq 0 ]; then
    mapfile -t suite < <(cd "$root/scripts" && python3 -c "import torch_attn as t; print('\n'.join(t.SUITE))")
    set -- "${suite[@]}" 8,16,2048,256,full 8,16,2048,256,causal 2,16,8192,256,full 2,16,8192,256,causal
  fi
  timeout "${TABLE_TIMEOUT:-580}" bash "$root/scripts/adjacent_attn.sh" "$(pwd)/$build/oxtile" "$OUT/fwdtable" "$@" \
    2>&1 | tail -$(($# + 2))
  grep -h "FAIL" "$OUT"/fwdtable/ours_*.txt ;;
ncufwd)
  build=${1:?BUILD}; shape=${2:-8,16,4096,128,full}; d=$(echo "$shape" | cut -d, -f4)
  sections=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats --section LaunchStats
    --section WarpStateStats --section MemoryWorkloadAnalysis_Tables --section Occupancy
    --metrics sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,lts__t_sectors.avg.pct_of_peak_sustained_elapsed)
  echo "=== ours: attn_fwd_bf16_d${d}_sm90 ($shape)"
  timeout 200 ncu -k "regex:^attn_fwd_bf16_d${d}_sm90\$" -c 1 "${sections[@]}" \
    "./$build/oxtile" bench attn --shapes "$shape" --rounds 1 > "$OUT/ncufwd-ours.txt" 2>&1
  echo "=== cuDNN (torch SDPA, $shape)"
  timeout 300 ncu -k "regex:(?i)cudnn|sdpa|fmha|fprop" --launch-skip 2 -c 1 "${sections[@]}" \
    python3 "$root/scripts/torch_attn.py" "$shape" > "$OUT/ncufwd-cudnn.txt" 2>&1
  for f in ours cudnn; do
    echo "--- $f"
    grep -E "^  [a-zA-Z_]|Elapsed Cycles|Duration|SM Frequency|Compute \(SM\) Throughput|Executed Ipc A|Issue Slots Busy|Executed Instructions  |Registers Per|Shared Memory Configuration Size|Dynamic Shared|Block Size|Grid Size|Warp Cycles Per Issued|Achieved Occupancy|Shared Load|Shared Store|L2 Hit|DRAM Through|Memory Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|SM Busy|sm__pipe|sm__inst|lts__t|Stall|No Eligible" \
      "$OUT/ncufwd-$f.txt" | head -45
  done ;;
python)
  site=$(mktemp -d)
  python3 -m pip install --quiet --no-index --no-deps --target "$site" oxtile-*.whl || exit 1
  PYTHONPATH="$site" OXTILE_EXPECT_GPU=1 timeout 280 python3 -m pytest -q -p no:cacheprovider -rs --durations=8 \
    pytests > "$OUT/pytest.log" 2>&1
  tail -30 "$OUT/pytest.log" ;;
*) echo "usage: $0 tests|sanitize|ab|abf|checks|table|fwdtable|ncu|ncufwd|split|python ..." >&2; exit 2 ;;
esac
