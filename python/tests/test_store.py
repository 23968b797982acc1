"""Stores read from Python: `open_store` on a node log (made by `shamap
import`) and on rippled's NuDB node store (written by the test-only writer,
`crates/shamap-nudb-writer`'s example `nudb-gen`), both from
data/ledger-38129.json: ledgers(), get() against the dump, prove() checked
with verify_proof against the ledger's account_hash, verify() whole, and
verify() reporting a flipped byte.

The two tools are built with cargo (dev profile; a no-op when up to date)
unless $SHAMAP_CLI and $SHAMAP_NUDB_GEN name them; without cargo and
without those variables the tests are skipped."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import shamap
from conftest import DATA, REPO

DUMP = DATA / "ledger-38129.json"
_DOC = json.loads(DUMP.read_text())
LEDGER = _DOC.get("result", _DOC)["ledger"]
SEQ = int(LEDGER["ledger_index"])
LEDGER_HASH = LEDGER["ledger_hash"].upper()
ACCOUNT_HASH = LEDGER["account_hash"].upper()
STATE = {e["index"].upper(): bytes.fromhex(e["data"]) for e in LEDGER["accountState"]}


TARGET = REPO / "target" / "debug"


@pytest.fixture(scope="module")
def tools() -> tuple[Path, Path]:
    """(shamap, nudb-gen): $SHAMAP_CLI and $SHAMAP_NUDB_GEN when both are
    set, else built by cargo in the dev profile (a no-op when up to date).
    One cargo invocation builds both: the example needs the workspace's
    dev-dependencies, and the CLI is then built with the same features (a
    second invocation with other features would rebuild it)."""
    cli, gen = os.environ.get("SHAMAP_CLI"), os.environ.get("SHAMAP_NUDB_GEN")
    if cli and gen:
        return Path(cli), Path(gen)
    if shutil.which("cargo") is None:
        pytest.skip("no cargo to build the shamap CLI and nudb-gen (or set SHAMAP_CLI and SHAMAP_NUDB_GEN)")
    args = ["-p", "shamap-cli", "--bin", "shamap", "-p", "shamap-nudb-writer", "--example", "nudb-gen"]
    r = subprocess.run(["cargo", "build", "--quiet", *args], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    built = TARGET / "shamap", TARGET / "examples" / "nudb-gen"
    assert all(p.is_file() for p in built), built
    return built


@pytest.fixture(scope="module")
def shamap_cli(tools: tuple[Path, Path]) -> Path:
    return tools[0]


@pytest.fixture(scope="module")
def nudb_gen(tools: tuple[Path, Path]) -> Path:
    return tools[1]


def make_log(cli: Path, out: Path) -> Path:
    r = subprocess.run([str(cli), "import", str(DUMP), "--db", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


def make_nudb(gen: Path, out: Path, *extra: str) -> Path:
    r = subprocess.run([str(gen), "--dump", str(DUMP), *extra, str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (out / "nudb.dat").is_file() and (out / "nudb.key").is_file()
    return out


@pytest.fixture(scope="module")
def log_dir(shamap_cli: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_log(shamap_cli, tmp_path_factory.mktemp("log") / "store")


@pytest.fixture(scope="module")
def nudb_dir(nudb_gen: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_nudb(nudb_gen, tmp_path_factory.mktemp("nudb") / "store")


@pytest.fixture(params=["log", "nudb"])
def store_dir(request: pytest.FixtureRequest) -> Path:
    return request.getfixturevalue(f"{request.param}_dir")


def files_of(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}


def test_ledgers(store_dir: Path) -> None:
    assert shamap.open_store(str(store_dir)).ledgers() == [(SEQ, LEDGER_HASH)]


def test_get_equals_the_dump(store_dir: Path, seed: int) -> None:
    import random

    store = shamap.open_store(store_dir)
    keys = random.Random(seed).sample(sorted(STATE), 20)
    for key in keys:
        assert store.get(LEDGER_HASH, key) == STATE[key]
        # Keys as bytes too.
        assert store.get(LEDGER_HASH.lower(), bytes.fromhex(key)) == STATE[key]
        if (store_dir / "nodes.log").is_file():
            # A node log also answers by the map root of a retained ledger.
            assert store.get(ACCOUNT_HASH, key) == STATE[key]
    assert store.get(LEDGER_HASH, "00" * 32) is None


def test_prove_then_check(store_dir: Path, seed: int) -> None:
    import random

    store = shamap.open_store(store_dir)
    for key in random.Random(seed).sample(sorted(STATE), 10) + ["00" * 32, "FF" * 32]:
        proof = store.prove(LEDGER_HASH, key)
        assert list(proof) == ["kind", "key", "root", "included", "nodes"]
        assert proof["kind"] == "state" and proof["key"] == key and proof["root"] == ACCOUNT_HASH
        assert proof["included"] == (key in STATE)
        want = "included" if key in STATE else "absent"
        assert shamap.verify_proof(ACCOUNT_HASH, key, proof["nodes"]) == want


def test_export_equals_the_cli_and_reads_back(
    store_dir: Path, shamap_cli: Path, tmp_path: Path
) -> None:
    store = shamap.open_store(store_dir)
    for version in (1, 2):
        out = store.export(LEDGER_HASH, api_version=version)
        r = subprocess.run(
            [str(shamap_cli), "export", "--db", str(store_dir), "--root", LEDGER_HASH,
             "--api-version", str(version)],
            capture_output=True,
        )
        assert r.returncode == 0, r.stderr
        assert out == r.stdout
        f = tmp_path / f"exported-v{version}.json"
        f.write_bytes(out)
        led = shamap.read_ledger(str(f))
        assert led.state is not None and led.state.root_hash() == ACCOUNT_HASH
    with pytest.raises(shamap.StoreFailure):
        store.export(ACCOUNT_HASH if (store_dir / "nodes.log").is_file() else "00" * 32)


def test_prove_matches_in_memory(store_dir: Path) -> None:
    led = shamap.read_ledger(str(DUMP))
    assert led.state is not None
    for key in sorted(STATE)[::97]:
        want = [n.hex().upper() for n in led.state.prove(key)]
        assert shamap.open_store(store_dir).prove(LEDGER_HASH, key)["nodes"] == want


def test_verify_whole(store_dir: Path) -> None:
    before = files_of(store_dir)
    report = shamap.open_store(store_dir).verify()
    assert report["ok"] is True, report
    # One report shape for every backend.
    assert [r["root"] for r in report["roots"]] == [LEDGER_HASH]
    assert report["roots"][0]["ok"] is True
    assert report["roots"][0]["leaves"] >= len(STATE)
    assert report["damage"] == [] and report["damage_count"] == 0
    assert report["nodes"] == []
    if report["store"] == "rippled NuDB":
        assert report["roots"][0]["seq"] == SEQ
        assert report["scan"]["records"] > 0
    else:
        assert report["store"] == "node log"
        assert report["log"]["batches"] > 0
    # Read-only: nothing in the directory changed.
    assert files_of(store_dir) == before


def test_verify_with_an_anchor(store_dir: Path) -> None:
    store = shamap.open_store(store_dir)
    assert "authenticated" not in store.verify()["roots"][0]
    report = store.verify(anchor=LEDGER_HASH)
    assert report["authenticated"] is True
    assert report["roots"][0]["authenticated"] is True
    assert report["roots"][0]["authentication"] == "authenticated (via the anchor)"
    other = store.verify(anchor="AB" * 32)
    assert other["authenticated"] is False
    assert other["roots"][0]["authenticated"] is False
    assert other["ok"] is True  # whole, but not authenticated


def leaf_hash(key: str) -> bytes:
    """The hash of the account-state leaf holding key (rippled: MLN\\0 + data + key)."""
    return hashlib.sha512(b"MLN\x00" + STATE[key] + bytes.fromhex(key)).digest()[:32]


def nudb_record(dat: bytes, key: bytes) -> tuple[int, int]:
    """(offset, size) of key's record in nudb.dat: records `u48 size, key,
    value` and spill records `u48 0, u16 size, bucket` after the 92-byte
    header (NuDB's format)."""
    at = 92
    while at < len(dat):
        size = int.from_bytes(dat[at : at + 6], "big")
        if size == 0:
            at += 8 + int.from_bytes(dat[at + 6 : at + 8], "big")
            continue
        if dat[at + 6 : at + 38] == key:
            return at, size
        at += 6 + 32 + size
    raise AssertionError(f"no record for {key.hex()}")


def test_verify_reports_a_flipped_byte_in_nudb(nudb_gen: Path, tmp_path: Path, seed: int) -> None:
    import random

    d = make_nudb(nudb_gen, tmp_path / "store")
    key = random.Random(seed).choice(sorted(STATE))
    leaf = leaf_hash(key)
    dat = bytearray((d / "nudb.dat").read_bytes())
    at, size = nudb_record(bytes(dat), leaf)
    dat[at + 6 + 32 + size - 1] ^= 0x01  # the value's last byte
    (d / "nudb.dat").write_bytes(bytes(dat))
    store = shamap.open_store(d)
    report = store.verify()
    assert report["ok"] is False
    damage = report["damage"]
    assert [(x["key"], x["at"]) for x in damage] == [(leaf.hex().upper(), at)], damage
    assert [(r["seq"], r["ok"]) for r in report["roots"]] == [(SEQ, False)]
    assert [n["key"] for n in report["nodes"]] == [leaf.hex().upper()]
    assert report["nodes"][0]["roots"] == [{"seq": SEQ, "root": LEDGER_HASH}]
    with pytest.raises(shamap.StoreFailure):
        store.get(LEDGER_HASH, key)


def test_verify_reports_a_flipped_byte_in_a_node_log(shamap_cli: Path, tmp_path: Path, seed: int) -> None:
    import random

    d = make_log(shamap_cli, tmp_path / "store")
    log = bytearray((d / "nodes.log").read_bytes())
    at = random.Random(seed).randrange(len(log) // 4, 3 * len(log) // 4)
    log[at] ^= 0x01
    (d / "nodes.log").write_bytes(bytes(log))
    report = shamap.open_store(d).verify()
    assert report["ok"] is False
    assert report["damage"] and all(x["file"] is None for x in report["damage"]), report
    # One report: the CLI's JSON is Python's dict.
    cli = subprocess.run([str(shamap_cli), "verify", "--db", str(d), "--json"], capture_output=True, text=True)
    assert cli.returncode == 2, cli.stderr
    assert json.loads(cli.stdout) == report


def test_errors_are_one_line(tmp_path: Path, nudb_dir: Path) -> None:
    with pytest.raises(shamap.StoreFailure) as e:
        shamap.open_store(tmp_path / "nothing")
    assert "\n" not in str(e.value) and str(tmp_path / "nothing") in str(e.value)
    store = shamap.open_store(f"nudb:{nudb_dir}")
    with pytest.raises(shamap.StoreFailure) as e:
        store.get("AB" * 32, "00" * 32)
    assert "\n" not in str(e.value) and "AB" * 32 in str(e.value).upper()
    with pytest.raises(ValueError):
        store.get(LEDGER_HASH, "00")


def test_transactions_by_kind(store_dir: Path) -> None:
    led = shamap.read_ledger(str(DUMP))
    assert led.transactions is not None and len(led.transactions) > 0
    store = shamap.open_store(store_dir)
    for key, data in led.transactions.items():
        assert store.get(LEDGER_HASH, key, kind="tx") == data
        proof = store.prove(LEDGER_HASH, key, kind="tx")
        assert proof["kind"] == "tx" and proof["root"] == LEDGER["transaction_hash"].upper()
        assert shamap.verify_proof(proof["root"], key, proof["nodes"]) == "included"


def test_nudb_history_with_ledger_db(nudb_gen: Path, tmp_path: Path) -> None:
    d = make_nudb(nudb_gen, tmp_path / "store", "--history", "2", "--ledger-db")
    assert (d / "ledger.db").is_file()
    store = shamap.open_store(d)
    ledgers = store.ledgers()
    assert [s for s, _ in ledgers] == [SEQ, SEQ + 1, SEQ + 2] and ledgers[0] == (SEQ, LEDGER_HASH)
    report = store.verify()
    assert report["ok"] is True
    assert [(r["seq"], r["root"], r["ok"]) for r in report["roots"]] == [(s, h, True) for s, h in ledgers]
    # The newest ledger's state differs from 38129's but shares most of it.
    assert store.get(ledgers[-1][1], sorted(STATE)[0]) is not None
