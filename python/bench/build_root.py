#!/usr/bin/env python3
"""Build an N-entry map and its root from Python: shamap vs the pure-Python
reference SHAMap of python/tests/refmap.py (and xrpl.js under node, when
crates/shamap-bench/js has its node_modules).

    python python/bench/build_root.py [--entries 100000] [--data-len 64]
        [--seed 1] [--reps 3] [--blocks 5] [--block 1000] [--no-pure]
        [--xrpljs] [--json]

Workload: N uniformly random 32-byte keys with DATA_LEN random data bytes,
made before timing; "build" is one insert per entry from a Python loop,
"root" the first root_hash() after it (from scratch for every engine). Best
of REPS runs for shamap, one run for the pure-Python reference (slow);
xrpl.js's own bench.js makes its own random entries of the same shape (best
of 3). Both Python engines must give the same root. Then BLOCKS blocks of
BLOCK upserts (half to present keys, half new) with the root after each, per
block: shamap rehashes only the changed paths, the reference everything
(xrpl.js has no update-and-rehash workload: it recomputes every hash).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE.parent / "tests"))

import shamap  # noqa: E402
from refmap import RefMap  # noqa: E402


def items_for(n: int, data_len: int, seed: int):
    rng = random.Random(seed)
    return [(rng.randbytes(32), rng.randbytes(data_len)) for _ in range(n)]


def time_build(new_map, items):
    """One build of `items` into `new_map()` (one insert per entry from a
    Python loop), then its first root; the times and the root."""
    t0 = time.perf_counter()
    m = new_map()
    insert = m.insert
    for k, d in items:
        insert(k, d)
    t1 = time.perf_counter()
    root = m.root_hash()
    t2 = time.perf_counter()
    return {"build_s": t1 - t0, "root_s": t2 - t1, "total_s": t2 - t0, "root": root}


def time_shamap(items, reps: int):
    runs = [time_build(lambda: shamap.ShaMap("state"), items) for _ in range(reps)]
    return min(runs, key=lambda run: run["total_s"])


def time_updates(new_map, items, blocks: int, block: int, seed: int):
    """`blocks` blocks of `block` upserts (half to present keys, half new),
    the root after each; returns seconds per block and the last root."""
    rng = random.Random(seed + 1)
    m = new_map()
    for k, d in items:
        m.insert(k, d)
    m.root_hash()
    keys = [k for k, _ in items]
    writes = [
        [(rng.choice(keys) if i % 2 else rng.randbytes(32), rng.randbytes(len(items[0][1]))) for i in range(block)]
        for _ in range(blocks)
    ]
    t0 = time.perf_counter()
    for w in writes:
        for k, d in w:
            m.upsert(k, d)
        root = m.root_hash()
    return (time.perf_counter() - t0) / blocks, root


def time_pure(items):
    return time_build(lambda: RefMap("state"), items)


def time_xrpljs(n: int, data_len: int):
    js = REPO / "crates" / "shamap-bench" / "js"
    if not (js / "node_modules" / "xrpl").is_dir():
        sys.exit(f"xrpl.js is not installed: cd {js} && npm install")
    out = subprocess.run(
        ["node", "--expose-gc", "bench.js", "--entries", str(n), "--data-len", str(data_len), "--json"],
        cwd=js, check=True, capture_output=True, text=True,
    )
    report = json.loads(out.stdout)
    row = next(r for r in report["rows"] if r.get("entries") == n and "random" in r["workload"])
    return {
        "build_s": row["build_ms"] / 1e3,
        "root_s": row["root_ms"] / 1e3,
        "total_s": row["total_ms"] / 1e3,
        "root": row["root"],
        "version": f"xrpl.js {report['version']}, node {report['node']}",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--data-len", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-pure", action="store_true", help="skip the pure-Python reference")
    ap.add_argument("--xrpljs", action="store_true", help="also run xrpl.js under node")
    ap.add_argument("--blocks", type=int, default=5, help="update blocks (0: skip)")
    ap.add_argument("--block", type=int, default=1000, help="upserts per update block")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()

    items = items_for(a.entries, a.data_len, a.seed)
    rows = {"shamap": time_shamap(items, a.reps)}
    if not a.no_pure:
        rows["pure Python (tests/refmap.py)"] = time_pure(items)
        if rows["pure Python (tests/refmap.py)"]["root"] != rows["shamap"]["root"]:
            sys.exit("the two Python engines disagree on the root")
    if a.blocks:
        t, root = time_updates(lambda: shamap.ShaMap("state"), items, a.blocks, a.block, a.seed)
        rows["shamap"]["block_s"] = t
        if not a.no_pure:
            tp, root_p = time_updates(lambda: RefMap("state"), items, a.blocks, a.block, a.seed)
            rows["pure Python (tests/refmap.py)"]["block_s"] = tp
            if root_p != root:
                sys.exit("the two Python engines disagree on the root after the updates")
    if a.xrpljs:
        rows["xrpl.js (node)"] = time_xrpljs(a.entries, a.data_len)

    env = {
        "python": platform.python_version(),
        "shamap": shamap.__version__,
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
    }
    if a.json:
        print(json.dumps({"entries": a.entries, "data_len": a.data_len, "seed": a.seed, "env": env, "rows": rows}, indent=1))
        return
    base = rows["shamap"]["total_s"]
    print(f"{a.entries:,} random keys, {a.data_len}-byte data, seed {a.seed}; Python {env['python']}")
    print()
    blk = f"{a.block:,} upserts + root" if a.blocks else "(no update blocks)"
    print(f"| engine | build | root | build + root | x shamap | {blk} | x shamap |")
    print("|---|---|---|---|---|---|---|")
    bbase = rows["shamap"].get("block_s")
    for name, r in rows.items():
        b = r.get("block_s")
        bcol = f"{b * 1e3:.1f} ms | {b / bbase:.0f}x" if b is not None and bbase else "n/a | n/a"
        print(
            f"| {name} | {r['build_s']:.3f} s | {r['root_s']:.3f} s | {r['total_s']:.3f} s |"
            f" {r['total_s'] / base:.1f}x | {bcol} |"
        )


if __name__ == "__main__":
    main()
