# Sourced by the benchmark scripts (scripts/clio-bench.sh,
# scripts/clio-load-bench.sh, scripts/mem-bench.sh), from the repository's root.

# bench_setup NAME: checks for GNU time, builds the release binary ($bin),
# makes a scratch directory ($work), removed on exit, and names the
# Cassandra cluster ($host: $SHAMAP_CASSANDRA, default 127.0.0.1:9042).
bench_setup() {
  host=${SHAMAP_CASSANDRA:-127.0.0.1:9042}
  command -v /usr/bin/time >/dev/null || { echo "$1: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
  cargo build --release -q -p shamap-cli
  bin=target/release/shamap
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
}

# timed OUT CMD...: runs CMD with its stdout to file OUT (- : this
# script's stdout) and prints its wall time and peak RSS on one line.
timed() {
  local out=$1
  shift
  if [ "$out" = - ]; then
    /usr/bin/time -v -o "$work/time" "$@"
  else
    /usr/bin/time -v -o "$work/time" "$@" > "$out"
  fi
  awk -F': ' '/Elapsed \(wall clock\)/ {w=$2} /Maximum resident set size/ {r=$2}
              END {split(w, p, ":"); s = (length(p) == 3) ? p[1]*3600 + p[2]*60 + p[3] : p[1]*60 + p[2];
                   printf "  %.1f s wall, %.1f MiB peak RSS\n", s, r/1024}' "$work/time"
}
