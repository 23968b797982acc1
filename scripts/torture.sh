#!/usr/bin/env bash
# Long runs of the store torture harness (crates/shamap-store/tests/torture/):
# a randomized workload in a child process against an oracle of acknowledged
# commits, with SIGKILLs, truncations, bit flips, replayed and swapped
# batches, FIFOs, a deleted lock with two writers, a full disk, a failing
# acknowledgment record, and power losses on the crash file system (an
# in-memory FUSE file system that loses any subset of the unsynced pages).
#
#   scripts/torture.sh                    # 30 minutes per backend (log, fjall), one after another
#   scripts/torture.sh --seconds 3600     # an hour per backend
#   scripts/torture.sh --seed 7 log       # one backend, another seed
#   scripts/torture.sh --classes truncate,replay log   # only these file faults
#   scripts/torture.sh --keep /tmp/failed # keep the store copy of every FAILED case
#
# Builds the test binary (the workspace's test profile), runs each backend's
# torture test for the given time and prints the tables (kept / refused /
# FAILED per fault class) at the end; they are also appended to
# target/torture/report.txt with the date, the command and the commit.
# Exits 1 when any case FAILED (the lines say the seed and the fault).
# The full-disk class mounts a tmpfs and the power-loss class a FUSE file
# system: run as root, or they are skipped and the table says so. With the `rocksdb` feature built (--rocksdb), RocksDB too.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=1800
seed=""
classes=""
keep=""
features=()
backends=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --classes) classes="$2"; shift 2 ;;
    --keep) keep="$2"; shift 2 ;;
    --rocksdb) features=(--features rocksdb); backends+=(rocks); shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) backends+=("$1"); shift ;;
  esac
done
if [ ${#backends[@]} -eq 0 ] || [ "${backends[*]}" = rocks ]; then
  backends=(log fjall "${backends[@]}")
fi
if [ "$(id -u)" != 0 ]; then
  echo "torture.sh: not root: the full-disk class (a tmpfs mount) is skipped" >&2
fi

mkdir -p target/torture
report=target/torture/report.txt
run_report=$(mktemp)
trap 'rm -f "$run_report"' EXIT
{
  echo "== $(date -u '+%Y-%m-%d %H:%M UTC') commit $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (dirty)')"
  echo "   scripts/torture.sh --seconds $seconds ${seed:+--seed $seed }${classes:+--classes $classes }${backends[*]}"
} | tee -a "$report"

# The test binary, copied: a rebuild in target/ while the runs go on (a
# test, a clippy pass) would otherwise pull it from under the workers it
# re-runs as children.
exe=$(cargo test -p shamap-store "${features[@]}" --test main --no-run --message-format=json \
  | grep -o '"executable":"[^"]*"' | tail -1 | sed 's/"executable":"\(.*\)"/\1/')
[ -x "$exe" ] || { echo "torture.sh: no test binary built" >&2; exit 1; }
bin="target/torture/main-$(git rev-parse --short HEAD)"
cp "$exe" "$bin"
status=0
for b in "${backends[@]}"; do
  echo "torture.sh: $b for $seconds s" >&2
  env SHAMAP_TORTURE_SECS="$seconds" SHAMAP_TORTURE_REPORT="$run_report" \
    ${seed:+SHAMAP_TORTURE_SEED="$seed"} \
    ${classes:+SHAMAP_TORTURE_CLASSES="$classes"} \
    ${keep:+SHAMAP_TORTURE_KEEP="$keep"} \
    sh -c 'cd crates/shamap-store && exec "$@"' - "$PWD/$bin" "torture::torture_$b" \
      --exact --nocapture >"target/torture/$b.log" 2>&1 || status=1
done
tee -a "$report" <"$run_report"
echo "full output: target/torture/<backend>.log; tables: $report"
exit "$status"
