#!/usr/bin/env bash
# A/B of two builds on the GPU machine: `oxtile bench gemm` of build A and of build B, alternating A B A B … for
# the given number of passes, with cuBLASLt in every run so that each row's ratio to it cancels the clock the run
# drew. Prints, per (shape, layout, oxtile row), the oxtile TFLOP/s of each pass and the mean ratio to cuBLASLt of
# each build, then their geomeans. JSON of every pass goes to $OUT (or $AB_OUT) for the perf notes.
#
#   bash scripts/gpu-ab.sh OXTILE_A OXTILE_B PASSES [oxtile bench gemm arguments ...]
#
# The GEMM rows timed are `AB_ONLY` (default `oxtile,cublasLt`: Auto and the peer); e.g. every configured variant:
# AB_ONLY=oxtile,oxtile-wide,...,cublasLt (the row names `oxtile bench gemm` prints).
#
# With --attn first, the same for `oxtile bench attn` (arguments e.g. --shapes 8,16,4096,128,causal ...), and with
# --ns for `oxtile bench ns` (the symmetric GEMM's variants, Newton-Schulz): there is no in-process peer for every
# row, so each oxtile row's ratio is B's TFLOP/s over A's in the same pass (adjacent in time), averaged.
#
#   bash scripts/gpu-ab.sh --attn OXTILE_A OXTILE_B PASSES [oxtile bench attn arguments ...]
#   bash scripts/gpu-ab.sh --ns OXTILE_A OXTILE_B PASSES [oxtile bench ns arguments ...]
set -uo pipefail
bench=gemm
case "${1:-}" in
  --attn) bench=attn; shift ;;
  --ns) bench=ns; shift ;;
esac
if [ $# -lt 3 ]; then
  echo "usage: $0 [--attn|--ns] OXTILE_A OXTILE_B PASSES [bench arguments]" >&2
  exit 2
fi
a=$1 b=$2 passes=$3
shift 3
out=${AB_OUT:-${OUT:-/tmp/gpu-ab}}
mkdir -p "$out"
for pass in $(seq 1 "$passes"); do
  for build in a b; do
    exe=$a
    [ "$build" = b ] && exe=$b
    echo "=== pass $pass, build $build ($exe)"
    if [ "$bench" = gemm ]; then
      args=(bench gemm --only "${AB_ONLY:-oxtile,cublasLt}" --no-check "$@")
    elif [ "$bench" = attn ]; then
      args=(bench attn --no-stats "$@")
    else
      args=(bench ns "$@")
    fi
    "$exe" "${args[@]}" --json "$out/ab-$build-$pass.json" >"$out/ab-$build-$pass.log" 2>&1 ||
      { echo "build $build failed in pass $pass:"; tail -20 "$out/ab-$build-$pass.log"; exit 1; }
  done
done
python3 - "$out" "$passes" "$bench" <<'EOF'
import json, math, sys
out, passes, bench = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def load(build, p):
    rows = json.load(open(f"{out}/ab-{build}-{p}.json"))
    table = {}
    for r in rows:
        key = (r.get("op", ""), r["shape"], " ".join(filter(None, (r.get("dtype"), r.get("layout")))))
        # Throughput: TFLOP/s, or calls per ms for rows without a FLOP count.
        table.setdefault(key, {})[r["impl"]] = r.get("tflops") or (1 / r["ms"] if r.get("ms") else None)
    return table
runs = {build: [load(build, p) for p in range(1, passes + 1)] for build in "ab"}
keys = list(runs["a"][0])
def series(build, key, impl):
    return [t[key][impl] for t in runs[build] if key in t and t[key].get(impl)]
worst = []
if bench != "gemm":
    # Every oxtile row per shape; B over A in each pass.
    print(f"{'shape':>34} {'row':>22} | {'A TFLOP/s per pass':>24} | {'B TFLOP/s per pass':>24} |    B/A")
    logs = []
    for key in keys:
        for impl in runs["a"][0][key]:
            if not impl.startswith("oxtile"):
                continue
            a_runs, b_runs = series("a", key, impl), series("b", key, impl)
            if not a_runs or len(a_runs) != len(b_runs):
                continue
            ratio = sum(y / x for x, y in zip(a_runs, b_runs)) / len(a_runs)
            logs.append(math.log(ratio))
            worst.append((ratio, key[1], impl))
            cells = {k: " ".join(f"{v:6.1f}" for v in r) for k, r in (("a", a_runs), ("b", b_runs))}
            print(f"{key[1]:>34} {impl:>22} | {cells['a']:>24} | {cells['b']:>24} | {ratio:6.3f}")
    print(f"geomean B/A {math.exp(sum(logs) / max(1, len(logs))):.3f} over {len(logs)} rows")
else:
    print(f"{'shape':>18} {'type layout':>11} {'row':>22} | {'A TFLOP/s per pass':>24} | {'B TFLOP/s per pass':>24} | A/cuBLASLt B/cuBLASLt  B/A")
    geo = {"a": [], "b": []}
    for key in keys:
        for impl in runs["a"][0][key]:
            if not impl.startswith("oxtile"):
                continue
            cells, ratio = {}, {}
            for build in "ab":
                ours, peer = series(build, key, impl), series(build, key, "cublasLt")
                cells[build] = " ".join(f"{v:6.1f}" for v in ours)
                ratio[build] = sum(o / c for o, c in zip(ours, peer)) / max(1, len(ours))
            if not ratio["a"] or not ratio["b"]:
                continue
            for build in "ab":
                geo[build].append(ratio[build])
            worst.append((ratio["b"] / ratio["a"], f"{key[1]} {key[2]}", impl))
            print(f"{key[1]:>18} {key[2]:>11} {impl:>22} | {cells['a']:>24} | {cells['b']:>24} | {ratio['a']:10.3f} {ratio['b']:10.3f} {ratio['b'] / ratio['a']:6.3f}")
    g = {k: math.exp(sum(map(math.log, v)) / len(v)) for k, v in geo.items()}
    print(f"geomean of the ratios to cuBLASLt over {len(geo['a'])} rows: A {g['a']:.3f}, B {g['b']:.3f} (B/A {g['b'] / g['a']:.3f})")
worst.sort()
print("lowest B/A:", ", ".join(f"{s} {i} {r:.3f}" for r, s, i in worst[:6]))
EOF
