#!/usr/bin/env bash
# Session 67's first call: session 66's third call as written (docs/wip/s66-call3.sh: div tests and sanitizers,
# A/B div vs base, epi and twoq2 vs div, epi tests and sanitizers), then docs/wip/gemm-tile-decode.sh in whatever
# is left of a 590 s budget, each of its steps capped so that the call ends inside the run tool's limit.
#   bash docs/wip/s67-call1.sh      (the run tool: carry ["gpu-pack"])
set -uo pipefail
t0=$SECONDS
bash docs/wip/s66-call3.sh
left=$((590 - (SECONDS - t0)))
echo "=== gemm-tile-decode with $left s left"
cap() { local v=$1; [ "$v" -gt "$2" ] && v=$2; [ "$v" -lt 10 ] && v=10; echo "$v"; }
if [ "$left" -gt 60 ]; then
  TESTS_LIMIT=$(cap $((left * 30 / 100)) 150) SAN_LIMIT=$(cap $((left * 25 / 100)) 120) \
    AB_LIMIT=$(cap $((left * 40 / 100)) 200) bash docs/wip/gemm-tile-decode.sh
fi
echo "=== call done at $((SECONDS - t0)) s"
