#!/usr/bin/env bash
# Clio verification benchmark (issue 28, item 5): write a generated chain
# into a Clio keyspace (`shamap clio load-test-chain`), then, in one run:
#   - the read floor: the rows `clio verify` reads, with the same queries
#     and concurrency, nothing built or hashed (`shamap clio read-floor`);
#   - `clio verify` of the whole range in memory, and with
#     `--state --cache-mb 64`, each with its peak RSS (/usr/bin/time -v);
#   - the first ledger's full build alone, in memory and with --state;
#   - the fixed overhead: peak RSS of `clio verify --state --cache-mb 64`
#     on a one-ledger keyspace of ten objects (the binary, the driver and
#     its runtime, an empty node log).
#
#   scripts/clio-bench.sh [OBJECTS] [LEDGERS] [CHANGES]
#
# Defaults 1000000 1000 1000: the size issue 28 names (the load takes about
# 9 minutes on 2 busy cores; pass smaller numbers for a quick run). The
# cluster is $SHAMAP_CASSANDRA (default 127.0.0.1:9042; `scripts/cassandra.sh
# start`). The keyspace `clio_bench` is replaced by each run and left for
# inspection; CLIO_BENCH_REUSE=1 verifies the one there instead of loading.
# The audit is skipped (--no-audit): it is a scan of `objects`, timed apart.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-common.sh
bench_setup clio-bench.sh
objects=${1:-1000000}
ledgers=${2:-1000}
changes=${3:-1000}
url="cassandra://$host/clio_bench"

echo "== machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg); commit $(git rev-parse --short HEAD)"
if [ "${CLIO_BENCH_REUSE:-0}" != 1 ]; then
  echo "== load: $objects objects, $ledgers ledgers of $changes changes"
  timed - "$bin" clio load-test-chain --db "$url" --objects "$objects" --ledgers "$ledgers" --changes "$changes"
fi
echo "== read floor (same rows, same concurrency, nothing built)"
timed - "$bin" clio read-floor --db "$url"
echo "== verify, state in memory"
timed "$work/mem.json" "$bin" clio verify --db "$url" --no-audit --json
grep -q '"ok": true' "$work/mem.json" || { echo "clio-bench.sh: the in-memory run did not verify" >&2; exit 1; }
echo "== verify, --state --cache-mb 64"
timed "$work/state.json" "$bin" clio verify --db "$url" --state "$work/state" --cache-mb 64 --no-audit --json
grep -q '"ok": true' "$work/state.json" || { echo "clio-bench.sh: the --state run did not verify" >&2; exit 1; }
first=$(sed -n 's/.*"ledger_index": \([0-9]*\),/\1/p' "$work/mem.json" | head -1)
du -sh "$work/state" | awk '{print "  state on disk: " $1}'
echo "== the first ledger alone (full build), in memory"
timed /dev/null "$bin" clio verify --db "$url" --ledger "$first" --no-audit
echo "== the first ledger alone (full build), --state --cache-mb 64"
timed /dev/null "$bin" clio verify --db "$url" --ledger "$first" --state "$work/state1" --cache-mb 64 --no-audit
echo "== fixed overhead: --state --cache-mb 64 on a one-ledger keyspace of ten objects"
"$bin" clio load-test-chain --db "cassandra://$host/clio_bench_empty" --objects 10 --ledgers 1 > /dev/null
timed /dev/null "$bin" clio verify --db "cassandra://$host/clio_bench_empty" --state "$work/state0" --cache-mb 64 --no-audit
