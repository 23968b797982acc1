#!/usr/bin/env bash
# Installs what the `rocksdb` cargo feature needs to build RocksDB from
# source (librocksdb-sys: a C++ compiler, and libclang for bindgen), with
# apt-get, when missing; prints the LIBCLANG_PATH to export.
#
#   scripts/rocksdb-deps.sh && export LIBCLANG_PATH=$(scripts/rocksdb-deps.sh --path)
#   cargo run --release -p shamap-bench --features peer-nomt,rocksdb -- --workloads durable
#
# Not used by CI: the RocksDB build takes ~24 minutes on 2 cores.
set -euo pipefail
find_libclang() {
    ls -d /usr/lib/llvm-*/lib 2>/dev/null | while read -r d; do
        if ls "$d"/libclang.so* >/dev/null 2>&1; then echo "$d"; fi
    done | sort -V | tail -1
}
if [ "${1:-}" = "--path" ]; then
    find_libclang
    exit 0
fi
if [ -z "$(find_libclang)" ] || ! command -v g++ >/dev/null; then
    sudo_cmd=""
    if [ "$(id -u)" != 0 ]; then sudo_cmd="sudo"; fi
    $sudo_cmd apt-get update -qq
    $sudo_cmd apt-get install -y -qq libclang-dev clang g++ >/dev/null
fi
echo "libclang: $(find_libclang)"
