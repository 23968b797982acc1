#!/usr/bin/env bash
# Runs the tests of the unsafe modules (alloc, ptr, and the SIMD kernels of
# sha512-lanes and blake3-lanes) and the map's own tests under valgrind
# memcheck. Any error fails the script.
#   scripts/memcheck.sh            # unit tests of alloc::, ptr::, tree:: + a few integration tests
#                                  # + the lanes crates' equivalence tests
# valgrind does not decode AVX-512: the lanes crates run with their AVX2
# kernels forced (SHA512_LANES_FORCE / BLAKE3_LANES_FORCE=avx2).
# AddressSanitizer (nightly only):
#   RUSTFLAGS=-Zsanitizer=address cargo +nightly test -p shamap --target x86_64-unknown-linux-gnu
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "memcheck: valgrind not installed" >&2; exit 2; }

build_tests() {
  cargo test -p shamap -p sha512-lanes -p blake3-lanes "$@" --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["kind"]==["lib"]: print(m["executable"])
    elif m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["name"] in ("main", "equivalence"): print(m["executable"])'
}

vg=(valgrind --tool=memcheck --error-exitcode=99 --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite --quiet)
status=0
for exe in $(build_tests); do
  case "$exe" in
    */deps/shamap-*) filters=("alloc::" "ptr::") ;;
    */deps/main-*) filters=("vectors::" "shape::" "ledgers::" "repack::" "randomized::random_ops_with_huge_page"
                            "hashless_leaves::hashless_maps_from_sorted" "hashless_leaves::hashless_tx_maps") ;;
    */deps/equivalence-*) filters=("") ;;
    *) continue ;;
  esac
  for f in "${filters[@]}"; do
    echo "== memcheck: $(basename "$exe") $f"
    SHA512_LANES_FORCE=avx2 BLAKE3_LANES_FORCE=avx2 "${vg[@]}" "$exe" "$f" --test-threads=1 -q || status=$?
  done
done
if [ "$status" -ne 0 ]; then echo "memcheck: FAILED ($status)" >&2; fi
exit "$status"
