"""Bad input raises ValueError / TypeError / KeyError / OSError with a clear
message, never crashes; the map stays usable afterwards."""

from __future__ import annotations

import json

import pytest

import shamap

KEY = bytes(range(32))


@pytest.fixture
def m():
    m = shamap.ShaMap("state")
    m.insert(KEY, b"some ledger entry")
    return m


@pytest.mark.parametrize(
    "key,exc,msg",
    [
        (bytes(31), ValueError, "key must be 32 bytes, got 31"),
        (bytes(33), ValueError, "key must be 32 bytes, got 33"),
        (b"", ValueError, "key must be 32 bytes, got 0"),
        ("ab" * 31, ValueError, "key as hex: expected 64 hex digits, found 62"),
        ("ab" * 33, ValueError, "key as hex: expected 64 hex digits, found 66"),
        ("zz" + "00" * 31, ValueError, "key as hex: bad hex digit at position 0"),
        ("00" * 31 + "0g", ValueError, "key as hex: bad hex digit at position 63"),
        ("é" * 64, ValueError, "key as hex"),
        (12, TypeError, "key must be bytes \\(32\\) or str \\(64 hex digits\\), not int"),
        (None, TypeError, "not NoneType"),
        ([0] * 32, TypeError, "not list"),
        (memoryview(bytes(32)), TypeError, "not memoryview"),
    ],
    ids=["31-bytes", "33-bytes", "empty", "62-digits", "66-digits", "bad-digit-0", "bad-digit-63",
         "non-ascii", "int", "None", "list", "memoryview"],
)
def test_bad_keys(m, key, exc, msg):
    for call in (
        lambda: m.insert(key, b"x" * 12),
        lambda: m.update(key, b"x" * 12),
        lambda: m.upsert(key, b"x" * 12),
        lambda: m.remove(key),
        lambda: m.get(key),
        lambda: key in m,
        lambda: m[key],
        lambda: m.prove(key),
        lambda: m.snapshot().get(key),
        lambda: shamap.verify_proof("00" * 32, key, []),
    ):
        with pytest.raises(exc, match=msg):
            call()
    assert len(m) == 1 and m.get(KEY) == b"some ledger entry"


@pytest.mark.parametrize(
    "data,msg",
    [
        ("text", "data must be bytes, not str \\(encode it, or bytes.fromhex for hex\\)"),
        (12, "data must be bytes, not int"),
        (None, "data must be bytes, not NoneType"),
        ([1, 2], "data must be bytes, not list"),
    ],
    ids=["str", "int", "None", "list"],
)
def test_bad_data(m, data, msg):
    for call in (lambda: m.insert(bytes(32), data), lambda: m.update(KEY, data), lambda: m.upsert(KEY, data)):
        with pytest.raises(TypeError, match=msg):
            call()
    with pytest.raises(TypeError, match=msg):
        m[KEY] = data
    assert m.get(KEY) == b"some ledger entry"


def test_accepted_forms(m):
    """bytes, bytearray and hex (either case) name the same key."""
    assert m.get(bytearray(KEY)) == b"some ledger entry"
    assert m.get(KEY.hex()) == m.get(KEY.hex().upper()) == b"some ledger entry"
    m.update(KEY.hex(), bytearray(b"other bytes here"))
    assert m[KEY] == b"other bytes here"
    m[KEY] = b"third"
    assert m[KEY] == b"third"
    assert m.upsert(bytes(32), b"new one") is True
    assert m.upsert(bytes(32), b"again") is False
    del m[bytes(32)]
    assert bytes(32) not in m


def test_engine_errors_are_key_errors(m):
    with pytest.raises(KeyError, match=f"key {KEY.hex().upper()} is already present"):
        m.insert(KEY, b"again")
    absent = bytes(32)
    with pytest.raises(KeyError, match=f"key {absent.hex().upper()} is not present"):
        m.update(absent, b"data")
    with pytest.raises(KeyError, match="is not present"):
        m.remove(absent)
    with pytest.raises(KeyError, match="is not present"):
        m[absent]
    with pytest.raises(KeyError, match="is not present"):
        del m[absent]
    with pytest.raises(KeyError, match="is not present"):
        m.snapshot()[absent]
    assert m.get(absent) is None
    assert len(m) == 1


def test_bad_kinds():
    with pytest.raises(ValueError, match="kind must be 'state', 'tx' or 'txset', not \"State\""):
        shamap.ShaMap("State")
    with pytest.raises(TypeError):
        shamap.ShaMap(3)


def test_bad_verify_arguments():
    with pytest.raises(ValueError, match="root must be 32 bytes, got 3"):
        shamap.verify_proof(b"abc", KEY, [])
    with pytest.raises(ValueError, match="root as hex: "):
        shamap.verify_proof("xyz", KEY, [])
    with pytest.raises(TypeError, match="root must be bytes"):
        shamap.verify_proof(None, KEY, [])
    with pytest.raises(TypeError, match="proof must be a sequence of nodes"):
        shamap.verify_proof("00" * 32, KEY, b"\x02" * 513)
    with pytest.raises(TypeError, match="proof must be a sequence of nodes"):
        shamap.verify_proof("00" * 32, KEY, 5)
    with pytest.raises(TypeError, match="proof node 1 must be bytes or a hex str, not int"):
        shamap.verify_proof("00" * 32, KEY, [b"\x01", 7])
    with pytest.raises(ValueError, match="proof node 0 as hex: "):
        shamap.verify_proof("00" * 32, KEY, ["0g"])
    with pytest.raises(ValueError, match="invalid proof: node 0: unknown wire node type 0x07"):
        shamap.verify_proof("11" * 32, KEY, [b"\x07"])


def test_read_ledger_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="cannot read"):
        shamap.read_ledger(str(tmp_path / "missing.json"))
    with pytest.raises(OSError):
        shamap.read_ledger(str(tmp_path))  # a directory
    with pytest.raises(TypeError, match="path must be a str or os.PathLike"):
        shamap.read_ledger(42)
    with pytest.raises(ValueError, match="no files given"):
        shamap.read_ledger([])
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="bad.json: "):
        shamap.read_ledger(str(bad))
    empty = tmp_path / "empty.json"
    empty.write_text("  \n")
    with pytest.raises(ValueError, match="empty.json: empty input"):
        shamap.read_ledger(str(empty))
    entry = {"index": "02CE52E3E46AD340B1C7900F86AFB959AE0C246916E3463905EDD61DE26FFFDD", "data": "1100612200000000"}
    dup = tmp_path / "dup.json"
    dup.write_text(json.dumps({"ledger_index": 5, "accountState": [entry, entry]}))
    with pytest.raises(ValueError, match="dup.json: duplicate state key 02CE52E3.* at entry 1"):
        shamap.read_ledger(str(dup))
    badhex = tmp_path / "badhex.json"
    badhex.write_text(json.dumps({"ledger_index": 5, "accountState": [dict(entry, data="zz")]}))
    with pytest.raises(ValueError, match="badhex.json: "):
        shamap.read_ledger(str(badhex))


def test_pages_of_one_ledger_merge(tmp_path):
    e1 = {"index": "02CE52E3E46AD340B1C7900F86AFB959AE0C246916E3463905EDD61DE26FFFDD", "data": "1100612200000000"}
    e2 = {"index": "032D4205B5D7DCEC8A4E56851C44555F6DC7D410AA823AE140C78674B8734DBF", "data": "1100612200000001"}
    p1, p2, p3 = tmp_path / "p1.json", tmp_path / "p2.json", tmp_path / "p3.json"
    p1.write_text(json.dumps({"result": {"ledger_index": 9, "state": [e1], "marker": "m"}}))
    p2.write_text(json.dumps({"result": {"ledger_index": 9, "state": [e2]}}))
    p3.write_text(json.dumps({"result": {"ledger_index": 10, "state": [e1]}}))
    led = shamap.read_ledger([str(p1), p2])
    assert led.sources == [str(p1), str(p2)]
    assert len(led.state) == 2
    assert led.verify["incomplete"] is False
    assert led.verify["account_hash"]["status"] == "no_expected"
    assert not led.ok  # nothing to check against
    # Pages that all end with a marker are refused, as by the CLI: the
    # ledger continues past them.
    with pytest.raises(ValueError, match=r"p1.json: ledger 9 continues past this page \(its marker is m\): give every page of the ledger"):
        shamap.read_ledger(str(p1))
    p5 = tmp_path / "p5.json"
    p5.write_text(json.dumps({"result": {"ledger_index": 9, "state": [e2], "marker": "n"}}))
    with pytest.raises(ValueError, match=r"p1.json, .*p5.json: ledger 9 continues past these pages \(every page has a marker\)"):
        shamap.read_ledger([str(p1), str(p5)])
    with pytest.raises(ValueError):
        shamap.read_ledger([str(p1), str(p3)])
    # A duplicate across pages is located in its own file.
    p4 = tmp_path / "p4.json"
    p4.write_text(json.dumps({"result": {"ledger_index": 9, "state": [e2]}}))
    with pytest.raises(ValueError, match="p4.json: duplicate state key 032D4205.* at entry 0"):
        shamap.read_ledger([str(p1), str(p2), str(p4)])


def test_stats_takes_maps_only():
    with pytest.raises(TypeError, match="stats\\(\\) takes a ShaMap or Snapshot, not int"):
        shamap.stats(42)
