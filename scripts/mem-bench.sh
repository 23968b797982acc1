#!/usr/bin/env bash
# Memory benchmark for `shamap stats --random N`: the engine's counted bytes
# against the process's peak RSS, bytes per entry beyond key and data, and
# rippled's layout priced on the same tree.
#
#   scripts/mem-bench.sh                  # 100k, 1M and 4M entries
#   SIZES="1000000" SEED=7 scripts/mem-bench.sh
#
# Each size is run twice: with mainnet-shaped data sizes (the default of
# --random; mean about 167 B) and with fixed 32-byte data (--data-len 32,
# the figure docs/design.md quotes). The baseline is the peak RSS of
# `shamap stats --random 0` (the binary, its libraries and an empty map).
# The check: peak RSS <= 1.15 x (counted total + baseline). The counted
# total leaves out pool address space reserved but never touched (shown in
# its own column), which is not resident.
#
# Needs GNU time (`apt-get install time`) and python3. Prints a Markdown
# table on stdout; progress on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZES=${SIZES:-"100000 1000000 4000000"}
SEED=${SEED:-1}

command -v python3 >/dev/null || { echo "mem-bench: needs python3" >&2; exit 2; }
. scripts/bench-common.sh
bench_setup mem-bench

# peak_rss_kib OUTFILE ARGS...: runs the binary, stdout to OUTFILE, prints
# the peak RSS in KiB.
peak_rss_kib() {
  local out=$1
  shift
  /usr/bin/time -v -o "$work/time" "$bin" "$@" >"$out"
  awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time"
}

base_kib=$(peak_rss_kib "$work/base.json" stats --random 0 --json --no-timing)

echo "hardware: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "command: scripts/mem-bench.sh (SIZES=\"$SIZES\" SEED=$SEED); baseline peak RSS $(python3 -c "print(f'{$base_kib/1024:.1f}')") MiB"
echo
echo "| entries | data | counted total | peak RSS | RSS / (counted + baseline) | B/entry beyond key+data | of which pool slack | untouched pool space (not in total) | rippled model |"
echo "|---|---|---|---|---|---|---|---|---|"

for n in $SIZES; do
  for data in mainnet 32; do
    args=(stats --random "$n" --seed "$SEED" --json)
    [ "$data" = 32 ] && args+=(--data-len 32)
    echo "mem-bench: $n entries, data $data ..." >&2
    rss=$(peak_rss_kib "$work/out.json" "${args[@]}")
    python3 - "$work/out.json" "$rss" "$base_kib" "$data" <<'PY'
import json, sys
path, rss_kib, base_kib, data = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
r = json.load(open(path))
b = r["bytes"]
mib = 1024 * 1024
rss, base, total = rss_kib * 1024, base_kib * 1024, b["total"]
n = r["entries"]
label = "mainnet-shaped (mean %.0f B)" % r["data"]["mean_bytes"] if data == "mainnet" else "32 B"
print("| {:,} | {} | {:.1f} MiB | {:.1f} MiB | {:.3f} | {:.2f} | {:.2f} | {:.1f} MiB | {:.1f} |".format(
    n, label, total / mib, rss / mib, rss / (total + base),
    b["overhead_per_entry"], b["pool_slack"] / max(n, 1), b["pool_untouched"] / mib,
    r["models"]["rippled"]["overhead_per_entry"]))
PY
  done
done
