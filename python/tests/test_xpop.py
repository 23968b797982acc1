"""verify_xpop on the real XPOPs of xahaud's tests (data/xpop-xahaud): each
valid, with the fields `shamap xpop verify --json` prints; tampered ones
invalid with a reason; bad arguments raise."""

from __future__ import annotations

import json

import pytest

import shamap
from conftest import DATA

VL_KEY = "ED74D4036C6591A4BDF9C54CEFA39B996A5DCE5F86D11FDA1874481CE9D5A1CDC1"
XPOPS = sorted((DATA / "xpop-xahaud").glob("*.json"))


def test_there_are_24():
    assert len(XPOPS) == 24


@pytest.mark.parametrize("path", XPOPS, ids=lambda p: p.name)
def test_each_real_xpop_is_valid_from_text_bytes_and_dict(path):
    text = path.read_text()
    for given in (text, text.encode(), json.loads(text)):
        r = shamap.verify_xpop(given, VL_KEY)
        assert r["valid"] is True, r
        assert r["ledger_index"] == json.loads(text)["ledger"]["index"]
        assert len(r["ledger_hash"]) == 64 and len(r["transaction_hash"]) == 64
        assert r["votes"] >= r["quorum"]
        assert r["proof_form"] == "tree"


def test_tampered_and_foreign_key_are_invalid_with_a_reason():
    x = json.loads(XPOPS[0].read_text())
    x["ledger"]["coins"] = str(int(x["ledger"]["coins"]) - 1)
    r = shamap.verify_xpop(x, VL_KEY)
    assert r == {"valid": False, "reason": r["reason"]} and r["reason"]
    other = "ED264807102805220DA0F312E71FC2C69E1552C9C5790F6C25E3729DEB573D5860"
    r = shamap.verify_xpop(XPOPS[0].read_text(), other)
    assert r["valid"] is False and "trusted key" in r["reason"]


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="not JSON"):
        shamap.verify_xpop("{", VL_KEY)
    with pytest.raises(ValueError, match="vl_key"):
        shamap.verify_xpop(XPOPS[0].read_text(), "nope")
    with pytest.raises(TypeError):
        shamap.verify_xpop(42, VL_KEY)  # type: ignore[arg-type]
