#!/usr/bin/env bash
# Attention (forward, or with --backward the backward) against cuDNN's, the peer timed right before and right after
# each of our rows (separate processes, adjacent in time) and under the same load history as ours: both sides run
# back to back for SETTLE_MS of GPU time before they are timed (default 1000), so both are timed at the clock a
# sustained load runs at under the power cap. Without it the two sides were not comparable: torch_reference.py
# times 20 calls after 5 (a burst at the top clock) while `oxtile bench attn` times every variant in rounds after
# ~0.5 s of load, which alone put cuDNN 9% ahead on 8,16,4096,128 full on an H100 (docs/perf-notes.md, session 47).
# SETTLE_MS=0 times both as bursts instead: ours 20 calls after 5. Only the rows the table reads are timed: our
# default kernel (and the backward's deterministic mode), cuDNN without FlashAttention-2. On the GPU machine, from
# the bundle (gpu-run/ holds oxtile and torch_attn.py):
#
#   [SETTLE_MS=1000] bash adjacent_attn.sh [--backward] OXTILE_BINARY OUT_DIR B,H,S,D,full|causal ...
#
# Prints per shape our TFLOP/s (the backward: default and deterministic mode), cuDNN's two readings and the ratios
# to their mean; then the geomeans, the lowest ratio (and the deterministic mode's cost). A row whose two cuDNN
# readings differ by more than 2% is flagged "unsteady". Beside each side's TFLOP/s, the SM clock it ran at (NVML):
# under the power cap a kernel that draws more power is timed at a lower clock. Extra arguments for `oxtile bench
# attn` in $OXTILE_ARGS.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
direction=() op=attn
if [ "${1:-}" = "--backward" ]; then direction=(--backward); op=attn-bwd; shift; fi
ox=${1:?usage: adjacent_attn.sh [--backward] OXTILE_BINARY OUT_DIR shapes...}
out=${2:?usage: adjacent_attn.sh [--backward] OXTILE_BINARY OUT_DIR shapes...}
shift 2
settle_ms=${SETTLE_MS:-1000}
if [ "$settle_ms" -gt 0 ]; then
  ours=(--settle-ms "$settle_ms" --rounds 1)
else
  ours=(--warmup 5 --runs 20 --rounds 1)
fi
# Only the rows the table reads. A row still costs ~17 s of device time: the two cuDNN processes' start and the
# three settles dominate (docs/perf-notes.md, session 49).
if [ "$op" = attn-bwd ]; then ours+=(--only oxtile-bwd,oxtile-bwd-det); else ours+=(--only oxtile); fi
settle_s=$(python3 -c "print($settle_ms / 1000)")
mkdir -p "$out"
# summarize FIRST LAST rows|totals: each row's line (printed as soon as the row is timed, so that a call cut short
# still shows the rows it finished), or the geomeans over rows FIRST..LAST.
summarize() {
python3 - "$out" "$1" "$2" "$op" "$3" <<'PY'
import json, math, sys
out, first, last, op, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
say = print if mode == "rows" else (lambda *args, **kwargs: None)
base = "oxtile-bwd" if op == "attn-bwd" else "oxtile"
ratios, det_ratios, det_costs = [], [], []
geo = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
for i in range(first, last + 1):
    try:
        peer_rows = [r for f in ("peer_before", "peer_after") for r in json.load(open(f"{out}/{f}_{i}.json"))
                     if r.get("impl") == "cudnn" and "tflops" in r]
        peer = [r["tflops"] for r in peer_rows]
        ours = {r["impl"]: r for r in json.load(open(f"{out}/ours_{i}.json")) if r.get("op") == op}
        row, det = ours[base], ours.get(base + "-det")
    except (OSError, KeyError, ValueError) as e:
        say(f"row {i}: missing ({e})")
        continue
    if len(peer) != 2:
        say(f"{row['shape']}: cuDNN did not run twice"); continue
    mean = sum(peer) / 2
    ratio = row["tflops"] / mean
    ratios.append(ratio)
    text = f"{row['shape']:26} oxtile {row['tflops']:7.1f}"
    if det and "tflops" in det:
        det_ratios.append(det["tflops"] / mean)
        det_costs.append(row["tflops"] / det["tflops"])
        text += f"  deterministic {det['tflops']:7.1f}"
    best = max(r["tflops"] for k, r in ours.items() if k.startswith("oxtile") and "tflops" in r)
    if op == "attn" and best > row["tflops"]:
        text += f" (best variant {best:7.1f})"
    flag = "  unsteady" if abs(peer[0] - peer[1]) / mean > 0.02 else ""
    # Each side's SM clock while it was timed: which side the power cap held lower. Not a ratio per clock: the
    # kernels are not all compute-bound, and on an H100 such ratios swung 0.84-1.27 where the times moved 0.93-1.07
    # (docs/perf-notes.md, session 48).
    clocks = [r.get("sm_mhz") for r in peer_rows]
    peer_clocks = f" (cuDNN {clocks[0]} / {clocks[1]})" if all(clocks) else ""
    say(f"{text}  cuDNN {peer[0]:7.1f} / {peer[1]:7.1f}  ratio {ratio:.3f}  {row.get('sm_mhz')} MHz"
        f"{peer_clocks}{flag}")
if mode == "rows":
    sys.exit()
if ratios:
    print(f"geomean {geo(ratios):.3f}, lowest {min(ratios):.3f}, over {len(ratios)} rows")
if det_ratios:
    print(f"deterministic: geomean {geo(det_ratios):.3f} of cuDNN; default / deterministic time: geomean "
          f"{geo(det_costs):.3f}, largest {max(det_costs):.3f}")
PY
}
echo "settled ${settle_ms} ms before timing, both sides"
i=0
for s in "$@"; do
  i=$((i + 1))
  timeout 120 python3 "$here/torch_attn.py" "${direction[@]}" "$s" --settle-s "$settle_s" \
    --only cudnn --json "$out/peer_before_$i.json" > /dev/null 2>&1
  timeout 300 "$ox" bench attn "${direction[@]}" --shapes "$s" "${ours[@]}" ${OXTILE_ARGS:-} --json "$out/ours_$i.json" \
    > "$out/ours_$i.txt" 2>&1
  timeout 120 python3 "$here/torch_attn.py" "${direction[@]}" "$s" --settle-s "$settle_s" \
    --only cudnn --json "$out/peer_after_$i.json" > /dev/null 2>&1
  summarize "$i" "$i" rows
done
summarize 1 "$i" totals
