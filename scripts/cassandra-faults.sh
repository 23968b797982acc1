#!/usr/bin/env bash
# The fault run of the Cassandra backend on a 3-node local cluster
# (replication 3, quorum reads and writes): SIGKILL a node in the middle of
# an import and in the middle of a commit, restart it, verify every root;
# then SIGKILL a node in the middle of a `clio verify --state` run (it
# completes through the other replicas or stops with an error; the state
# records only verified ledgers, and a resumed run finishes).
# The cluster has its own state directory (default
# ~/.cache/shamap-cassandra/faults; Cassandra itself is shared with
# scripts/cassandra.sh) and is wiped before and after; a single node left
# running by scripts/cassandra.sh is in the way (same addresses) and is
# refused, not stopped.
#   scripts/cassandra-faults.sh            # 200,000 entries; SHAMAP_FAULTS_ENTRIES to change (CI: 20000)
set -euo pipefail
cd "$(dirname "$0")/.."
export SHAMAP_CASSANDRA_STATE=${SHAMAP_CASSANDRA_STATE:-${SHAMAP_CASSANDRA_HOME:-${HOME:-/root}/.cache/shamap-cassandra}/faults}
if (exec 3<>/dev/tcp/127.0.0.1/9042) 2>/dev/null && ! [ -f "$SHAMAP_CASSANDRA_STATE/node1/pid" ]; then
  echo "cassandra-faults.sh: something already listens on 127.0.0.1:9042 (scripts/cassandra.sh stop?)" >&2
  exit 1
fi
trap 'scripts/cassandra.sh wipe || true' EXIT
scripts/cassandra.sh wipe
scripts/cassandra.sh start --nodes 3
export SHAMAP_CASSANDRA_CLUSTER=127.0.0.1:9042,127.0.0.2:9042,127.0.0.3:9042
cargo test -p shamap-store --features cassandra --test main cassandra::faults_on_three_nodes -- --ignored --nocapture
cargo test -p shamap-clio --test main clio_cassandra::clio_verify_through_a_node_kill -- --ignored --nocapture
