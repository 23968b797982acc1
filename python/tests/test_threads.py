"""One map shared by several Python threads: writes from all of them land,
readers see consistent roots, nothing deadlocks (hashing runs with the
interpreter detached while other threads go on writing)."""

from __future__ import annotations

import random
import threading

import shamap
from refmap import RefMap


def test_threads_share_one_map(seed):
    m = shamap.ShaMap("state")
    writers = 4
    per_writer = 1500
    rng = random.Random(seed)
    batches = [
        [(rng.getrandbits(256).to_bytes(32, "big"), rng.randbytes(rng.randrange(12, 60))) for _ in range(per_writer)]
        for _ in range(writers)
    ]
    errors: list = []
    done = threading.Event()

    def write(batch):
        try:
            for k, d in batch:
                m.insert(k, d)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    def hash_while_writing():
        try:
            while not done.is_set():
                h = m.root_hash()
                assert len(h) == 64
                shamap.stats(m)
                m.snapshot()
        except Exception as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=write, args=(b,)) for b in batches]
    hasher = threading.Thread(target=hash_while_writing)
    hasher.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    done.set()
    hasher.join(timeout=120)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads + [hasher])

    ref = RefMap("state")
    for b in batches:
        for k, d in b:
            ref.insert(k, d)
    assert len(m) == writers * per_writer
    assert m.root_hash() == ref.root_hash()
    m.check()


def test_read_ledger_in_threads():
    from conftest import DATA

    results: list = []

    def read():
        results.append(shamap.read_ledger(str(DATA / "ledger-38129.json")).ok)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert results == [True] * 4
