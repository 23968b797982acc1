//! NuDB's key file (`nudb.key`): a header block, then one block per
//! bucket. Layout as NuDB 2.0.9 writes it (cppalliance/NuDB
//! `include/nudb/detail/format.hpp`, `bucket.hpp`, `field.hpp`); every
//! integer is big-endian.
//!
//! | bytes | header field |
//! |---|---|
//! | 0..8 | `nudb.key` |
//! | 8..10 | version (2) |
//! | 10..18 | uid (equals the data file's) |
//! | 18..26 | appnum (rippled: 1) |
//! | 26..28 | key size (rippled: 32) |
//! | 28..36 | salt (the seed of the key hash) |
//! | 36..44 | pepper: XXH64 of the salt's 8 little-endian bytes, seeded with the salt |
//! | 44..46 | block size |
//! | 46..48 | load factor (of 65536) |
//! | 48..104 | reserved |
//!
//! Bucket `n` is the block at `(n + 1) × block size`: a u16 entry count, a
//! u48 spill offset (0: none; else the offset in the data file of a bucket
//! holding the entries that did not fit), then `count` 18-byte entries
//! sorted by hash: u48 record offset in the data file, u48 value size, u48
//! hash. The hash of a key is bits 16..64 of `XXH64(key, salt)`; the bucket
//! it belongs to is that hash modulo the smallest power of two not below
//! the bucket count, less half of it when that lands past the last bucket
//! (linear hashing, NuDB's `bucket_index`). The bucket count is the file's
//! length in whole blocks, less the header block.

use xxhash_rust::xxh64::xxh64;

use super::header::{check_len, check_magic};

/// Bytes of the key file's header (at the start of its first block).
pub const KEY_HEADER_LEN: usize = 104;
/// Bytes of a bucket's count and spill fields.
pub const BUCKET_HEAD_LEN: usize = 8;
/// Bytes of one bucket entry.
pub const ENTRY_LEN: usize = 18;
/// The NuDB format version this reader reads.
pub const NUDB_VERSION: u16 = 2;

/// A big-endian u48 at `b[at..at + 6]`.
pub(crate) fn u48(b: &[u8], at: usize) -> u64 {
    b[at..at + 6]
        .iter()
        .fold(0u64, |acc, &x| (acc << 8) | u64::from(x))
}

pub(crate) fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(a)
}

/// The key file's header, with the values NuDB computes from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyHeader {
    /// Format version.
    pub version: u16,
    /// The store's unique id (the data file has the same).
    pub uid: u64,
    /// The application's number (rippled: 1).
    pub appnum: u64,
    /// Bytes of a key.
    pub key_size: u16,
    /// Seed of the key hash.
    pub salt: u64,
    /// The check value of the salt ([`pepper`]).
    pub pepper: u64,
    /// Bytes of a block (a bucket's room in the key file).
    pub block_size: u16,
    /// Target fill of a bucket, in 65536ths.
    pub load_factor: u16,
    /// Entries a bucket holds.
    pub capacity: usize,
    /// Buckets in the file.
    pub buckets: u64,
    /// The smallest power of two not below `buckets`.
    pub modulus: u64,
}

/// NuDB's pepper: XXH64 of the salt's little-endian bytes, seeded with
/// the salt (`format.hpp` `pepper`), which tells a key file hashed with
/// another function apart.
pub fn pepper(salt: u64) -> u64 {
    xxh64(&salt.to_le_bytes(), salt)
}

/// The hash a bucket entry holds for `key`: bits 16..64 of
/// `XXH64(key, salt)` (`format.hpp` `make_hash<uint48_t>`).
pub fn key_hash(key: &[u8], salt: u64) -> u64 {
    (xxh64(key, salt) >> 16) & 0xffff_ffff_ffff
}

/// An order-free digest of a set of index entries (record offset, value
/// size, key hash): the sum of a 64-bit hash of each. The audit takes one
/// over the key file's entries (buckets and spills) and one over the data
/// file's records; when the two agree, every record is indexed where it
/// is with its own size and key hash and no entry names anything else
/// (up to a 64-bit collision), so the walk may trust a bucket entry
/// without reading the record it names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndexDigest {
    /// Entries added.
    pub count: u64,
    /// The sum of their hashes, wrapping.
    pub sum: u64,
}

impl IndexDigest {
    /// Adds one entry.
    pub fn add(&mut self, offset: u64, size: u64, hash: u64) {
        let mut b = [0u8; 24];
        b[..8].copy_from_slice(&offset.to_le_bytes());
        b[8..16].copy_from_slice(&size.to_le_bytes());
        b[16..].copy_from_slice(&hash.to_le_bytes());
        self.count += 1;
        self.sum = self.sum.wrapping_add(xxhash_rust::xxh3::xxh3_64(&b));
    }

    /// Adds every entry of `other`.
    pub fn merge(&mut self, other: IndexDigest) {
        self.count += other.count;
        self.sum = self.sum.wrapping_add(other.sum);
    }
}

/// The bucket holding hash `h` (`bucket.hpp` `bucket_index`).
pub fn bucket_index(h: u64, buckets: u64, modulus: u64) -> u64 {
    let n = h % modulus;
    if n >= buckets {
        n - modulus / 2
    } else {
        n
    }
}

/// Entries that fit in a block of `block_size` bytes.
pub fn bucket_capacity(block_size: u16) -> usize {
    let bs = usize::from(block_size);
    if bs < KEY_HEADER_LEN {
        return 0;
    }
    ((bs - BUCKET_HEAD_LEN) / ENTRY_LEN).min(usize::from(u16::MAX))
}

impl KeyHeader {
    /// Parses and checks a key file's header; `file_len` is the file's
    /// length. The error says what is wrong (the caller names the file).
    pub fn parse(b: &[u8], file_len: u64) -> Result<KeyHeader, String> {
        check_len(b, KEY_HEADER_LEN, "a key file header")?;
        check_magic(b, "nudb.key", "a NuDB key file")?;
        let block_size = u16_at(b, 44);
        let capacity = bucket_capacity(block_size);
        let buckets = if block_size > 0 && file_len > u64::from(block_size) {
            (file_len - u64::from(block_size)) / u64::from(block_size)
        } else {
            0
        };
        let h = KeyHeader {
            version: u16_at(b, 8),
            uid: u64_at(b, 10),
            appnum: u64_at(b, 18),
            key_size: u16_at(b, 26),
            salt: u64_at(b, 28),
            pepper: u64_at(b, 36),
            block_size,
            load_factor: u16_at(b, 46),
            capacity,
            buckets,
            modulus: buckets.max(1).next_power_of_two(),
        };
        if h.version != NUDB_VERSION {
            return Err(format!(
                "format version {} (this reader reads NuDB version {NUDB_VERSION})",
                h.version
            ));
        }
        if h.key_size < 1 {
            return Err("key size 0".to_owned());
        }
        if h.pepper != pepper(h.salt) {
            return Err(format!(
                "pepper {:#018x} does not match salt {:#018x} (not hashed with XXH64, or a damaged header)",
                h.pepper, h.salt
            ));
        }
        if h.load_factor < 1 {
            return Err("load factor 0".to_owned());
        }
        if h.capacity < 1 {
            return Err(format!("block size {block_size} holds no bucket entry"));
        }
        if h.buckets < 1 {
            return Err(format!(
                "{file_len} bytes hold no bucket after the header block of {block_size} bytes"
            ));
        }
        if h.modulus > 1 << 32 {
            return Err(format!("{} buckets, more than NuDB allows", h.buckets));
        }
        Ok(h)
    }

    /// Bytes of a full bucket (count, spill and `capacity` entries).
    pub fn bucket_len(&self) -> usize {
        BUCKET_HEAD_LEN + self.capacity * ENTRY_LEN
    }

    /// Offset of bucket `n` in the key file.
    pub fn bucket_offset(&self, n: u64) -> u64 {
        (n + 1) * u64::from(self.block_size)
    }

    /// The bucket holding `key`, and the key's entry hash.
    pub fn locate(&self, key: &[u8]) -> (u64, u64) {
        let h = key_hash(key, self.salt);
        (bucket_index(h, self.buckets, self.modulus), h)
    }
}

/// One bucket entry: where a record is and its hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Offset of the record in the data file (its size field).
    pub offset: u64,
    /// Bytes of the record's value.
    pub size: u64,
    /// The key's 48-bit hash ([`key_hash`]).
    pub hash: u64,
}

/// A bucket (from the key file, or a spill from the data file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bucket {
    /// Offset of the next spill in the data file (0: none).
    pub spill: u64,
    /// The entries, sorted by hash.
    pub entries: Vec<Entry>,
}

impl Bucket {
    /// Parses a bucket from `b` (count, spill, entries), holding at most
    /// `capacity` entries.
    pub fn parse(b: &[u8], capacity: usize) -> Result<Bucket, String> {
        RawBucket::parse(b, capacity).map(|r| r.to_bucket())
    }

    /// The entries whose hash is `h` (they sit together: sorted by hash).
    /// Key hashes spread evenly over 48 bits, so the search starts where
    /// `h` would sit if they were evenly spaced and steps from there: a
    /// cache line or two, where a binary search touches one per halving.
    pub fn matching(&self, h: u64) -> impl Iterator<Item = &Entry> {
        let e = &self.entries;
        let mut i = ((u128::from(h.min(0xffff_ffff_ffff)) * e.len() as u128) >> 48) as usize;
        i = i.min(e.len());
        while i > 0 && e[i - 1].hash >= h {
            i -= 1;
        }
        while i < e.len() && e[i].hash < h {
            i += 1;
        }
        e[i..].iter().take_while(move |x| x.hash == h)
    }
}

/// A bucket as stored (count, spill, entries; trimmed to its entries),
/// searched in place: what the audit's walkers cache, with no entry
/// decoded until it is looked at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawBucket(Box<[u8]>);

impl RawBucket {
    /// The bucket in `block` (a key file block), holding at most
    /// `capacity` entries.
    pub fn parse(block: &[u8], capacity: usize) -> Result<RawBucket, String> {
        if block.len() < BUCKET_HEAD_LEN {
            return Err(format!("bucket of {} bytes has no count", block.len()));
        }
        let count = usize::from(u16_at(block, 0));
        if count > capacity {
            return Err(format!(
                "bucket count {count} is above the capacity {capacity}"
            ));
        }
        let need = BUCKET_HEAD_LEN + count * ENTRY_LEN;
        if block.len() < need {
            return Err(format!(
                "bucket of {count} entries needs {need} bytes, has {}",
                block.len()
            ));
        }
        Ok(RawBucket(block[..need].into()))
    }

    /// The same bucket from a parsed one.
    pub fn from_bucket(b: &Bucket) -> RawBucket {
        let mut out = Vec::with_capacity(BUCKET_HEAD_LEN + b.entries.len() * ENTRY_LEN);
        out.extend_from_slice(&(b.entries.len() as u16).to_be_bytes());
        out.extend_from_slice(&b.spill.to_be_bytes()[2..]);
        for e in &b.entries {
            for v in [e.offset, e.size, e.hash] {
                out.extend_from_slice(&v.to_be_bytes()[2..]);
            }
        }
        RawBucket(out.into())
    }

    /// Entries.
    pub fn len(&self) -> usize {
        (self.0.len() - BUCKET_HEAD_LEN) / ENTRY_LEN
    }

    /// True when it holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entry `i`.
    pub fn entry(&self, i: usize) -> Entry {
        let at = BUCKET_HEAD_LEN + i * ENTRY_LEN;
        Entry {
            offset: u48(&self.0, at),
            size: u48(&self.0, at + 6),
            hash: u48(&self.0, at + 12),
        }
    }

    fn hash_at(&self, i: usize) -> u64 {
        u48(&self.0, BUCKET_HEAD_LEN + i * ENTRY_LEN + 12)
    }

    /// The spill's offset in the data file (0: none).
    pub fn spill(&self) -> u64 {
        u48(&self.0, 2)
    }

    /// The entries whose hash is `h`, found as [`Bucket::matching`] finds
    /// them (spills not followed), each decoded when reached.
    pub fn matching(&self, h: u64) -> impl Iterator<Item = Entry> + '_ {
        let n = self.len();
        let mut i = ((u128::from(h.min(0xffff_ffff_ffff)) * n as u128) >> 48) as usize;
        i = i.min(n);
        while i > 0 && self.hash_at(i - 1) >= h {
            i -= 1;
        }
        while i < n && self.hash_at(i) < h {
            i += 1;
        }
        (i..n)
            .take_while(move |&j| self.hash_at(j) == h)
            .map(|j| self.entry(j))
    }

    /// The entry with hash `h` when it is the only one in this bucket
    /// (spills not followed), found as [`Bucket::matching`] finds it.
    pub fn single(&self, h: u64) -> Option<Entry> {
        let mut m = self.matching(h);
        match (m.next(), m.next()) {
            (Some(e), None) => Some(e),
            _ => None,
        }
    }

    /// The bucket, parsed.
    pub fn to_bucket(&self) -> Bucket {
        Bucket {
            spill: self.spill(),
            entries: (0..self.len()).map(|i| self.entry(i)).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_hashing_folds_past_the_last_bucket() {
        // 5 buckets, modulus 8: 5, 6, 7 fold to 1, 2, 3.
        let got: Vec<u64> = (0..16).map(|h| bucket_index(h, 5, 8)).collect();
        assert_eq!(got, vec![0, 1, 2, 3, 4, 1, 2, 3, 0, 1, 2, 3, 4, 1, 2, 3]);
        assert_eq!(bucket_capacity(4096), 227);
        assert_eq!(bucket_capacity(64), 0);
    }

    #[test]
    fn matching_finds_what_a_filter_finds() {
        use rand::{Rng, SeedableRng};
        let seed = crate::test_support::seed();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        for _ in 0..500 {
            let n = rng.gen_range(0..230);
            // Evenly spread hashes, or crowded into a narrow range (the
            // search's worst case), with repeats.
            let span: u64 = if rng.gen_bool(0.5) { 1 << 48 } else { 64 };
            let mut entries: Vec<Entry> = (0..n)
                .map(|i| Entry {
                    offset: i,
                    size: 1,
                    hash: rng.gen_range(0..span),
                })
                .collect();
            entries.sort_by_key(|e| e.hash);
            let b = Bucket { spill: 0, entries };
            let mut probes: Vec<u64> = b.entries.iter().map(|e| e.hash).collect();
            probes.extend((0..20).map(|_| rng.gen_range(0..span)));
            probes.extend([0, span - 1, (1 << 48) - 1]);
            for h in probes {
                let got: Vec<u64> = b.matching(h).map(|e| e.offset).collect();
                let want: Vec<u64> = b
                    .entries
                    .iter()
                    .filter(|e| e.hash == h)
                    .map(|e| e.offset)
                    .collect();
                assert_eq!(got, want, "hash {h} (seed {seed})");
            }
        }
    }

    #[test]
    fn a_raw_bucket_finds_what_the_parsed_one_finds() {
        use rand::{Rng, SeedableRng};
        let seed = crate::test_support::seed();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        for _ in 0..300 {
            let n = rng.gen_range(0..=227);
            let span: u64 = if rng.gen_bool(0.5) { 1 << 48 } else { 64 };
            let mut entries: Vec<Entry> = (0..n)
                .map(|i| Entry {
                    offset: 92 + i,
                    size: rng.gen_range(1..5000),
                    hash: rng.gen_range(0..span),
                })
                .collect();
            entries.sort_by_key(|e| e.hash);
            let b = Bucket {
                spill: rng.gen_range(0..1 << 40),
                entries,
            };
            let raw = RawBucket::from_bucket(&b);
            assert_eq!(raw.to_bucket(), b, "seed {seed}");
            assert_eq!(raw.spill(), b.spill);
            let mut block = raw.0.to_vec();
            block.resize(4096, 0);
            assert_eq!(RawBucket::parse(&block, 227).expect("parses"), raw);
            for h in b.entries.iter().map(|e| e.hash).chain([0, span - 1]) {
                let mut m = b.matching(h);
                let want = match (m.next(), m.next()) {
                    (Some(e), None) => Some(*e),
                    _ => None,
                };
                assert_eq!(raw.single(h), want, "hash {h} (seed {seed})");
                let all: Vec<Entry> = b.matching(h).copied().collect();
                let raw_all: Vec<Entry> = raw.matching(h).collect();
                assert_eq!(raw_all, all, "hash {h} (seed {seed})");
            }
        }
    }

    #[test]
    fn xxh64_known_answers() {
        // The reference XXH64 of the empty input with seed 0.
        assert_eq!(xxh64(b"", 0), 0xEF46_DB37_51D8_E999);
        assert_eq!(key_hash(b"", 0), 0xEF46_DB37_51D8);
    }

    #[test]
    fn a_header_parses_and_each_bad_field_is_named() {
        let salt = 0x1234_5678_9abc_def0u64;
        let mut b = vec![0u8; 4096];
        b[..8].copy_from_slice(b"nudb.key");
        b[8..10].copy_from_slice(&2u16.to_be_bytes());
        b[10..18].copy_from_slice(&7u64.to_be_bytes());
        b[18..26].copy_from_slice(&1u64.to_be_bytes());
        b[26..28].copy_from_slice(&32u16.to_be_bytes());
        b[28..36].copy_from_slice(&salt.to_be_bytes());
        b[36..44].copy_from_slice(&pepper(salt).to_be_bytes());
        b[44..46].copy_from_slice(&4096u16.to_be_bytes());
        b[46..48].copy_from_slice(&32768u16.to_be_bytes());
        let h = KeyHeader::parse(&b, 4096 * 4).expect("parses");
        assert_eq!((h.buckets, h.modulus, h.capacity), (3, 4, 227));
        assert_eq!((h.uid, h.appnum, h.key_size), (7, 1, 32));
        let mut bad = b.clone();
        bad[37] ^= 1;
        assert!(KeyHeader::parse(&bad, 4096 * 4)
            .expect_err("pepper")
            .contains("pepper"));
        assert!(KeyHeader::parse(&b, 4096)
            .expect_err("no bucket")
            .contains("no bucket"));
        let mut bad = b;
        bad[0] = b'x';
        assert!(KeyHeader::parse(&bad, 4096 * 4).is_err());
    }
}
