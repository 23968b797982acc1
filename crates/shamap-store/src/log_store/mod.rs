//! The node log: a node store of our own, one append-only file of batches
//! and an index in memory (the design NuDB, rippled's own node store, is
//! built on; here the index is an 8-byte-per-slot table in RAM, rebuilt by
//! reading the log at opening).
//!
//! - A write appends one batch (every change of a [`Batch`], with a
//!   checksum over all of them) at the end of `nodes.log` with one
//!   `pwrite`, then publishes it to readers under one lock: a batch is
//!   seen whole or not at all. [`NodeStore::write_durably`] (every commit
//!   point) adds `fdatasync` before publishing.
//! - A read looks the hash up in the index and reads the record with one
//!   `pread` (from the page cache when warm); the caller verifies the node
//!   against its hash as with every backend.
//! - Opening reads the log from the start, applying every batch whose
//!   checksums match, and writes nothing; or, from the index checkpoint
//!   a writer left when it closed ([`checkpoint`]), only the batches
//!   written after it (a writer's opening then removes it). After the last whole batch, a
//!   write that never finished (a crash, power loss, a full disk) looks
//!   like a header never written (zeros), a batch the file ends inside, or
//!   a batch with a sector of zeros in its body, with no whole batch after
//!   it: it was never acknowledged, and the next write cuts it off. Any
//!   other bad bytes are damage: the store refuses to open, naming the byte
//!   offset, and truncates nothing.
//! - Deletes (gc) append delete records; when more than half the log is
//!   dead, the live records are copied to a new log, synced and renamed
//!   over the old one (readers keep the old file until they are done).
//! - One writing process at a time (a lock on `LOCK`); readers in other
//!   processes may open the store read-only (they see it as of their
//!   opening).
//!
//! Layout of the bytes: [`format`](mod@format). Why a store of our own, and the
//! measurements against fjall and RocksDB: `docs/design.md`, "Durable path".

pub mod checkpoint;
pub mod format;
mod index;
mod ingest;

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Read, Seek, Write};
use std::ops::ControlFlow;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use shamap::Hash256;

use crate::error::StoreError;
use crate::meta;
use crate::store::{Batch, NodeSink, NodeStore, Op};

use format::{BatchEncoder, Record, FILE_HEADER_LEN};
use index::Index;

/// The log's file name in the store's directory.
pub const LOG_FILE: &str = "nodes.log";
/// The lock file a writing process holds.
const LOCK_FILE: &str = "LOCK";
/// Where a compaction writes the new log before renaming it.
const COMPACT_FILE: &str = "nodes.log.compact";
/// A batch larger than this is written in pieces by a compaction.
const COMPACT_BATCH_BYTES: usize = 32 << 20;
/// Compaction starts when dead bytes exceed live bytes and are at least
/// this many: a gc's rewrite costs at most about twice what it freed.
const COMPACT_MIN_DEAD: u64 = 4 << 20;

/// Once this many bytes written without a sync have gathered at the log's
/// end, a sync is started on another thread ([`WriteOut`]): a
/// bulk import's final sync then waits for the last few MiB instead of all
/// of them, the disk working while the CPU prepares the next batches.
const WRITE_OUT_BYTES: u64 = 8 << 20;

/// A [`ReadWindow`] reads this many bytes before the record it is for.
const WINDOW_BEFORE: u64 = 256;
/// A [`ReadWindow`] reads this many bytes from the record it is for on:
/// whole for every inner node and every leaf of an account-state map up
/// to ~950 bytes of data; a longer record takes a second read.
const WINDOW_FROM: u64 = 1024;

static NEXT_FILE_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A number for a log file opened by this process, never given twice.
fn next_file_id() -> u64 {
    NEXT_FILE_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The log's bytes around the record a thread read last. Imports and
/// commits write a subtree's nodes together, so a walk's next node (a
/// leaf beside its parent) is often among them: measured at 1M entries,
/// 27% of a read's consecutive `pread`s fell within 4 KiB of each other.
/// Bytes below a log file's published end never change (writes append,
/// a failed or unfinished write is cut only above it, compaction makes a
/// new file with a new id), so a window is valid for as long as its
/// file; every node read from it is still verified by the caller.
struct ReadWindow {
    /// [`State::file_id`] of the bytes' file; 0 for none.
    file_id: u64,
    /// Offset of `bytes` in that file.
    start: u64,
    bytes: Vec<u8>,
}

thread_local! {
    static READ_WINDOW: std::cell::RefCell<ReadWindow> = const {
        std::cell::RefCell::new(ReadWindow { file_id: 0, start: 0, bytes: Vec::new() })
    };
}

impl ReadWindow {
    /// The bytes of `s`'s log from `off` on, as far as this window holds
    /// them: from the window when it holds the whole record at `off`, else
    /// from one `pread` around `off` (up to the published end).
    fn record_at(&mut self, s: &State, off: u64) -> std::io::Result<&[u8]> {
        let inside = self.file_id == s.file_id && off >= self.start && {
            let at = (off - self.start) as usize;
            let header = format::RECORD_HEADER_LEN;
            self.bytes.get(at..at + header).is_some_and(|h| {
                let value_len = u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as usize;
                (at + header + 32).saturating_add(value_len) <= self.bytes.len()
            })
        };
        if !inside {
            let start = off.saturating_sub(WINDOW_BEFORE);
            let len = s.end.saturating_sub(start).min(WINDOW_BEFORE + WINDOW_FROM);
            self.file_id = 0;
            self.bytes.resize(len as usize, 0);
            s.file.read_exact_at(&mut self.bytes, start)?;
            (self.file_id, self.start) = (s.file_id, start);
        }
        Ok(self.bytes.get((off - self.start) as usize..).unwrap_or(&[]))
    }
}

/// A node store in a directory holding one node log.
#[derive(Clone)]
pub struct LogStore {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for LogStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogStore")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

struct Inner {
    path: PathBuf,
    location: String,
    read_only: bool,
    /// What readers see: the log file, the index into it, the metadata.
    state: RwLock<State>,
    /// The one writer's state (and the lock that makes it one).
    writer: Mutex<Writer>,
}

impl Drop for Inner {
    /// A writer that closes with its writes intact leaves an index
    /// checkpoint ([`checkpoint`]), so that the next opening need not
    /// read the whole log; one that cannot be written is not an error
    /// (the next opening scans the log, as it would without one).
    fn drop(&mut self) {
        if self.read_only {
            return;
        }
        let w = self.writer.get_mut().unwrap_or_else(|p| p.into_inner());
        if w.poison().is_some() {
            return;
        }
        let next_seq = w.next_seq;
        let s = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        let _ = save_checkpoint(&self.path, s, next_seq);
    }
}

/// Saves `s` (taking its index and metadata) as the checkpoint of the log
/// in `dir`, after syncing the log: a checkpoint never covers bytes the
/// disk may not have.
fn save_checkpoint(dir: &Path, s: &mut State, next_seq: u64) -> std::io::Result<()> {
    s.file.sync_data()?;
    let c = checkpoint::Checkpoint {
        log_id: checkpoint::file_id(&s.file)?,
        end: s.end,
        tail_crc: checkpoint::tail_crc(&s.file, s.end)?,
        next_seq,
        live_bytes: s.live_bytes,
        meta: std::mem::take(&mut s.meta),
        index: std::mem::take(&mut s.index),
    };
    checkpoint::save(dir, &c)
}

struct State {
    file: Arc<File>,
    /// Names `file` among every log file this process opened (from
    /// [`next_file_id`]): a thread's [`ReadWindow`] holds bytes of one.
    file_id: u64,
    index: Index,
    meta: BTreeMap<String, Vec<u8>>,
    /// End of the last published batch.
    end: u64,
    /// Bytes of live node records.
    live_bytes: u64,
    /// Bytes of the log the opening read batch by batch (all of it without
    /// a usable index checkpoint, else what was written after it).
    scanned_bytes: u64,
}

struct Writer {
    encoder: BatchEncoder,
    next_seq: u64,
    /// Where an unfinished write at the end of the log starts, found at
    /// opening: cut off before the next write, so that the next batch
    /// follows the last whole one.
    cut: Option<u64>,
    /// Set when a write or sync failed in a way that leaves the file's
    /// state unknown: no more writes until the store is reopened.
    poisoned: Option<String>,
    /// Held while the store is open for writing.
    _lock: Option<File>,
    /// Bytes at the log's end written since the disk was last asked to
    /// take them (a sync, or [`WriteOut::start`]).
    not_started: u64,
    write_out: WriteOut,
}

impl Writer {
    /// Why the store takes no more writes, if it does not: an earlier
    /// failure of this writer or of its background sync.
    fn poison(&mut self) -> Option<&str> {
        if self.poisoned.is_none() {
            if let Some(e) = self.write_out.failure() {
                self.poisoned = Some(format!("an earlier sync failed ({e}); reopen the store"));
            }
        }
        self.poisoned.as_deref()
    }
}

/// Syncs the log on a thread of its own while the writer goes on: the
/// disk takes a bulk write's first batches while the CPU prepares the
/// next ones, and the commit point's sync waits only for the rest. A
/// failed background sync fails the store's next write or sync (its error
/// is reported to one sync of the file only, so it must not be lost).
#[derive(Default)]
struct WriteOut {
    /// Started on first use.
    thread: Option<(
        std::sync::mpsc::SyncSender<Arc<File>>,
        std::thread::JoinHandle<()>,
    )>,
    failed: Arc<Mutex<Option<String>>>,
}

impl WriteOut {
    /// Has `file` synced soon, unless a sync that has not yet started is
    /// already waiting (it will cover what was written until now).
    fn start(&mut self, file: &Arc<File>) {
        let (tx, _) = self.thread.get_or_insert_with(|| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Arc<File>>(1);
            let failed = self.failed.clone();
            let t = std::thread::Builder::new()
                .name("node log write-out".into())
                .spawn(move || {
                    for file in rx {
                        if let Err(e) = file.sync_data() {
                            let mut f = failed.lock().unwrap_or_else(|p| p.into_inner());
                            f.get_or_insert_with(|| e.to_string());
                        }
                    }
                })
                .expect("cannot start a thread");
            (tx, t)
        });
        let _ = tx.try_send(file.clone());
    }

    /// The error of a background sync that failed, if one did.
    fn failure(&self) -> Option<String> {
        self.failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for WriteOut {
    fn drop(&mut self) {
        if let Some((tx, t)) = self.thread.take() {
            drop(tx);
            let _ = t.join();
        }
    }
}

impl LogStore {
    /// Opens (or creates) the node log store in directory `path` for
    /// reading and writing. A store is created only in a directory that
    /// does not exist or is empty. One writing process at a time.
    pub fn open(path: impl AsRef<Path>) -> Result<LogStore, StoreError> {
        LogStore::open_mode(path.as_ref(), false)
    }

    /// Opens the existing store in `path` for reading only: nothing in
    /// `path` is written (a read-only file system, a directory without
    /// write permission, or beside a writing process, whose later writes
    /// this opening does not see).
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<LogStore, StoreError> {
        LogStore::open_mode(path.as_ref(), true)
    }

    /// True when `path` holds a node log store.
    pub fn is_store(path: &Path) -> bool {
        path.join(LOG_FILE).is_file()
    }

    fn open_mode(path: &Path, read_only: bool) -> Result<LogStore, StoreError> {
        let location = path.display().to_string();
        let fail = |what: &str, e: &dyn std::fmt::Display| {
            StoreError::backend(location.clone(), format!("{what}: {e}"))
        };
        let log_path = path.join(LOG_FILE);
        let lock = if read_only {
            if !log_path.is_file() {
                return Err(StoreError::backend(location, "no store here"));
            }
            None
        } else {
            crate::directory::refuse_foreign_directory(path, LogStore::is_store(path), |name| {
                name == LOCK_FILE
                    || name == COMPACT_FILE
                    || name == checkpoint::CHECKPOINT_FILE
                    || name == checkpoint::CHECKPOINT_TMP_FILE
            })?;
            std::fs::create_dir_all(path).map_err(|e| fail("cannot create", &unwritable(e)))?;
            let lock = OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(path.join(LOCK_FILE))
                .map_err(|e| fail("cannot open", &unwritable(e)))?;
            crate::directory::take_lock(&lock).map_err(|e| match e {
                std::fs::TryLockError::WouldBlock => {
                    StoreError::backend(location.clone(), LOCKED_MESSAGE)
                }
                std::fs::TryLockError::Error(e) => fail("cannot lock", &e),
            })?;
            // A compaction that did not reach its rename left this behind.
            let _ = std::fs::remove_file(path.join(COMPACT_FILE));
            if !log_path.exists() {
                // Made whole under another name, then renamed: a crash while
                // making it leaves no log (the next opening starts over),
                // never an empty one that no opening accepts.
                let tmp = path.join(COMPACT_FILE);
                create_log(&tmp)
                    .and_then(|_| std::fs::rename(&tmp, &log_path))
                    .map_err(|e| fail("cannot create the node log", &unwritable(e)))?;
                sync_dir(path).map_err(|e| fail("cannot sync the directory", &e))?;
            }
            Some(lock)
        };
        let file = OpenOptions::new()
            .read(true)
            .write(!read_only)
            .open(&log_path)
            .map_err(|e| fail("cannot open the node log", &unwritable(e)))?;
        // The index checkpoint a writer left when it closed, if it
        // describes this log; one that does not is ignored (the whole log
        // is scanned, as without one).
        let log_len = file
            .metadata()
            .map_err(|e| fail("cannot open the node log", &e))?
            .len();
        let from = checkpoint::load(path, &file, log_len).unwrap_or(None);
        if !read_only {
            // Before this writer can change the log: a checkpoint on disk
            // is one a writer left after its last change.
            checkpoint::remove(path)
                .map_err(|e| fail("cannot remove the index checkpoint", &unwritable(e)))?;
        }
        // Opening writes nothing more: an unfinished write at the end is
        // cut off by the first write after it (`Writer::cut`).
        let scanned = scan(&file, from).map_err(|e| fail("cannot open the node log", &e))?;
        let store = LogStore {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                location,
                read_only,
                state: RwLock::new(State {
                    file: Arc::new(file),
                    file_id: next_file_id(),
                    index: scanned.index,
                    meta: scanned.meta,
                    end: scanned.end,
                    live_bytes: scanned.live_bytes,
                    scanned_bytes: scanned.scanned_bytes,
                }),
                writer: Mutex::new(Writer {
                    encoder: BatchEncoder::default(),
                    next_seq: scanned.next_seq,
                    cut: scanned.torn_from,
                    not_started: 0,
                    write_out: WriteOut::default(),
                    poisoned: None,
                    _lock: lock,
                }),
            }),
        };
        if read_only {
            meta::check_format_read_only(&store)?;
        } else {
            meta::check_format(&store)?;
        }
        Ok(store)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Live nodes, bytes of the log and bytes of its index in memory.
    pub fn usage(&self) -> LogUsage {
        let s = self.state();
        LogUsage {
            nodes: s.index.len() as u64,
            log_bytes: s.end,
            live_bytes: s.live_bytes,
            index_bytes: s.index.heap_bytes() as u64,
            scanned_bytes: s.scanned_bytes,
        }
    }

    fn state(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.inner.state.read().unwrap_or_else(|p| p.into_inner())
    }

    fn fail(&self, what: &str, e: impl std::fmt::Display) -> StoreError {
        StoreError::backend(self.inner.location.clone(), format!("{what}: {e}"))
    }

    /// Appends `batch` and publishes it; with `durable`, syncs first.
    fn append(&self, batch: Batch, durable: bool) -> Result<(), StoreError> {
        if self.inner.read_only {
            return Err(self.fail(
                "cannot write",
                "the store is open read-only (its directory cannot be written)",
            ));
        }
        let mut w = self.inner.writer.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(why) = w.poison() {
            return Err(self.fail("cannot write", why));
        }
        if batch.is_empty() {
            return if durable {
                self.sync_locked(&mut w)
            } else {
                Ok(())
            };
        }
        let (file, start) = {
            let s = self.state();
            (s.file.clone(), s.end)
        };
        let w = &mut *w;
        let seq = w.next_seq;
        let e = &mut w.encoder;
        e.begin();
        // What publishing will do, in the batch's order; the node values
        // are dropped here, outside the readers' lock.
        let mut effects: Vec<Effect> = Vec::new();
        let mut puts = 0;
        for op in batch.into_ops() {
            effects.push(match op {
                Op::PutNode { hash, value } => {
                    let (at, len) = e.put_node(&hash, &value);
                    puts += 1;
                    Effect::PutNode {
                        hash,
                        at: start + at as u64,
                        len: len as u64,
                    }
                }
                Op::DeleteNode(hash) => {
                    e.delete_node(&hash);
                    Effect::DeleteNode(hash)
                }
                Op::PutMeta { name, value } => {
                    check_name(&name).map_err(|m| self.fail("cannot write", m))?;
                    e.put_meta(&name, &value);
                    Effect::PutMeta { name, value }
                }
                Op::DeleteMeta(name) => {
                    check_name(&name).map_err(|m| self.fail("cannot write", m))?;
                    e.delete_meta(&name);
                    Effect::DeleteMeta(name)
                }
            });
        }
        e.finish(seq);
        let end = start + e.len() as u64;
        if end > index::MAX_OFFSET {
            return Err(self.fail(
                "cannot write",
                "the node log has reached its largest size (128 GiB); run gc",
            ));
        }
        self.cut_unfinished(w, &file)?;
        let e = &mut w.encoder;
        if let Err(err) = file.write_all_at(e.bytes(), start) {
            return Err(self.undo_failed_write(w, &file, start, err));
        }
        e.shrink(64 << 20);
        w.next_seq += 1;
        if durable {
            self.sync_file(w, &file)?;
        } else {
            w.not_started += end - start;
            if w.not_started >= WRITE_OUT_BYTES {
                w.write_out.start(&file);
                w.not_started = 0;
            }
        }
        // Publish: index and metadata, under one lock.
        let read_fail = |e| self.fail("cannot read the node log", e);
        let deleted_any = {
            let mut s = self.inner.state.write().unwrap_or_else(|p| p.into_inner());
            s.index.reserve(puts);
            s.index.warm(effects.iter().filter_map(|f| match f {
                Effect::PutNode { hash, .. } => Some(hash),
                _ => None,
            }));
            let mut deleted_any = false;
            for f in effects {
                match f {
                    Effect::PutNode { hash, at, len } => {
                        put_in_index(&mut s, &hash, at, len).map_err(read_fail)?;
                    }
                    Effect::DeleteNode(hash) => {
                        if let Some((slot, old)) = find(&s, &hash).map_err(read_fail)? {
                            s.live_bytes -= old;
                            s.index.remove_at(slot);
                            deleted_any = true;
                        }
                    }
                    Effect::PutMeta { name, value } => {
                        s.meta.insert(name, value);
                    }
                    Effect::DeleteMeta(name) => {
                        s.meta.remove(&name);
                    }
                }
            }
            s.end = end;
            deleted_any
        };
        if deleted_any {
            self.compact_if_mostly_dead(w)?;
        }
        Ok(())
    }

    /// Cuts off the unfinished write found at opening, if it is still
    /// there: before the first write, so that it follows the last whole
    /// batch.
    fn cut_unfinished(&self, w: &mut Writer, file: &File) -> Result<(), StoreError> {
        if let Some(cut) = w.cut {
            file.set_len(cut)
                .and_then(|()| file.sync_data())
                .map_err(|e| self.fail("cannot cut off an unfinished write", e))?;
            w.cut = None;
        }
        Ok(())
    }

    /// The value of `hash` from the record at `off`, whose first bytes
    /// (as many as were read, up to the end of the log) are `first`; `None`
    /// when that record is not a put of `hash` (an index tag collision).
    fn value_in(
        &self,
        s: &State,
        hash: &Hash256,
        off: u64,
        first: &[u8],
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let n = first.len();
        let Some((range, encoding)) = format::node_value_range(first, hash) else {
            return Ok(None);
        };
        if range.end as u64 > s.end - off {
            return Err(StoreError::Corrupt {
                hash: *hash,
                reason: "its record runs past the end of the node log".to_owned(),
            });
        }
        let stored = if range.end <= n {
            first[range].to_vec()
        } else {
            let mut value = vec![0u8; range.len()];
            value[..n - range.start].copy_from_slice(&first[range.start..]);
            s.file
                .read_exact_at(&mut value[n - range.start..], off + n as u64)
                .map_err(|e| self.fail(&format!("cannot read node {hash}"), e))?;
            value
        };
        match encoding {
            format::Encoding::Plain => Ok(Some(stored)),
            compact => match format::expand(compact, &stored) {
                Some(v) => Ok(Some(v.into_owned())),
                None => Err(StoreError::Corrupt {
                    hash: *hash,
                    reason: "its compact inner-node record does not decode".to_owned(),
                }),
            },
        }
    }

    /// After a write of a batch at `start` failed: cuts off whatever part
    /// was written, so that the next batch follows the last whole one; if
    /// even that fails, the file's end is unknown and the store takes no
    /// more writes. Returns the error to report.
    fn undo_failed_write(
        &self,
        w: &mut Writer,
        file: &File,
        start: u64,
        err: std::io::Error,
    ) -> StoreError {
        if let Err(cut) = file.set_len(start) {
            w.poisoned = Some(format!(
                "an earlier write failed ({err}) and could not be undone ({cut}); reopen the store"
            ));
        }
        self.fail("cannot write batch", err)
    }

    fn sync_locked(&self, w: &mut Writer) -> Result<(), StoreError> {
        if let Some(why) = w.poison() {
            return Err(self.fail("cannot sync", why));
        }
        let file = self.state().file.clone();
        self.sync_file(w, &file)
    }

    /// fdatasync; a failure poisons the writer (after a failed fsync the
    /// kernel may have dropped the pages, so nothing written since the last
    /// good one can be trusted to be on disk).
    fn sync_file(&self, w: &mut Writer, file: &File) -> Result<(), StoreError> {
        w.not_started = 0;
        file.sync_data().map_err(|e| {
            w.poisoned = Some(format!("an earlier sync failed ({e}); reopen the store"));
            self.fail("cannot sync", e)
        })?;
        // A background sync that failed meanwhile may have taken the
        // error this one would have reported.
        match w.poison() {
            Some(why) => Err(self.fail("cannot sync", why)),
            None => Ok(()),
        }
    }

    /// Copies the live records to a new log when most of the log is dead.
    fn compact_if_mostly_dead(&self, w: &mut Writer) -> Result<(), StoreError> {
        let (end, live) = {
            let s = self.state();
            (s.end, s.live_bytes)
        };
        let dead = end - live;
        if dead < COMPACT_MIN_DEAD || dead <= live {
            return Ok(());
        }
        self.compact(w)
    }

    /// Writes every live node and the metadata to a new log, syncs it and
    /// renames it over the old one; readers switch to it under the lock
    /// (one that has the old file open reads it to the end of its read).
    /// A crash before the rename leaves the old log, whole; after it, the
    /// new one.
    pub fn compact_now(&self) -> Result<(), StoreError> {
        let mut w = self.inner.writer.lock().unwrap_or_else(|p| p.into_inner());
        if self.inner.read_only {
            return Err(self.fail("cannot compact", "the store is open read-only"));
        }
        self.compact(&mut w)
    }

    fn compact(&self, w: &mut Writer) -> Result<(), StoreError> {
        if let Some(why) = w.poison() {
            return Err(self.fail("cannot compact", why));
        }
        let (old, mut offsets, meta, live) = {
            let s = self.state();
            let offsets: Vec<u64> = s.index.offsets().collect();
            (s.file.clone(), offsets, s.meta.clone(), s.live_bytes)
        };
        offsets.sort_unstable();
        let tmp = self.inner.path.join(COMPACT_FILE);
        let built = (|| -> std::io::Result<(File, Index, u64)> {
            let file = create_log(&tmp)?;
            let mut out = BufWriter::with_capacity(1 << 20, &file);
            let mut pos = FILE_HEADER_LEN;
            let mut index = Index::with_capacity(offsets.len());
            let mut e = BatchEncoder::default();
            e.begin();
            let mut pending: Vec<(Hash256, u64)> = Vec::new();
            let mut buf = Vec::new();
            let mut flush = |e: &mut BatchEncoder,
                             pending: &mut Vec<(Hash256, u64)>,
                             index: &mut Index,
                             pos: &mut u64,
                             seq: &mut u64|
             -> std::io::Result<()> {
                e.finish(*seq);
                *seq += 1;
                out.write_all(e.bytes())?;
                for (h, at) in pending.drain(..) {
                    index.insert_new(&h, *pos + at);
                }
                *pos += e.len() as u64;
                e.begin();
                Ok(())
            };
            let mut seq = w.next_seq;
            for off in offsets {
                let (hash, stored, encoding) = read_node_record(&old, off, &mut buf)?;
                let value = format::expand(encoding, stored).ok_or_else(|| {
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("node {hash}: its compact record does not decode"),
                    )
                })?;
                let (at, _) = e.put_node(&hash, &value);
                pending.push((hash, at as u64));
                if e.len() >= COMPACT_BATCH_BYTES {
                    flush(&mut e, &mut pending, &mut index, &mut pos, &mut seq)?;
                }
            }
            for (name, value) in &meta {
                e.put_meta(name, value);
            }
            flush(&mut e, &mut pending, &mut index, &mut pos, &mut seq)?;
            w.next_seq = seq;
            out.flush()?;
            drop(out);
            file.sync_data()?;
            Ok((file, index, pos))
        })();
        let (file, index, end) = match built {
            Ok(b) => b,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(self.fail("cannot compact the node log", e));
            }
        };
        std::fs::rename(&tmp, self.inner.path.join(LOG_FILE))
            .and_then(|()| sync_dir(&self.inner.path))
            .map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                self.fail("cannot compact the node log", e)
            })?;
        // An unfinished write found at opening was in the replaced file:
        // cutting the new one there would leave zeros up to that offset.
        w.cut = None;
        let mut s = self.inner.state.write().unwrap_or_else(|p| p.into_inner());
        s.file = Arc::new(file);
        s.file_id = next_file_id();
        s.index = index;
        s.end = end;
        s.live_bytes = live;
        Ok(())
    }
}

/// What a [`LogStore`] holds, from [`LogStore::usage`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogUsage {
    /// Live nodes.
    pub nodes: u64,
    /// Bytes of the log file.
    pub log_bytes: u64,
    /// Bytes of live node records in it.
    pub live_bytes: u64,
    /// Bytes of the index in memory.
    pub index_bytes: u64,
    /// Bytes of the log its opening scanned: all of it, or (from an index
    /// checkpoint) only what was written after the checkpoint.
    pub scanned_bytes: u64,
}

fn check_name(name: &str) -> Result<(), String> {
    if name.len() > 255 {
        return Err(format!(
            "a metadata name of {} bytes (at most 255)",
            name.len()
        ));
    }
    Ok(())
}

/// What publishing a written batch does to the store's state, one per
/// change, in the batch's order.
enum Effect {
    /// `hash`'s record starts at `at` and takes `len` bytes.
    PutNode {
        hash: Hash256,
        at: u64,
        len: u64,
    },
    DeleteNode(Hash256),
    PutMeta {
        name: String,
        value: Vec<u8>,
    },
    DeleteMeta(String),
}

/// The index slot and record length of `hash`, confirmed by reading the
/// candidates' records.
fn find(s: &State, hash: &Hash256) -> std::io::Result<Option<(usize, u64)>> {
    for (slot, off) in s.index.probe(hash) {
        if let Some(len) = record_len_if_of(&s.file, off, hash)? {
            return Ok(Some((slot, len)));
        }
    }
    Ok(None)
}

/// The length of the record at `off` when it is a put of `hash` (an index
/// candidate confirmed), else `None`.
fn record_len_if_of(file: &File, off: u64, hash: &Hash256) -> std::io::Result<Option<u64>> {
    let mut head = [0u8; format::RECORD_HEADER_LEN + 32];
    file.read_exact_at(&mut head, off)?;
    Ok(format::node_value_range(&head, hash).map(|(r, _)| format::node_record_len(r.len()) as u64))
}

/// Points the index at `hash`'s new record of `len` bytes at `at`, in one
/// probe, and counts it live (the record it replaces, if any, dead).
fn put_in_index(s: &mut State, hash: &Hash256, at: u64, len: u64) -> std::io::Result<()> {
    let State { file, index, .. } = s;
    let mut old_len = None;
    index.upsert(hash, at, |off| {
        old_len = record_len_if_of(file, off, hash)?;
        Ok::<bool, std::io::Error>(old_len.is_some())
    })?;
    s.live_bytes = s.live_bytes + len - old_len.unwrap_or(0);
    Ok(())
}

/// Reads the node record at `off` into `buf`: its hash, stored bytes and
/// their encoding.
fn read_node_record<'b>(
    file: &File,
    off: u64,
    buf: &'b mut Vec<u8>,
) -> std::io::Result<(Hash256, &'b [u8], format::Encoding)> {
    let mut head = [0u8; format::RECORD_HEADER_LEN + 32];
    file.read_exact_at(&mut head, off)?;
    let hash = Hash256::from_slice(&head[format::RECORD_HEADER_LEN..]).expect("32 bytes");
    let (range, encoding) = format::node_value_range(&head, &hash).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("the index names a record at {off} that is not a node"),
        )
    })?;
    buf.resize(range.len(), 0);
    file.read_exact_at(buf, off + range.start as u64)?;
    Ok((hash, buf, encoding))
}

impl NodeStore for LogStore {
    fn location(&self) -> String {
        self.inner.location.clone()
    }

    fn read_value(&self, hash: &Hash256) -> Result<Option<Vec<u8>>, StoreError> {
        let s = self.state();
        for (_, off) in s.index.probe(hash) {
            let found = READ_WINDOW.with_borrow_mut(|w| {
                let first = w
                    .record_at(&s, off)
                    .map_err(|e| self.fail(&format!("cannot read node {hash}"), e))?;
                self.value_in(&s, hash, off, first)
            })?;
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }

    fn contains(&self, hash: &Hash256) -> Result<bool, StoreError> {
        let s = self.state();
        Ok(find(&s, hash)
            .map_err(|e| self.fail("cannot read", e))?
            .is_some())
    }

    fn write(&self, batch: Batch) -> Result<(), StoreError> {
        self.append(batch, false)
    }

    fn write_durably(&self, batch: Batch) -> Result<(), StoreError> {
        self.append(batch, true)
    }

    /// Appends in any order: an import is written in tree order, with no
    /// pass per hash range and no sort (1M entries: see docs/design.md).
    fn wants_hash_ordered_import(&self) -> bool {
        false
    }

    /// The index (8 bytes a slot) and the metadata records.
    fn resident_bytes(&self) -> u64 {
        let s = self.state();
        (s.index.heap_bytes() + s.meta.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>()) as u64
    }

    /// Encodes on the calling thread while another writes and indexes
    /// (see `log_store/ingest.rs`).
    fn ingest_unordered(&self, feed: &mut dyn FnMut(&mut NodeSink<'_>)) -> Result<(), StoreError> {
        self.ingest(feed)
    }

    fn for_each_value(
        &self,
        f: &mut dyn FnMut(Hash256, &[u8]) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        // A consistent view: the file and the live offsets as of now (the
        // records never change; a compaction replaces the file, and this
        // keeps the old one open).
        let (file, mut offsets) = {
            let s = self.state();
            (s.file.clone(), s.index.offsets().collect::<Vec<u64>>())
        };
        if offsets.is_empty() {
            return Ok(());
        }
        // In log order, not hash order (nothing relies on the order; the
        // trait says so): the live records read front to back through one
        // buffer, skipping the dead ones, with 8 bytes of memory per node
        // (a hash-ordered pass would hold 40 bytes per node to sort).
        offsets.sort_unstable();
        let fail = |e: std::io::Error| self.fail("cannot iterate nodes", e);
        let mut reader = BufReader::with_capacity(1 << 20, &*file);
        use std::io::Seek;
        let mut pos = reader
            .seek(std::io::SeekFrom::Start(offsets[0]))
            .map_err(fail)?;
        let mut head = [0u8; format::RECORD_HEADER_LEN + 32];
        let mut buf = Vec::new();
        for off in offsets {
            reader.seek_relative((off - pos) as i64).map_err(fail)?;
            reader.read_exact(&mut head).map_err(fail)?;
            let hash = Hash256::from_slice(&head[format::RECORD_HEADER_LEN..]).expect("32 bytes");
            let (range, encoding) = format::node_value_range(&head, &hash).ok_or_else(|| {
                self.fail(
                    "cannot iterate nodes",
                    format!("the index names a record at byte {off} that is not a node"),
                )
            })?;
            buf.resize(range.len(), 0);
            reader.read_exact(&mut buf).map_err(fail)?;
            pos = off + range.end as u64;
            // A compact record that does not decode is passed on as it is
            // stored: raw, unverified bytes, which no check accepts.
            let value = format::expand(encoding, &buf).unwrap_or(std::borrow::Cow::Borrowed(&buf));
            if f(hash, &value).is_break() {
                break;
            }
        }
        Ok(())
    }

    fn get_meta(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.state().meta.get(name).cloned())
    }

    fn disk_bytes(&self) -> Result<u64, StoreError> {
        crate::fjall_store::dir_bytes(&self.inner.path)
            .map_err(|e| self.fail("cannot measure the directory", e))
    }

    fn sync(&self) -> Result<(), StoreError> {
        if self.inner.read_only {
            return Ok(());
        }
        let mut w = self.inner.writer.lock().unwrap_or_else(|p| p.into_inner());
        self.sync_locked(&mut w)
    }
}

/// Creates a log holding only its header, synced; the file's cursor is
/// after the header.
fn create_log(path: &Path) -> std::io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    (&file).write_all(&format::file_header())?;
    file.sync_data()?;
    Ok(file)
}

fn sync_dir(path: &Path) -> std::io::Result<()> {
    File::open(path)?.sync_all()
}

/// An I/O error of opening, with the words [`LogStore::is_unwritable`]
/// looks for when the directory cannot be written.
fn unwritable(e: std::io::Error) -> String {
    if matches!(e.raw_os_error(), Some(30 | 13 | 1)) {
        format!("{e}{UNWRITABLE_MARK}")
    } else {
        e.to_string()
    }
}

const UNWRITABLE_MARK: &str = " (the directory cannot be written)";
const LOCKED_MESSAGE: &str = "the store is locked by another process (one writer at a time)";

impl LogStore {
    /// True when opening failed because the directory cannot be written:
    /// the case for [`LogStore::open_read_only`].
    pub fn is_unwritable(e: &StoreError) -> bool {
        matches!(e, StoreError::Backend { message, .. } if message.contains(UNWRITABLE_MARK))
    }

    /// True when opening failed because another process writes the store:
    /// a reader may still open it with [`LogStore::open_read_only`].
    pub fn is_locked(e: &StoreError) -> bool {
        matches!(e, StoreError::Backend { message, .. } if message == LOCKED_MESSAGE)
    }
}

/// What reading a log from the start found.
struct Scanned {
    index: Index,
    meta: BTreeMap<String, Vec<u8>>,
    /// End of the last whole batch.
    end: u64,
    live_bytes: u64,
    next_seq: u64,
    /// Where an unfinished write at the end starts, if there is one.
    torn_from: Option<u64>,
    /// Bytes of batches read (after the checkpoint, if one was used).
    scanned_bytes: u64,
}

/// Reads the log: checks the file header, applies every whole batch, and
/// tells an unfinished write at the end (cut off by the caller) from damage
/// in the middle (an error naming the offset).
fn scan(file: &File, from: Option<checkpoint::Checkpoint>) -> Result<Scanned, String> {
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    let mut header = [0u8; FILE_HEADER_LEN as usize];
    file.read_exact_at(&mut header, 0)
        .map_err(|_| format!("not a node log ({len} bytes, shorter than its header)"))?;
    format::check_file_header(&header)?;
    let mut s = State {
        file: Arc::new(file.try_clone().map_err(|e| e.to_string())?),
        file_id: next_file_id(),
        index: Index::with_capacity((len / 200) as usize),
        meta: BTreeMap::new(),
        end: FILE_HEADER_LEN,
        live_bytes: 0,
        scanned_bytes: 0,
    };
    let mut next_seq = 0;
    let mut pos = FILE_HEADER_LEN;
    if let Some(c) = from {
        (s.index, s.meta, s.live_bytes, next_seq, pos) =
            (c.index, c.meta, c.live_bytes, c.next_seq, c.end);
    }
    let scan_from = pos;
    let mut reader = BufReader::with_capacity(4 << 20, file);
    reader
        .seek(std::io::SeekFrom::Start(pos))
        .map_err(|e| e.to_string())?;
    let mut body = Vec::new();
    // Where the whole batches end, and whether what follows may be a write
    // that never finished (`Some`) or is damage (`Err`).
    let torn_from = loop {
        if pos == len {
            break None;
        }
        let mut h = [0u8; format::BATCH_HEADER_LEN];
        if len - pos < h.len() as u64 {
            break Some(pos);
        }
        reader.read_exact(&mut h).map_err(|e| e.to_string())?;
        let header = match format::decode_batch_header(&h) {
            Ok(header) => header,
            // A header never written (its sector still zero) is an
            // unfinished write; anything else in its place is damage.
            Err(_) if h == [0; format::BATCH_HEADER_LEN] => break Some(pos),
            Err(e) => return Err(format!("the node log is damaged at byte {pos}: {e}")),
        };
        let body_start = pos + h.len() as u64;
        if header.body_len > len - body_start {
            // The file ends inside the batch: a write cut short.
            break Some(pos);
        }
        body.resize(header.body_len as usize, 0);
        reader.read_exact(&mut body).map_err(|e| e.to_string())?;
        if crc32c::crc32c(&body) != header.body_crc {
            // After a power loss some sectors of the last write may never
            // have reached the disk (they read as zeros); a body without
            // such a sector was written and then damaged.
            if has_zero_sector(&body, body_start) {
                break Some(pos);
            }
            return Err(format!(
                "the node log is damaged at byte {pos}: the batch there fails its checksum"
            ));
        }
        // The checksum matched: every record decodes (or the writer was
        // wrong, which is damage all the same).
        let records = format::records(&body)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("batch at byte {pos}: {e}"))?;
        for chunk in records.chunks(ingest::WARM_CHUNK) {
            let puts = || {
                chunk.iter().filter_map(|(_, r)| match r {
                    Record::PutNode { hash, .. } => Some(hash),
                    _ => None,
                })
            };
            s.index.reserve(puts().count());
            s.index.warm(puts());
            for &(at, ref record) in chunk {
                match *record {
                    Record::PutNode { hash, value, .. } => {
                        let off = body_start + at as u64;
                        let rec = format::node_record_len(value.len()) as u64;
                        put_in_index(&mut s, &hash, off, rec).map_err(|e| e.to_string())?;
                    }
                    Record::DeleteNode(hash) => {
                        if let Some((slot, old)) = find(&s, &hash).map_err(|e| e.to_string())? {
                            s.live_bytes -= old;
                            s.index.remove_at(slot);
                        }
                    }
                    Record::PutMeta { name, value } => {
                        s.meta.insert(name.to_owned(), value.to_vec());
                    }
                    Record::DeleteMeta(name) => {
                        s.meta.remove(name);
                    }
                }
            }
        }
        next_seq = header.seq + 1;
        pos = body_start + header.body_len;
    };
    if let Some(cut) = torn_from {
        // An unfinished write is the last thing in the log.
        if let Some(later) = later_whole_batch(file, cut, len)? {
            return Err(format!(
                "the node log is damaged at byte {cut}: the batch there is not whole, and a whole batch follows at byte {later}"
            ));
        }
    }
    Ok(Scanned {
        index: s.index,
        meta: s.meta,
        end: torn_from.unwrap_or(len),
        live_bytes: s.live_bytes,
        next_seq,
        torn_from,
        scanned_bytes: torn_from.unwrap_or(len) - scan_from,
    })
}

/// Bytes of a disk sector: what a power loss writes whole or not at all.
const SECTOR: u64 = 512;

/// True when `bytes`, found at file offset `at`, hold a whole sector of
/// zeros (at a sector boundary of the file): a sector that was never
/// written.
fn has_zero_sector(bytes: &[u8], at: u64) -> bool {
    let first = at.next_multiple_of(SECTOR) - at;
    bytes.get(first as usize..).is_some_and(|rest| {
        rest.chunks_exact(SECTOR as usize)
            .any(|c| c.iter().all(|&b| b == 0))
    })
}

/// The offset of a whole batch (header and body checksums matching) in
/// `(from, len)`, if any: what tells damage in the middle of the log from an
/// unfinished write at its end. Reads the rest of the file once, in
/// pieces; a candidate header's body is read and checked in pieces too.
fn later_whole_batch(file: &File, from: u64, len: u64) -> Result<Option<u64>, String> {
    const PIECE: u64 = 1 << 20;
    let hl = format::BATCH_HEADER_LEN as u64;
    let mut buf = vec![0u8; (PIECE + hl) as usize];
    let mut at = from + 8;
    while at + hl <= len {
        let n = (PIECE + hl).min(len - at);
        let chunk = &mut buf[..n as usize];
        file.read_exact_at(chunk, at).map_err(|e| e.to_string())?;
        let mut i = 0u64;
        while i + hl <= n && i < PIECE {
            let h: &[u8; format::BATCH_HEADER_LEN] = chunk[i as usize..(i + hl) as usize]
                .try_into()
                .expect("header length");
            if let Ok(header) = format::decode_batch_header(h) {
                let start = at + i + hl;
                if header.body_len <= len - start
                    && body_crc(file, start, header.body_len)? == header.body_crc
                {
                    return Ok(Some(at + i));
                }
            }
            i += 8;
        }
        at += PIECE;
    }
    Ok(None)
}

/// crc32c of `len` bytes of `file` from `start`, read in pieces.
fn body_crc(file: &File, start: u64, len: u64) -> Result<u32, String> {
    let mut crc = 0u32;
    let mut buf = vec![0u8; (len.min(1 << 20)) as usize];
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(buf.len() as u64) as usize;
        file.read_exact_at(&mut buf[..n], start + done)
            .map_err(|e| e.to_string())?;
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        done += n as u64;
    }
    Ok(crc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::{NodeObject, NodeType};

    fn a_batch(seed: u8) -> (Batch, Hash256) {
        let node = NodeObject::from_prefix(NodeType::AccountNode, &[seed; 72]);
        let hash = node.hash();
        let mut batch = Batch::new();
        batch.put_node(node);
        (batch, hash)
    }

    /// One thread reads nodes written side by side (from its read window),
    /// then nodes appended after its window was read, then every node
    /// again after a compaction moved them all to a new file: each value
    /// is the one written, never stale bytes of the window.
    #[test]
    fn reads_through_the_read_window_follow_appends_and_compactions() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = LogStore::open(dir.path()).expect("open");
        let nodes = |from: u8| -> Vec<NodeObject> {
            (from..from + 20)
                .map(|i| NodeObject::from_prefix(NodeType::AccountNode, &[i; 60]))
                .collect()
        };
        let check = |nodes: &[NodeObject]| {
            for n in nodes.iter().rev().chain(nodes) {
                let value = store.read_value(&n.hash()).expect("read");
                assert_eq!(value.as_deref(), Some(n.value()), "{}", n.hash());
            }
        };
        let put = |nodes: &[NodeObject]| {
            let mut batch = Batch::new();
            for n in nodes {
                batch.put_node(n.clone());
            }
            store.write_durably(batch).expect("write");
        };
        let (first, second) = (nodes(0), nodes(100));
        put(&first);
        check(&first);
        put(&second);
        check(&second);
        check(&first);
        let mut gone = Batch::new();
        for n in &first[..10] {
            gone.delete_node(n.hash());
        }
        // The window then holds the log's first bytes, where the
        // compaction puts other records.
        assert!(store.read_value(&first[0].hash()).expect("read").is_some());
        store.write_durably(gone).expect("delete");
        store.compact_now().expect("compact");
        check(&first[10..]);
        check(&second);
        assert_eq!(store.read_value(&first[0].hash()).expect("read"), None);
    }

    /// A read window serves only bytes of its own file, below the end
    /// published when it was read, and whole records.
    #[test]
    fn a_read_window_never_serves_another_files_bytes_or_past_the_end_it_read() {
        let file = |bytes: &[u8]| {
            let mut f = tempfile::tempfile().expect("tempfile");
            f.write_all(bytes).expect("write");
            Arc::new(f)
        };
        let state = |file: &Arc<File>, file_id: u64, end: u64| State {
            file: file.clone(),
            file_id,
            index: Index::with_capacity(0),
            meta: BTreeMap::new(),
            end,
            live_bytes: 0,
            scanned_bytes: 0,
        };
        // Zeros read as records of empty values: a window always "holds"
        // them, so only the checks below tell the files apart.
        let mut sevens = vec![0u8; 4096];
        sevens[1008..1040].fill(7);
        let (a, b) = (file(&[0u8; 4096]), file(&sevens));
        let (a, b_short, b) = (
            state(&a, next_file_id(), 4096),
            state(&b, next_file_id(), 1020),
            state(&b, 0, 4096),
        );
        let b = State {
            file_id: b_short.file_id,
            ..b
        };
        let mut w = ReadWindow {
            file_id: 0,
            start: 0,
            bytes: Vec::new(),
        };
        assert_eq!(w.record_at(&a, 900).expect("read")[8..40], [0; 32]);
        // Up to the end as published, not a's window.
        assert_eq!(w.record_at(&b_short, 900).expect("read").len(), 120);
        // The end has moved on: read again.
        assert_eq!(w.record_at(&b, 1000).expect("read")[8..40], [7; 32]);
        assert_eq!(
            w.record_at(&a, 1000).expect("read")[8..40],
            [0; 32],
            "b's bytes for a"
        );
    }

    /// A background sync's failure reaches the writer: the store's next
    /// write, sync and import are refused naming it (after a failed fsync
    /// nothing written since the last good one can be trusted), what was
    /// written before is still read, and a reopened store writes again.
    #[test]
    fn a_failed_background_sync_refuses_every_later_write_until_reopened() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = LogStore::open(dir.path()).expect("open");
        let (batch, first) = a_batch(1);
        store.write_durably(batch).expect("write");
        // A pipe cannot be synced (EINVAL): the background sync fails.
        let (reader, _writer) = std::io::pipe().expect("pipe");
        let pipe = Arc::new(File::from(std::os::fd::OwnedFd::from(reader)));
        {
            let mut w = store.inner.writer.lock().expect("writer");
            w.write_out.start(&pipe);
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while w.write_out.failure().is_none() {
                assert!(std::time::Instant::now() < deadline, "no failure seen");
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        let (batch, second) = a_batch(2);
        let refusals = [
            store.write(batch).expect_err("write after a failed sync"),
            store.sync().expect_err("sync after a failed sync"),
            store
                .ingest_unordered(&mut |_| {})
                .expect_err("import after a failed sync"),
        ];
        for e in refusals {
            let text = e.to_string();
            assert!(text.contains("an earlier sync failed"), "{text}");
            assert!(text.contains("reopen the store"), "{text}");
        }
        assert!(store.contains(&first).expect("read"));
        assert!(!store.contains(&second).expect("read"));
        drop(store);
        let store = LogStore::open(dir.path()).expect("reopen");
        let (batch, second) = a_batch(2);
        store.write_durably(batch).expect("a reopened store writes");
        assert!(store.contains(&first).expect("read") && store.contains(&second).expect("read"));
    }
}
