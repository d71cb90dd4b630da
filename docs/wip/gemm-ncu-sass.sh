#!/usr/bin/env bash
# Issue 30, two questions for Nsight Compute at boost clocks (`--clock-control none`, what the bench runs at):
# 1. How long the staging copies take beside the GEMM they feed (stage_rows_b16 and the GEMM, 1500³ and
#    4096×4096×4095 in tn: both operands staged).
# 2. Where oxtile-wide-c2 stalls on 4096×4096×4040 tn (rows 8080 bytes apart) against 4096³: the warp-stall samples
#    per SASS instruction (source page), the 25 instructions with the most samples, each with its stall reasons.
set -uo pipefail
cd gpu-pack
for pack in *.tar.xz; do [ -e "$pack" ] && xz -dc "$pack" | tar -xf -; done
exe=./${BUILD:-stage}/oxtile
echo "=== 1. staging copies beside their GEMM"
for shape in 1500x1500x1500 4096x4096x4095; do
  timeout 120 ncu --clock-control none --metrics gpu__time_duration.sum --kernel-name regex:'stage_rows|gemm' \
    --launch-skip 6 --launch-count 6 "$exe" bench gemm --shapes "$shape" --layout tn --only oxtile --no-check \
    --warmup 4 --runs 4 --rounds 1 > "$OUT/durations-$shape.txt" 2>&1
  echo "--- $shape"
  grep -E "^  [a-z_0-9]+.*\(|gpu__time_duration" "$OUT/durations-$shape.txt" | paste - - | awk '{print $1, $(NF)}'
done
echo "=== 2. stall samples per instruction"
for shape in 4096x4096x4040 4096x4096x4096; do
  timeout 200 ncu --clock-control none --section WarpStateStats --section SourceCounters \
    --kernel-name regex:'gemm' --launch-skip 3 --launch-count 1 --page source --print-source sass --csv \
    "$exe" bench gemm --shapes "$shape" --layout tn --only oxtile-wide-c2 --no-check --warmup 4 --runs 2 --rounds 1 \
    > "$OUT/sass-$shape.csv" 2> "$OUT/sass-$shape.err"
  echo "--- $shape: $(wc -l < "$OUT/sass-$shape.csv") lines"
  python3 - "$OUT/sass-$shape.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
start = next((i for i, r in enumerate(rows) if any("Source" == c or "Address" == c for c in r)), None)
if start is None:
    print("no source table; first lines:", rows[:5]); sys.exit()
head = rows[start]
print("columns:", [h for h in head][:40])
body = [r for r in rows[start + 1:] if len(r) == len(head)]
def num(x):
    try: return float(x.replace(",", ""))
    except ValueError: return 0.0
key = next((h for h in head if h.startswith("Warp Stall Sampling (All")), None)
if key is None:
    print("no stall column"); sys.exit()
k = head.index(key)
total = sum(num(r[k]) for r in body)
stall_cols = [i for i, h in enumerate(head) if h.lower().startswith("stall") or "stall_" in h.lower()]
print(f"total samples {total:.0f} over {len(body)} instructions")
for r in sorted(body, key=lambda r: -num(r[k]))[:25]:
    reasons = sorted(((num(r[i]), head[i]) for i in stall_cols), reverse=True)[:3]
    src = next((r[i] for i, h in enumerate(head) if h == "Source"), "")
    print(f"{num(r[k]) / total * 100:5.1f}%  {src[:70]:70}  " + ", ".join(f"{n}={v:.0f}" for v, n in reasons if v))
PY
done
