"""The module against the `shamap` binary, when one is at hand ($SHAMAP_CLI,
else target/release/shamap or target/debug/shamap of this repository):
`stats --json --no-timing`, `prove` and `verify --json` give what the module
gives. Skipped without a binary (python/ci.sh builds none)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import shamap
from conftest import DATA, REPO


def cli() -> Path | None:
    env = os.environ.get("SHAMAP_CLI")
    if env:
        return Path(env)
    for profile in ("release", "debug"):
        p = REPO / "target" / profile / "shamap"
        if p.is_file() and os.access(p, os.X_OK):
            return p
    return None


CLI = cli()
pytestmark = pytest.mark.skipif(CLI is None, reason="no shamap binary (set SHAMAP_CLI or build the CLI)")


def run(*args: str) -> dict:
    out = subprocess.run([str(CLI), *args], check=True, capture_output=True, text=True, cwd=REPO)
    return json.loads(out.stdout)


@pytest.mark.parametrize("kind", ["state", "tx"])
def test_stats_equal_the_cli(kind):
    rel = "data/ledger-38129.json"
    want = run("stats", rel, "--json", "--no-timing", "--kind", kind)
    led = shamap.read_ledger(rel if Path.cwd() == REPO else str(REPO / rel))
    got = shamap.stats(led.state if kind == "state" else led.transactions)
    got["input"]["sources"] = [rel]
    assert set(got) == set(want)
    for field in want:
        if field == "timing":
            assert want["timing"]["hashing"] is None and got["timing"]["hashing"] is None
            continue
        assert got[field] == want[field], field


def test_proofs_equal_the_cli():
    led = shamap.read_ledger(str(DATA / "ledger-38129.json"))
    for key in led.state.keys()[::50] + [bytes(32)]:
        want = run("prove", "data/ledger-38129.json", key.hex(), "--absent-ok")
        assert [bytes.fromhex(n) for n in want["nodes"]] == led.state.prove(key)
        assert want["root"] == led.state.root_hash()


def test_verify_equals_the_cli():
    for name in ("ledger-38129.json", "ledger-testnet-42089779.json"):
        want = run("verify", f"data/{name}", "--json")
        got = shamap.read_ledger(str(DATA / name)).verify
        (ledger,) = want["ledgers"]
        for field in ("ledger_index", "state_entries", "transactions", "incomplete",
                      "account_hash", "transaction_hash", "ledger_hash"):
            assert got[field] == ledger[field], (name, field)
        for field in ("ok", "checked", "mismatches"):
            assert got[field] == want[field], (name, field)


def test_verify_xpop_equals_the_cli():
    key = "ED74D4036C6591A4BDF9C54CEFA39B996A5DCE5F86D11FDA1874481CE9D5A1CDC1"
    for path in sorted((DATA / "xpop-xahaud").glob("*.json"))[:4]:
        cli_json = run("xpop", "verify", "--json", "--vl-key", key, str(path))
        cli_json.pop("file")
        assert shamap.verify_xpop(path.read_text(), key) == cli_json
