#!/usr/bin/env bash
# One device call for docs/wip/attn-wide-tile.patch (session 35; see docs/wip/README.md). Needs, in gpu-pack/ (carried
# with `run`, carry ["gpu-pack"]): base.tar.xz and wide.tar.xz, each a folder of that name holding the stripped
# release `oxtile` and tests/attention binary (`attention`) of main and of main with the patch. Prints: the patched
# build's tests/attention and `oxtile check`; tests/attention under memcheck, racecheck and synccheck; the 176-key
# tile against the 128-key one in one process (`oxtile` and `oxtile-wide` rows, 2 runs); and `gpu-ab.sh --attn`
# of base against wide over the default kernels (3 passes). Logs and JSON go to $OUT.
#
#   bash docs/wip/attn-wide-call.sh
set -uo pipefail
export OXTILE_CUDA_TOOLS=/nonexistent   # no pip on the GPU machine; the static checks run in CI
root=$(pwd)
cd gpu-pack
for t in base wide; do xz -dc "$t.tar.xz" | tar -xf -; done
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv
(
  cd wide
  echo "=== tests/attention"; ./attention --ignored --test-threads=1 2>&1 | grep -E "test result|FAILED|panicked" | head -8
  echo "=== oxtile check"; ./oxtile check 2>&1 | tail -2
  export OXTILE_UNDER_SANITIZER=1
  for tool in memcheck racecheck synccheck; do
    extra=(); [ "$tool" = racecheck ] && extra=(--racecheck-report all)
    ( compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 99 ./attention --ignored --test-threads=1 \
        > "$OUT/san-$tool.log" 2>&1; echo "rc=$?" >> "$OUT/san-$tool.log" ) &
  done
  wait
  for tool in memcheck racecheck synccheck; do
    echo "=== $tool"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test result|rc=|FAILED|panicked" "$OUT/san-$tool.log" | head -6
  done
)
echo "=== 176 keys a step against 128, one process (2 runs)"
shapes=(32,16,1024,128,full 16,16,2048,128,full 8,16,4096,128,full 4,16,8192,128,full 2,16,16384,128,full
        64,16,512,128,full 8,16,4096,128,causal 2,16,16384,128,causal)
for run in 1 2; do
  wide/oxtile bench attn --no-stats --shapes "${shapes[@]}" --json "$OUT/wide-$run.json" > "$OUT/wide-$run.log" 2>&1 ||
    tail -20 "$OUT/wide-$run.log"
done
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
for run in (1, 2):
    table = {}
    for row in json.load(open(f"{out}/wide-{run}.json")):
        table.setdefault(row["shape"], {})[row["impl"]] = row.get("tflops")
    for shape, impls in table.items():
        base, wide = impls.get("oxtile"), impls.get("oxtile-wide")
        if base and wide:
            print(f"run {run} {shape:>26}  128 keys {base:6.1f}  176 keys {wide:6.1f}  ratio {wide / base:.3f}")
PY
echo "rows failing the reference check:"; grep -c "FAIL" "$OUT/wide-1.log" "$OUT/wide-2.log"
echo "=== gpu-ab.sh --attn base wide"
AB_OUT=$OUT/ab bash "$root/scripts/gpu-ab.sh" --attn base/oxtile wide/oxtile 3 --shapes 64,32,512,64,causal \
  64,32,512,64,full 16,32,2048,64,full 4,32,8192,64,causal 32,16,1024,128,full 8,16,4096,128,causal \
  16,16,2048,256,causal 4,16,8192,256,full 2>&1 | tail -40
