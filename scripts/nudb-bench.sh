#!/usr/bin/env bash
# The NuDB audit benchmark (issue 40, item 4): a 1M-entry ledger written in
# rippled's format (NuDB 2.0.9's layout, rippled's codec) by the test-only
# writer, then each yardstick timed in its own process, peak RSS from
# /usr/bin/time -v:
#   floor  every record decoded (rippled's codec) and hashed on one thread
#   scan   the audit's scan alone (every record decoded and hashed, every core)
#   audit  the whole audit (scan on every core, every ledger walked)
#   fetch  each ledger walked by fetching every node by key, verified
#   walk   each ledger walked alone by the audit (`verify --ledger`)
# Usage: scripts/nudb-bench.sh [ENTRIES] [DIR]  (default 1000000, a
# directory under target/). An existing store in DIR is reused.
set -euo pipefail
cd "$(dirname "$0")/.."
entries=${1:-1000000}
dir=${2:-target/nudb-bench/$entries}
cargo build --release -p shamap-nudb-writer --example nudb-gen
cargo build --release -p shamap-store --example nudb_audit
cargo build --release -p shamap-cli
if [ ! -f "$dir/nudb.dat" ]; then
  mkdir -p "$(dirname "$dir")"
  target/release/examples/nudb-gen --random "$entries" --seed 7 --ledger-db "$dir"
fi
echo "store: $dir ($(du -sh "$dir" | cut -f1)), commit $(git rev-parse --short HEAD), $(nproc) cores"
# Warm the page cache so every step reads from memory alike.
cat "$dir"/nudb.dat "$dir"/nudb.key > /dev/null
for step in floor scan audit fetch walk; do
  /usr/bin/time -f "  $step: %e s wall, %M KiB peak RSS" \
    target/release/examples/nudb_audit "$dir" "$step"
done
/usr/bin/time -f "  shamap verify --db: %e s wall, %M KiB peak RSS" \
  target/release/shamap verify --db "$dir" > /dev/null
