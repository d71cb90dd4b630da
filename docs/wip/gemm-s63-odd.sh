#!/usr/bin/env bash
# Issue 30, session 63, fourth call (pack s63b): the sweep's odd-indexed shapes (docs/wip/sweep-odd.txt), Auto and the
# three in-process peers, 10 launches in 2 rounds, tn then tt, until BENCH_END seconds (default 420).
set -uo pipefail
WORK=$OUT/odd SWEEP_FILE=docs/wip/sweep-odd.txt RUNS=10 ROUNDS=2 bash docs/wip/gemm-sweep-run.sh s63b 1 "${BENCH_END:-420}" tn,tt 2>&1
cd "$OUT" && tar -czf odd.tgz odd && rm -rf odd
