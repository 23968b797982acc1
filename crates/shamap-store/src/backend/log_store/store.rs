//! [`LogStore`]: the store, its opening and closing, and its
//! [`NodeStore`] face.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use shamap::Hash256;

use super::files::{self, opening_error};
use super::format::{self, FILE_HEADER_LEN};
use super::recovery::{check_below, scan, Damage, Scan, Scanned};
use super::state::{next_file_id, State};
use super::writer::Writer;
use super::{checkpoint, LOCK_FILE, LOG_FILE, NEW_LOG_FILE};
use crate::backend::ack::{self, Ack, ACK_FILE};
use crate::error::StoreError;
use crate::meta;
use crate::store::{Batch, BatchedIngest, BulkIngest, NodeSink, NodeStore, StoreMemory};

/// A node store in a directory holding one node log.
#[derive(Clone)]
pub struct LogStore {
    pub(super) inner: Arc<Inner>,
}

impl std::fmt::Debug for LogStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogStore")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

pub(super) struct Inner {
    pub(super) path: PathBuf,
    pub(super) location: String,
    pub(super) read_only: bool,
    /// What readers see: the log file, the index into it, the metadata.
    pub(super) state: RwLock<State>,
    /// The one writer's state.
    pub(super) writer: Mutex<Writer>,
    /// Held while the store is open for writing: what makes the writer one.
    _lock: Option<std::fs::File>,
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
        if let Some(a) = &w.ack {
            let _ = a.sync();
        }
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
        log_identity: checkpoint::log_identity(&s.file)?,
        end: s.end,
        tail_crc: checkpoint::tail_crc(&s.file, s.end)?,
        next_seq,
        live_bytes: s.live_bytes,
        meta: std::mem::take(&mut s.meta),
        index: std::mem::take(&mut s.index),
    };
    checkpoint::save(dir, &c)
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

    /// True when opening failed because the directory cannot be written
    /// ([`StoreError::Unwritable`]): the case for
    /// [`LogStore::open_read_only`].
    pub fn is_unwritable(e: &StoreError) -> bool {
        matches!(e, StoreError::Unwritable { .. })
    }

    /// True when opening failed because another process writes the store
    /// ([`StoreError::Locked`]): a reader may still open it with
    /// [`LogStore::open_read_only`].
    pub fn is_locked(e: &StoreError) -> bool {
        matches!(e, StoreError::Locked { .. })
    }

    /// Opens the existing store in `path` for reading only, reading the
    /// whole log (never from an index checkpoint) and going on past damage:
    /// the audit of `verify --db`. Every damaged place is listed in the
    /// returned [`LogAudit`] (the batches it hit are left out of the
    /// store's view, so reads of what they held fail, and tell which roots
    /// the damage affects); a log without damage opens as
    /// [`LogStore::open_read_only`] would.
    pub fn open_audit(path: impl AsRef<Path>) -> Result<(LogStore, LogAudit), StoreError> {
        let path = path.as_ref();
        let location = path.display().to_string();
        if !path.join(LOG_FILE).is_file() {
            return Err(StoreError::NoStore {
                location,
                reason: "no store here".to_owned(),
            });
        }
        let (scanned, file, ack) = open_log(path, true, true)?;
        let audit = LogAudit {
            batches: scanned.batches,
            log_bytes: scanned.end,
            acknowledged: ack.map(|a| a.seq),
            damage: scanned.damage.clone(),
        };
        let store = LogStore::assemble(path, true, None, file, scanned);
        if audit.damage.is_empty() {
            // With damage, the format record may be what it hit: the
            // damage is the finding then.
            meta::check_format_read_only(&store)?;
        }
        Ok((store, audit))
    }

    fn open_mode(path: &Path, read_only: bool) -> Result<LogStore, StoreError> {
        let location = path.display().to_string();
        let fail = |what: &str, e: &dyn std::fmt::Display| {
            StoreError::backend(location.clone(), format!("{what}: {e}"))
        };
        let log_path = path.join(LOG_FILE);
        if let Ok(m) = std::fs::symlink_metadata(&log_path) {
            if !m.is_file() && !m.file_type().is_symlink() {
                // Opened without blocking, so that the error names it.
                crate::backend::directory::open_regular(&log_path, false)
                    .map_err(|e| fail("cannot open the node log", &e))?;
            }
        }
        let lock = if read_only {
            if !log_path.is_file() {
                return Err(StoreError::NoStore {
                    location,
                    reason: "no store here".to_owned(),
                });
            }
            None
        } else {
            crate::backend::directory::refuse_foreign_directory(
                path,
                LogStore::is_store(path),
                |name| {
                    name == LOCK_FILE
                        || name == NEW_LOG_FILE
                        || name == ACK_FILE
                        || name == checkpoint::CHECKPOINT_FILE
                        || name == checkpoint::CHECKPOINT_TMP_FILE
                },
            )?;
            std::fs::create_dir_all(path)
                .map_err(|e| opening_error(&location, "cannot create", e))?;
            // The writer's lock is held on the directory itself: a file
            // that a user can delete or replace while the writer runs
            // would let a second writer in.
            let lock = std::fs::File::open(path).map_err(|e| fail("cannot open", &e))?;
            crate::backend::directory::take_lock(&lock).map_err(|e| match e {
                std::fs::TryLockError::WouldBlock => StoreError::Locked {
                    location: location.clone(),
                },
                std::fs::TryLockError::Error(e) => fail("cannot lock", &e),
            })?;
            // A reclaim that did not reach its rename left this behind.
            let _ = std::fs::remove_file(path.join(NEW_LOG_FILE));
            if std::fs::symlink_metadata(&log_path).is_err() {
                if std::fs::symlink_metadata(path.join(ACK_FILE)).is_ok() {
                    return Err(fail(
                        "cannot open the node log",
                        &format!("{LOG_FILE} is missing, but {ACK_FILE} records commits acknowledged as durable in it: refusing to start an empty log in its place"),
                    ));
                }
                // A checkpoint of a log removed describes nothing here (the
                // new log's identity differs from the one it records, even
                // if the new file gets the old one's inode): gone first.
                // Made whole under another name, then renamed: a crash while
                // making it leaves no log (the next opening starts over),
                // never an empty one that no opening accepts.
                let tmp = path.join(NEW_LOG_FILE);
                checkpoint::remove(path)
                    .and_then(|()| files::create_log(&tmp))
                    .and_then(|_| std::fs::rename(&tmp, &log_path))
                    .map_err(|e| opening_error(&location, "cannot create the node log", e))?;
                files::sync_dir(path).map_err(|e| fail("cannot sync the directory", &e))?;
            }
            Some(lock)
        };
        let (scanned, file, acked) = open_log(path, read_only, false)?;
        let below = scanned.from_checkpoint;
        let store = LogStore::assemble(path, read_only, lock, file, scanned);
        if !read_only {
            store.acknowledge_recovered(acked)?;
        }
        if let (Some((end, next_seq)), false) = (below, read_only) {
            // A writer reads the log below the checkpoint before its first
            // write (the opening did not), on a thread of its own.
            let file = store.state().file.clone();
            let check = std::thread::Builder::new()
                .name("node log check".into())
                .spawn(move || check_below(&file, end, next_seq))
                .map_err(|e| fail("cannot start a thread", &e))?;
            store
                .inner
                .writer
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .below_checkpoint = Some(check);
        }
        if read_only {
            meta::check_format_read_only(&store)?;
        } else {
            meta::check_format(&store)?;
        }
        Ok(store)
    }

    /// The store over `file` as `scanned` found it.
    fn assemble(
        path: &Path,
        read_only: bool,
        lock: Option<std::fs::File>,
        file: std::fs::File,
        scanned: Scanned,
    ) -> LogStore {
        LogStore {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                location: path.display().to_string(),
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
                writer: Mutex::new(Writer::new(scanned.next_seq, scanned.torn_from)),
                _lock: lock,
            }),
        }
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

    pub(super) fn state(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.inner.state.read().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn fail(&self, what: &str, e: impl std::fmt::Display) -> StoreError {
        StoreError::backend(self.inner.location.clone(), format!("{what}: {e}"))
    }
}

/// Opens the log in `path` and reads it: the acknowledgment record first
/// (a reader beside a writer then never sees a record newer than the log
/// it reads), then the log, from the index checkpoint when one describes
/// it (unless `audit`, which reads it all and goes on past damage).
fn open_log(
    path: &Path,
    read_only: bool,
    audit: bool,
) -> Result<(Scanned, std::fs::File, Option<Ack>), StoreError> {
    let fail = |e: &dyn std::fmt::Display| {
        StoreError::backend(
            path.display().to_string(),
            format!("cannot open the node log: {e}"),
        )
    };
    let ack = ack::read(path, ACK_FILE).map_err(|e| fail(&e))?;
    let log_path = path.join(LOG_FILE);
    let file = crate::backend::directory::open_regular(&log_path, !read_only)
        .map_err(|e| {
            // The log cannot be opened for writing: the case for a
            // read-only opening only when it can be read (a log that
            // cannot be read at all is not a directory that cannot be
            // written, and no opening reads it).
            let only_unwritable = !read_only
                && (e.raw_os_error() == Some(libc::EROFS)
                    || crate::backend::directory::open_regular(&log_path, false).is_ok());
            if only_unwritable {
                opening_error(&path.display().to_string(), "cannot open the node log", e)
            } else {
                StoreError::backend(
                    path.display().to_string(),
                    format!("cannot read the node log {LOG_FILE}: {e}"),
                )
            }
        })?
        .ok_or_else(|| fail(&format!("{LOG_FILE} is missing")))?;
    let log_len = file.metadata().map_err(|e| fail(&e))?.len();
    // What the file is comes first: a file that is not a node log at all
    // is named as such, not as a log that lost its bytes.
    let mut header = [0u8; FILE_HEADER_LEN as usize];
    std::os::unix::fs::FileExt::read_exact_at(&file, &mut header, 0).map_err(|_| {
        fail(&format!(
            "not a node log ({log_len} bytes, shorter than its header)"
        ))
    })?;
    format::check_file_header(&header).map_err(|e| fail(&e))?;
    // The audit reads the whole log, and checks it against the checkpoint
    // as an opening would: what an opening refuses is never whole.
    let mut checkpoint_damage = None;
    let mut confirm_checkpoint = None;
    let from = if audit {
        match checkpoint::load(path, &file, log_len) {
            Ok(c) => confirm_checkpoint = c.map(|c| (c.end, c.next_seq)),
            Err(e) => checkpoint_damage = Some(checkpoint_refusal(e, log_len)),
        }
        None
    } else {
        checkpoint::load(path, &file, log_len).map_err(|e| fail(&e))?
    };
    let how = Scan {
        from,
        ack,
        tolerate_damage: audit,
        confirm_checkpoint,
    };
    let mut scanned = scan(&file, how).map_err(|e| fail(&e))?;
    if let Some(d) = checkpoint_damage {
        scanned.damage.push(d);
        scanned.damage.sort_by_key(|d| d.at);
    }
    Ok((scanned, file, ack))
}

/// The damage an opening's refusal of the index checkpoint names (`the
/// node log is damaged at byte N: …`), for the audit's list: the offset
/// it names (else the log's length) and what it says.
fn checkpoint_refusal(e: String, log_len: u64) -> Damage {
    let rest = e
        .strip_prefix("the node log is damaged at byte ")
        .or_else(|| e.strip_prefix("the node log is damaged at bytes "));
    let at = rest.and_then(|r| {
        let digits: String = r.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    });
    let what = match rest.and_then(|r| r.split_once(": ")) {
        Some((_, what)) if at.is_some() => what.to_owned(),
        _ => e.clone(),
    };
    Damage {
        at: at.unwrap_or(log_len),
        what,
    }
}

/// What [`LogStore::open_audit`] found reading a whole log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogAudit {
    /// Whole batches read (each checked: header and body checksums, its
    /// sequence number, every record).
    pub batches: u64,
    /// Bytes of the log up to the end of its last whole batch.
    pub log_bytes: u64,
    /// The sequence number of the last batch acknowledged as durable, if
    /// the store keeps the record (see `log_store/ack.rs`).
    pub acknowledged: Option<u64>,
    /// Every damaged place, in log order.
    pub damage: Vec<Damage>,
}

impl NodeStore for LogStore {
    fn location(&self) -> String {
        self.inner.location.clone()
    }

    fn read_value(&self, hash: &Hash256) -> Result<Option<Vec<u8>>, StoreError> {
        self.read(hash)
    }

    fn contains(&self, hash: &Hash256) -> Result<bool, StoreError> {
        let s = self.state();
        Ok(s.find(hash)
            .map_err(|e| self.fail("cannot read", e))?
            .is_some())
    }

    fn write(&self, batch: Batch) -> Result<(), StoreError> {
        self.append(batch, false)
    }

    /// One append and one fsync; an empty batch, the fsync alone (nothing
    /// to do on a store open read-only).
    fn write_durably(&self, batch: Batch) -> Result<(), StoreError> {
        if !batch.is_empty() {
            return self.append(batch, true);
        }
        if self.inner.read_only {
            return Ok(());
        }
        let mut w = self.inner.writer.lock().unwrap_or_else(|p| p.into_inner());
        self.sync_locked(&mut w)
    }

    /// Held: the index (8 bytes a slot) and the metadata records;
    /// reserved: what the index's next growth or the next reclaim will
    /// allocate beside the index (once either is near).
    fn memory(&self) -> StoreMemory {
        let s = self.state();
        let meta: usize = s.meta.iter().map(|(k, v)| k.len() + v.len()).sum();
        StoreMemory {
            resident: (s.index.heap_bytes() + meta) as u64,
            reserved: LogStore::bytes_reserved_ahead(&s) as u64,
        }
    }

    /// Appends in any order, encoding on one thread while another writes.
    fn bulk_ingest(&self) -> Option<&dyn BulkIngest> {
        Some(self)
    }

    fn for_each_value(
        &self,
        f: &mut dyn FnMut(Hash256, &[u8]) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        self.each_value(f)
    }

    fn get_meta(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.state().meta.get(name).cloned())
    }

    fn disk_bytes(&self) -> Result<u64, StoreError> {
        crate::backend::directory::dir_bytes(&self.inner.path)
            .map_err(|e| self.fail("cannot measure the directory", e))
    }

    /// Reclaims when a quarter of the log is dead (see `reclaim.rs`,
    /// [`LogStore::reclaim_if_worthwhile`]).
    fn reclaim_space(&self) -> Result<(), StoreError> {
        self.reclaim_if_worthwhile()
    }
}

impl BulkIngest for LogStore {
    /// Appends in any order: an import is written in tree order, with no
    /// pass per hash range and no sort (1M entries: see docs/design.md).
    fn wants_hash_ordered_import(&self) -> bool {
        false
    }

    fn ingest_sorted(
        &self,
        nodes: &mut dyn Iterator<Item = (Hash256, Vec<u8>)>,
    ) -> Result<(), StoreError> {
        BatchedIngest(self).ingest_sorted(nodes)
    }

    /// Encodes on the calling thread while another writes and indexes
    /// (see `log_store/ingest.rs`).
    fn ingest_unordered(&self, feed: &mut dyn FnMut(&mut NodeSink<'_>)) -> Result<(), StoreError> {
        self.ingest(feed)
    }
}

#[cfg(test)]
mod tests {
    use std::fs::File;

    use super::*;
    use crate::node::{NodeObject, NodeType};
    use crate::store::NodeStoreExt;

    fn a_batch(seed: u8) -> (Batch, Hash256) {
        let node = NodeObject::from_prefix(NodeType::AccountNode, &[seed; 72]);
        let hash = node.hash();
        let mut batch = Batch::new();
        batch.put_node(node);
        (batch, hash)
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
