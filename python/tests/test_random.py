"""Seeded random operations on shamap.ShaMap and the pure-Python reference
(tests/refmap.py) side by side: results, errors, roots, items, snapshots and
proof bytes must agree. The seed is printed; replay with `pytest --seed N`."""

from __future__ import annotations

import random

import pytest

import shamap
from refmap import RefMap, sha512_half


def random_key(rng: random.Random, existing: list) -> bytes:
    """A fresh random key, or one sharing a random-length prefix with an
    existing key (deep paths, leaves down to depth 64)."""
    if existing and rng.random() < 0.3:
        base = rng.choice(existing)
        keep = rng.choice([rng.randrange(1, 32), 31, 31, 30])
        return base[:keep] + bytes(rng.getrandbits(8) for _ in range(32 - keep))
    return rng.getrandbits(256).to_bytes(32, "big")


def random_data(rng: random.Random) -> bytes:
    # At least 12 bytes: rippled's minimum for a leaf on the wire (proofs).
    return bytes(rng.getrandbits(8) for _ in range(rng.randrange(12, 90)))


def outcome(f, *args):
    try:
        return ("ok", f(*args))
    except KeyError:
        return ("KeyError", None)


@pytest.mark.parametrize("kind", ["state", "tx", "txset"])
def test_random_operations_match_the_reference(kind, seed):
    rng = random.Random(f"{seed}-{kind}")
    m = shamap.ShaMap(kind)
    ref = RefMap(kind)
    keys: list = []
    snapshots = []
    for step in range(1500):
        op = rng.choices(["insert", "update", "upsert", "remove", "get"], [5, 2, 2, 2, 1])[0]
        if keys and rng.random() < 0.6:
            key = rng.choice(keys)
        else:
            key = random_key(rng, keys)
        # Keys go in as bytes or as hex in either case.
        as_given = rng.choice([key, key.hex(), key.hex().upper()])
        if op in ("insert", "update", "upsert"):
            data = random_data(rng)
            got = outcome(getattr(m, op), as_given, data)
            want = outcome(getattr(ref, op), key, data)
        elif op == "remove":
            got = outcome(m.remove, as_given)
            want = outcome(ref.remove, key)
        else:
            got = ("ok", m.get(as_given))
            want = ("ok", ref.get(key))
        assert got == want, (step, op, key.hex())
        if op in ("insert", "upsert") and got[0] == "ok" and key not in keys:
            keys.append(key)
        if step % 50 == 49:
            assert len(m) == len(ref)
            assert m.root_hash() == ref.root_hash(), step
        if step % 300 == 299:
            assert m.items() == ref.items()
            snap_ref = RefMap(kind)
            snap_ref.items_ = dict(ref.items_)
            snapshots.append((m.snapshot(), snap_ref))
            if kind != "txset":  # txset proofs need keys that are transaction IDs
                root = m.root_hash()
                for k in rng.sample(keys, min(5, len(keys))) + [random_key(rng, keys)]:
                    proof = m.prove(k)
                    assert proof == ref.prove(k), k.hex()
                    want_outcome = "included" if ref.get(k) is not None else "absent"
                    assert shamap.verify_proof(root, k, proof) == want_outcome
    # Snapshots taken along the way are unchanged by every later write.
    for snap, snap_ref in snapshots:
        assert snap.root_hash() == snap_ref.root_hash()
        assert snap.items() == snap_ref.items()
        assert len(snap) == len(snap_ref)
    m.check()


def test_random_txset_proofs(seed):
    """A transaction set keyed by transaction ID proves like the others."""
    rng = random.Random(seed)
    m = shamap.ShaMap("txset")
    ref = RefMap("txset")
    for _ in range(300):
        blob = random_data(rng)
        key = sha512_half(b"TXN\x00" + blob)
        m.insert(key, blob)
        ref.insert(key, blob)
    assert m.root_hash() == ref.root_hash()
    root = m.root_hash()
    for key, _ in rng.sample(ref.items(), 20):
        proof = m.prove(key)
        assert proof == ref.prove(key)
        assert shamap.verify_proof(root, key, proof) == "included"
    absent = rng.getrandbits(256).to_bytes(32, "big")
    assert m.prove(absent) == ref.prove(absent)
    assert shamap.verify_proof(root, absent, m.prove(absent)) == "absent"


def test_random_shape_matches_the_reference(seed):
    """stats() histograms against the reference's own count of the shape."""
    from refmap import shape

    rng = random.Random(seed)
    m = shamap.ShaMap("state")
    ref = RefMap("state")
    keys: list = []
    for _ in range(2000):
        k = random_key(rng, keys)
        if ref.get(k) is None:
            keys.append(k)
            d = random_data(rng)
            m.insert(k, d)
            ref.insert(k, d)
    s = shamap.stats(m)
    child, depth = shape(ref)
    assert s["child_histogram"] == child
    assert s["depth_histogram"] == depth
    assert s["entries"] == len(ref)
    assert s["root_hash"] == ref.root_hash()
