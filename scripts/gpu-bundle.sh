#!/usr/bin/env bash
# Builds every test, bench and example binary in release and gathers them, with the runner, into gpu-run/
# (git-ignored; or the folder given as $1) for the GPU machine, which has no cargo, and packs it into
# gpu-pack/gpu-run.tar.xz beside it. There: `tar xJf gpu-pack/gpu-run.tar.xz && bash gpu-run/run.sh [--memcheck] [--bench]`.
set -euo pipefail
out=$(realpath -m "${1:-$(dirname "$0")/../gpu-run}")
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}
rm -rf "$out" && mkdir -p "$out/tests" "$out/benches" "$out/examples"

collect() { # $1: folder under $out, rest: cargo build arguments
  local dest=$1; shift
  # CPU-only test binaries (static kernel checks, layout CLI, layering) run in CI; the GPU machine has no pip,
  # ../shared or source tree.
  cargo build --release "$@" --message-format=json-render-diagnostics |
    python3 -c '
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    # Only integration tests, benches and examples: unit tests of the library and CLI run in CI.
    if msg.get("reason") == "compiler-artifact" and msg.get("executable") and \
            msg["target"]["kind"][0] in ("test", "bench", "example"):
        print(msg["target"]["name"], msg["executable"])
' | while read -r name exe; do
      case "$dest/$name" in tests/static_kernels | tests/layout_cli | tests/layering) continue ;; esac
      cp "$exe" "$out/$dest/$name" && strip "$out/$dest/$name"
    done
}

collect tests --tests
collect benches --benches
collect examples --examples
cp "$target/release/oxtile" "$out/oxtile" && strip "$out/oxtile"
cp scripts/gpu-run.sh "$out/run.sh"
if [ -d ../shared/bench ]; then cp ../shared/bench/torch_reference.py "$out/"; fi
cp scripts/torch_cublas_kernels.py scripts/torch_newton_schulz.py scripts/torch_attn.py scripts/adjacent_attn.sh "$out/"
# The device tool carries at most 64 MiB. Every binary embeds the same PTX modules and cubins (~58 MB together), so one
# xz stream with a dictionary larger than a binary stores that blob once: ~900 MB of binaries pack into ~6 MB in
# 15 s on one core (multithreaded xz splits the stream into blocks and loses that: 80 MB at level 1).
pack="$(dirname "$out")/gpu-pack"
mkdir -p "$pack"
tar cf - -C "$(dirname "$out")" "$(basename "$out")" | xz -T1 --lzma2=preset=1,dict=192MiB > "$pack/gpu-run.tar.xz"
echo "gpu-pack/gpu-run.tar.xz: $(du -sh "$pack/gpu-run.tar.xz" | cut -f1) (on the GPU machine: tar xJf gpu-pack/gpu-run.tar.xz)"
echo "gpu-run/: $(ls "$out/tests" | wc -l) test, $(ls "$out/benches" | wc -l) bench, $(ls "$out/examples" | wc -l) example binaries ($(du -sh "$out" | cut -f1))"
