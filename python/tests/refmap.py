"""A small pure-Python reference SHAMap, written from docs/xrpl-shamap.md.

It keeps a plain dict and computes everything from scratch, from the key set
alone (the tree's shape depends only on the keys):

- SHA512Half(x) = the first 32 bytes of SHA-512(x);
- inner node: SHA512Half(b"MIN\\0" + 16 child hashes), zero for an empty
  branch; the root is always an inner node and an empty map's root is 32 zero
  bytes;
- leaves: account state SHA512Half(b"MLN\\0" + data + key), transaction with
  metadata SHA512Half(b"SND\\0" + data + key), transaction without metadata
  SHA512Half(b"TXN\\0" + data);
- below the root an inner node exists at a nibble prefix exactly when two or
  more keys share it; a leaf sits at the first depth where it is alone;
- proof paths: the wire bytes of the nodes on a key's path, leaf (or last
  node) first, root last; wire inner nodes are compressed (hash + branch byte
  per child, then 0x03) below 12 children, else 16 hashes then 0x02; leaves
  are data + key + 0x01 (state), data + key + 0x04 (tx), data + 0x00 (txset).

Used by the randomized tests and by bench/build_root.py.
"""

from __future__ import annotations

import hashlib
from typing import Dict, List, Sequence, Tuple

ZERO = bytes(32)

PREFIX_INNER = b"MIN\x00"
LEAF_PREFIX = {"state": b"MLN\x00", "tx": b"SND\x00", "txset": b"TXN\x00"}
WIRE_LEAF_TYPE = {"state": 0x01, "tx": 0x04, "txset": 0x00}

Item = Tuple[bytes, bytes]


def sha512_half(data: bytes) -> bytes:
    return hashlib.sha512(data).digest()[:32]


def nibble(key: bytes, depth: int) -> int:
    b = key[depth >> 1]
    return b >> 4 if depth % 2 == 0 else b & 0x0F


class RefMap:
    """A SHAMap as a dict, hashed from scratch on demand."""

    def __init__(self, kind: str = "state") -> None:
        if kind not in LEAF_PREFIX:
            raise ValueError(kind)
        self.kind = kind
        self.items_: Dict[bytes, bytes] = {}

    # --- writes, with the engine's rules ---------------------------------
    def insert(self, key: bytes, data: bytes) -> None:
        if key in self.items_:
            raise KeyError(key)
        self.items_[key] = data

    def update(self, key: bytes, data: bytes) -> None:
        if key not in self.items_:
            raise KeyError(key)
        self.items_[key] = data

    def upsert(self, key: bytes, data: bytes) -> bool:
        new = key not in self.items_
        self.items_[key] = data
        return new

    def remove(self, key: bytes) -> None:
        del self.items_[key]

    def get(self, key: bytes):
        return self.items_.get(key)

    def __len__(self) -> int:
        return len(self.items_)

    def items(self) -> List[Item]:
        return sorted(self.items_.items())

    # --- hashing -----------------------------------------------------------
    def leaf_hash(self, key: bytes, data: bytes) -> bytes:
        if self.kind == "txset":
            return sha512_half(LEAF_PREFIX["txset"] + data)
        return sha512_half(LEAF_PREFIX[self.kind] + data + key)

    def _children(self, items: Sequence[Item], depth: int) -> List[bytes]:
        """The 16 child hashes of the inner node at `depth` holding `items`."""
        groups: List[List[Item]] = [[] for _ in range(16)]
        for item in items:
            groups[nibble(item[0], depth)].append(item)
        out = []
        for g in groups:
            if not g:
                out.append(ZERO)
            elif len(g) == 1:
                out.append(self.leaf_hash(*g[0]))
            else:
                out.append(self._inner_hash(g, depth + 1))
        return out

    def _inner_hash(self, items: Sequence[Item], depth: int) -> bytes:
        return sha512_half(PREFIX_INNER + b"".join(self._children(items, depth)))

    def root_hash(self) -> str:
        """64 upper-case hex digits, as ShaMap.root_hash()."""
        if not self.items_:
            return ZERO.hex().upper()
        return self._inner_hash(self.items(), 0).hex().upper()

    # --- proofs ------------------------------------------------------------
    def _wire_leaf(self, key: bytes, data: bytes) -> bytes:
        t = bytes([WIRE_LEAF_TYPE[self.kind]])
        return data + t if self.kind == "txset" else data + key + t

    @staticmethod
    def _wire_inner(children: List[bytes]) -> bytes:
        present = [(b, h) for b, h in enumerate(children) if h != ZERO]
        if len(present) < 12:
            return b"".join(h + bytes([b]) for b, h in present) + b"\x03"
        return b"".join(children) + b"\x02"

    def prove(self, key: bytes) -> List[bytes]:
        """The proof path of key, leaf (or last node) first, root last."""
        if not self.items_:
            return []
        nodes = []
        items: Sequence[Item] = self.items()
        depth = 0
        while True:
            nodes.append(self._wire_inner(self._children(items, depth)))
            below = [it for it in items if nibble(it[0], depth) == nibble(key, depth)]
            if not below:
                break
            if len(below) == 1:
                nodes.append(self._wire_leaf(*below[0]))
                break
            items = below
            depth += 1
        nodes.reverse()
        return nodes


def shape(ref: RefMap) -> Tuple[List[int], List[int]]:
    """(child_histogram[0..16], depth_histogram[0..64]) of the tree, counted
    as ShaMap's stats count them: the root is an inner node even when empty."""
    child = [0] * 17
    depth_hist = [0] * 65

    def walk(items: Sequence[Item], depth: int) -> None:
        groups: Dict[int, List[Item]] = {}
        for it in items:
            groups.setdefault(nibble(it[0], depth), []).append(it)
        child[len(groups)] += 1
        for g in groups.values():
            if len(g) == 1:
                depth_hist[depth + 1] += 1
            else:
                walk(g, depth + 1)

    walk(ref.items(), 0)
    return child, depth_hist
