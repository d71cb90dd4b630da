#!/usr/bin/env bash
# compute-sanitizer's memcheck, racecheck and synccheck over one GPU test binary's filtered tests, side by side, each
# under its own time limit (the binary sanitizer-sizes its cases under OXTILE_UNDER_SANITIZER); prints each tool's
# summary and appends its log to $OUT/sanitizers.log.
#   bash docs/wip/sanitizers.sh BINARY TIMEOUT_S TEST_FILTER...
set -uo pipefail
bin=$1 limit=$2
shift 2
for tool in memcheck racecheck synccheck; do
  extra=(); [ "$tool" = racecheck ] && extra=(--racecheck-report all)
  ( OXTILE_UNDER_SANITIZER=1 timeout "$limit" compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 99 \
      "$bin" "$@" --ignored --test-threads=1 > "/tmp/san-$tool.log" 2>&1
    echo "rc=$?" >> "/tmp/san-$tool.log" ) &
done
wait
for tool in memcheck racecheck synccheck; do
  echo "--- $tool"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test result|rc=" "/tmp/san-$tool.log" | head -4
  { echo "=== $tool"; cat "/tmp/san-$tool.log"; } >> "${OUT:-/tmp}/sanitizers.log"
done
