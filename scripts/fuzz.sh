#!/usr/bin/env bash
# Long fuzzing runs of every cargo-fuzz target, with the corpus kept in the
# repository (fuzz/corpus/<target>, minimized after each run).
#
#   scripts/fuzz.sh                      # every target, 30 minutes each, one after another
#   scripts/fuzz.sh --seconds 60         # shorter
#   scripts/fuzz.sh dump_reader          # one target
#   scripts/fuzz.sh --parallel 2 ...     # two targets at a time (one core each)
#   scripts/fuzz.sh --corpus-only        # each target once over a copy of its committed corpus
#                                        # (no fuzzing, nothing written into fuzz/: CI's smoke run)
#
# Installs cargo-fuzz (from the Rust crate registry) when missing; needs the nightly toolchain.
# Each run's log is fuzz/logs/<target>.log (not committed); the last lines
# (runs, coverage, corpus size) are printed at the end. A crash leaves its
# input under fuzz/artifacts/<target>/ and makes this script exit 1.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=1800
parallel=1
corpus_only=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --parallel) parallel="$2"; shift 2 ;;
    --corpus-only) corpus_only=1; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
if [ ${#targets[@]} -eq 0 ]; then
  targets=(dump_reader json_entry proof_verify store_node node_log node_log_checkpoint backed_differential nudb_store xpop_verify)
fi

if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "fuzz.sh: the nightly toolchain is needed (rustup toolchain install nightly)" >&2
  exit 2
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "fuzz.sh: installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

for t in "${targets[@]}"; do
  cargo +nightly fuzz build --release "$t" >/dev/null
done

if [ "$corpus_only" = 1 ]; then
  # Every committed input once: a target whose rule the code no longer
  # keeps fails here, not only in a long run. The copy keeps fuzz/ clean.
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  status=0
  for t in "${targets[@]}"; do
    mkdir -p "$scratch/$t"
    cp -r "fuzz/corpus/$t/." "$scratch/$t/" 2>/dev/null || true
    n=$(ls "$scratch/$t" | wc -l)
    if cargo +nightly fuzz run --release "$t" "$scratch/$t" -- -runs=0 \
      -artifact_prefix="$scratch/" >"$scratch/$t.log" 2>&1; then
      echo "fuzz.sh: $t: $n corpus inputs, no failure"
    else
      echo "fuzz.sh: $t FAILED on its corpus:" >&2
      grep -E 'panicked|ERROR|SUMMARY' "$scratch/$t.log" | head -n 5 >&2 || true
      status=1
    fi
  done
  exit $status
fi

mkdir -p fuzz/logs

run_one() {
  local t="$1"
  local corpus="fuzz/corpus/$t"
  mkdir -p "$corpus" "fuzz/artifacts/$t"
  local extra=()
  if [ "$t" = dump_reader ]; then
    extra+=(-dict=fuzz/dump_reader.dict)
    cp -n fuzz/seeds/*.json "$corpus"/ 2>/dev/null || true
    cp -n data/*.json "$corpus"/ 2>/dev/null || true
  fi
  if [ "$t" = json_entry ]; then
    cp -n fuzz/seeds/json_entry/*.json "$corpus"/ 2>/dev/null || true
  fi
  echo "fuzz.sh: $t for ${seconds}s"
  local rc=0
  cargo +nightly fuzz run --release "$t" "$corpus" -- \
    -max_total_time="$seconds" -print_final_stats=1 "${extra[@]}" \
    >"fuzz/logs/$t.log" 2>&1 || rc=$?
  # Keep the corpus small enough to commit: only inputs that add coverage.
  cargo +nightly fuzz cmin --release "$t" "$corpus" >"fuzz/logs/$t.cmin.log" 2>&1 || true
  return $rc
}

status=0
pids=()
names=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  names+=("$t")
  if [ ${#pids[@]} -ge "$parallel" ]; then
    wait "${pids[0]}" || { echo "fuzz.sh: ${names[0]} FAILED (see fuzz/logs/${names[0]}.log)" >&2; status=1; }
    pids=("${pids[@]:1}")
    names=("${names[@]:1}")
  fi
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { echo "fuzz.sh: ${names[$i]} FAILED (see fuzz/logs/${names[$i]}.log)" >&2; status=1; }
done

echo
for t in "${targets[@]}"; do
  echo "== $t"
  grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb)' "fuzz/logs/$t.log" || true
  grep -E 'cov: ' "fuzz/logs/$t.log" | tail -n 1 || true
  echo "corpus: $(ls "fuzz/corpus/$t" | wc -l) files, $(du -sh "fuzz/corpus/$t" | cut -f1)"
done
exit $status
