//! The fjall backend: a pure-Rust LSM tree (no system packages, plain
//! `cargo build`). The default backend is the node log
//! ([`crate::LogStore`]); fjall directories are opened as such wherever a
//! store is opened by location ([`crate::open()`]).
//!
//! Two keyspaces in one database: `nodes` (32-byte hash → value) and `meta`
//! (record name → bytes). A [`Batch`] becomes one fjall write batch across
//! both, which fjall journals atomically and flushes to the operating
//! system before `write` returns: a killed process loses no acknowledged
//! batch and never shows half of one. [`NodeStore::write_durably`] (and
//! [`crate::NodeStoreExt::sync`]) adds fsync, for power loss.

use std::path::{Path, PathBuf};

use fjall::config::PinningPolicy;
use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};

use crate::error::StoreError;
use crate::meta;
use crate::store::{Batch, NodeStore, Op};

mod flush;
mod guards;
mod node_store;
mod shadow;

use flush::*;
use guards::*;
use shadow::*;

/// Options of [`FjallStore::open_with`].
#[derive(Clone, Debug)]
pub struct FjallOptions {
    /// Block-cache capacity in bytes. Default 64 MiB.
    pub cache_bytes: u64,
    /// Write-buffer (memtable) size of the node keyspace, in bytes, at
    /// least 1 MiB. Default 64 MiB. Writes sit here until flushed to a
    /// table, so this (up to twice, while one buffer is being flushed) is
    /// part of a writer's memory.
    pub memtable_bytes: u64,
    /// fjall's background threads (flushes and compactions), at least 1.
    /// Default 1: with two, while one compacts, the other takes the
    /// compaction request meant for it, puts it back and takes it again,
    /// in a loop (fjall 3.1's worker 0 leaves compactions to the others),
    /// which burnt a core for nothing (measured: `commit_10k` at 1M entries
    /// used 10% more CPU with two, for the same wall time).
    pub worker_threads: usize,
}

impl Default for FjallOptions {
    fn default() -> Self {
        FjallOptions {
            cache_bytes: 64 << 20,
            memtable_bytes: 64 << 20,
            worker_threads: 1,
        }
    }
}

impl FjallOptions {
    /// For a store read and written through a [`crate::BackedMap`]: the
    /// map's node cache holds the decoded, verified nodes, so fjall's block
    /// cache would hold the same nodes again (compressed) and is small, 8
    /// MiB; the write buffer is 4 MiB, so a writer's memory is the map's
    /// budget plus a small fixed part. Measured (`durable` workload, 1M
    /// entries, 20 blocks of 10k writes, two runs each): the same commit
    /// rate as 64 MiB of each (23.5–27.6k vs 22.1–24.9k writes/s) at 225
    /// instead of 333 MiB of peak RSS.
    pub fn beside_node_cache() -> FjallOptions {
        FjallOptions {
            cache_bytes: 8 << 20,
            memtable_bytes: 4 << 20,
            ..FjallOptions::default()
        }
    }
}

/// A node store in a fjall database directory.
#[derive(Clone)]
pub struct FjallStore {
    /// Payload bytes written since the node memtable was last rotated;
    /// shared by the clones, which flush on the last drop. First, so it
    /// drops (and flushes) before the handles below.
    unflushed: std::sync::Arc<FlushOnDrop>,
    path: PathBuf,
    db: Database,
    nodes: Keyspace,
    meta: Keyspace,
    memtable_bytes: u64,
    /// The sequence number of the next durable write and the
    /// acknowledgment record ([`crate::backend::ack`], `shamap.ack`), shared by
    /// the clones.
    ack: std::sync::Arc<std::sync::Mutex<Acknowledged>>,
    /// Set when opened by [`FjallStore::open_read_only`]: writes are
    /// refused, and the database runs in this shadow directory (dropped
    /// last, after the database has closed).
    shadow: Option<std::sync::Arc<ShadowDir>>,
}

/// The metadata record holding the sequence number of the last durable
/// write, written in the same fjall batch as that write.
const DURABLE_SEQ: &str = "durable_seq";
/// The acknowledgment record's file in a fjall store's directory.
pub(super) const FJALL_ACK_FILE: &str = "shamap.ack";

/// Durable writes, numbered: each durable write carries its number in
/// [`DURABLE_SEQ`]; once fjall has synced it, the number goes to the
/// acknowledgment record. An opening that finds the record ahead of the
/// database refuses (fjall takes a journal cut short for a torn write and
/// drops what it held, acknowledged or not).
#[derive(Debug, Default)]
struct Acknowledged {
    next: u64,
    file: Option<crate::backend::ack::AckFile>,
    /// Set when a durable write could not be recorded as acknowledged:
    /// no more writes until the store is reopened.
    poisoned: Option<String>,
}

impl std::fmt::Debug for FjallStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FjallStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl FjallStore {
    /// Opens (or creates) the store in directory `path` with default
    /// options, and checks its format version.
    pub fn open(path: impl AsRef<Path>) -> Result<FjallStore, StoreError> {
        FjallStore::open_with(path, &FjallOptions::default())
    }

    /// Opens (or creates) the store in `path`; see [`FjallStore::open`].
    /// A store is created only in a directory that does not exist or is
    /// empty: a non-empty directory that is not a store is refused, never
    /// filled.
    pub fn open_with(
        path: impl AsRef<Path>,
        opts: &FjallOptions,
    ) -> Result<FjallStore, StoreError> {
        let path = path.as_ref().to_path_buf();
        crate::backend::directory::refuse_special_files(&path)?;
        clear_unfinished_creation(&path)?;
        crate::backend::directory::refuse_foreign_directory(
            &path,
            FjallStore::is_store(&path),
            |name| name == FJALL_LOCK,
        )?;
        let acked = read_ack(&path)?;
        FjallStore::open_in(path.clone(), &path, opts, None, acked)
    }

    /// Opens the existing store in `path` for reading only, when `path`
    /// cannot be written (a read-only file system, a directory without
    /// write permission): fjall writes a lock file and a journal even to
    /// read, so the database runs in a shadow directory under the system's
    /// temporary directory, where the store's immutable table files are
    /// linked and its small mutable files (journal, manifests, version)
    /// copied. Nothing in `path` is ever written. Writes through the
    /// returned store are refused with an error that says so.
    ///
    /// On a store that can be written, prefer [`FjallStore::open`]: this
    /// copies the journal (up to its size, 64 MiB by default) and takes no
    /// lock, so it does not see a writer's later changes.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<FjallStore, StoreError> {
        let path = path.as_ref().to_path_buf();
        let loc = path.display().to_string();
        crate::backend::directory::refuse_special_files(&path)?;
        // Before the copy: a writer beside this opening may acknowledge
        // more, never less, than the copy holds.
        let acked = read_ack(&path)?;
        if !path.join(FJALL_MARKER).is_file() {
            return Err(StoreError::NoStore {
                location: loc,
                reason: "no store here".to_owned(),
            });
        }
        let shadow = ShadowDir::mirror(&path)
            .map_err(|e| StoreError::backend(loc, format!("cannot open read-only: {e}")))?;
        let dir = shadow.path.clone();
        FjallStore::open_in(
            path,
            &dir,
            &FjallOptions::default(),
            Some(std::sync::Arc::new(shadow)),
            acked,
        )
    }

    /// True when `path` holds a fjall database (its `version` file).
    pub fn is_store(path: &Path) -> bool {
        path.join(FJALL_MARKER).is_file()
    }

    /// True when opening `e` failed because the directory cannot be
    /// written (`EROFS`, `EACCES`, `EPERM`): the case for
    /// [`FjallStore::open_read_only`].
    pub fn is_unwritable(e: &StoreError) -> bool {
        matches!(e, StoreError::Unwritable { .. })
    }

    /// Opens the database in `dir` (the store's own directory, or its
    /// shadow) as the store at `path`.
    fn open_in(
        path: PathBuf,
        dir: &Path,
        opts: &FjallOptions,
        shadow: Option<std::sync::Arc<ShadowDir>>,
        acked: Option<crate::backend::ack::Ack>,
    ) -> Result<FjallStore, StoreError> {
        let loc = path.display().to_string();
        let err = |e: fjall::Error| match &e {
            fjall::Error::Io(io) if crate::backend::directory::is_unwritable_io(io) => {
                StoreError::Unwritable {
                    location: loc.clone(),
                    message: format!("cannot open: {}", in_words(&e)),
                }
            }
            fjall::Error::Locked => StoreError::Locked {
                location: loc.clone(),
            },
            _ => StoreError::backend(loc.clone(), format!("cannot open: {}", in_words(&e))),
        };
        // fjall tries a held lock three times, 100 ms apart, and only when
        // the database exists. Our own lock may still be held for a moment
        // by a child process being started by another thread (see
        // `directory::take_lock`), so a held lock is tried again for as
        // long as the node log's; another writer's is still refused.
        check_version_files(dir, &loc)?;
        let start = std::time::Instant::now();
        let db = loop {
            let opened = contain_panic(&loc, || {
                Database::builder(dir)
                    .worker_threads(opts.worker_threads.max(1))
                    .cache_size(opts.cache_bytes)
                    .open()
            })?;
            match opened {
                Err(fjall::Error::Locked)
                    if start.elapsed() < crate::backend::directory::LOCK_PATIENCE =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                other => break other.map_err(err)?,
            }
        };
        let keyspaces = contain_panic(&loc, || {
            let nodes = db.keyspace("nodes", || {
                // Keys are hashes: every read is a random point read. Pin the
                // filter and index blocks of every level (about 2 bytes per
                // node), so a read costs one data-block load, not also a
                // filter and an index block re-read and re-checksummed
                // through a small block cache. Creation-time options: they
                // apply to stores created by this version.
                KeyspaceCreateOptions::default()
                    .expect_point_read_hits(false)
                    .filter_block_pinning_policy(PinningPolicy::all(true))
                    .index_block_pinning_policy(PinningPolicy::all(true))
                    .max_memtable_size(opts.memtable_bytes.max(1 << 20))
            })?;
            let meta = db.keyspace("meta", KeyspaceCreateOptions::default)?;
            Ok((nodes, meta))
        });
        let (nodes, meta) = match keyspaces {
            Ok(opened) => opened.map_err(err)?,
            Err(e) => {
                // The panic poisoned fjall's locks, and its `Drop` expects
                // them whole: it would panic, and panic again while
                // unwinding (an abort). The database is left undropped: its
                // worker threads, open files and lock stay until the process
                // ends, the price of refusing damaged files in one line.
                std::mem::forget(db);
                return Err(e);
            }
        };
        let (nodes_handle, meta_handle, db_handle) = (nodes.clone(), meta.clone(), db.clone());
        let store = FjallStore {
            path,
            db,
            nodes,
            meta,
            unflushed: std::sync::Arc::new(FlushOnDrop {
                pending: Default::default(),
                keyspaces: [nodes_handle, meta_handle],
                _db: db_handle,
            }),
            memtable_bytes: opts.memtable_bytes.max(1 << 20),
            ack: Default::default(),
            shadow,
        };
        store.check_acknowledged(acked)?;
        if store.shadow.is_some() {
            meta::check_format_read_only(&store)?;
            return Ok(store);
        }
        meta::check_format(&store)?;
        // Reopening replays the journal's unflushed writes into memtables;
        // a store last written with a larger write buffer (an import) would
        // otherwise hold all of that in RAM. Flush it down to this opening's
        // budget before handing the store out.
        if store.db.write_buffer_size() > store.memtable_bytes {
            store.flush_memtables()?;
        }
        Ok(store)
    }

    /// Refuses a database that holds fewer durable writes than the
    /// acknowledgment record says were acknowledged; numbers the next one.
    fn check_acknowledged(
        &self,
        acked: Option<crate::backend::ack::Ack>,
    ) -> Result<(), StoreError> {
        let stored = match self.get_meta(DURABLE_SEQ)? {
            None => None,
            Some(b) => Some(u64::from_le_bytes(b.as_slice().try_into().map_err(
                |_| {
                    self.fail(
                        "cannot open",
                        format!(
                            "metadata record '{DURABLE_SEQ}' of {} bytes, not 8",
                            b.len()
                        ),
                    )
                },
            )?)),
        };
        if let Some(a) = acked {
            if stored.is_none_or(|s| s < a.seq) {
                return Err(self.fail(
                    "cannot open",
                    format!(
                        "durable write {} was acknowledged ({FJALL_ACK_FILE}), but the database holds writes up to {}: acknowledged commits are missing (fjall's journal was cut short, damaged or replaced by an older copy)",
                        a.seq,
                        stored.map_or("none".to_owned(), |s| s.to_string())
                    ),
                ));
            }
        }
        self.acks().next = stored.map_or(0, |s| s + 1);
        Ok(())
    }

    fn acks(&self) -> std::sync::MutexGuard<'_, Acknowledged> {
        self.ack.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes `batch` and syncs it, numbered, then records it as
    /// acknowledged. A write that fjall committed and synced but whose
    /// record cannot be written is in the database (fjall cannot take it
    /// back): the error says the commit may have landed, and the store
    /// takes no more writes until reopened (the next opening numbers on
    /// from the database, which holds it).
    fn write_acknowledged(&self, mut batch: Batch) -> Result<(), StoreError> {
        let mut a = self.acks();
        if let Some(why) = &a.poisoned {
            return Err(self.fail("cannot write", why.as_str()));
        }
        let seq = a.next;
        batch.put_meta(DURABLE_SEQ, seq.to_le_bytes().to_vec());
        self.write_with(batch, PersistMode::SyncAll)?;
        a.next = seq + 1;
        let ack = crate::backend::ack::Ack { seq, end: 0 };
        let recorded = crate::backend::ack::record_in(&mut a.file, &self.path, FJALL_ACK_FILE, ack);
        recorded.map_err(|e| {
            let e = e.error;
            a.poisoned = Some(format!(
                "an earlier durable write could not be recorded as acknowledged ({FJALL_ACK_FILE}: {e}); reopen the store"
            ));
            self.fail(
                "cannot record the write as acknowledged",
                format!("{FJALL_ACK_FILE}: {e}; durable write {seq} is synced in the database all the same, so the commit may have landed (the next opening reads it); no more writes until the store is reopened"),
            )
        })
    }

    /// Refuses a write once a durable write could not be recorded as
    /// acknowledged.
    fn check_not_poisoned(&self) -> Result<(), StoreError> {
        match &self.acks().poisoned {
            Some(why) => Err(self.fail("cannot write", why.as_str())),
            None => Ok(()),
        }
    }

    /// Moves everything from the write buffers into table files and waits
    /// (for measuring bytes on disk, or before copying the directory).
    /// Bounded: a flush that fails (a full disk) is an error, never a wait.
    pub fn flush_memtables(&self) -> Result<(), StoreError> {
        for ks in [&self.nodes, &self.meta] {
            flush_and_wait(&self.db, ks).map_err(|e| self.fail("cannot flush", e))?;
        }
        Ok(())
    }

    /// Applies `batch` as one fjall write batch persisted with `mode`.
    fn write_with(&self, batch: Batch, mode: PersistMode) -> Result<(), StoreError> {
        if self.shadow.is_some() {
            return Err(self.fail(
                "cannot write",
                "the store is open read-only (its directory cannot be written)",
            ));
        }
        if batch.is_empty() {
            return Ok(());
        }
        let payload = batch.payload_bytes() as u64;
        let mut b = self.db.batch().durability(Some(mode));
        for op in batch.into_ops() {
            match op {
                Op::PutNode { hash, value } => b.insert(&self.nodes, hash.0.to_vec(), value),
                Op::DeleteNode(hash) => b.remove(&self.nodes, hash.0.to_vec()),
                Op::PutMeta { name, value } => b.insert(&self.meta, name.into_bytes(), value),
                Op::DeleteMeta(name) => b.remove(&self.meta, name.into_bytes()),
            }
        }
        b.commit().map_err(|e| self.fail("cannot write batch", e))?;
        // fjall keeps a keyspace's memtable size as chosen when the keyspace
        // was created; rotating here holds an existing store to this
        // opening's `memtable_bytes` (a sealed memtable is flushed to a
        // table in the background; the journal keeps it durable meanwhile).
        use std::sync::atomic::Ordering;
        let pending = self.unflushed.pending.fetch_add(payload, Ordering::Relaxed) + payload;
        if pending > self.memtable_bytes {
            self.unflushed.pending.store(0, Ordering::Relaxed);
            // The buffer sealed last time must be on disk by now (a wait,
            // bounded, only when a flush falls a whole buffer behind);
            // this one is sealed and flushed in the background meanwhile,
            // so at most two buffers are held and a commit never waits
            // for its own buffer's flush.
            wait_for_flushes(&self.db, &self.nodes)
                .and_then(|()| self.nodes.rotate_memtable().map_err(|e| e.to_string()))
                .map_err(|e| self.fail("cannot flush the write buffer", e))?;
        }
        Ok(())
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn fail(&self, what: &str, e: impl FjallFailure) -> StoreError {
        StoreError::backend(self.location(), format!("{what}: {}", e.in_words()))
    }
}
