#!/usr/bin/env bash
# Per-kernel SASS comparison of two cubins, for changes meant to leave the code alone (a refactor, a moved function):
# prints how many kernels are byte-identical, how many have the same opcode sequence with only registers renamed,
# and the rest by name. Addresses are stripped; nothing else is normalized.
#
#   bash scripts/sass-diff.sh OLD.cubin NEW.cubin [how many differing names to print, default 20]
#
# The cubins are the builder's per-family modules (target/ptx/modules/kernels_<family>_sm_90a.cubin): copy the old one
# aside, rebuild (`cargo build --release -p oxtile --lib` reassembles only the family that changed), compare.
# cuobjdump comes from $CUOBJDUMP, else the CUDA tools the builder installed, else PATH.
set -euo pipefail
old=${1:?usage: sass-diff.sh OLD.cubin NEW.cubin [N]}
new=${2:?usage: sass-diff.sh OLD.cubin NEW.cubin [N]}
shown=${3:-20}
tools=${OXTILE_CUDA_TOOLS:-$HOME/.cache/oxtile/cuda-tools}/nvidia/cu13/bin
cuobjdump=${CUOBJDUMP:-$( [ -x "$tools/cuobjdump" ] && echo "$tools/cuobjdump" || command -v cuobjdump)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
split() { # cubin, directory: one file of instructions per kernel
  mkdir -p "$2"
  "$cuobjdump" -sass "$1" | awk -v dir="$2" '
    /Function :/ { file = dir "/" $3; next }
    file && /^[ \t]+\/\*[0-9a-f]+\*\// { sub(/\/\*[0-9a-f]+\*\//, ""); sub(/;.*/, ""); print > file }'
}
opcodes() { awk '{ print ($1 ~ /^@/) ? $2 : $1 }' "$1"; }
split "$old" "$work/old"
split "$new" "$work/new"
identical=0 renamed=0 differ=()
for f in "$work"/old/*; do
  name=$(basename "$f")
  if [ ! -f "$work/new/$name" ]; then
    differ+=("$name (missing in NEW)")
  elif cmp -s "$f" "$work/new/$name"; then
    identical=$((identical + 1))
  elif cmp -s <(opcodes "$f") <(opcodes "$work/new/$name"); then
    renamed=$((renamed + 1))
  else
    differ+=("$name")
  fi
done
echo "kernels: $(ls "$work/old" | wc -l) in OLD, $(ls "$work/new" | wc -l) in NEW"
echo "identical: $identical; same opcodes, registers renamed: $renamed; different: ${#differ[@]}"
printf '  %s\n' "${differ[@]:0:$shown}"
