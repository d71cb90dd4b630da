#!/usr/bin/env bash
# The attention backward against cuDNN's, the peer timed right before and right after each of our rows (separate
# processes, adjacent in time, as ../shared/bench/adjacent_attn.sh does for the forward), so both see the same clock
# under the power cap. On the GPU machine, from the bundle (gpu-run/ holds oxtile and torch_attn_bwd.py):
#
#   bash adjacent_attn_bwd.sh OXTILE_BINARY OUT_DIR B,H,S,D,full|causal ...
#
# Prints per shape our backward's TFLOP/s (default and deterministic mode), cuDNN's two readings and the ratios to
# their mean; then the geomeans, the lowest ratio and the deterministic mode's cost. A row whose two cuDNN readings
# differ by more than 2% is flagged "unsteady".
set -u
here="$(cd "$(dirname "$0")" && pwd)"
ox=${1:?usage: adjacent_attn_bwd.sh OXTILE_BINARY OUT_DIR shapes...}
out=${2:?usage: adjacent_attn_bwd.sh OXTILE_BINARY OUT_DIR shapes...}
shift 2
mkdir -p "$out"
i=0
for s in "$@"; do
  i=$((i + 1))
  timeout 120 python3 "$here/torch_attn_bwd.py" "$s" --json "$out/peer_before_$i.json" > /dev/null 2>&1
  timeout 120 "$ox" bench attn --backward --shapes "$s" ${OXTILE_ARGS:-} --json "$out/ours_$i.json" > "$out/ours_$i.txt" 2>&1
  timeout 120 python3 "$here/torch_attn_bwd.py" "$s" --json "$out/peer_after_$i.json" > /dev/null 2>&1
done
python3 - "$out" "$i" <<'PY'
import json, math, sys
out, n = sys.argv[1], int(sys.argv[2])
ratios, det_ratios, det_costs = [], [], []
geo = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
for i in range(1, n + 1):
    try:
        peer = [r["tflops"] for f in ("peer_before", "peer_after") for r in json.load(open(f"{out}/{f}_{i}.json"))
                if r.get("impl") == "cudnn" and "tflops" in r]
        ours = {r["impl"]: r for r in json.load(open(f"{out}/ours_{i}.json")) if r.get("op") == "attn-bwd"}
        row, det = ours["oxtile-bwd"], ours.get("oxtile-bwd-det")
    except (OSError, KeyError, ValueError) as e:
        print(f"row {i}: missing ({e})")
        continue
    if len(peer) != 2:
        print(f"{row['shape']}: cuDNN did not run twice"); continue
    mean = sum(peer) / 2
    ratio = row["tflops"] / mean
    ratios.append(ratio)
    text = f"{row['shape']:26} oxtile {row['tflops']:7.1f}"
    if det and "tflops" in det:
        det_ratios.append(det["tflops"] / mean)
        det_costs.append(row["tflops"] / det["tflops"])
        text += f"  deterministic {det['tflops']:7.1f}"
    flag = "  unsteady" if abs(peer[0] - peer[1]) / mean > 0.02 else ""
    print(f"{text}  cuDNN {peer[0]:7.1f} / {peer[1]:7.1f}  ratio {ratio:.3f}  {row.get('sm_mhz')} MHz{flag}")
if ratios:
    print(f"geomean {geo(ratios):.3f}, lowest {min(ratios):.3f}, over {len(ratios)} rows")
if det_ratios:
    print(f"deterministic: geomean {geo(det_ratios):.3f} of cuDNN; default / deterministic time: geomean "
          f"{geo(det_costs):.3f}, largest {max(det_costs):.3f}")
PY
