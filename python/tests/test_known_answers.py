"""Known answers: the two shipped ledgers verify, and the roots of
data/vectors/shamap-vectors.json (rippled's own unit-test vectors and derived
ones) come out of both shamap and the pure-Python reference."""

from __future__ import annotations

import json

import pytest

import shamap
from conftest import DATA
from refmap import RefMap

VECTORS = json.loads((DATA / "vectors" / "shamap-vectors.json").read_text())

ACCOUNT_38129 = "2C23D15B6B549123FB351E4B5CDE81C564318EB845449CD43C3EA7953C4DB452"
TX_38129 = "DB83BF807416C5B3499A73130F843CF615AB8E797D79FE7D330ADF1BFA93951A"
LEDGER_38129 = "E6DB7365949BF9814D76BCC730B01818EB9136A89DB224F3F9F5AAE4569D758E"


def test_ledger_38129_verifies():
    path = str(DATA / "ledger-38129.json")
    led = shamap.read_ledger(path)
    assert led.ok
    assert led.ledger_index == 38129
    assert led.sources == [path]
    v = led.verify
    assert v["ok"] is True
    assert (v["checked"], v["mismatches"]) == (3, 0)
    assert (v["state_entries"], v["transactions"], v["incomplete"]) == (261, 1, False)
    assert v["account_hash"] == {"computed": ACCOUNT_38129, "expected": ACCOUNT_38129, "status": "match"}
    assert v["transaction_hash"]["computed"] == TX_38129
    assert v["transaction_hash"]["status"] == "match"
    assert v["ledger_hash"]["computed"] == LEDGER_38129
    assert v["ledger_hash"]["status"] == "match"
    assert led.state is not None and led.transactions is not None
    assert len(led.state) == 261 and len(led.transactions) == 1
    assert led.state.root_hash() == ACCOUNT_38129
    assert led.transactions.root_hash() == TX_38129
    assert led.state.kind == "state" and led.transactions.kind == "tx"
    h = led.header
    assert h["ledger_index"] == 38129
    assert h["total_coins"] == 99999999999996310
    assert h["account_hash"] == ACCOUNT_38129
    assert h["ledger_hash"] == LEDGER_38129
    assert h["close_time"] == 410424200
    assert "38129" in repr(led)


def test_ledger_38129_state_matches_the_reference():
    led = shamap.read_ledger(DATA / "ledger-38129.json")  # os.PathLike works too
    ref = RefMap("state")
    for k, d in led.state.items():
        ref.insert(k, d)
    assert ref.root_hash() == ACCOUNT_38129
    tx = RefMap("tx")
    for k, d in led.transactions.items():
        tx.insert(k, d)
    assert tx.root_hash() == TX_38129


def test_testnet_ledger_verifies():
    led = shamap.read_ledger(str(DATA / "ledger-testnet-42089779.json"))
    assert led.ok
    v = led.verify
    assert v["mismatches"] == 0
    assert v["transactions"] == 10
    assert v["transaction_hash"]["status"] == "match"
    assert v["ledger_hash"]["status"] == "match"
    # The file has a header and transactions but no state list.
    assert led.state is None
    assert v["account_hash"]["status"] == "not_computed"
    assert v["account_hash"]["reason"] == "no state entries"
    assert led.transactions.root_hash() == led.header["transaction_hash"]


def test_build_tear_vectors():
    """rippled SHAMap_test buildAndTear: roots after each insert and delete."""
    v = VECTORS["build_tear"]
    keys = [bytes.fromhex(k) for k in v["keys"]]
    roots = v["root_after_insert"]
    m = shamap.ShaMap("txset")
    ref = RefMap("txset")
    for k, (key, root) in enumerate(zip(keys, roots)):
        m.insert(key, bytes([k]) * 32)
        ref.insert(key, bytes([k]) * 32)
        assert m.root_hash() == root
        assert ref.root_hash() == root
    for k in reversed(range(len(keys))):
        assert m.root_hash() == roots[k]
        m.remove(keys[k])
    assert m.root_hash() == "0" * 64
    assert len(m) == 0


def test_iterate_order_vector():
    v = VECTORS["iterate_order"]
    full = {k[:8]: k for k in VECTORS["build_tear"]["keys"]}
    m = shamap.ShaMap("txset")
    for prefix in v["insert_order"]:
        m.insert(full[prefix], bytes(32))
    got = [k.hex()[:8] for k in m.keys()]
    assert got == list(reversed(v["insert_order"]))
    assert [k for k, _ in m.items()] == sorted(k for k, _ in m.items())


@pytest.mark.parametrize("kind,name", [("txset", "tx_nm"), ("tx", "tx_md"), ("state", "state")])
def test_single_item_vectors(kind, name):
    v = VECTORS["single_item_derived"]
    expected = v["by_leaf_type"][name]["root_hash"]
    m = shamap.ShaMap(kind)
    m.insert(v["key"], b"\x01" * 32)  # the key as hex
    assert m.root_hash() == expected
    ref = RefMap(kind)
    ref.insert(bytes.fromhex(v["key"]), b"\x01" * 32)
    assert ref.root_hash() == expected


def test_proof_map_vectors_and_deepest_proofs():
    v = VECTORS["proof_map_derived"]
    m = shamap.ShaMap("state")
    for c in range(1, 100):
        key = bytes(31) + bytes([c])
        m.insert(key, key)
        if str(c) in v["root_after"]:
            assert m.root_hash() == v["root_after"][str(c)]
    root = m.root_hash()
    for c in (1, 2, 16, 17, 99):
        key = bytes(31) + bytes([c])
        proof = m.prove(key)
        assert len(proof) == 65  # 64 inner nodes and the leaf at depth 64
        assert shamap.verify_proof(root, key, proof) == "included"
    absent = bytes(31) + b"\xff"
    assert shamap.verify_proof(root, absent, m.prove(absent)) == "absent"


def test_ledger_header_vectors(tmp_path):
    """The ledger hash of a header-only dump, through read_ledger."""
    for i, case in enumerate(VECTORS["ledger_headers"]["cases"]):
        dump = {
            "ledger": {
                "ledger_index": str(case["seq"]),
                "total_coins": case["total_coins"],
                "parent_hash": case["parent_hash"],
                "transaction_hash": case["transaction_hash"],
                "account_hash": case["account_hash"],
                "parent_close_time": case["parent_close_time"],
                "close_time": case["close_time"],
                "close_time_resolution": case["close_time_resolution"],
                "close_flags": case["close_flags"],
                "ledger_hash": case["ledger_hash"],
            }
        }
        p = tmp_path / f"header{i}.json"
        p.write_text(json.dumps(dump))
        led = shamap.read_ledger(str(p))
        assert led.verify["ledger_hash"]["computed"] == case["ledger_hash"], case["source"]
        assert led.verify["ledger_hash"]["status"] == "match"
        assert led.ok
        assert led.state is None and led.transactions is None


def test_empty_map():
    m = shamap.ShaMap()
    assert m.kind == "state"
    assert m.root_hash() == "0" * 64
    assert len(m) == 0 and m.items() == [] and list(m) == []
    assert m.prove(bytes(32)) == []
    assert shamap.verify_proof("0" * 64, bytes(32), []) == "absent"


def test_delta_vector_snapshot_semantics():
    """rippled's delta script: a snapshot keeps its hash and items while the
    original changes."""
    keys = {k: bytes.fromhex(h) for k, h in VECTORS["delta"]["keys"].items()}
    data = {f"h{n}": bytes([n]) * 32 for n in range(1, 6)}
    m = shamap.ShaMap("txset")
    m.insert(keys["h2"], data["h2"])
    m.insert(keys["h1"], data["h1"])
    assert [k for k, _ in m.items()] == [keys["h1"], keys["h2"]]
    m.insert(keys["h4"], data["h4"])
    m.remove(keys["h2"])
    m.insert(keys["h3"], data["h3"])
    assert m.keys() == [keys["h1"], keys["h3"], keys["h4"]]
    snap = m.snapshot()
    assert snap.root_hash() == m.root_hash()
    before = snap.root_hash()
    m.remove(keys["h1"])
    assert m.root_hash() != before
    assert snap.root_hash() == before
    assert keys["h1"] in snap and keys["h1"] not in m
    assert snap.items() == [(keys["h1"], data["h1"]), (keys["h3"], data["h3"]), (keys["h4"], data["h4"])]
    back = snap.to_map()
    assert back.root_hash() == before
    back.remove(keys["h3"])
    assert snap.root_hash() == before and len(snap) == 3
