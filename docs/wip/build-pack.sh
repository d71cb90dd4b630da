#!/usr/bin/env bash
# Builds one folder of gpu-pack/ (git-ignored, carried to the device with `run`, carry ["gpu-pack"]): a worktree of
# REF with the given patches applied, built in a target directory of its own (a shared one has reused a stale
# oxtile-abi rlib across worktrees), its stripped release `oxtile` and the named test binaries copied to
# gpu-pack/NAME and packed as gpu-pack/NAME.tar.xz (the folder removed).
#
#   bash docs/wip/build-pack.sh NAME REF TESTS [PATCH...]
#   e.g. bash docs/wip/build-pack.sh stag main attention_backward docs/wip/attn-bwd-staggered.patch
#        bash docs/wip/build-pack.sh base main attention
#
# TESTS: comma-separated names of tests/*.rs binaries (copied as gpu-pack/NAME/<test>). A cold build takes 6-9
# minutes on two cores.
set -euo pipefail
name=${1:?usage: build-pack.sh NAME REF TESTS [PATCH...]}
ref=${2:?usage: build-pack.sh NAME REF TESTS [PATCH...]}
tests=${3:?usage: build-pack.sh NAME REF TESTS [PATCH...]}
shift 3
root=$(git rev-parse --show-toplevel)
tree=/tmp/pack-tree-$name
target=/tmp/pack-target-$name
git -C "$root" worktree remove --force "$tree" 2>/dev/null || rm -rf "$tree"
git -C "$root" worktree add --detach "$tree" "$ref" > /dev/null
for patch in "$@"; do
  git -C "$tree" apply "$root/$patch"
done
(cd "$tree" && CARGO_TARGET_DIR=$target cargo build --release --locked -p oxtile --bins --tests)
out="$root/gpu-pack/$name"
rm -rf "$out" && mkdir -p "$out"
cp "$target/release/oxtile" "$out/oxtile"
for t in ${tests//,/ }; do
  # The newest test binary of that name (deps/<test>-<hash>, not its .d file).
  binary=$(ls -t "$target"/release/deps/"$t"-* | grep -v '\.d$' | head -1)
  cp "$binary" "$out/$t"
done
strip "$out"/*
(cd "$root/gpu-pack" && tar -cf - "$name" | xz -T2 --lzma2=preset=1,dict=192MiB > "$name.tar.xz" && rm -rf "$name")
git -C "$root" worktree remove --force "$tree"
ls -la "$root/gpu-pack/$name.tar.xz"
