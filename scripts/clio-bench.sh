#!/usr/bin/env bash
# Clio verification benchmark: write a generated chain into a Clio keyspace
# (`shamap clio load-test-chain`), then time `shamap clio verify` over it in
# memory and with `--state --cache-mb 64`, each with its peak RSS.
#
#   scripts/clio-bench.sh [OBJECTS] [LEDGERS] [CHANGES]
#
# Defaults 1000000 1000 1000: the size issue 28 names (hours of loading on
# a small machine; pass smaller numbers for a quick run). The cluster is
# $SHAMAP_CASSANDRA (default 127.0.0.1:9042; `scripts/cassandra.sh start`).
# The keyspace `clio_bench` is replaced by each run and left for inspection.
set -euo pipefail
cd "$(dirname "$0")/.."
objects=${1:-1000000}
ledgers=${2:-1000}
changes=${3:-1000}
host=${SHAMAP_CASSANDRA:-127.0.0.1:9042}
url="cassandra://$host/clio_bench"
command -v /usr/bin/time >/dev/null || { echo "clio-bench.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
cargo build --release -q -p shamap-cli
bin=target/release/shamap
timed() { /usr/bin/time -f "  %e s wall, %M KiB peak RSS" "$@"; }

echo "== load: $objects objects, $ledgers ledgers of $changes changes"
timed "$bin" clio load-test-chain --db "$url" --objects "$objects" --ledgers "$ledgers" --changes "$changes"

echo "== verify, state in memory (no audit)"
timed "$bin" clio verify --db "$url" --no-audit --json > /tmp/clio-bench-mem.json
echo "== verify, --state --cache-mb 64 (no audit)"
state=$(mktemp -d)
trap 'rm -rf "$state"' EXIT
timed "$bin" clio verify --db "$url" --state "$state/s" --cache-mb 64 --no-audit --json > /tmp/clio-bench-state.json
echo "== the first ledger alone (full build), in memory"
timed "$bin" clio verify --db "$url" --ledger 1 --no-audit > /dev/null
echo "reports: /tmp/clio-bench-mem.json /tmp/clio-bench-state.json"
