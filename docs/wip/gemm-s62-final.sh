#!/usr/bin/env bash
# Session 62's last call (pack `final`: oxtile at the session's head, tests/gemm as `gemm`, and main 6f0a2fd's oxtile
# as `oxtile-main`): tests/gemm's stream-K, split-K, skinny and every-layout tests (the split-K pieces and Auto's
# choices changed; no kernel did), then Auto before (oxtile-main) and after (oxtile) beside the three in-process peers
# on the sweep's odd-indexed shapes (docs/wip/sweep-odd.txt: none of this session's rules was read from them), one
# process per class, layout and binary, the two binaries back to back per class; results tarred into $OUT/final.tar.
set -uo pipefail
start=$SECONDS
cd gpu-pack && xz -dc final.tar.xz | tar -xf - && cd ..
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
work=/tmp/final && mkdir -p "$work"
timeout 150 gpu-pack/final/gemm --include-ignored --test-threads=2 stream_k split_k skinny \
  bf16_matches_reference_in_every_layout > "$work/tests.log" 2>&1
echo "tests rc=$? at $((SECONDS - start)) s"; grep -E "test result|panicked|FAILED" "$work/tests.log" | head -6
for layout in tn tt; do
  for class in model-decode model-mid square ragged model-large; do
    for exe in oxtile-main oxtile; do
      [ $((SECONDS - start)) -gt "${DEADLINE:-420}" ] && { echo "skipped $exe $class $layout"; continue; }
      gpu-pack/final/$exe bench gemm --sweep --sweep-file docs/wip/sweep-odd.txt --class "$class" --layout "$layout" \
        --no-check --only oxtile,cublasLt,cublasLt-tuned,cublasGemmEx --runs 10 --rounds 2 --warmup 3 \
        --json "$work/$exe-$class-$layout.json" > "$work/$exe-$class-$layout.log" 2>&1
      echo "$exe $class $layout rc=$? at $((SECONDS - start)) s"
    done
  done
done
tar -cf "$OUT/final.tar" -C "$work" .
