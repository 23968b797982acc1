//! One NuDB directory (`nudb.dat`, `nudb.key`, `nudb.log`), opened
//! read-only: the headers checked against each other and against what
//! rippled writes, lookups by key through the key file's buckets and
//! spills.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use shamap::Hash256;

use super::dat_file::DatFile;
use super::key_file::{Bucket, Entry, KeyHeader, KEY_HEADER_LEN};

/// rippled's appnum (`NuDBFactory.cpp`: `currentType`).
pub const RIPPLED_APPNUM: u64 = 1;
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
    /// The key file's length when opened.
    pub key_len: u64,
}

/// True when `dir` holds a NuDB store (`nudb.dat` and `nudb.key`).
pub fn is_nudb_dir(dir: &Path) -> bool {
    dir.join("nudb.dat").is_file() && dir.join("nudb.key").is_file()
}

impl NudbDir {
    /// Opens the store in `dir` read-only. Refuses (one line naming the
    /// file) a non-empty `nudb.log` (rippled stopped during a commit: NuDB
    /// would roll the commit back on its next open, which a reader must not
    /// do), headers that contradict each other, and a store not in
    /// rippled's shape (appnum 1, 32-byte keys).
    pub fn open(dir: &Path) -> Result<NudbDir, String> {
        let log = dir.join("nudb.log");
        if let Ok(m) = std::fs::metadata(&log) {
            if m.len() > 0 {
                return Err(format!(
                    "{}: {} bytes: rippled stopped during a commit, which NuDB rolls back on rippled's next start; start rippled once (or copy the directory and let NuDB recover the copy), then read it again (this reader never writes a store)",
                    log.display(),
                    m.len()
                ));
            }
        }
        let dat = DatFile::open(&dir.join("nudb.dat"))?;
        let key_path = dir.join("nudb.key");
        let key = File::open(&key_path).map_err(|e| format!("{}: {e}", key_path.display()))?;
        let key_len = key
            .metadata()
            .map_err(|e| format!("{}: {e}", key_path.display()))?
            .len();
        let mut b = [0u8; KEY_HEADER_LEN];
        if key_len < KEY_HEADER_LEN as u64 {
            return Err(format!(
                "{}: {key_len} bytes, shorter than a key file header ({KEY_HEADER_LEN})",
                key_path.display()
            ));
        }
        key.read_exact_at(&mut b, 0)
            .map_err(|e| format!("{}: reading the header: {e}", key_path.display()))?;
        let key_header =
            KeyHeader::parse(&b, key_len).map_err(|e| format!("{}: {e}", key_path.display()))?;
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
        })
    }

    /// Reads bucket `n` from the key file.
    pub fn read_bucket(&self, n: u64) -> Result<Bucket, String> {
        let kh = &self.key_header;
        let at = kh.bucket_offset(n);
        let mut b = vec![0u8; kh.bucket_len()];
        if n >= kh.buckets || at + b.len() as u64 > self.key_len {
            return Err(format!(
                "{}: bucket {n} at byte {at} lies past the end of the file ({} bytes)",
                self.key_path.display(),
                self.key_len
            ));
        }
        self.key.read_exact_at(&mut b, at).map_err(|e| {
            format!(
                "{}: reading bucket {n} at byte {at}: {e}",
                self.key_path.display()
            )
        })?;
        Bucket::parse(&b, kh.capacity)
            .map_err(|e| format!("{}: bucket {n} at byte {at}: {e}", self.key_path.display()))
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

    /// The raw (encoded) value of `key`, and where its record is.
    pub fn read_raw(&self, key: &Hash256) -> Result<Option<(Located, Vec<u8>)>, String> {
        let (n, h) = self.key_header.locate(&key.0);
        let bucket = self.read_bucket(n)?;
        self.read_raw_in(n, &bucket, h, key)
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
        self.search_bucket(n, bucket, h, &mut |e| {
            let (k, value) = self.dat.read_record(e.offset, e.size)?;
            Ok((k == key.0).then_some((
                Located {
                    offset: e.offset,
                    size: e.size,
                },
                value,
            )))
        })
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
            let mut b = vec![0u8; 32 + 16];
            self.dat.read_exact_at(
                &mut b,
                e.offset + SIZE_LEN as u64,
                &format!("the record bucket {n} names"),
            )?;
            if b[..32] != key.0 {
                return Ok(None);
            }
            Ok(Some(Peeked {
                offset: e.offset,
                size: e.size,
                bytes: b.split_off(32),
            }))
        })
    }
}
