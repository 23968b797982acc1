#!/usr/bin/env python3
"""An independent reader of rippled node stores in NuDB 2.0.9's format.

Python 3 standard library only, written from the format documents
(cppalliance/NuDB README "Formats" and include/nudb/detail/format.hpp;
rippled include/xrpl/nodestore/detail/codec.h and varint.h), not from the
Rust code it checks. XXH64 and LZ4 block decompression are implemented here.

    nudb_read.py DIR              JSON: headers, every record, every lookup
    nudb_read.py DIR --get HEX    the decoded value of one key, in hex

Every record of nudb.dat is listed with its key, offset, codec type, the
decoded value's type byte and whether SHA-512Half of the decoded value's
bytes after its 9-byte header equals the key; every key is then looked up
through nudb.key's buckets and spill records.
"""

import hashlib
import json
import sys

M64 = (1 << 64) - 1
P1 = 11400714785074694791
P2 = 14029467366897019727
P3 = 1609587929392839161
P4 = 9650029242287828579
P5 = 2870177450012600261


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def _round(acc, lane):
    acc = (acc + lane * P2) & M64
    return (_rotl(acc, 31) * P1) & M64


def _merge(acc, v):
    acc ^= _round(0, v)
    return (acc * P1 + P4) & M64


def xxh64(data, seed):
    """XXH64 of bytes `data` with a 64-bit seed."""
    n = len(data)
    i = 0
    if n >= 32:
        v = [(seed + P1 + P2) & M64, (seed + P2) & M64, seed & M64, (seed - P1) & M64]
        while i + 32 <= n:
            for j in range(4):
                lane = int.from_bytes(data[i + 8 * j:i + 8 * j + 8], "little")
                v[j] = _round(v[j], lane)
            i += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & M64
        for x in v:
            h = _merge(h, x)
    else:
        h = (seed + P5) & M64
    h = (h + n) & M64
    while i + 8 <= n:
        h ^= _round(0, int.from_bytes(data[i:i + 8], "little"))
        h = (_rotl(h, 27) * P1 + P4) & M64
        i += 8
    if i + 4 <= n:
        h ^= (int.from_bytes(data[i:i + 4], "little") * P1) & M64
        h = (_rotl(h, 23) * P2 + P3) & M64
        i += 4
    while i < n:
        h ^= (data[i] * P5) & M64
        h = (_rotl(h, 11) * P1) & M64
        i += 1
    h ^= h >> 33
    h = (h * P2) & M64
    h ^= h >> 29
    h = (h * P3) & M64
    h ^= h >> 32
    return h


def lz4_block(src, out_size):
    """Decompresses one LZ4 block that must give exactly out_size bytes."""
    out = bytearray()
    i = 0
    n = len(src)

    def extended(length, what):
        """A length of 15 goes on in the bytes that follow, up to one
        below 255."""
        nonlocal i
        if length < 15:
            return length
        while True:
            if i >= n:
                raise ValueError("LZ4 %s length runs past the block" % what)
            b = src[i]
            i += 1
            length += b
            if b != 255:
                return length

    while True:
        if i >= n:
            raise ValueError("LZ4 block ends before its last literals")
        token = src[i]
        i += 1
        lit = extended(token >> 4, "literal")
        if i + lit > n or len(out) + lit > out_size:
            raise ValueError("LZ4 literals run past the block or the declared size")
        out += src[i:i + lit]
        i += lit
        if i == n:
            break
        if i + 2 > n:
            raise ValueError("LZ4 match offset cut off")
        off = src[i] | (src[i + 1] << 8)
        i += 2
        if off == 0 or off > len(out):
            raise ValueError("LZ4 match offset %d outside the output" % off)
        ml = extended(token & 15, "match") + 4
        if len(out) + ml > out_size:
            raise ValueError("LZ4 output exceeds the declared size %d" % out_size)
        start = len(out) - off
        if off >= ml:
            out += out[start:start + ml]
        else:
            for k in range(ml):
                out.append(out[start + k])
    if len(out) != out_size:
        raise ValueError("LZ4 gave %d bytes, declared %d" % (len(out), out_size))
    return bytes(out)


def read_varint(b):
    """rippled's base-127 varint: (value, length); ValueError when invalid."""
    n = 0
    while n < len(b) and b[n] & 0x80:
        n += 1
    if n >= len(b):
        raise ValueError("varint runs past the value")
    n += 1
    if n == 1 and b[0] == 0:
        return 0, 1
    t = 0
    for d in reversed(b[:n]):
        t0 = t
        t = t * 127 + (d & 0x7F)
        if t <= t0 or t > M64:
            raise ValueError("varint overflows")
    return t, n


def decode_value(v):
    """rippled's nodeobject_decompress: (codec type, NodeStore value)."""
    ctype, n = read_varint(v)
    body = v[n:]
    if ctype == 0:
        return 0, bytes(body)
    if ctype == 1:
        size, m = read_varint(body)
        if m >= len(body) or size <= 0 or size >= 1 << 31:
            raise ValueError("LZ4 value: bad size %d" % size)
        return 1, lz4_block(body[m:], size)
    if ctype in (2, 3):
        if ctype == 3:
            mask, hashes = 0xFFFF, body
        else:
            if len(body) < 2 + 32:
                raise ValueError("short compressed inner node")
            mask, hashes = int.from_bytes(body[:2], "big"), body[2:]
        if mask == 0 or len(hashes) != 32 * bin(mask).count("1"):
            raise ValueError("inner node of %d bytes for mask %04x" % (len(hashes), mask))
        out = bytearray(8) + b"\x00" + b"MIN\x00"
        k = 0
        for branch in range(16):
            if mask & (0x8000 >> branch):
                out += hashes[32 * k:32 * k + 32]
                k += 1
            else:
                out += bytes(32)
        return ctype, bytes(out)
    raise ValueError("codec type %d" % ctype)


# The type byte each hash prefix is stored with (rippled's NodeObjectType:
# 1 ledger, 3 account-state node, 4 transaction node; 0 for an inner node
# restored from codec type 2 or 3).
PREFIX_TYPES = {b"LWR\x00": (1,), b"MIN\x00": (3, 4), b"MLN\x00": (3,),
                b"SND\x00": (4,), b"TXN\x00": (4,)}


def header_ok(ctype, value):
    """The 9-byte value header: 8 zero bytes and a type byte that fits the
    hash prefix."""
    if len(value) < 13 or value[:8] != bytes(8):
        return False
    allowed = PREFIX_TYPES.get(bytes(value[9:13]), ())
    if ctype in (2, 3):
        allowed = (0,)
    return value[8] in allowed


def u48(b, at):
    return int.from_bytes(b[at:at + 6], "big")


def ceil_pow2(x):
    p = 1
    while p < x:
        p <<= 1
    return p


def bucket_index(h, buckets, modulus):
    n = h % modulus
    if n >= buckets:
        n -= modulus // 2
    return n


def parse_bucket(b, at):
    """(count, spill, [(offset, size, hash)]) of the bucket at b[at:]."""
    if at + 8 > len(b):
        raise ValueError("bucket at %d past the end" % at)
    count = int.from_bytes(b[at:at + 2], "big")
    spill = u48(b, at + 2)
    if at + 8 + 18 * count > len(b):
        raise ValueError("bucket at %d: %d entries run past the end" % (at, count))
    entries = []
    for i in range(count):
        e = at + 8 + 18 * i
        entries.append((u48(b, e), u48(b, e + 6), u48(b, e + 12)))
    return count, spill, entries


class Store:
    def __init__(self, d):
        self.dat = open(d + "/nudb.dat", "rb").read()
        self.key = open(d + "/nudb.key", "rb").read()
        dat, key = self.dat, self.key
        if len(dat) < 92 or dat[:8] != b"nudb.dat":
            raise ValueError("nudb.dat: not a NuDB data file")
        if len(key) < 104 or key[:8] != b"nudb.key":
            raise ValueError("nudb.key: not a NuDB key file")
        be = lambda b, a, n: int.from_bytes(b[a:a + n], "big")
        self.dat_header = {
            "version": be(dat, 8, 2), "uid": be(dat, 10, 8),
            "appnum": be(dat, 18, 8), "key_size": be(dat, 26, 2),
        }
        self.key_header = {
            "version": be(key, 8, 2), "uid": be(key, 10, 8), "appnum": be(key, 18, 8),
            "key_size": be(key, 26, 2), "salt": be(key, 28, 8), "pepper": be(key, 36, 8),
            "block_size": be(key, 44, 2), "load_factor": be(key, 46, 2),
        }
        kh = self.key_header
        # The data file's own key size frames its records.
        self.ks = self.dat_header["key_size"]
        self.salt = kh["salt"]
        self.bs = kh["block_size"]
        self.problems = []
        if xxh64(self.salt.to_bytes(8, "little"), self.salt) != kh["pepper"]:
            self.problems.append("nudb.key: pepper does not match the salt")
        for f in ("version", "uid", "appnum", "key_size"):
            if self.dat_header[f] != kh[f]:
                self.problems.append("headers disagree on %s" % f)
        if self.bs < 104 or len(key) % self.bs != 0:
            raise ValueError("nudb.key: block size %d, file %d bytes" % (self.bs, len(key)))
        self.buckets = (len(key) - self.bs) // self.bs
        self.modulus = ceil_pow2(self.buckets)

    def scan(self):
        """Every data record and spill record of nudb.dat, in file order."""
        dat, ks = self.dat, self.ks
        records, spills = [], []
        at = 92
        while at < len(dat):
            if at + 6 > len(dat):
                raise ValueError("nudb.dat: record at %d cut off" % at)
            size = u48(dat, at)
            if size == 0:
                n = int.from_bytes(dat[at + 6:at + 8], "big")
                if at + 8 + n > len(dat):
                    raise ValueError("nudb.dat: spill record at %d cut off" % at)
                spills.append(at)
                at += 8 + n
                continue
            if at + 6 + ks + size > len(dat):
                raise ValueError("nudb.dat: record at %d cut off" % at)
            k = dat[at + 6:at + 6 + ks]
            v = dat[at + 6 + ks:at + 6 + ks + size]
            rec = {"key": k.hex().upper(), "offset": at, "size": size}
            try:
                ctype, value = decode_value(v)
                rec["codec"] = ctype
                rec["type"] = value[8] if len(value) > 8 else None
                rec["hash_ok"] = hashlib.sha512(value[9:]).digest()[:32] == k
                rec["value_ok"] = rec["hash_ok"] and header_ok(ctype, value)
                rec["value_sha256"] = hashlib.sha256(value).hexdigest()
            except (ValueError, IndexError) as e:
                rec["codec"] = None
                rec["error"] = str(e)
                rec["hash_ok"] = False
                rec["value_ok"] = False
            records.append(rec)
            at += 6 + ks + size
        return records, spills

    def lookup(self, k):
        """(offset of k's record or None, spill records followed)."""
        h = (xxh64(k, self.salt) >> 16) & 0xFFFFFFFFFFFF
        n = bucket_index(h, self.buckets, self.modulus)
        blob, at = self.key, (n + 1) * self.bs
        followed = 0
        while True:
            _, spill, entries = parse_bucket(blob, at)
            for off, size, eh in entries:
                if eh == h and self.dat[off + 6:off + 6 + self.ks] == k:
                    return off, followed
            if spill == 0:
                return None, followed
            followed += 1
            if followed > len(self.dat) // 26 + 1:
                raise ValueError("bucket %d: spill chain loops" % n)
            blob, at = self.dat, spill

    def entries(self):
        """Entries reachable from every bucket (its own and its spills')."""
        total = 0
        for n in range(self.buckets):
            blob, at, steps = self.key, (n + 1) * self.bs, 0
            while True:
                count, spill, _ = parse_bucket(blob, at)
                total += count
                if spill == 0:
                    break
                steps += 1
                if steps > len(self.dat) // 26 + 1:
                    raise ValueError("bucket %d: spill chain loops" % n)
                blob, at = self.dat, spill
        return total


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    s = Store(argv[1])
    if len(argv) == 4 and argv[2] == "--get":
        off, _ = s.lookup(bytes.fromhex(argv[3]))
        if off is None:
            print("not found")
            return 1
        size = u48(s.dat, off)
        v = s.dat[off + 6 + s.ks:off + 6 + s.ks + size]
        print(decode_value(v)[1].hex().upper())
        return 0
    records, spills = s.scan()
    deepest = 0
    for rec in records:
        off, followed = s.lookup(bytes.fromhex(rec["key"]))
        rec["found_at"] = off
        rec["spills_followed"] = followed
        deepest = max(deepest, followed)
    out = {
        "dat_header": s.dat_header,
        "key_header": s.key_header,
        "problems": s.problems,
        "buckets": s.buckets,
        "modulus": s.modulus,
        "bucket_entries": s.entries(),
        "records": records,
        "spills": spills,
        "deepest_chain": deepest,
    }
    json.dump(out, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
