"""stats(): the fields of `shamap stats --json`, consistent with the map."""

from __future__ import annotations

import shamap
from conftest import DATA

TOP = {
    "input", "kind", "classes", "root_hash", "hash_function", "leaf_hashes", "entries", "leaf_nodes",
    "inner_nodes", "mean_leaf_depth", "slots_per_inner", "child_histogram",
    "depth_histogram", "inner_depth_histogram", "data", "bytes", "models", "advisor", "timing",
}
BYTES = {
    "inner_hashes", "child_slots_used", "child_slots_unused", "leaf_hashes", "leaf_keys",
    "leaf_data", "leaf_padding", "pool_slack", "pool_untouched", "other", "total", "overhead",
    "overhead_per_entry", "classes", "large_leaves", "leaf_pools", "leaf_pool_blocks",
}
PLAN = {
    "classes", "sparse_classes", "slots", "slots_per_inner", "slots_vs_dense", "inner_bytes",
    "inner_bytes_vs_dense", "predicted_overhead_per_entry",
}


def test_fields_of_a_ledger_state_map():
    path = str(DATA / "ledger-38129.json")
    led = shamap.read_ledger(path)
    s = shamap.stats(led.state)
    assert set(s) == TOP
    assert s["input"] == {"type": "dump", "sources": [path], "ledger_index": 38129}
    assert s["kind"] == "state"
    assert s["classes"] == [2, 3, 4, 6, 9, 12, 16]
    assert s["hash_function"] == "sha512half"
    assert s["leaf_hashes"] == "stored"
    assert s["root_hash"] == led.header["account_hash"]
    assert s["entries"] == s["leaf_nodes"] == 261
    assert s["inner_nodes"] == sum(s["child_histogram"])
    assert sum(s["depth_histogram"]) == 261
    assert len(s["child_histogram"]) == 17 and len(s["depth_histogram"]) == 65
    items = led.state.items()
    assert s["data"]["total_bytes"] == sum(len(d) for _, d in items)
    assert s["data"]["max_bytes"] == max(len(d) for _, d in items)
    by_type = s["data"]["by_type"]
    assert sum(t["entries"] for t in by_type) == 261
    assert {t["name"] for t in by_type} >= {"AccountRoot"}
    assert [t["bytes"] for t in by_type] == sorted((t["bytes"] for t in by_type), reverse=True)
    assert set(s["bytes"]) == BYTES
    assert s["bytes"]["leaf_keys"] == 32 * 261
    assert s["bytes"]["overhead"] == s["bytes"]["total"] - s["bytes"]["leaf_keys"] - s["bytes"]["leaf_data"]
    assert set(s["models"]) == {"ours", "dense", "rippled"}
    assert set(s["models"]["rippled"]) == {"bytes", "overhead_per_entry", "ratio_to_ours"}
    assert set(s["advisor"]) == {"current", "dense", "best"}
    assert set(s["advisor"]["current"]) == PLAN
    assert s["advisor"]["current"]["classes"] == [2, 3, 4, 6, 9, 12, 16]
    assert s["advisor"]["dense"]["classes"] == [16]
    assert 1 <= len(s["advisor"]["best"]) <= 6
    assert s["timing"]["hashing"] is None
    assert s["timing"]["build_seconds"] >= 0


def test_python_built_maps_and_snapshots():
    m = shamap.ShaMap("tx")
    for i in range(100):
        m.insert(bytes([i]) * 32, bytes([i]) * 40)
    s = shamap.stats(m)
    assert s["input"] == {"type": "python"}
    assert s["kind"] == "tx"
    assert s["data"]["by_type"] is None  # per-type sizes for state maps only
    assert s["data"]["total_bytes"] == 4000 and s["data"]["mean_bytes"] == 40.0
    assert s["timing"] == {"build_seconds": None, "hashing": None}
    snap = m.snapshot()
    t = shamap.stats(snap)
    assert t["root_hash"] == s["root_hash"] == m.root_hash()
    assert t["child_histogram"] == s["child_histogram"]
    assert t["classes"] == s["classes"]
    # A write drops the dump origin of a ledger's map.
    led = shamap.read_ledger(str(DATA / "ledger-38129.json"))
    try:
        led.state.remove(bytes(32))  # refused: still the file's map
    except KeyError:
        pass
    assert shamap.stats(led.state)["input"]["type"] == "dump"
    led.state.upsert(bytes(32), b"twelve bytes")
    assert shamap.stats(led.state)["input"] == {"type": "python"}


def test_empty_map_stats():
    s = shamap.stats(shamap.ShaMap())
    assert s["entries"] == 0
    assert s["root_hash"] == "0" * 64
    assert s["child_histogram"][0] == 1  # the empty root
    assert s["data"]["mean_bytes"] == 0.0
    assert s["models"]["rippled"]["overhead_per_entry"] == 0.0
