//! Damage for tests of readers: each function changes a written database in
//! one way a disk, a crash or a wrong configuration would, and says where.
//!
//! Interrupted commits (a non-empty `nudb.log`) come from
//! [`crate::NudbWriter::finish_interrupted`]; LZ4 values whose declared size
//! lies from [`crate::codec::lz4_declaring`] with
//! [`crate::NudbWriter::insert_raw`].

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::format::{self, Bucket, ENTRY_LEN};
use crate::writer::{NudbOptions, NudbWriter, WriteError, Written};

fn read_at(path: &Path, offset: u64, len: usize) -> Result<Vec<u8>, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut buf = vec![0u8; len];
    f.read_exact_at(&mut buf, offset)
        .map_err(|e| format!("{} at {offset}: {e}", path.display()))?;
    Ok(buf)
}

fn write_at(path: &Path, offset: u64, bytes: &[u8]) -> Result<(), String> {
    let f = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    f.write_all_at(bytes, offset)
        .map_err(|e| format!("{} at {offset}: {e}", path.display()))
}

/// Inverts the bits of the byte at `offset` of `path`; returns its old
/// value.
pub fn flip_byte(path: &Path, offset: u64) -> Result<u8, String> {
    let old = read_at(path, offset, 1)?[0];
    write_at(path, offset, &[!old])?;
    Ok(old)
}

/// Offset in `nudb.dat` of the first value byte of `key`'s record.
pub fn value_offset(w: &Written, key: &[u8]) -> Option<u64> {
    let r = w.record(key)?;
    Some(r.offset + 6 + u64::from(w.headers.key_size))
}

/// Flips the value byte `at` (clamped to the value) of `key`'s record;
/// returns the file offset flipped.
pub fn flip_value_byte(w: &Written, key: &[u8], at: u64) -> Result<u64, String> {
    let r = w.record(key).ok_or("no record of that key")?;
    let offset = value_offset(w, key).ok_or("no record of that key")? + at.min(r.size - 1);
    flip_byte(&w.path("nudb.dat"), offset)?;
    Ok(offset)
}

/// Writes into `dst` the database of `src` without the records of `skip`:
/// the same records in the same commits and sessions, values copied as
/// stored.
pub fn without_records(
    src: &Written,
    dst: &Path,
    opts: NudbOptions,
    skip: &[&[u8]],
) -> Result<Written, WriteError> {
    let ks = usize::from(src.headers.key_size);
    let dat = src.path("nudb.dat");
    let bytes = std::fs::read(&dat).map_err(|source| WriteError::Io {
        path: dat.clone(),
        source,
    })?;
    let mut w = NudbWriter::create(dst, opts)?;
    let mut commit = 0;
    for r in &src.records {
        while commit < r.commit {
            w.commit()?;
            commit += 1;
            if src.reopens.contains(&commit) {
                w.reopen()?;
            }
        }
        if skip.contains(&r.key.as_slice()) {
            continue;
        }
        let start = (r.offset as usize) + 6 + ks;
        let value = bytes.get(start..start + r.size as usize).ok_or_else(|| {
            WriteError::Source(format!("{}: record at {} cut off", dat.display(), r.offset))
        })?;
        w.insert_encoded(&r.key, value.to_vec(), r.codec)?;
    }
    w.finish()
}

/// Cuts `path` to `len` bytes.
pub fn truncate(path: &Path, len: u64) -> Result<(), String> {
    let f = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    f.set_len(len)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// A header field and the value to write into it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// Format version (both files).
    Version(u16),
    /// Database ID (both files).
    Uid(u64),
    /// Application number (both files).
    Appnum(u64),
    /// Key size (both files).
    KeySize(u16),
    /// Hash seed (key file; its pepper no longer matches).
    Salt(u64),
    /// Pepper (key file).
    Pepper(u64),
    /// Block size (key file).
    BlockSize(u16),
    /// Load factor (key file).
    LoadFactor(u16),
}

impl Field {
    /// Offset and big-endian bytes of the field in the key file's header.
    fn in_key_header(self) -> (u64, Vec<u8>) {
        match self {
            Field::Version(v) => (8, v.to_be_bytes().to_vec()),
            Field::Uid(v) => (10, v.to_be_bytes().to_vec()),
            Field::Appnum(v) => (18, v.to_be_bytes().to_vec()),
            Field::KeySize(v) => (26, v.to_be_bytes().to_vec()),
            Field::Salt(v) => (28, v.to_be_bytes().to_vec()),
            Field::Pepper(v) => (36, v.to_be_bytes().to_vec()),
            Field::BlockSize(v) => (44, v.to_be_bytes().to_vec()),
            Field::LoadFactor(v) => (46, v.to_be_bytes().to_vec()),
        }
    }
}

/// Writes `field` into `nudb.key`'s header only: a key file contradicting
/// its data file (for the fields both carry) or itself.
pub fn patch_key_header(dir: &Path, field: Field) -> Result<(), String> {
    let (at, bytes) = field.in_key_header();
    write_at(&dir.join("nudb.key"), at, &bytes)
}

/// Writes `field` into `nudb.dat`'s header only (the fields it carries:
/// version, uid, appnum, key size; the offsets are the key file's).
pub fn patch_dat_header(dir: &Path, field: Field) -> Result<(), String> {
    match field {
        Field::Version(_) | Field::Uid(_) | Field::Appnum(_) | Field::KeySize(_) => {
            let (at, bytes) = field.in_key_header();
            write_at(&dir.join("nudb.dat"), at, &bytes)
        }
        other => Err(format!("nudb.dat's header has no {other:?}")),
    }
}

/// Writes `field` into both headers: a database whose files agree but is
/// not what rippled writes (wrong appnum, wrong key size).
pub fn patch_both_headers(dir: &Path, field: Field) -> Result<(), String> {
    patch_key_header(dir, field)?;
    patch_dat_header(dir, field)
}

/// Writes `bytes` as `nudb.log` (e.g. garbage, or a header alone).
pub fn write_log(dir: &Path, bytes: &[u8]) -> Result<(), String> {
    let path = dir.join("nudb.log");
    std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// Makes rippled's `ledger.db` at `path` (as [`crate::write_ledger_db`]
/// writes it) say that the ledger with sequence `seq` is `hash`: the row
/// of `hash` gets `LedgerSeq` `seq` (its other columns kept), or, when
/// `ledger.db` has no row for `hash`, a row of `hash` and `seq` alone is
/// added. What a `ledger.db` whose rows were remapped (or that belongs to
/// another node store) says: a list that lies about which ledger a
/// sequence is.
pub fn set_ledger_row(path: &Path, seq: u32, hash: &[u8; 32]) -> Result<(), String> {
    let err = |e: rusqlite::Error| format!("{}: {e}", path.display());
    let db = rusqlite::Connection::open(path).map_err(err)?;
    let hex: String = hash.iter().map(|b| format!("{b:02X}")).collect();
    let changed = db
        .execute(
            "UPDATE Ledgers SET LedgerSeq = ?1 WHERE LedgerHash = ?2",
            rusqlite::params![i64::from(seq), hex],
        )
        .map_err(err)?;
    if changed == 0 {
        db.execute(
            "INSERT INTO Ledgers (LedgerHash, LedgerSeq) VALUES (?1, ?2)",
            rusqlite::params![hex, i64::from(seq)],
        )
        .map_err(err)?;
    }
    Ok(())
}

/// Where a key's bucket entry is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryAt {
    /// The key's bucket.
    pub bucket: u64,
    /// `"nudb.key"` (the bucket itself) or `"nudb.dat"` (a spill record).
    pub file: &'static str,
    /// Offset in that file of the 18-byte entry.
    pub offset: u64,
    /// Spill records followed to reach it (0: in the bucket).
    pub depth: usize,
}

fn bucket_at(w: &Written, n: u64) -> Result<Bucket, String> {
    let bs = u64::from(w.headers.block_size);
    let b = read_at(&w.path("nudb.key"), (n + 1) * bs, bs as usize)?;
    Bucket::decode(&b).ok_or_else(|| format!("bucket {n} does not decode"))
}

fn spill_at(w: &Written, at: u64) -> Result<Bucket, String> {
    let head = read_at(&w.path("nudb.dat"), at, 2)?;
    let count = usize::from(u16::from_be_bytes([head[0], head[1]]));
    let b = read_at(&w.path("nudb.dat"), at, format::bucket_size(count))?;
    Bucket::decode(&b).ok_or_else(|| format!("spill bucket at {at} does not decode"))
}

/// The bucket a key is filed in.
pub fn bucket_of(w: &Written, key: &[u8]) -> u64 {
    let h = format::key_hash(key, w.headers.salt);
    format::bucket_index(h, w.buckets, format::ceil_pow2(w.buckets))
}

/// Finds `key`'s entry through its bucket and spill chain, as a lookup
/// does (the chain followed at most as many steps as there are spills).
pub fn locate_entry(w: &Written, key: &[u8]) -> Result<EntryAt, String> {
    let r = w.record(key).ok_or("no record of that key")?;
    let n = bucket_of(w, key);
    let bs = u64::from(w.headers.block_size);
    let mut b = bucket_at(w, n)?;
    let (mut file, mut base) = ("nudb.key", (n + 1) * bs);
    for depth in 0..=w.spills.len() {
        if let Some(i) = b.entries.iter().position(|e| e.offset == r.offset) {
            return Ok(EntryAt {
                bucket: n,
                file,
                offset: base + 8 + (i * ENTRY_LEN) as u64,
                depth,
            });
        }
        if b.spill == 0 {
            break;
        }
        (file, base) = ("nudb.dat", b.spill);
        b = spill_at(w, b.spill)?;
    }
    Err(format!("no entry for the key in bucket {n} or its spills"))
}

/// Points `key`'s bucket entry at `offset` (e.g. past the end of
/// `nudb.dat`); returns where the entry is.
pub fn point_entry_at(w: &Written, key: &[u8], offset: u64) -> Result<EntryAt, String> {
    let at = locate_entry(w, key)?;
    point_entry_at_raw(w, &at, offset)?;
    Ok(at)
}

/// Makes the first bucket with a spill chain loop: the chain's last spill
/// record points back at its first. Returns the bucket and the first
/// spill's offset.
pub fn loop_spill_chain(w: &Written) -> Result<(u64, u64), String> {
    for n in 0..w.buckets {
        let b = bucket_at(w, n)?;
        if b.spill == 0 {
            continue;
        }
        let first = b.spill;
        let mut at = first;
        for _ in 0..=w.spills.len() {
            let s = spill_at(w, at)?;
            if s.spill == 0 {
                let mut p = [0u8; 6];
                format::set_u48(&mut p, first);
                write_at(&w.path("nudb.dat"), at + 2, &p)?;
                return Ok((n, first));
            }
            at = s.spill;
        }
        return Err(format!("bucket {n}'s spill chain already loops"));
    }
    Err("no bucket has a spill record".into())
}

/// Writes `offset` into the bucket entry at `at` (from [`locate_entry`]).
pub fn point_entry_at_raw(w: &Written, at: &EntryAt, offset: u64) -> Result<(), String> {
    let mut b = [0u8; 6];
    format::set_u48(&mut b, offset);
    write_at(&w.path(at.file), at.offset, &b)
}
