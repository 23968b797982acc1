"""Proofs: every key of a real ledger proves included, absent keys prove
absent, and every tampered, truncated, padded or misdirected proof raises
ValueError naming why."""

from __future__ import annotations

import random

import pytest

import shamap
from conftest import DATA


@pytest.fixture(scope="module")
def ledger_state():
    led = shamap.read_ledger(str(DATA / "ledger-38129.json"))
    return led.state


def test_every_key_proves_included(ledger_state):
    root = ledger_state.root_hash()
    snap = ledger_state.snapshot()
    for key in ledger_state.keys():
        proof = ledger_state.prove(key)
        assert proof == snap.prove(key)
        assert shamap.verify_proof(root, key, proof) == "included"
        # Hex strings, as the CLI's `prove` prints them, work as well.
        assert shamap.verify_proof(root.lower(), key.hex(), [n.hex() for n in proof]) == "included"


def test_absent_keys_prove_absent(ledger_state, seed):
    rng = random.Random(seed)
    root = ledger_state.root_hash()
    for _ in range(200):
        key = rng.getrandbits(256).to_bytes(32, "big")
        assert key not in ledger_state
        assert shamap.verify_proof(root, key, ledger_state.prove(key)) == "absent"


def test_every_tampered_byte_is_rejected(ledger_state, seed):
    rng = random.Random(seed)
    root = ledger_state.root_hash()
    keys = ledger_state.keys()
    for key in rng.sample(keys, 3):
        proof = ledger_state.prove(key)
        for i, node in enumerate(proof):
            positions = range(len(node)) if len(node) <= 200 else rng.sample(range(len(node)), 200)
            for pos in positions:
                bad = bytearray(node)
                bad[pos] ^= 1 << rng.randrange(8)
                tampered = proof[:i] + [bytes(bad)] + proof[i + 1 :]
                with pytest.raises(ValueError, match="^invalid proof: "):
                    shamap.verify_proof(root, key, tampered)


def test_cut_padded_and_misdirected_proofs(ledger_state):
    root = ledger_state.root_hash()
    key = ledger_state.keys()[100]
    proof = ledger_state.prove(key)
    assert len(proof) >= 2
    with pytest.raises(ValueError, match="invalid proof: .*"):
        shamap.verify_proof(root, key, proof[1:])  # leaf missing
    with pytest.raises(ValueError, match="invalid proof: .*"):
        shamap.verify_proof(root, key, proof[:-1])  # root missing
    with pytest.raises(ValueError, match="invalid proof: .*"):
        shamap.verify_proof(root, key, [proof[0]] + proof)  # a node too many
    with pytest.raises(ValueError, match="invalid proof: .*hashes to"):
        shamap.verify_proof("00" * 31 + "01", key, proof)  # another root
    with pytest.raises(ValueError, match="invalid proof: empty proof"):
        shamap.verify_proof(root, key, [])
    with pytest.raises(ValueError, match="invalid proof: .*more than the 65 allowed"):
        shamap.verify_proof(root, key, proof * 40)
    with pytest.raises(ValueError, match="invalid proof: node 0: "):
        shamap.verify_proof(root, key, [b""] + proof[1:])
    # The same path for a key that differs only in its last byte: the leaf
    # holds another key, which proves the asked key absent, never included.
    other = key[:31] + bytes([key[31] ^ 0xFF])
    assert shamap.verify_proof(root, other, proof) == "absent"


def test_proof_of_another_map_is_rejected(ledger_state):
    key = ledger_state.keys()[0]
    m = shamap.ShaMap("state")
    m.insert(key, b"not the ledger's entry bytes")
    with pytest.raises(ValueError, match="invalid proof"):
        shamap.verify_proof(ledger_state.root_hash(), key, m.prove(key))
