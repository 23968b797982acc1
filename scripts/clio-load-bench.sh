#!/usr/bin/env bash
# `shamap clio load` benchmark (issue 48, item 5), beside scripts/clio-bench.sh:
#   - a generated chain written as rippled's NuDB node store with its
#     ledger.db (an ignored test of crates/shamap-clio writes it);
#   - the insert floor: the same rows, read and verified first (untimed, in
#     memory), then written alone with the same prepared statements at the
#     same concurrency (`shamap clio insert-floor`), into a fresh keyspace;
#   - `shamap clio load` of the same ledgers into another fresh keyspace,
#     with its wall time and peak RSS (/usr/bin/time -v);
#   - `shamap clio verify` of the loaded keyspace, which must pass.
# Each timed part starts once the local node is idle (under 5% of a core
# for 5 s, read from /proc; skipped when the node is not the one
# scripts/cassandra.sh runs), so that neither pays for the compactions the
# other's writes left running.
#
#   scripts/clio-load-bench.sh [OBJECTS] [LEDGERS] [CHANGES]
#
# Defaults 100000 100 1000 (a few minutes on 2 busy cores); the issue's size
# is 1000000 1000 1000. The cluster is $SHAMAP_CASSANDRA (default
# 127.0.0.1:9042). Each run loads into two new keyspaces,
# clio_load_floor_PID and clio_load_bench_PID, left for inspection.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-common.sh
bench_setup clio-load-bench.sh
objects=${1:-100000}
ledgers=${2:-100}
changes=${3:-1000}
node_pid=${SHAMAP_CASSANDRA_HOME:-${HOME:-/root}/.cache/shamap-cassandra}/node1/pid
idle() {
  [ -r "$node_pid" ] && [ -r "/proc/$(cat "$node_pid")/stat" ] || return 0
  local pid tck a b start=$SECONDS
  pid=$(cat "$node_pid"); tck=$(getconf CLK_TCK)
  while [ $((SECONDS - start)) -lt 600 ]; do
    a=$(awk '{print $14 + $15}' "/proc/$pid/stat"); sleep 5; b=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    [ $(( (b - a) * 100 / (5 * tck) )) -lt 5 ] && break
  done
  echo "  (node idle after $((SECONDS - start)) s)"
}
echo "== machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); commit $(git rev-parse --short HEAD)"
echo "== source: $objects objects, $ledgers ledgers of $changes changes, NuDB with ledger.db"
M_STORE="$work" M_OBJ=$objects M_LEDGERS=$ledgers M_CHANGES=$changes \
  cargo test -q -p shamap-clio --test main clio_cassandra::write_load_bench_store -- --ignored --nocapture 2>&1 | grep -v '^$' | grep -v 'running\|test result\|^test ' || true
du -sh "$work/nudb" | awk '{print "  store on disk: " $1}'
run=$$
echo "== insert floor (same rows, same statements and concurrency, nothing read or verified while timed)"
idle
timed - "$bin" clio insert-floor --from "$work/nudb" --db "cassandra://$host/clio_load_floor_$run" --ledgers "1..$ledgers"
echo "== clio load (read, verify, write)"
idle
timed - "$bin" clio load --from "$work/nudb" --db "cassandra://$host/clio_load_bench_$run" --ledgers "1..$ledgers"
echo "== clio verify of the loaded keyspace"
"$bin" clio verify --db "cassandra://$host/clio_load_bench_$run" --no-audit --json > "$work/verify.json"
grep -q '"ok": true' "$work/verify.json" || { echo "clio-load-bench.sh: the loaded keyspace did not verify" >&2; exit 1; }
echo "  verified"
echo "(keyspaces clio_load_floor_$run and clio_load_bench_$run are left for inspection)"
