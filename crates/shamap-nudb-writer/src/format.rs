//! NuDB 2.0.9's file format: headers, buckets, the key hash and the bucket
//! index (cppalliance/NuDB `include/nudb/detail/format.hpp`, `bucket.hpp`,
//! README "Formats"). Every integer is big-endian; sizes and offsets are
//! 48-bit.
//!
//! | file | layout |
//! |---|---|
//! | `nudb.dat` | 92-byte header, then data records `u48 size ‖ key ‖ value` and spill records `u48 0 ‖ u16 n ‖ n-byte bucket` |
//! | `nudb.key` | one block: the 104-byte header, zero-padded; then bucket `i` in block `i + 1` |
//! | `nudb.log` | absent or empty when no commit is under way; else a 62-byte header and the buckets a commit changes, as they were |
//!
//! A bucket is `u16 count ‖ u48 spill ‖ count × (u48 offset ‖ u48 size ‖
//! u48 hash)`, its entries sorted by hash, zero-padded to the block in the
//! key file and unpadded in a spill record. `spill` is the offset in
//! `nudb.dat` of the next bucket of the chain (8 bytes into a spill record),
//! or 0.

use xxhash_rust::xxh64::xxh64;

/// The version NuDB writes and accepts (`currentVersion`).
pub const VERSION: u16 = 2;
/// Bytes of `nudb.dat`'s header.
pub const DAT_HEADER_LEN: usize = 92;
/// Bytes of `nudb.key`'s header (the rest of its block is zero).
pub const KEY_HEADER_LEN: usize = 104;
/// Bytes of `nudb.log`'s header.
pub const LOG_HEADER_LEN: usize = 62;
/// Bytes of a bucket's count and spill fields.
pub const BUCKET_HEADER_LEN: usize = 8;
/// Bytes of one bucket entry (offset, size, hash).
pub const ENTRY_LEN: usize = 18;
/// Bytes of a spill record's head (`u48 0 ‖ u16 size`) before its bucket.
pub const SPILL_HEAD_LEN: usize = 8;
/// The largest 48-bit value.
pub const U48_MAX: u64 = 0xFFFF_FFFF_FFFF;

/// Appends the low 48 bits of `v`, big-endian.
pub fn put_u48(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_be_bytes()[2..]);
}

/// The 48-bit big-endian value at `b[..6]`.
pub fn get_u48(b: &[u8]) -> u64 {
    b[..6]
        .iter()
        .fold(0u64, |acc, &x| (acc << 8) | u64::from(x))
}

/// Writes the low 48 bits of `v` big-endian into `b[..6]`.
pub fn set_u48(b: &mut [u8], v: u64) {
    b[..6].copy_from_slice(&v.to_be_bytes()[2..]);
}

/// The hash NuDB files a key under: bits 16..64 of XXH64(key, salt)
/// (`make_hash<uint48_t>`, `xxhasher`).
pub fn key_hash(key: &[u8], salt: u64) -> u64 {
    (xxh64(key, salt) >> 16) & U48_MAX
}

/// The pepper of a salt: XXH64 of the salt's 8 little-endian bytes, seeded
/// with the salt (`pepper<Hasher>`).
pub fn pepper(salt: u64) -> u64 {
    xxh64(&salt.to_le_bytes(), salt)
}

/// Entries a bucket of a `block_size`-byte block holds (0 when the block
/// cannot hold the key file's header).
pub fn bucket_capacity(block_size: usize) -> usize {
    if block_size < KEY_HEADER_LEN {
        return 0;
    }
    ((block_size - BUCKET_HEADER_LEN) / ENTRY_LEN).min(usize::from(u16::MAX))
}

/// Bytes of a bucket of `count` entries, unpadded.
pub fn bucket_size(count: usize) -> usize {
    BUCKET_HEADER_LEN + count * ENTRY_LEN
}

/// The smallest power of two not below `x` (1 for 0, as NuDB's `ceil_pow2`).
pub fn ceil_pow2(x: u64) -> u64 {
    x.max(1).next_power_of_two()
}

/// The bucket of hash `h` among `buckets` buckets by linear hashing
/// (`bucket_index`): `h mod modulus`, folded into the lower half when that
/// bucket does not exist yet.
pub fn bucket_index(h: u64, buckets: u64, modulus: u64) -> u64 {
    let n = h % modulus;
    if n >= buckets {
        n - modulus / 2
    } else {
        n
    }
}

/// The load factor as the key file stores it: 65536ths, at most 65535.
pub fn load_factor_units(load_factor: f32) -> u16 {
    // NuDB: min(size_t(65536.0f * load_factor), 65535)
    let v = (65536.0f32 * load_factor) as u64;
    v.min(65535) as u16
}

/// The fields both headers share, and the key file's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Headers {
    /// Format version (2).
    pub version: u16,
    /// Unique ID of the database, the same in every file.
    pub uid: u64,
    /// Application number (rippled: 1).
    pub appnum: u64,
    /// Key bytes (rippled: 32).
    pub key_size: u16,
    /// Seed of the key hash.
    pub salt: u64,
    /// [`pepper`] of the salt.
    pub pepper: u64,
    /// Bytes of a key-file block.
    pub block_size: u16,
    /// Target bucket occupancy in 65536ths.
    pub load_factor: u16,
}

impl Headers {
    /// A header's start: `magic`, then the version, uid, appnum and key
    /// size every file's header has, and, with `salted`, the salt, pepper
    /// and block size the key and log files' headers go on with.
    fn start(&self, magic: &[u8; 8], capacity: usize, salted: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(capacity);
        out.extend_from_slice(magic);
        out.extend_from_slice(&self.version.to_be_bytes());
        out.extend_from_slice(&self.uid.to_be_bytes());
        out.extend_from_slice(&self.appnum.to_be_bytes());
        out.extend_from_slice(&self.key_size.to_be_bytes());
        if salted {
            out.extend_from_slice(&self.salt.to_be_bytes());
            out.extend_from_slice(&self.pepper.to_be_bytes());
            out.extend_from_slice(&self.block_size.to_be_bytes());
        }
        out
    }

    /// The data file's 92-byte header.
    pub fn dat_header(&self) -> Vec<u8> {
        let mut out = self.start(b"nudb.dat", DAT_HEADER_LEN, false);
        out.resize(DAT_HEADER_LEN, 0);
        out
    }

    /// The key file's first block: the 104-byte header, zero-padded to the
    /// block size.
    pub fn key_header_block(&self) -> Vec<u8> {
        let mut out = self.start(b"nudb.key", usize::from(self.block_size), true);
        out.extend_from_slice(&self.load_factor.to_be_bytes());
        out.resize(KEY_HEADER_LEN.max(usize::from(self.block_size)), 0);
        out
    }

    /// The log file's 62-byte header naming the sizes the files had before
    /// a commit (what NuDB's recovery truncates them back to).
    pub fn log_header(&self, key_file_size: u64, dat_file_size: u64) -> Vec<u8> {
        let mut out = self.start(b"nudb.log", LOG_HEADER_LEN, true);
        out.extend_from_slice(&key_file_size.to_be_bytes());
        out.extend_from_slice(&dat_file_size.to_be_bytes());
        out
    }
}

/// One bucket entry: where a data record is, its value's size, its key's
/// hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Offset in `nudb.dat` of the data record (its size field).
    pub offset: u64,
    /// Bytes of the record's value.
    pub size: u64,
    /// [`key_hash`] of the record's key.
    pub hash: u64,
}

/// A bucket in memory: its entries in NuDB's order and its spill pointer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bucket {
    /// The entries, sorted by hash (a new entry goes before any of equal
    /// hash, as `bucket_t::insert` with `lower_bound` places it).
    pub entries: Vec<Entry>,
    /// Offset in `nudb.dat` of the next bucket of the chain, or 0.
    pub spill: u64,
}

impl Bucket {
    /// Inserts `e` at the first position whose hash is not below `e.hash`.
    pub fn insert(&mut self, e: Entry) {
        let i = self.entries.partition_point(|x| x.hash < e.hash);
        self.entries.insert(i, e);
    }

    /// The unpadded bytes: count, spill, entries.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(bucket_size(self.entries.len()));
        self.encode_into(&mut out);
        out
    }

    /// Appends the unpadded bytes to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let count = u16::try_from(self.entries.len()).unwrap_or(u16::MAX);
        out.extend_from_slice(&count.to_be_bytes());
        put_u48(out, self.spill);
        for e in &self.entries {
            put_u48(out, e.offset);
            put_u48(out, e.size);
            put_u48(out, e.hash);
        }
    }

    /// The bytes zero-padded to a key-file block.
    pub fn encode_block(&self, block_size: usize) -> Vec<u8> {
        let mut out = self.encode();
        out.resize(block_size.max(out.len()), 0);
        out
    }

    /// The bucket in `b` (unpadded or padded), or `None` when `b` is
    /// shorter than its count says.
    pub fn decode(b: &[u8]) -> Option<Bucket> {
        let count = usize::from(u16::from_be_bytes([*b.first()?, *b.get(1)?]));
        if b.len() < bucket_size(count) {
            return None;
        }
        let spill = get_u48(&b[2..]);
        let entries = b[BUCKET_HEADER_LEN..bucket_size(count)]
            .chunks_exact(ENTRY_LEN)
            .map(|c| Entry {
                offset: get_u48(c),
                size: get_u48(&c[6..]),
                hash: get_u48(&c[12..]),
            })
            .collect();
        Some(Bucket { entries, spill })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_hashing_folds_into_existing_buckets() {
        // 5 buckets, modulus 8: 0..5 stay, 5..8 fold to 1..4.
        let got: Vec<u64> = (0..16).map(|h| bucket_index(h, 5, 8)).collect();
        assert_eq!(got, [0, 1, 2, 3, 4, 1, 2, 3, 0, 1, 2, 3, 4, 1, 2, 3]);
        let pow2: Vec<u64> = [0, 1, 5, 8].into_iter().map(ceil_pow2).collect();
        assert_eq!(pow2, [1, 1, 8, 8]);
    }

    #[test]
    fn capacity_and_load_factor_as_nudb_computes_them() {
        assert_eq!(bucket_capacity(4096), 227);
        assert_eq!(bucket_capacity(104), 5);
        assert_eq!(bucket_capacity(103), 0);
        assert_eq!(load_factor_units(0.5), 32768);
        assert_eq!(load_factor_units(0.9999999), 65535);
    }

    #[test]
    fn xxh64_known_answers() {
        // XXH64 reference values (xxHash's test vectors).
        assert_eq!(xxh64(b"", 0), 0xEF46_DB37_51D8_E999);
        assert_eq!(xxh64(b"a", 0), 0xD24E_C4F1_A98C_6E5B);
        assert_eq!(key_hash(b"", 0), 0xEF46_DB37_51D8);
    }

    #[test]
    fn buckets_round_trip_and_keep_hash_order() {
        let mut b = Bucket::default();
        for (i, h) in [5u64, 1, 9, 5, 0].into_iter().enumerate() {
            b.insert(Entry {
                offset: 92 + i as u64,
                size: 10,
                hash: h,
            });
        }
        let hashes: Vec<u64> = b.entries.iter().map(|e| e.hash).collect();
        assert_eq!(hashes, [0, 1, 5, 5, 9]);
        // The later 5 went before the earlier one.
        assert_eq!(b.entries[2].offset, 95);
        b.spill = 1234;
        let block = b.encode_block(256);
        assert_eq!(block.len(), 256);
        assert_eq!(Bucket::decode(&block), Some(b.clone()));
        assert_eq!(Bucket::decode(&block[..20]), None);
    }
}
