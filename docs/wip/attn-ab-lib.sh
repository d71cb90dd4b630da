# Helpers sourced by the attention call scripts (docs/wip/s66-call*.sh); $start is the caller's start time.
#   ab NAME OXTILE_A OXTILE_B SHAPES...   A/B by scripts/gpu-ab.sh --attn, 2 passes of 20 launches, oxtile rows only;
#                                         prints the table and each row's check against the GPU reference
#   checks NAME                           tests/attention of pack NAME and the three sanitizers over three tests
ab() {
  local name=$1 a=$2 b=$3; shift 3
  echo "=== $name at $((SECONDS - start)) s"
  AB_OUT=$OUT/$name timeout "${AB_LIMIT:-100}" bash scripts/gpu-ab.sh --attn "$a" "$b" 2 --only oxtile --runs 20 \
    --shapes "$@" 2>&1 | grep -vE "^#|^===|^op |^attn " | tail -16
  grep -hE "^attn " $OUT/$name/ab-*.log | awk '{print $NF}' | sort | uniq -c
}
checks() {
  local name=$1
  echo "=== tests/attention ($name) at $((SECONDS - start)) s"
  timeout 60 "gpu-pack/$name/attention" --include-ignored --test-threads=1 > "$OUT/tests-attention-$name.log" 2>&1
  echo "rc=$?"; grep -E "test result|panicked|FAILED" "$OUT/tests-attention-$name.log" | head -8
  echo "=== sanitizers ($name) at $((SECONDS - start)) s"
  bash docs/wip/sanitizers.sh "gpu-pack/$name/attention" 60 grouped_and_multi_query_heads \
    seq_q_and_seq_k_differ_both_ways head_dim_256_with_seq_q_and_seq_k_apart_and_grouped_heads
}
