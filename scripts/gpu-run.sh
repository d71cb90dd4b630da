#!/usr/bin/env bash
# Runs on the GPU machine from the bundle scripts/gpu-bundle.sh made: every test binary with the GPU tests
# included, then the examples, then a summary. Options:
#   --sanitize   instead, the GPU tests of every test binary under compute-sanitizer's memcheck, racecheck and
#                synccheck (sanitizer-sized problems), with one summary line per tool; logs in $OXTILE_SANITIZE_LOGS;
#                OXTILE_SANITIZE_ONLY="gemm_symmetric …" limits it to those test binaries
#   --memcheck   the tests, then each under memcheck (the older, slower form of --sanitize's first tool)
#   --bench      also the criterion benches
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
memcheck=0; bench=0; sanitize=0
for arg in "$@"; do
  case $arg in
    --sanitize) sanitize=1 ;;
    --memcheck) memcheck=1 ;;
    --bench) bench=1 ;;
    *) echo "unknown option $arg" >&2; exit 2 ;;
  esac
done
# A hung kernel (a barrier never completing) must not eat the whole device lease.
limit=${OXTILE_TEST_TIMEOUT:-300}
# `oxtile check` runs every check in turn against float64 CPU references on one core: 354 s on the H200 machine
# (session 15), so it gets a limit of its own.
check_limit=${OXTILE_CHECK_TIMEOUT:-600}
# Tests share the GPU safely (none is timed); their float64 references want the host's cores: tests/gemm takes
# ~260 s with 16 threads on the H200 machine, far more than the limit with one.
threads=${OXTILE_TEST_THREADS:-16}
# Tests that read SASS use the pinned tools from PyPI; this machine has no network but has CUDA 13.0 itself.
if [ -z "${OXTILE_CUDA_TOOLS:-}" ] && [ -x /usr/local/cuda/bin/ptxas ]; then
  export OXTILE_CUDA_TOOLS=/tmp/oxtile-cuda-tools
  mkdir -p "$OXTILE_CUDA_TOOLS/nvidia/cu13/bin"
  for tool in ptxas cuobjdump nvdisasm; do ln -sf "/usr/local/cuda/bin/$tool" "$OXTILE_CUDA_TOOLS/nvidia/cu13/bin/$tool"; done
fi
sanitizer=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
passed=0; failed=0; failures=()

record() { # $1 name, $2 status
  if [ "$2" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); failures+=("$1"); fi
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader || true

# --sanitize: every (tool, test binary) pair with GPU tests, a few at a time (the GPU has room; the float64
# references want the cores), only the `#[ignore = "needs a CUDA GPU"]` tests (the others run in CI), each test in
# turn (--test-threads=1) with OXTILE_UNDER_SANITIZER=1 so the tests shrink their problems. A pair passes when its
# tests pass and the tool reports 0 errors; racecheck counts hazards of every severity (warnings too).
if [ "$sanitize" -eq 1 ]; then
  logs=${OXTILE_SANITIZE_LOGS:-/tmp/oxtile-sanitize}
  rm -rf "$logs" && mkdir -p "$logs"
  tools="memcheck racecheck synccheck"
  jobs=()
  for t in "$here"/tests/*; do
    [ "$("$t" --list --ignored 2>/dev/null | grep -c ': test$')" -gt 0 ] || continue
    # OXTILE_SANITIZE_ONLY="gemm_symmetric attention": only those test binaries.
    [ -z "${OXTILE_SANITIZE_ONLY:-}" ] || [[ " $OXTILE_SANITIZE_ONLY " == *" $(basename "$t") "* ]] || continue
    for tool in $tools; do jobs+=("$tool $t"); done
  done
  run_one() { # $1 tool, $2 test binary
    local log="$logs/$1-$(basename "$2").log" extra=()
    # Tests of the timing harness alone (thousands of axpy launches, which the elementwise tests cover under every
    # tool; their settling asserts measure time, which instrumentation stretches).
    local skip=(--skip settling_runs_the_kernel_that_long --skip the_stream_hold_keeps_a_slow_host_out)
    if [ "$1" = racecheck ]; then
      extra=(--racecheck-report all)
      # Tests that launch cuBLAS: racecheck reports thousands of hazards inside cuBLAS's own nvjet GEMMs, which only
      # NVIDIA can act on (excluding those kernels by name made racecheck fail on a hardware exception instead).
      # Our kernels in these tests run under racecheck in the other tests.
      skip+=(--skip every_layout_and_output_type_agrees_with_cublas --skip a_wrong_result_fails_the_cross_check
        --skip gemm_bench_times_and_cross_checks_the_peers --skip oxtile_gemm_is_timed_and_cross_checked)
    fi
    OXTILE_UNDER_SANITIZER=1 timeout "$limit" "$sanitizer" --tool "$1" "${extra[@]}" --error-exitcode 99 \
      "$2" --ignored --test-threads=1 -q "${skip[@]}" >"$log" 2>&1
    echo "exit $?" >>"$log"
  }
  export -f run_one; export logs limit sanitizer
  printf '%s\n' "${jobs[@]}" | xargs -P "${OXTILE_SANITIZE_JOBS:-6}" -L 1 bash -c 'run_one "$0" "$1"'
  status=0
  for tool in $tools; do
    binaries=0; failed_binaries=(); errors=0
    for log in "$logs/$tool"-*.log; do
      binaries=$((binaries + 1))
      name=${log##*/$tool-}; name=${name%.log}
      found=$(grep -ho 'ERROR SUMMARY: [0-9]* error' "$log" | awk '{s += $3} END {print s + 0}')
      # racecheck's errors leave out its warnings; its hazard count holds both.
      hazards=$(grep -ho 'RACECHECK SUMMARY: [0-9]* hazard' "$log" | awk '{s += $3} END {print s + 0}')
      [ "$hazards" -gt "$found" ] && found=$hazards
      errors=$((errors + found))
      if ! grep -q '^exit 0$' "$log" || [ "$found" -gt 0 ]; then failed_binaries+=("$name"); fi
    done
    [ "${#failed_binaries[@]}" -eq 0 ] || status=1
    echo "sanitize $tool: $errors errors over $binaries test binaries; failed: ${failed_binaries[*]:-none}"
  done
  echo "logs: $logs"
  exit $status
fi
# The static checks that disassemble kernels need the pinned CUDA tools, which this machine cannot install (no
# network): CI runs them (tests/static_kernels and tests/layout_cli are not even bundled).
static=(--skip layout_kernel_sass)
for t in "$here"/tests/*; do
  name=tests/$(basename "$t")
  echo "=== $name"
  timeout "$limit" "$t" --include-ignored --test-threads="$threads" "${static[@]}"
  record "$name" $?
  if [ "$memcheck" -eq 1 ]; then
    echo "=== $name (compute-sanitizer memcheck)"
    # Tests read this to shrink problems that would take minutes under instrumentation, and skip timing asserts.
    OXTILE_UNDER_SANITIZER=1 timeout "$limit" "$sanitizer" --tool memcheck --error-exitcode 99 "$t" --include-ignored \
      --test-threads=1 -q "${static[@]}"
    record "$name [memcheck]" $?
  fi
done
for e in "$here"/examples/*; do
  name=examples/$(basename "$e")
  echo "=== $name"
  timeout "$limit" "$e"
  record "$name" $?
done
timeout "$check_limit" "$here/oxtile" check
record "oxtile check" $?
if [ "$bench" -eq 1 ]; then
  for b in "$here"/benches/*; do
    name=benches/$(basename "$b")
    echo "=== $name"
    "$b" --bench
    record "$name" $?
  done
fi

echo
echo "=== summary"
for f in "${failures[@]}"; do echo "FAILED: $f"; done
echo "gpu-run: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
