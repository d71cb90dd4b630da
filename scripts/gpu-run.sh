#!/usr/bin/env bash
# Runs on the GPU machine from the bundle scripts/gpu-bundle.sh made: every test binary with the GPU tests
# included, then the examples, then a summary. Options: --memcheck (tests under compute-sanitizer),
# --bench (also the criterion benches).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
memcheck=0; bench=0
for arg in "$@"; do
  case $arg in
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
for t in "$here"/tests/*; do
  name=tests/$(basename "$t")
  echo "=== $name"
  timeout "$limit" "$t" --include-ignored --test-threads="$threads"
  record "$name" $?
  if [ "$memcheck" -eq 1 ]; then
    echo "=== $name (compute-sanitizer memcheck)"
    # Tests read this to shrink problems that would take minutes under instrumentation, and skip timing asserts.
    OXTILE_UNDER_SANITIZER=1 timeout "$limit" "$sanitizer" --tool memcheck --error-exitcode 99 "$t" --include-ignored --test-threads=1 -q
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
