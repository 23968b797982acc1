//! [`NudbWriter`]: writes a NuDB database as NuDB 2.0.9's `basic_store`
//! does (`include/nudb/impl/create.ipp`, `basic_store.ipp`).
//!
//! - `create`: the data file's header; the key file's header block and one
//!   empty bucket; an empty log file (removed again by a clean close).
//! - `insert` buffers; a commit (NuDB's `flush`, which rippled's context
//!   thread calls about once a second) takes the buffered records in key
//!   order (NuDB's pool is a `std::map` ordered by `memcmp` of the keys),
//!   appends their data records, then for each one: adds 65536 to `frac`
//!   and, when it reaches `thresh = max(65536, load_factor × capacity)`,
//!   splits bucket `buckets - modulus/2` into a new bucket (linear
//!   hashing, `split`, spill chains redistributed); then inserts the entry
//!   into its bucket, first moving a full bucket into a spill record at the
//!   end of the data file (`maybe_spill`). Changed buckets are written to
//!   the key file.
//!
//! `frac` starts at `thresh / 2` on every open, so the layout depends on
//! where commits and reopenings fall: [`NudbWriter::commit`] and
//! [`NudbWriter::reopen`] place them.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::codec::{self, CodecPolicy, CodecType};
use crate::format::{self, Bucket, Entry, Headers};

/// How a database is created and filled.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NudbOptions {
    /// Bytes of a key-file block, at least 104 (rippled: the file system's
    /// block size, 4096 by default, or `nudb_block_size` 4096..=32768).
    pub block_size: u16,
    /// Target bucket occupancy, in (0, 1) (rippled: 0.5).
    pub load_factor: f32,
    /// Seed of the key hash.
    pub salt: u64,
    /// Unique ID written in every file.
    pub uid: u64,
    /// Application number (rippled: 1).
    pub appnum: u64,
    /// Key bytes (rippled: 32).
    pub key_size: u16,
    /// Codec types for [`NudbWriter::insert`].
    pub codec: CodecPolicy,
    /// Commits after this many buffered inserts (0: only when asked).
    pub commit_every: usize,
    /// Leaves an empty `nudb.log`, as a store open in rippled has; else
    /// none, as NuDB's `close` leaves.
    pub keep_empty_log: bool,
    /// Writes `nudb.log` in every commit as NuDB does (its header with
    /// the sizes before the commit, the data appended, the changed buckets
    /// as they were, the key file written, the log truncated), so that a
    /// reader running beside the writer sees what it would see beside
    /// NuDB. Off: commits write no log (the same files in the end).
    pub log_commits: bool,
}

impl Default for NudbOptions {
    fn default() -> Self {
        NudbOptions {
            block_size: 4096,
            load_factor: 0.5,
            salt: 0x0005_EED0_F5A1_7000_u64,
            uid: 0x0001_D0C5_u64,
            appnum: 1,
            key_size: 32,
            codec: CodecPolicy::Rippled,
            commit_every: 0,
            keep_empty_log: false,
            log_commits: false,
        }
    }
}

/// Why a write failed.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// A file could not be created, written or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// Options NuDB's `create` refuses.
    #[error("invalid NuDB options: {0}")]
    Options(String),
    /// A key of another length than the database's.
    #[error("key of {got} bytes in a database of {want}-byte keys")]
    KeySize {
        /// The key's length.
        got: usize,
        /// The database's key size.
        want: usize,
    },
    /// A value NuDB refuses (empty, or over 4 GiB).
    #[error("value of {0} bytes: NuDB takes 1..=4294967295")]
    ValueSize(usize),
    /// A value the codec cannot encode as asked.
    #[error(transparent)]
    Codec(#[from] codec::CodecError),
    /// A database to copy from that does not hold what its listing says.
    #[error("{0}")]
    Source(String),
    /// A spill pointer this writer did not write (a bug).
    #[error("spill record at {0} unknown")]
    Spill(u64),
}

/// One data record written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordInfo {
    /// Its key.
    pub key: Vec<u8>,
    /// Offset in `nudb.dat` of the record (its size field).
    pub offset: u64,
    /// Bytes of its value (the encoded bytes).
    pub size: u64,
    /// The codec type of its value (`None` for [`NudbWriter::insert_raw`]).
    pub codec: Option<CodecType>,
    /// Which commit wrote it (0 for the first).
    pub commit: usize,
}

/// What a finished database holds.
#[derive(Clone, Debug)]
pub struct Written {
    /// The directory of `nudb.dat`, `nudb.key` (and `nudb.log`).
    pub dir: PathBuf,
    /// The headers written.
    pub headers: Headers,
    /// Every data record, in file order.
    pub records: Vec<RecordInfo>,
    /// Offset of every spill record (its zero size field), in file order.
    pub spills: Vec<u64>,
    /// Buckets in the key file.
    pub buckets: u64,
    /// Bytes of `nudb.dat`.
    pub dat_len: u64,
    /// Bytes of `nudb.key`.
    pub key_len: u64,
    /// Commits made.
    pub commits: usize,
    /// The commits after which the database was closed and reopened
    /// ([`NudbWriter::reopen`]): the first commit of each new session.
    pub reopens: Vec<usize>,
}

impl Written {
    /// The record of `key`.
    pub fn record(&self, key: &[u8]) -> Option<&RecordInfo> {
        self.records.iter().find(|r| r.key == key)
    }

    /// Path of one of the files: `"nudb.dat"`, `"nudb.key"`, `"nudb.log"`.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// Where an interrupted commit stops (see [`NudbWriter::finish_interrupted`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interrupt {
    /// Data records and spills appended and the log written, the key file
    /// not yet changed.
    BeforeKeyFile,
    /// The key file's buckets written too; only the log's truncation
    /// missing.
    AfterKeyFile,
}

/// Writes one NuDB database (see the module docs).
pub struct NudbWriter {
    dir: PathBuf,
    headers: Headers,
    opts: NudbOptions,
    capacity: usize,
    thresh: u64,
    frac: u64,
    modulus: u64,
    buckets: Vec<Bucket>,
    /// Spill buckets by their offset (spill record + 8).
    spills: HashMap<u64, Bucket>,
    spill_offsets: Vec<u64>,
    dat: BufWriter<File>,
    dat_len: u64,
    key: File,
    pending: BTreeMap<Vec<u8>, (Vec<u8>, Option<CodecType>)>,
    keys: HashSet<Box<[u8]>>,
    records: Vec<RecordInfo>,
    commits: usize,
    reopens: Vec<usize>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WriteError + '_ {
    move |source| WriteError::Io {
        path: path.to_owned(),
        source,
    }
}

fn create_new(path: &Path) -> Result<File, WriteError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(io(path))
}

impl NudbWriter {
    /// Creates `nudb.dat`, `nudb.key` and `nudb.log` in `dir` (made if
    /// missing; the files must not exist), as NuDB's `create` does.
    pub fn create(dir: impl AsRef<Path>, opts: NudbOptions) -> Result<NudbWriter, WriteError> {
        let dir = dir.as_ref().to_owned();
        let block_size = usize::from(opts.block_size);
        let capacity = format::bucket_capacity(block_size);
        if opts.key_size < 1 {
            return Err(WriteError::Options("key size 0".into()));
        }
        if capacity < 1 {
            return Err(WriteError::Options(format!(
                "block size {block_size} holds no bucket entry (at least 104)"
            )));
        }
        if !(opts.load_factor > 0.0 && opts.load_factor < 1.0) {
            return Err(WriteError::Options(format!(
                "load factor {} outside (0, 1)",
                opts.load_factor
            )));
        }
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let headers = Headers {
            version: format::VERSION,
            uid: opts.uid,
            appnum: opts.appnum,
            key_size: opts.key_size,
            salt: opts.salt,
            pepper: format::pepper(opts.salt),
            block_size: opts.block_size,
            load_factor: format::load_factor_units(opts.load_factor),
        };
        let dat_path = dir.join("nudb.dat");
        let key_path = dir.join("nudb.key");
        let log_path = dir.join("nudb.log");
        let dat = create_new(&dat_path)?;
        let mut key = create_new(&key_path)?;
        create_new(&log_path)?;
        let mut dat = BufWriter::with_capacity(1 << 20, dat);
        dat.write_all(&headers.dat_header())
            .map_err(io(&dat_path))?;
        key.write_all(&headers.key_header_block())
            .map_err(io(&key_path))?;
        key.write_all(&Bucket::default().encode_block(block_size))
            .map_err(io(&key_path))?;
        // basic_store::open: thresh = max(65536, load_factor * capacity).
        let thresh = (u64::from(headers.load_factor) * capacity as u64).max(65536);
        Ok(NudbWriter {
            dir,
            headers,
            opts,
            capacity,
            thresh,
            frac: thresh / 2,
            modulus: 1,
            buckets: vec![Bucket::default()],
            spills: HashMap::new(),
            spill_offsets: Vec::new(),
            dat,
            dat_len: format::DAT_HEADER_LEN as u64,
            key,
            pending: BTreeMap::new(),
            keys: HashSet::new(),
            records: Vec::new(),
            commits: 0,
            reopens: Vec::new(),
        })
    }

    /// The headers being written.
    pub fn headers(&self) -> &Headers {
        &self.headers
    }

    /// Inserts a NodeStore value (`8 zero bytes ‖ type ‖ prefix format`),
    /// encoded by the options' codec policy. False when the key is already
    /// stored or buffered (rippled ignores NuDB's `key_exists`).
    pub fn insert(&mut self, key: &[u8], value: &[u8]) -> Result<bool, WriteError> {
        let t = codec::choose(self.opts.codec, key, value);
        self.insert_as(key, value, t)
    }

    /// Inserts a NodeStore value encoded as codec type `t`.
    pub fn insert_as(
        &mut self,
        key: &[u8],
        value: &[u8],
        t: CodecType,
    ) -> Result<bool, WriteError> {
        let encoded = codec::encode(value, t)?;
        self.insert_encoded(key, encoded, Some(t))
    }

    /// Inserts a value stored as given (already encoded, or deliberately
    /// not decodable).
    pub fn insert_raw(&mut self, key: &[u8], encoded: &[u8]) -> Result<bool, WriteError> {
        self.insert_encoded(key, encoded.to_vec(), None)
    }

    pub(crate) fn insert_encoded(
        &mut self,
        key: &[u8],
        encoded: Vec<u8>,
        t: Option<CodecType>,
    ) -> Result<bool, WriteError> {
        let want = usize::from(self.headers.key_size);
        if key.len() != want {
            return Err(WriteError::KeySize {
                got: key.len(),
                want,
            });
        }
        if encoded.is_empty() || encoded.len() as u64 > u64::from(u32::MAX) {
            return Err(WriteError::ValueSize(encoded.len()));
        }
        if self.keys.contains(key) || self.pending.contains_key(key) {
            return Ok(false);
        }
        self.pending.insert(key.to_vec(), (encoded, t));
        if self.opts.commit_every > 0 && self.pending.len() >= self.opts.commit_every {
            self.commit()?;
        }
        Ok(true)
    }

    /// Commits the buffered inserts (NuDB's `flush`).
    pub fn commit(&mut self) -> Result<(), WriteError> {
        if self.opts.log_commits && !self.pending.is_empty() {
            return self.logged_commit();
        }
        if let Some(dirty) = self.apply_pending()? {
            // NuDB syncs the data file before writing the key file.
            self.flush_dat()?;
            self.write_buckets(&dirty)?;
        }
        Ok(())
    }

    /// [`NudbWriter::commit`] with `nudb.log` written as NuDB writes it.
    fn logged_commit(&mut self) -> Result<(), WriteError> {
        use std::os::unix::fs::FileExt;
        let log_path = self.dir.join("nudb.log");
        let key_len = self.buckets.len() as u64 * u64::from(self.headers.block_size)
            + u64::from(self.headers.block_size);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&log_path)
            .map_err(io(&log_path))?;
        let header = self.headers.log_header(key_len, self.dat_len);
        log.write_all_at(&header, 0).map_err(io(&log_path))?;
        let before = self.buckets.clone();
        let Some(dirty) = self.apply_pending()? else {
            return Ok(());
        };
        self.flush_dat()?;
        let mut logged = Vec::new();
        for &n in dirty.iter().filter(|&&n| (n as usize) < before.len()) {
            logged.extend_from_slice(&n.to_be_bytes());
            before[n as usize].encode_into(&mut logged);
        }
        log.write_all_at(&logged, header.len() as u64)
            .map_err(io(&log_path))?;
        self.write_buckets(&dirty)?;
        log.set_len(0).map_err(io(&log_path))?;
        Ok(())
    }

    /// Commits, then starts a new session as closing and reopening the
    /// database does: `frac` back to `thresh / 2`.
    pub fn reopen(&mut self) -> Result<(), WriteError> {
        self.commit()?;
        self.frac = self.thresh / 2;
        if self.reopens.last() != Some(&self.commits) {
            self.reopens.push(self.commits);
        }
        Ok(())
    }

    /// Commits and closes: the files as NuDB's `close` leaves them.
    pub fn finish(mut self) -> Result<Written, WriteError> {
        self.commit()?;
        self.flush_dat()?;
        let log = self.dir.join("nudb.log");
        if !self.opts.keep_empty_log {
            std::fs::remove_file(&log).map_err(io(&log))?;
        }
        self.written()
    }

    /// Commits the buffered inserts as a process killed mid-commit leaves
    /// them: the data file appended, `nudb.log` holding its header (the
    /// sizes before the commit) and the changed buckets as they were, and
    /// the key file changed or not as `at` says. NuDB's recovery, on the
    /// next open, restores the files to the state before this commit.
    pub fn finish_interrupted(mut self, at: Interrupt) -> Result<Written, WriteError> {
        let key_len = self.buckets.len() as u64 * u64::from(self.headers.block_size)
            + u64::from(self.headers.block_size);
        let dat_len = self.dat_len;
        let before = self.buckets.clone();
        let dirty = self.apply_pending()?.unwrap_or_default();
        self.flush_dat()?;
        let mut log = self.headers.log_header(key_len, dat_len);
        for &n in dirty.iter().filter(|&&n| (n as usize) < before.len()) {
            log.extend_from_slice(&n.to_be_bytes());
            before[n as usize].encode_into(&mut log);
        }
        let log_path = self.dir.join("nudb.log");
        std::fs::write(&log_path, log).map_err(io(&log_path))?;
        if at == Interrupt::AfterKeyFile {
            self.write_buckets(&dirty)?;
        }
        self.written()
    }

    fn written(&self) -> Result<Written, WriteError> {
        let key_path = self.dir.join("nudb.key");
        let key_len = self.key.metadata().map_err(io(&key_path))?.len();
        Ok(Written {
            dir: self.dir.clone(),
            headers: self.headers,
            records: self.records.clone(),
            spills: self.spill_offsets.clone(),
            buckets: self.buckets.len() as u64,
            dat_len: self.dat_len,
            key_len,
            commits: self.commits,
            reopens: self.reopens.clone(),
        })
    }

    fn flush_dat(&mut self) -> Result<(), WriteError> {
        let path = self.dir.join("nudb.dat");
        self.dat.flush().map_err(io(&path))
    }

    fn write_buckets(&mut self, dirty: &BTreeSet<u64>) -> Result<(), WriteError> {
        let path = self.dir.join("nudb.key");
        let bs = usize::from(self.headers.block_size);
        for &n in dirty {
            let block = self.buckets[n as usize].encode_block(bs);
            self.key
                .write_all_at(&block, (n + 1) * bs as u64)
                .map_err(io(&path))?;
        }
        Ok(())
    }

    fn append_dat(&mut self, bytes: &[u8]) -> Result<u64, WriteError> {
        let at = self.dat_len;
        let path = self.dir.join("nudb.dat");
        self.dat.write_all(bytes).map_err(io(&path))?;
        self.dat_len += bytes.len() as u64;
        Ok(at)
    }

    /// `basic_store::commit` up to the key file: returns the buckets
    /// changed, or `None` when nothing was buffered.
    fn apply_pending(&mut self) -> Result<Option<BTreeSet<u64>>, WriteError> {
        if self.pending.is_empty() {
            return Ok(None);
        }
        let pending = std::mem::take(&mut self.pending);
        let commit = self.commits;
        self.commits += 1;
        let mut placed = Vec::with_capacity(pending.len());
        let mut rec = Vec::new();
        for (key, (value, t)) in pending {
            rec.clear();
            format::put_u48(&mut rec, value.len() as u64);
            rec.extend_from_slice(&key);
            rec.extend_from_slice(&value);
            let offset = self.append_dat(&rec)?;
            let hash = format::key_hash(&key, self.headers.salt);
            placed.push(Entry {
                offset,
                size: value.len() as u64,
                hash,
            });
            self.records.push(RecordInfo {
                key: key.clone(),
                offset,
                size: value.len() as u64,
                codec: t,
                commit,
            });
            self.keys.insert(key.into_boxed_slice());
        }
        let mut dirty = BTreeSet::new();
        for e in placed {
            self.frac += 65536;
            if self.frac >= self.thresh {
                self.frac -= self.thresh;
                let count = self.buckets.len() as u64;
                if count == self.modulus {
                    self.modulus *= 2;
                }
                let n1 = count - self.modulus / 2;
                let n2 = count;
                self.buckets.push(Bucket::default());
                self.split(n1 as usize, n2 as usize)?;
                dirty.insert(n1);
                dirty.insert(n2);
            }
            let n = format::bucket_index(e.hash, self.buckets.len() as u64, self.modulus);
            self.maybe_spill(n as usize)?;
            self.buckets[n as usize].insert(e);
            dirty.insert(n);
        }
        Ok(Some(dirty))
    }

    /// `maybe_spill`: a full bucket goes to a spill record at the end of the
    /// data file and is left empty, pointing at it.
    fn maybe_spill(&mut self, n: usize) -> Result<(), WriteError> {
        if self.buckets[n].entries.len() < self.capacity {
            return Ok(());
        }
        let b = std::mem::take(&mut self.buckets[n]);
        let blob = b.encode();
        let mut rec = Vec::with_capacity(format::SPILL_HEAD_LEN + blob.len());
        format::put_u48(&mut rec, 0);
        rec.extend_from_slice(&(blob.len() as u16).to_be_bytes());
        rec.extend_from_slice(&blob);
        let at = self.append_dat(&rec)?;
        let spill = at + format::SPILL_HEAD_LEN as u64;
        self.spill_offsets.push(at);
        self.spills.insert(spill, b);
        self.buckets[n].spill = spill;
        Ok(())
    }

    /// `split`: moves the entries of bucket `n1` (and of its spill chain)
    /// that now index to `n2` into it.
    fn split(&mut self, n1: usize, n2: usize) -> Result<(), WriteError> {
        let count = self.buckets.len() as u64;
        let modulus = self.modulus;
        let goes = |e: &Entry| format::bucket_index(e.hash, count, modulus) == n2 as u64;
        if self.buckets[n1].entries.is_empty() {
            return Ok(());
        }
        let entries = std::mem::take(&mut self.buckets[n1].entries);
        for e in entries {
            if goes(&e) {
                self.buckets[n2].insert(e);
            } else {
                self.buckets[n1].entries.push(e);
            }
        }
        let mut spill = std::mem::take(&mut self.buckets[n1].spill);
        while spill != 0 {
            let tmp = self
                .spills
                .get(&spill)
                .cloned()
                .ok_or(WriteError::Spill(spill))?;
            for e in tmp.entries {
                let n = if goes(&e) { n2 } else { n1 };
                self.maybe_spill(n)?;
                self.buckets[n].insert(e);
            }
            spill = tmp.spill;
        }
        Ok(())
    }
}
