#!/usr/bin/env bash
# A/B of two builds on the GPU machine: `oxtile bench gemm` of build A and of build B, alternating A B A B … for
# the given number of passes, with cuBLASLt in every run so that each row's ratio to it cancels the clock the run
# drew. Prints, per (shape, layout), the oxtile TFLOP/s of each pass and the mean ratio to cuBLASLt of each build,
# then their geomeans. JSON of every pass goes to $OUT (or $AB_OUT) for the perf notes.
#
#   bash scripts/gpu-ab.sh OXTILE_A OXTILE_B PASSES [oxtile bench gemm arguments ...]
#
# With --attn first, the same for `oxtile bench attn` (arguments e.g. --shapes 8,16,4096,128,causal ...): there is
# no in-process peer, so each row's ratio is B's TFLOP/s over A's in the same pass (adjacent in time), averaged.
#
#   bash scripts/gpu-ab.sh --attn OXTILE_A OXTILE_B PASSES [oxtile bench attn arguments ...]
set -uo pipefail
bench=gemm
if [ "${1:-}" = --attn ]; then bench=attn; shift; fi
if [ $# -lt 3 ]; then
  echo "usage: $0 [--attn] OXTILE_A OXTILE_B PASSES [bench arguments]" >&2
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
      args=(bench gemm --only oxtile,cublasLt --no-check "$@")
    else
      args=(bench attn --no-stats "$@")
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
        key = (r["shape"], r.get("layout"))
        table.setdefault(key, {})[r["impl"]] = r.get("tflops")
    return table
runs = {build: [load(build, p) for p in range(1, passes + 1)] for build in "ab"}
keys = list(runs["a"][0])
if bench == "attn":
    # Our default kernel's row per shape; B over A in each pass.
    print(f"{'shape':>28} | {'A TFLOP/s per pass':>24} | {'B TFLOP/s per pass':>24} |    B/A")
    logs = []
    for key in keys:
        a_runs = [t[key]["oxtile"] for t in runs["a"] if key in t and t[key].get("oxtile")]
        b_runs = [t[key]["oxtile"] for t in runs["b"] if key in t and t[key].get("oxtile")]
        if not a_runs or len(a_runs) != len(b_runs):
            continue
        ratio = sum(y / x for x, y in zip(a_runs, b_runs)) / len(a_runs)
        logs.append(math.log(ratio))
        cells = {k: " ".join(f"{v:6.1f}" for v in r) for k, r in (("a", a_runs), ("b", b_runs))}
        print(f"{key[0]:>28} | {cells['a']:>24} | {cells['b']:>24} | {ratio:6.3f}")
    print(f"geomean B/A {math.exp(sum(logs) / max(1, len(logs))):.3f} over {len(logs)} rows")
    sys.exit(0)
print(f"{'shape':>18} {'layout':>6} | {'A TFLOP/s per pass':>24} | {'B TFLOP/s per pass':>24} | A/cuBLASLt B/cuBLASLt  B/A")
geo = {"a": [], "b": []}
for key in keys:
    cells, ratio = {}, {}
    for build in "ab":
        ours = [t[key]["oxtile"] for t in runs[build] if key in t and t[key].get("oxtile")]
        peer = [t[key]["cublasLt"] for t in runs[build] if key in t and t[key].get("cublasLt")]
        cells[build] = " ".join(f"{v:6.1f}" for v in ours)
        ratio[build] = sum(o / c for o, c in zip(ours, peer)) / max(1, len(ours))
        geo[build].append(ratio[build])
    print(f"{key[0]:>18} {key[1] or '':>6} | {cells['a']:>24} | {cells['b']:>24} | {ratio['a']:10.3f} {ratio['b']:10.3f} {ratio['b'] / ratio['a']:6.3f}")
g = {k: math.exp(sum(map(math.log, v)) / len(v)) for k, v in geo.items()}
print(f"geomean of the ratios to cuBLASLt: A {g['a']:.3f}, B {g['b']:.3f} (B/A {g['b'] / g['a']:.3f})")
EOF
