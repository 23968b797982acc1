//! One NuDB directory (`nudb.dat`, `nudb.key`, `nudb.log`), opened
//! read-only: the headers checked against each other and against what
//! rippled writes, lookups by key through the key file's buckets and
//! spills.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use shamap::Hash256;

use hashbrown::HashMap;

use super::dat_file::DatFile;
use super::header::read_header;
use super::key_file::{
    Bucket, Entry, KeyHeader, RawBucket, BUCKET_HEAD_LEN, ENTRY_LEN, KEY_HEADER_LEN,
};
use super::log_file::{read_log, FileStamp, LogState};

/// rippled's appnum (`NuDBFactory.cpp`: `currentType`).
pub const RIPPLED_APPNUM: u64 = 1;

/// Bytes of a bucket read first: its head and 128 entries, a little more
/// than a half-full bucket of NuDB's usual 4 KiB block (NuDB splits buckets
/// at a load factor of one half).
const FIRST_BUCKET_READ: usize = BUCKET_HEAD_LEN + 128 * ENTRY_LEN;

thread_local! {
    /// The buffer buckets are read into, one per thread (no allocation per lookup).
    static BUCKET_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}
/// rippled's key size (a 256-bit hash).
pub const RIPPLED_KEY_SIZE: u16 = 32;

/// Where a key's record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Located {
    /// Offset of the record in the data file.
    pub offset: u64,
    /// Bytes of its value.
    pub size: u64,
}

/// A NuDB directory opened for reading.
#[derive(Debug)]
pub struct NudbDir {
    /// The directory.
    pub dir: PathBuf,
    /// The data file.
    pub dat: DatFile,
    /// The key file's path.
    pub key_path: PathBuf,
    key: File,
    /// The key file's header.
    pub key_header: KeyHeader,
    /// The key file's length in the view read (when opened, or before the
    /// commit `nudb.log` names).
    pub key_len: u64,
    /// Buckets as they were before the commit under way (from `nudb.log`).
    overrides: HashMap<u64, Bucket>,
    /// What `nudb.log` held, when it held anything.
    pub log_note: Option<String>,
    /// The files as they were before opening.
    stamps: Stamps,
}

/// The stamps of a directory's three files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamps {
    dat: FileStamp,
    key: FileStamp,
    log: FileStamp,
}

impl Stamps {
    fn of(dir: &Path) -> Stamps {
        Stamps {
            dat: FileStamp::of(&dir.join("nudb.dat")),
            key: FileStamp::of(&dir.join("nudb.key")),
            log: FileStamp::of(&dir.join("nudb.log")),
        }
    }
}

/// The most buckets a key file indexing a data file of `dat_len` bytes can
/// have: NuDB adds a bucket (a split) at most once per record inserted, and
/// a record takes at least its size field, key and one byte of value.
pub fn max_buckets(dat_len: u64, key_size: u16) -> u64 {
    let smallest = (super::dat_file::SIZE_LEN + usize::from(key_size) + 1) as u64;
    1 + dat_len.saturating_sub(super::dat_file::DAT_HEADER_LEN as u64) / smallest
}

impl NudbDir {
    /// Opens the store in `dir` read-only, in one view: the files' lengths
    /// as they are now, or, when `nudb.log` holds a commit (under way in a
    /// running rippled, or stopped by a crash), the store as it was before
    /// that commit, its logged buckets read from the log in memory
    /// ([`super::log_file`]; nothing is rolled back or written). Refuses
    /// (one line naming the file) headers that contradict each other, a
    /// log of another store, a key file with more buckets than the data
    /// file could fill, and a store not in rippled's shape (appnum 1,
    /// 32-byte keys).
    pub fn open(dir: &Path) -> Result<NudbDir, String> {
        super::layout::check_nudb_dir(dir)?;
        let log_path = dir.join("nudb.log");
        let stamps = Stamps::of(dir);
        let mut dat = DatFile::open(&dir.join("nudb.dat"))?;
        let key_path = dir.join("nudb.key");
        let (key, mut key_len, b) = read_header::<KEY_HEADER_LEN>(&key_path, "a key file header")?;
        let probe =
            KeyHeader::parse(&b, key_len).map_err(|e| format!("{}: {e}", key_path.display()))?;
        let mut overrides = HashMap::new();
        let mut log_note = None;
        match read_log(&log_path, probe.capacity)? {
            LogState::Clear => {}
            LogState::Started { len } => {
                log_note = Some(format!(
                    "{}: {len} bytes, less than its header: a commit that had not yet changed the store (read as it is)",
                    log_path.display()
                ));
            }
            LogState::Commit {
                header,
                buckets,
                cut,
            } => {
                if header.uid != probe.uid
                    || header.key_size != probe.key_size
                    || header.block_size != probe.block_size
                    || header.salt != probe.salt
                {
                    return Err(format!(
                        "{}: not this store's log (uid {:#x}, key size {}, block size {}; {} has uid {:#x}, key size {}, block size {})",
                        log_path.display(),
                        header.uid,
                        header.key_size,
                        header.block_size,
                        key_path.display(),
                        probe.uid,
                        probe.key_size,
                        probe.block_size
                    ));
                }
                if header.dat_file_size < dat.len {
                    dat.len = header
                        .dat_file_size
                        .max(super::dat_file::DAT_HEADER_LEN as u64);
                }
                if header.key_file_size > 0 && header.key_file_size < key_len {
                    key_len = header.key_file_size;
                }
                log_note = Some(format!(
                    "{}: a commit under way, or stopped by a crash ({} buckets logged{}): read as the store was before it ({} bytes of nudb.dat, {} of nudb.key), as NuDB's recovery restores it",
                    log_path.display(),
                    buckets.len(),
                    if cut > 0 { ", the last one cut short" } else { "" },
                    dat.len,
                    key_len
                ));
                overrides = buckets;
            }
        }
        let key_header =
            KeyHeader::parse(&b, key_len).map_err(|e| format!("{}: {e}", key_path.display()))?;
        overrides.retain(|&n, _| n < key_header.buckets);
        let most = max_buckets(dat.len, key_header.key_size);
        if key_header.buckets > most {
            return Err(format!(
                "{}: {} buckets ({key_len} bytes), more than {} ({} bytes) could ever index (at most {most} buckets for its records): not this data file's key file, or a damaged one",
                key_path.display(),
                key_header.buckets,
                dat.path.display(),
                dat.len
            ));
        }
        let d = &dat.header;
        let contradiction = if key_header.uid != d.uid {
            Some(format!(
                "uid {:#x}, the data file's is {:#x}",
                key_header.uid, d.uid
            ))
        } else if key_header.appnum != d.appnum {
            Some(format!(
                "appnum {}, the data file's is {}",
                key_header.appnum, d.appnum
            ))
        } else if key_header.key_size != d.key_size {
            Some(format!(
                "key size {}, the data file's is {}",
                key_header.key_size, d.key_size
            ))
        } else {
            None
        };
        if let Some(c) = contradiction {
            return Err(format!(
                "{}: the key file's header contradicts the data file {}: {c}",
                key_path.display(),
                dat.path.display()
            ));
        }
        if d.appnum != RIPPLED_APPNUM {
            return Err(format!(
                "{}: appnum {} (rippled's node store has appnum {RIPPLED_APPNUM}): not a rippled node store",
                dat.path.display(),
                d.appnum
            ));
        }
        if d.key_size != RIPPLED_KEY_SIZE {
            return Err(format!(
                "{}: key size {} (rippled's node store has {RIPPLED_KEY_SIZE}-byte keys): not a rippled node store",
                dat.path.display(),
                d.key_size
            ));
        }
        Ok(NudbDir {
            dir: dir.to_owned(),
            dat,
            key_path,
            key,
            key_header,
            key_len,
            overrides,
            log_note,
            stamps,
        })
    }

    /// What changed in the directory's files since it was opened, if
    /// anything: a live store's writer committed meanwhile.
    pub fn moved(&self) -> Option<String> {
        let now = Stamps::of(&self.dir);
        let then = self.stamps;
        let mut what = Vec::new();
        for (name, a, b) in [
            ("nudb.dat", then.dat, now.dat),
            ("nudb.key", then.key, now.key),
            ("nudb.log", then.log, now.log),
        ] {
            if a.len != b.len {
                what.push(format!("{name} went from {} to {} bytes", a.len, b.len));
            } else if a.modified != b.modified {
                what.push(format!("{name} was written"));
            }
        }
        (!what.is_empty()).then(|| format!("{}: {}", self.dir.display(), what.join(", ")))
    }

    /// Buckets logged by the commit under way (served in place of the key
    /// file's).
    pub fn logged_buckets(&self) -> usize {
        self.overrides.len()
    }

    /// Reads bucket `n` from the key file (or, for a bucket the commit
    /// under way changes, from `nudb.log`).
    pub fn read_bucket(&self, n: u64) -> Result<Bucket, String> {
        if let Some(b) = self.overrides.get(&n) {
            return Ok(b.clone());
        }
        self.read_raw_bucket(n).map(|b| b.to_bucket())
    }

    /// Reads bucket `n` as stored ([`RawBucket`]: nothing decoded), or, for
    /// a bucket the commit under way changes, from `nudb.log`.
    pub fn read_raw_bucket(&self, n: u64) -> Result<RawBucket, String> {
        if let Some(b) = self.overrides.get(&n) {
            return Ok(RawBucket::from_bucket(b));
        }
        let kh = &self.key_header;
        let at = kh.bucket_offset(n);
        let len = kh.bucket_len();
        if n >= kh.buckets || at + len as u64 > self.key_len {
            return Err(format!(
                "{}: bucket {n} at byte {at} lies past the end of the file ({} bytes)",
                self.key_path.display(),
                self.key_len
            ));
        }
        let failed = |e: std::io::Error| {
            format!(
                "{}: reading bucket {n} at byte {at}: {e}",
                self.key_path.display()
            )
        };
        // A bucket is read only as far as its entries go: first a prefix
        // that holds a half-full bucket of the usual block size, then the
        // rest when its count says there is more. (A whole 4 KiB block per
        // lookup was most of the walk's copying at 10M entries.)
        BUCKET_BUF.with(|buf| {
            let mut b = buf.borrow_mut();
            b.resize(len, 0);
            let first = len.min(FIRST_BUCKET_READ);
            self.key
                .read_exact_at(&mut b[..first], at)
                .map_err(failed)?;
            let count = usize::from(u16::from_be_bytes([b[0], b[1]]));
            let need = BUCKET_HEAD_LEN + count * ENTRY_LEN;
            let upto = if need > first && need <= len {
                self.key
                    .read_exact_at(&mut b[first..need], at + first as u64)
                    .map_err(failed)?;
                need
            } else {
                first
            };
            RawBucket::parse(&b[..upto], kh.capacity)
                .map_err(|e| format!("{}: bucket {n} at byte {at}: {e}", self.key_path.display()))
        })
    }

    /// Reads `count` buckets from bucket `first` on, in one read of the key
    /// file (what a pass over every bucket uses: a window of buckets at a
    /// time, not a read per bucket); logged buckets are served from the log.
    pub fn read_buckets(&self, first: u64, count: u64) -> Result<Vec<Bucket>, String> {
        let kh = &self.key_header;
        let bs = u64::from(kh.block_size);
        let end = first.saturating_add(count).min(kh.buckets);
        if first >= end {
            return Ok(Vec::new());
        }
        let at = kh.bucket_offset(first);
        let len = (end - first) * bs;
        if at + len > self.key_len {
            return Err(format!(
                "{}: buckets {first}..{end} at byte {at} lie past the end of the file ({} bytes)",
                self.key_path.display(),
                self.key_len
            ));
        }
        let mut b = vec![0u8; len as usize];
        self.key.read_exact_at(&mut b, at).map_err(|e| {
            format!(
                "{}: reading buckets {first}..{end} at byte {at}: {e}",
                self.key_path.display()
            )
        })?;
        (first..end)
            .zip(b.chunks_exact(bs as usize))
            .map(|(n, block)| match self.overrides.get(&n) {
                Some(logged) => Ok(logged.clone()),
                None => Bucket::parse(&block[..kh.bucket_len().min(block.len())], kh.capacity)
                    .map_err(|e| {
                        format!(
                            "{}: bucket {n} at byte {}: {e}",
                            self.key_path.display(),
                            kh.bucket_offset(n)
                        )
                    }),
            })
            .collect()
    }

    /// Calls `f` with bucket `n` and then each of its spills, until it
    /// returns `Some`. A spill chain runs backwards in the data file (NuDB
    /// appends a spill after the one it points to), so a spill pointing at
    /// or after the one before is a loop or damage, refused: the chain ends
    /// in at most as many steps as the file has spills.
    fn follow_chain<T>(
        &self,
        n: u64,
        bucket: &Bucket,
        f: &mut dyn FnMut(&Bucket) -> Result<Option<T>, String>,
    ) -> Result<Option<T>, String> {
        let mut current;
        let mut b = bucket;
        let mut last_spill = u64::MAX;
        loop {
            if let Some(t) = f(b)? {
                return Ok(Some(t));
            }
            if b.spill == 0 {
                return Ok(None);
            }
            if b.spill >= last_spill {
                return Err(format!(
                    "{}: the spill chain of bucket {n} loops: the spill at byte {last_spill} points to byte {} (not earlier in the file)",
                    self.dat.path.display(),
                    b.spill
                ));
            }
            last_spill = b.spill;
            current = self
                .dat
                .read_spill(b.spill, self.key_header.capacity)
                .map_err(|e| format!("{e} (spill chain of bucket {n})"))?;
            b = &current;
        }
    }

    /// Calls `f` with bucket `n`'s entries of hash `h` and then each of its
    /// spills', until it returns `Some` (the chain followed as
    /// [`NudbDir::walk_chain`] does).
    pub fn search_bucket<T>(
        &self,
        n: u64,
        bucket: &Bucket,
        h: u64,
        f: &mut dyn FnMut(&Entry) -> Result<Option<T>, String>,
    ) -> Result<Option<T>, String> {
        self.follow_chain(n, bucket, &mut |b| {
            for e in b.matching(h) {
                if let Some(t) = f(e)? {
                    return Ok(Some(t));
                }
            }
            Ok(None)
        })
    }

    /// Calls `f` with every entry of bucket `n` and of its spills, to the
    /// chain's end. A spill chain runs backwards in the data file (NuDB
    /// appends a spill after the one it points to), so a spill pointing at
    /// or after the one before is a loop or damage, refused: the chain ends
    /// in at most as many steps as the file has spills.
    pub fn walk_chain(
        &self,
        n: u64,
        bucket: &Bucket,
        f: &mut dyn FnMut(&Entry),
    ) -> Result<(), String> {
        self.follow_chain::<()>(n, bucket, &mut |b| {
            b.entries.iter().for_each(&mut *f);
            Ok(None)
        })
        .map(|_| ())
    }

    /// Where `key`'s record is, if the store has it: the bucket's entries
    /// with the key's hash, each confirmed by the key in its record.
    pub fn locate(&self, key: &Hash256) -> Result<Option<Located>, String> {
        let (n, h) = self.key_header.locate(&key.0);
        let bucket = self.read_bucket(n)?;
        self.locate_in(n, &bucket, h, key)
    }

    /// [`NudbDir::locate`] with bucket `n` already read.
    pub fn locate_in(
        &self,
        n: u64,
        bucket: &Bucket,
        h: u64,
        key: &Hash256,
    ) -> Result<Option<Located>, String> {
        self.search_bucket(n, bucket, h, &mut |e| {
            let mut k = [0u8; 32];
            self.dat.read_exact_at(
                &mut k,
                e.offset + super::dat_file::SIZE_LEN as u64,
                &format!("the key of the record bucket {n} names"),
            )?;
            Ok((k == key.0).then_some(Located {
                offset: e.offset,
                size: e.size,
            }))
        })
    }

    /// The raw (encoded) value of `key`, and where its record is. A bucket
    /// without spills (nearly every one) is searched as stored, only the
    /// entries with the key's hash decoded.
    pub fn read_raw(&self, key: &Hash256) -> Result<Option<(Located, Vec<u8>)>, String> {
        let (n, h) = self.key_header.locate(&key.0);
        let raw = self.read_raw_bucket(n)?;
        if raw.spill() != 0 {
            return self.read_raw_in(n, &raw.to_bucket(), h, key);
        }
        for e in raw.matching(h) {
            if let Some(found) = self.record_if(&e, key)? {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// [`NudbDir::read_raw`] with bucket `n` already read: each entry with
    /// the key's hash is read whole (one read: size, key, value) and kept
    /// when its key is `key`.
    pub fn read_raw_in(
        &self,
        n: u64,
        bucket: &Bucket,
        h: u64,
        key: &Hash256,
    ) -> Result<Option<(Located, Vec<u8>)>, String> {
        self.search_bucket(n, bucket, h, &mut |e| self.record_if(e, key))
    }

    /// The record entry `e` names, read whole, when its key is `key`.
    fn record_if(&self, e: &Entry, key: &Hash256) -> Result<Option<(Located, Vec<u8>)>, String> {
        let (k, value) = self.dat.read_record(e.offset, e.size)?;
        Ok((k == key.0).then_some((
            Located {
                offset: e.offset,
                size: e.size,
            },
            value,
        )))
    }
}

/// A record found by [`NudbDir::locate_with`]: its place and its value,
/// whole or its first bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peeked {
    /// Offset of the record.
    pub offset: u64,
    /// Bytes of its value.
    pub size: u64,
    /// The value, or its first bytes when it is longer than asked.
    pub bytes: Vec<u8>,
}

impl Peeked {
    /// True when [`Peeked::bytes`] is the whole value.
    pub fn is_whole(&self) -> bool {
        self.bytes.len() as u64 == self.size
    }
}

impl NudbDir {
    /// Finds `key` in bucket `n` (already read) and reads its record in one
    /// read: whole when its value is at most `whole_up_to` bytes, else the
    /// key and the value's first 16 bytes.
    pub fn locate_with(
        &self,
        n: u64,
        bucket: &Bucket,
        h: u64,
        key: &Hash256,
        whole_up_to: u64,
    ) -> Result<Option<Peeked>, String> {
        use super::dat_file::SIZE_LEN;
        self.search_bucket(n, bucket, h, &mut |e| {
            if e.size <= whole_up_to {
                let (k, value) = self.dat.read_record(e.offset, e.size)?;
                return Ok((k == key.0).then_some(Peeked {
                    offset: e.offset,
                    size: e.size,
                    bytes: value,
                }));
            }
            let mut b = vec![0u8; SIZE_LEN + 32 + 16];
            self.dat.read_exact_at(
                &mut b,
                e.offset,
                &format!("the record bucket {n} names"),
            )?;
            if b[SIZE_LEN..SIZE_LEN + 32] != key.0 {
                return Ok(None);
            }
            let own = super::key_file::u48(&b, 0);
            if own != e.size {
                return Err(format!(
                    "{}: the record at byte {} has a value of {own} bytes, its bucket entry (bucket {n}) says {}",
                    self.dat.path.display(),
                    e.offset,
                    e.size
                ));
            }
            if e.offset + (SIZE_LEN + 32) as u64 + e.size > self.dat.len {
                return Err(format!(
                    "{}: bucket {n} names a record at byte {} of {} bytes, past the end of the file ({} bytes)",
                    self.dat.path.display(),
                    e.offset,
                    e.size,
                    self.dat.len
                ));
            }
            Ok(Some(Peeked {
                offset: e.offset,
                size: e.size,
                bytes: b.split_off(SIZE_LEN + 32),
            }))
        })
    }
}
