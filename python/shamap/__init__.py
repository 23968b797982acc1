"""shamap: the XRP Ledger's SHAMap, hash-exact with rippled, from Rust.

    >>> import shamap
    >>> m = shamap.ShaMap("state")
    >>> m.insert(bytes(31) + b"\\x01", b"twelve bytes")
    >>> m.root_hash()
    '52BF4F586BD850714FAD750C2DA3BAF3E042032875DD6359ACBFFFA05F864ED6'
    >>> shamap.verify_proof(m.root_hash(), bytes(31) + b"\\x01", m.prove(bytes(31) + b"\\x01"))
    'included'

ShaMap: a mutable map (insert, update, upsert, remove, get, items, root_hash,
snapshot, prove); Snapshot: its O(1) read-only version; verify_proof: checks
a proof path against a trusted root; read_ledger: reads a rippled/Clio ledger
dump, builds its maps and checks its hashes as `shamap verify` does; stats:
the fields of `shamap stats --json` for a map; open_store: a node log or
rippled's NuDB node store (read-only) as a Store (ledgers, get, prove,
verify).
"""

# Everything the compiled module exports (its __all__; the names, with
# their types, are in _shamap.pyi).
from ._shamap import *  # noqa: F403
from ._shamap import __version__  # noqa: F401
