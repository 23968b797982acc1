#!/usr/bin/env bash
# Regression guard: instruction counts (valgrind callgrind) of the key
# operations, independent of machine noise.
#
#   scripts/callgrind.sh                  # print Ir per operation; compare with the baseline if present
#   scripts/callgrind.sh --save           # ... and write scripts/callgrind-baseline.txt
#   scripts/callgrind.sh --threshold 1.5  # flag changes above 1.5% (default 2)
#   scripts/callgrind.sh --entries 20000  # a smaller map (the baseline must match)
#
# Runs `shamap-bench --quick` (fixed counts, one thread, no timing loops) under
# callgrind and reads the inclusive instruction count of each `quick::op_*`
# function: build N + root, one update block + root, gets, proofs, and the
# sorted build and an `apply` block of a map hashed with BLAKE3. Exit 1 when
# an operation got more expensive than the baseline by more than the threshold.
#
# SHA512_LANES_FORCE=avx2, BLAKE3_LANES_FORCE=avx2: valgrind 3.19 does not
# decode AVX-512, so the multi-lane hashers are forced to their AVX2 backends
# (4 and 8 lanes); the counts are those of the AVX2 paths on every machine
# that has them.
set -euo pipefail
cd "$(dirname "$0")/.."

save=0
threshold=2
entries=100000
block=10000
gets=100000
proofs=10000
baseline=scripts/callgrind-baseline.txt
while [ $# -gt 0 ]; do
  case "$1" in
    --save) save=1 ;;
    --threshold) threshold="$2"; shift ;;
    --entries) entries="$2"; shift ;;
    --baseline) baseline="$2"; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "callgrind.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

command -v valgrind >/dev/null || { echo "callgrind.sh: valgrind not installed" >&2; exit 2; }
cargo build --release -q -p shamap-bench

export SHA512_LANES_FORCE=avx2 BLAKE3_LANES_FORCE=avx2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=(--quick --seed 7 --entries "$entries" --block "$block" --gets "$gets" --proofs "$proofs" --data-len 64)
valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" \
  target/release/shamap-bench "${args[@]}" >"$work/ops.txt" 2>"$work/valgrind.log" || {
  cat "$work/valgrind.log" >&2
  exit 2
}
callgrind_annotate --inclusive=yes "$work/cg.out" >"$work/annotate.txt"

# One line per operation: name ops Ir Ir/op.
: >"$work/now.txt"
while read -r name ops _secs _root; do
  # The function's own line (file:function [object]) carries its inclusive
  # count; lines without the object are code inlined into it from other files.
  ir=$(grep -E "quick::op_${name} \[" "$work/annotate.txt" | head -1 | awk '{print $1}' | tr -d , || true)
  if [ -z "$ir" ]; then
    echo "callgrind.sh: no count for quick::op_$name" >&2
    exit 2
  fi
  echo "$name $ops $ir $(awk -v a="$ir" -v b="$ops" 'BEGIN { printf "%.1f", a / b }')" >>"$work/now.txt"
done <"$work/ops.txt"

echo "shamap-bench ${args[*]}; SHA512_LANES_FORCE=avx2 BLAKE3_LANES_FORCE=avx2; commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo
fail=0
if [ -f "$baseline" ] && [ "$save" = 0 ]; then
  echo "| operation | ops | Ir | Ir/op | baseline Ir/op | change |"
  echo "|---|---|---|---|---|---|"
  while read -r name ops ir per; do
    base=$(awk -v n="$name" '$1 == n { print $4 }' "$baseline")
    if [ -z "$base" ]; then
      echo "| $name | $ops | $ir | $per | (none) | |"
      continue
    fi
    verdict=$(awk -v a="$per" -v b="$base" -v t="$threshold" 'BEGIN {
      c = (a - b) / b * 100
      flag = c > t ? " REGRESSION" : (c < -t ? " improvement" : "")
      printf "%+.2f%%%s", c, flag }')
    case "$verdict" in *REGRESSION*) fail=1 ;; esac
    echo "| $name | $ops | $ir | $per | $base | $verdict |"
  done <"$work/now.txt"
  if grep -q "entries" "$baseline" && ! grep -q -- "--entries $entries " "$baseline"; then
    echo "warning: the baseline was made with other arguments: $(head -1 "$baseline")" >&2
  fi
else
  echo "| operation | ops | Ir | Ir/op |"
  echo "|---|---|---|---|"
  while read -r name ops ir per; do
    echo "| $name | $ops | $ir | $per |"
  done <"$work/now.txt"
fi

if [ "$save" = 1 ]; then
  {
    echo "# shamap-bench ${args[*]} SHA512_LANES_FORCE=avx2 BLAKE3_LANES_FORCE=avx2 commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
    echo "# operation ops Ir Ir/op"
    cat "$work/now.txt"
  } >"$baseline"
  echo
  echo "saved $baseline"
fi
if [ "$fail" = 1 ]; then
  echo
  echo "instruction count up by more than ${threshold}% (see REGRESSION above)"
  exit 1
fi
