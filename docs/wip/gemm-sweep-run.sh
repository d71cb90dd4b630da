#!/usr/bin/env bash
# Issue 30's sweep on the GPU machine: Auto and the three cuBLAS peers in one process per (layout, class), every
# EVERY-th shape, stopping new classes once DEADLINE seconds have passed; then every row merged and summarized by
# class (ratio = the fastest peer's time over ours).
#   bash docs/wip/gemm-sweep-run.sh PACK EVERY DEADLINE [LAYOUTS]
# SWEEP_FILE (a file of `CLASS LABEL MxNxK` lines instead of the shipped sweep), ONLY (the rows timed; default Auto
# and the three peers), RUNS (default 20), ROUNDS (default 5) and CLASSES (space-separated, in order) change what is
# timed; WORK is where each process's JSON goes (default /tmp/sweep-PACK).
set -uo pipefail
pack=$1 every=$2 deadline=$3 layouts=${4:-tn,tt}
cd gpu-pack && xz -d < "$pack.tar.xz" | tar -xf - && cd ..
exe=gpu-pack/$pack/oxtile
work=${WORK:-/tmp/sweep-$pack}; logs=/tmp/sweep-$pack-logs; mkdir -p "$work" "$logs"
start=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
for class in ${CLASSES:-model-decode model-mid square ragged model-large}; do
  for layout in ${layouts//,/ }; do
    left=$((deadline - (SECONDS - start)))
    [ "$left" -lt 20 ] && { echo "skipped $class $layout (deadline)"; continue; }
    timeout "$left" "$exe" bench gemm --sweep ${SWEEP_FILE:+--sweep-file "$SWEEP_FILE"} --class "$class" --every "$every" --layout "$layout" --no-check \
      --only "${ONLY:-oxtile,cublasLt,cublasLt-tuned,cublasGemmEx}" --runs "${RUNS:-20}" --warmup 3 --rounds "${ROUNDS:-5}" \
      --json "$work/$class-$layout.json" > "$logs/$class-$layout.log" 2>&1
    echo "$class $layout rc=$? at $((SECONDS - start)) s"
  done
done
# The tail of each process's output comes back in one file (its errors included).
for log in "$logs"/*.log; do [ -e "$log" ] && { echo "=== $log"; tail -n 40 "$log"; }; done > "${OUT:-/tmp}/sweep-$pack-logs.txt"
python3 - "$work" "${OUT:-/tmp}/sweep-$pack.json" <<'PY'
import glob, json, math, os, sys
work, dest = sys.argv[1], sys.argv[2]
rows, summary = [], {}
for path in sorted(glob.glob(f"{work}/*.json")):
    cls, layout = os.path.basename(path)[:-5].rsplit("-", 1)
    for r in json.load(open(path)):
        r["class"] = cls
        rows.append(r)
json.dump(rows, open(dest, "w"))
by = {}
for r in rows:
    by.setdefault((r["class"], r["layout"], r["shape"]), {})[r["impl"]] = r["ms"]
table = {}
for (cls, layout, shape), t in by.items():
    peers = [t[p] for p in ("cublasLt", "cublasLt-tuned", "cublasGemmEx") if t.get(p)]
    if not t.get("oxtile") or not peers:
        continue
    table.setdefault((cls, layout), []).append((min(peers) / t["oxtile"], shape))
allr = []
for key in sorted(table):
    v = table[key]; allr += [x for x, _ in v]
    g = math.exp(sum(math.log(x) for x, _ in v) / len(v))
    print(f"{key[0]:>13} {key[1]} n={len(v):3d} geomean {g:.3f} lowest {min(v)[0]:.3f} ({min(v)[1]}) "
          f"<0.95: {sum(x < 0.95 for x, _ in v)} >=1: {sum(x >= 1 for x, _ in v)}")
if allr:
    print(f"all n={len(allr)} geomean {math.exp(sum(map(math.log, allr)) / len(allr)):.3f}")
PY
