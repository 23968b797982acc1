"""Type stubs of the compiled module shamap._shamap (re-exported by shamap)."""

import os
from typing import Any, Dict, Iterator, List, Literal, Optional, Sequence, Tuple, Union, final

__version__: str
__all__ = [
    "Ledger",
    "ShaMap",
    "Snapshot",
    "Store",
    "StoreFailure",
    "__version__",
    "open_store",
    "read_ledger",
    "stats",
    "verify_proof",
    "verify_xpop",
]

_Kind = Literal["state", "tx", "txset"]
#: 32 bytes, or a str of 64 hex digits (either case).
_KeyLike = Union[bytes, bytearray, str]
#: Item data.
_DataLike = Union[bytes, bytearray]
_PathLike = Union[str, "os.PathLike[str]"]

@final
class ShaMap:
    """A SHAMap: the XRP Ledger's Merkle radix-16 tree over 32-byte keys.

    kind: "state" (account state), "tx" (transactions with metadata) or
    "txset" (transactions without metadata). insert of a present key and
    update/remove of an absent key raise KeyError; malformed keys or data
    raise ValueError (wrong length, bad hex) or TypeError (wrong type).
    """

    def __new__(cls, kind: _Kind = "state") -> "ShaMap": ...
    @property
    def kind(self) -> _Kind: ...
    def insert(self, key: _KeyLike, data: _DataLike) -> None:
        """Adds an item; KeyError if the key is present (rippled's addItem)."""
    def update(self, key: _KeyLike, data: _DataLike) -> None:
        """Replaces a present key's data; KeyError if absent (updateGiveItem)."""
    def upsert(self, key: _KeyLike, data: _DataLike) -> bool:
        """Inserts or replaces; True when the key was new."""
    def remove(self, key: _KeyLike) -> None:
        """Removes an item; KeyError if absent (rippled's delItem)."""
    def get(self, key: _KeyLike) -> Optional[bytes]:
        """The data stored under key, or None."""
    def __getitem__(self, key: _KeyLike, /) -> bytes: ...
    def __setitem__(self, key: _KeyLike, data: _DataLike, /) -> None: ...
    def __delitem__(self, key: _KeyLike, /) -> None: ...
    def __len__(self) -> int: ...
    def __contains__(self, key: _KeyLike, /) -> bool: ...
    def __iter__(self) -> Iterator[bytes]: ...
    def root_hash(self) -> str:
        """64 upper-case hex digits (all zeros for an empty map)."""
    def items(self) -> List[Tuple[bytes, bytes]]:
        """Every (key, data) pair in ascending key order."""
    def keys(self) -> List[bytes]:
        """Every key in ascending order."""
    def snapshot(self) -> "Snapshot":
        """An O(1) read-only copy of the map as it is now."""
    def prove(self, key: _KeyLike) -> List[bytes]:
        """rippled's getProofPath wire nodes for key: leaf first, root last."""
    def check(self) -> None:
        """Audits shape, hashes and accounting; ValueError on a defect."""

@final
class Snapshot:
    """A read-only version of a ShaMap (ShaMap.snapshot())."""

    @property
    def kind(self) -> _Kind: ...
    def get(self, key: _KeyLike) -> Optional[bytes]: ...
    def __getitem__(self, key: _KeyLike, /) -> bytes: ...
    def __len__(self) -> int: ...
    def __contains__(self, key: _KeyLike, /) -> bool: ...
    def __iter__(self) -> Iterator[bytes]: ...
    def root_hash(self) -> str: ...
    def items(self) -> List[Tuple[bytes, bytes]]: ...
    def keys(self) -> List[bytes]: ...
    def prove(self, key: _KeyLike) -> List[bytes]: ...
    def to_map(self) -> ShaMap:
        """A mutable ShaMap starting from this snapshot, in O(1)."""

@final
class Ledger:
    """A ledger read by read_ledger()."""

    @property
    def sources(self) -> List[str]: ...
    @property
    def ledger_index(self) -> Optional[int]: ...
    @property
    def header(self) -> Dict[str, Union[int, str, None]]:
        """ledger_index, total_coins, parent_hash, transaction_hash,
        account_hash, parent_close_time, close_time, close_time_resolution,
        close_flags and the claimed ledger_hash (None when absent)."""
    @property
    def verify(self) -> Dict[str, Any]:
        """ok, checked, mismatches, sources, ledger_index, state_entries,
        transactions, incomplete, and account_hash / transaction_hash /
        ledger_hash: {computed, expected, status[, reason]}, status one of
        "match", "mismatch", "no_expected", "not_computed"."""
    @property
    def ok(self) -> bool:
        """Something was checked and everything checked matched."""
    @property
    def state(self) -> Optional[ShaMap]: ...
    @property
    def transactions(self) -> Optional[ShaMap]: ...

def verify_proof(
    root: _KeyLike, key: _KeyLike, proof: Sequence[Union[bytes, bytearray, str]]
) -> Literal["included", "absent"]:
    """Checks a proof path against a trusted root; ValueError("invalid
    proof: <reason>") when it does not lead from root to key."""

def verify_xpop(
    xpop: Union[str, bytes, Dict[str, Any]], vl_key: str
) -> Dict[str, Any]:
    """Verifies an XPOP (XLS-41) against the list publisher's master key, as
    `shamap xpop verify --json` does: the same fields; `valid` False with a
    `reason` when it does not verify. ValueError for non-JSON or a bad key."""

def read_ledger(path: Union[_PathLike, Sequence[_PathLike]]) -> Ledger:
    """Reads a ledger dump (or the ledger_data pages of one ledger), builds
    its maps and checks them as `shamap verify` does. OSError for unreadable
    files, ValueError for unusable input."""

def stats(map: Union[ShaMap, Snapshot]) -> Dict[str, Any]:
    """The fields of `shamap stats --json` (timing.hashing is None)."""

class StoreFailure(Exception):
    """A store that cannot be opened or read, or a root it does not hold;
    the message is one line naming the store."""

@final
class Store:
    """A store opened for reading by open_store()."""

    @property
    def location(self) -> str: ...
    def ledgers(self) -> List[Tuple[int, str]]:
        """(sequence, ledger hash in upper-case hex) of every ledger held."""
    def get(
        self, root: _KeyLike, key: _KeyLike, kind: Optional[Literal["state", "tx"]] = None
    ) -> Optional[bytes]:
        """The data under key in the map root names (a ledger hash or a map
        root), or None; every node read is verified."""
    def prove(
        self, root: _KeyLike, key: _KeyLike, kind: Optional[Literal["state", "tx"]] = None
    ) -> Dict[str, Any]:
        """The proof `shamap prove --db` writes: kind, key, root, included,
        nodes (hex, leaf first)."""
    def verify(self, anchor: Optional[_KeyLike] = None) -> Dict[str, Any]:
        """The audit `shamap verify --db --json` reports; "ok" is True when
        nothing is damaged. With anchor (a trusted ledger hash), every root
        also gets "authenticated" and "authentication", as `--anchor` gives."""
    def export(self, ledger: _KeyLike, api_version: int = 1) -> bytes:
        """The ledger (by hash) as rippled's binary `ledger` response, the
        bytes `shamap export --db --root` writes."""

def open_store(path: _PathLike) -> Store:
    """Opens a node log or rippled's NuDB node store (read-only) for
    reading; StoreFailure naming the path when it cannot be opened."""
