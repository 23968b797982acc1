//! The fjall backend: a pure-Rust LSM tree (no system packages, plain
//! `cargo build`). The default backend is the node log
//! ([`crate::LogStore`]); fjall directories are opened as such wherever a
//! store is opened by location ([`crate::open()`]).
//!
//! Two keyspaces in one database: `nodes` (32-byte hash → value) and `meta`
//! (record name → bytes). A [`Batch`] becomes one fjall write batch across
//! both, which fjall journals atomically and flushes to the operating
//! system before `write` returns: a killed process loses no acknowledged
//! batch and never shows half of one. [`NodeStore::sync`] adds fsync, for
//! power loss.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use fjall::config::PinningPolicy;
use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};
use shamap::Hash256;

use crate::error::StoreError;
use crate::meta;
use crate::store::{Batch, BatchedIngest, BulkIngest, NodeSink, NodeStore, Op};

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
    /// acknowledgment record ([`crate::ack`], `shamap.ack`), shared by
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
const FJALL_ACK_FILE: &str = "shamap.ack";

/// Durable writes, numbered: each durable write carries its number in
/// [`DURABLE_SEQ`]; once fjall has synced it, the number goes to the
/// acknowledgment record. An opening that finds the record ahead of the
/// database refuses (fjall takes a journal cut short for a torn write and
/// drops what it held, acknowledged or not).
#[derive(Debug, Default)]
struct Acknowledged {
    next: u64,
    file: Option<crate::ack::AckFile>,
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
        crate::directory::refuse_special_files(&path)?;
        clear_unfinished_creation(&path)?;
        crate::directory::refuse_foreign_directory(&path, FjallStore::is_store(&path), |name| {
            name == FJALL_LOCK
        })?;
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
        crate::directory::refuse_special_files(&path)?;
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
        acked: Option<crate::ack::Ack>,
    ) -> Result<FjallStore, StoreError> {
        let loc = path.display().to_string();
        let err = |e: fjall::Error| match &e {
            fjall::Error::Io(io) if is_unwritable_io(io) => StoreError::Unwritable {
                location: loc.clone(),
                message: format!("cannot open: {}", in_words(&e)),
            },
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
                Err(fjall::Error::Locked) if start.elapsed() < crate::directory::LOCK_PATIENCE => {
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
    fn check_acknowledged(&self, acked: Option<crate::ack::Ack>) -> Result<(), StoreError> {
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
        let ack = crate::ack::Ack { seq, end: 0 };
        let recorded = crate::ack::record_in(&mut a.file, &self.path, FJALL_ACK_FILE, ack);
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

/// A failure of the fjall backend, put into words for one error line.
trait FjallFailure {
    fn in_words(&self) -> String;
}

impl FjallFailure for fjall::Error {
    fn in_words(&self) -> String {
        in_words(self)
    }
}

impl FjallFailure for String {
    fn in_words(&self) -> String {
        self.clone()
    }
}

impl FjallFailure for &str {
    fn in_words(&self) -> String {
        (*self).to_owned()
    }
}

impl FjallFailure for std::io::Error {
    fn in_words(&self) -> String {
        self.to_string()
    }
}

/// Checks each keyspace's current version file (`keyspaces/<id>/v<n>`, the
/// list of its tables) against the XXH3-128 checksum its `current` file
/// records (`n` as a `u64`, the checksum as a `u128`, both little-endian,
/// then `0` for XXH3: lsm-tree 3's `persist_version`). lsm-tree reads
/// `current` but does not check the checksum, and asserts on some damaged
/// version files inside a lock its own `Drop` then takes: a panic that
/// cannot be contained (the process aborts). A `current` file of another
/// shape is left to fjall.
fn check_version_files(dir: &Path, loc: &str) -> Result<(), StoreError> {
    let keyspaces = dir.join("keyspaces");
    let Ok(entries) = std::fs::read_dir(&keyspaces) else {
        return Ok(());
    };
    let damaged = |what: String| {
        StoreError::backend(
            loc.to_owned(),
            format!("cannot open: {what} (the store's files are damaged)"),
        )
    };
    for entry in entries {
        let entry =
            entry.map_err(|e| damaged(format!("cannot list {}: {e}", keyspaces.display())))?;
        let current = entry.path().join("current");
        let Ok(bytes) = std::fs::read(&current) else {
            continue;
        };
        if bytes.len() != 25 || bytes[24] != 0 {
            continue;
        }
        let id = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
        let want = u128::from_le_bytes(bytes[8..24].try_into().expect("16 bytes"));
        let name = format!("keyspaces/{}/v{id}", entry.file_name().to_string_lossy());
        let version = std::fs::read(entry.path().join(format!("v{id}"))).map_err(|e| {
            damaged(format!(
                "cannot read {name}, which its `current` names: {e}"
            ))
        })?;
        if xxhash_rust::xxh3::xxh3_128(&version) != want {
            return Err(damaged(format!(
                "{name} ({} bytes) fails the checksum its `current` file records",
                version.len()
            )));
        }
    }
    Ok(())
}

thread_local! {
    /// Set while [`contain_panic`] runs a call into fjall on this thread.
    static PANIC_CONTAINED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, a call into fjall that reads the store's files, and turns a
/// panic inside it into an error of one line. fjall and lsm-tree assert on
/// some damaged files instead of returning an error: a flipped bit in a
/// keyspace's version file (`filter_hash_type should be XXH3`), and, in
/// builds with debug assertions, in a journal entry's lengths. The torture
/// harness found both (3 of 323 bit flips on fjall at 541da3d).
///
/// The panic's own report is kept off stderr: the first call installs a
/// panic hook that says nothing for a panic on a thread inside this
/// function and hands every other panic to the hook that was installed
/// before it (a hook set later by the application replaces this one; then
/// a contained panic is reported by it too, and still contained).
fn contain_panic<T>(location: &str, f: impl FnOnce() -> T) -> Result<T, StoreError> {
    static QUIET_HOOK: std::sync::Once = std::sync::Once::new();
    QUIET_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !PANIC_CONTAINED.with(std::cell::Cell::get) {
                previous(info);
            }
        }));
    });
    let was = PANIC_CONTAINED.with(|c| c.replace(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    PANIC_CONTAINED.with(|c| c.set(was));
    result.map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".to_owned());
        let first = message.lines().next().unwrap_or_default().to_owned();
        StoreError::backend(
            location.to_owned(),
            format!("cannot open: fjall failed on its own files, which are damaged ({first})"),
        )
    })
}

/// fjall's errors print as their `Debug` form (`FjallError: Io(Os { code:
/// 28, .. })`); this says the same in words (`No space left on device (os
/// error 28)`).
fn in_words(e: &fjall::Error) -> String {
    use fjall::Error as E;
    match e {
        E::Io(io) => io.to_string(),
        E::Storage(fjall::LsmError::Io(io)) => io.to_string(),
        E::Storage(fjall::LsmError::ChecksumMismatch { .. }) => {
            "a table block fails its checksum (the files are damaged)".to_owned()
        }
        E::Storage(inner) => format!("the table files are unreadable ({inner:?})"),
        E::Locked => "the store is locked by another process (one writer at a time)".to_owned(),
        E::Poisoned => {
            "an earlier write failed (is the disk full?); the store takes no more writes until reopened"
                .to_owned()
        }
        E::JournalRecovery(inner) => format!("the journal cannot be recovered ({inner})"),
        E::InvalidVersion(v) => format!("not a store of a fjall version this build reads ({v:?})"),
        E::Unrecoverable => "the store cannot be recovered".to_owned(),
        other => format!("{other:?}"),
    }
}

/// Flushes the write buffers when the last clone of a store is dropped, so
/// the next opening need not replay a large journal into memory (a killed
/// process skips this; the journal keeps its writes durable regardless).
struct FlushOnDrop {
    pending: std::sync::atomic::AtomicU64,
    keyspaces: [Keyspace; 2],
    /// Keeps the database (and its flush workers) alive until the flush.
    _db: Database,
}

impl Drop for FlushOnDrop {
    fn drop(&mut self) {
        if self.pending.load(std::sync::atomic::Ordering::Relaxed) > 0 {
            for ks in &self.keyspaces {
                // Best effort: a failure (a full disk) leaves the writes in
                // the journal, where the next opening finds them.
                if flush_and_wait(&self._db, ks).is_err() {
                    break;
                }
            }
        }
    }
}

/// How long [`flush_and_wait`] waits for a flush that neither finishes nor
/// fails, before it gives up (a stalled device, not a full one: a full one
/// fails the flush, which the wait sees at once).
const FLUSH_DEADLINE: std::time::Duration = std::time::Duration::from_secs(120);

/// Seals `ks`'s write buffer and waits until the background flush has
/// written it to a table, in bounded time. fjall's own wait polls until no
/// sealed buffer is left, for ever: a flush that fails (no space left)
/// stops its worker and poisons the database, and that wait never ends. This
/// one asks the database after every poll and returns the failure instead.
fn flush_and_wait(db: &Database, ks: &Keyspace) -> Result<(), String> {
    ks.rotate_memtable().map_err(|e| e.to_string())?;
    wait_for_flushes(db, ks)
}

/// Waits until `ks` has no sealed write buffer left (every one flushed to
/// a table), in bounded time, returning a failed flush as an error (see
/// [`flush_and_wait`]).
fn wait_for_flushes(db: &Database, ks: &Keyspace) -> Result<(), String> {
    let start = std::time::Instant::now();
    while ks.sealed_memtable_count() > 0 {
        // `persist` fails once a background worker has failed and poisoned
        // the database; otherwise it only hands the journal's buffer to the
        // operating system.
        db.persist(PersistMode::Buffer).map_err(|e| match e {
            fjall::Error::Poisoned => "a background flush failed (is the disk full?)".to_owned(),
            e => e.to_string(),
        })?;
        if start.elapsed() > FLUSH_DEADLINE {
            return Err(format!(
                "a background flush did not finish within {} s",
                FLUSH_DEADLINE.as_secs()
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    Ok(())
}

/// A file fjall writes in every database directory it opens.
const FJALL_MARKER: &str = "version";

/// fjall's lock file, made first when it creates a database.
const FJALL_LOCK: &str = "lock";

/// The whole version marker: `FJL` and the format version byte.
const FJALL_MARKER_LEN: u64 = 4;

/// What fjall 3's `Database::create_new` makes, in this order, before its
/// version marker is written and synced: the lock file, the `keyspaces`
/// folder (empty until then) and the first journal `0.jnl` (64 MiB of
/// preallocated zeros). Nothing is written to a database before
/// `create_new` returns, so a directory holding these alone, the marker
/// absent or shorter than its 4 bytes, is a creation that a crash or a
/// kill cut short: no data, and fjall itself cannot finish it (its journal
/// exists, so creating it again fails; without a whole marker it is no
/// store to recover). Before this was handled, a store killed in its first
/// milliseconds was refused at every later opening as "a non-empty
/// directory that is not a store".
///
/// Such leftovers, and only they (exactly these names and kinds), are
/// removed while holding the lock file's lock, so that this opening
/// creates the store afresh; a directory with anything else in it is left
/// to [`crate::directory::refuse_foreign_directory`]. A creation still
/// running in another process holds the lock, and is reported as such.
fn clear_unfinished_creation(path: &Path) -> Result<(), StoreError> {
    const LOCK: &str = FJALL_LOCK;
    const KEYSPACES: &str = "keyspaces";
    const FIRST_JOURNAL: &str = "0.jnl";
    let Ok(entries) = std::fs::read_dir(path) else {
        return Ok(()); // absent, or unreadable: the opening reports why
    };
    let mut seen = Vec::new();
    for entry in entries {
        let Ok(entry) = entry else { return Ok(()) };
        let Ok(kind) = entry.file_type() else {
            return Ok(());
        };
        let name = entry.file_name();
        let leftover = match name.to_str() {
            Some(LOCK | FIRST_JOURNAL) => kind.is_file(),
            Some(KEYSPACES) => {
                kind.is_dir()
                    && std::fs::read_dir(entry.path()).is_ok_and(|mut d| d.next().is_none())
            }
            Some(FJALL_MARKER) => {
                kind.is_file() && entry.metadata().is_ok_and(|m| m.len() < FJALL_MARKER_LEN)
            }
            _ => false,
        };
        if !leftover {
            return Ok(());
        }
        seen.push(name);
    }
    if seen.is_empty() || seen.iter().all(|n| n == LOCK) {
        return Ok(()); // nothing begun, or only the lock file, which fjall reuses
    }
    let loc = || path.display().to_string();
    let fail = |what: &str, e: std::io::Error| {
        StoreError::backend(
            loc(),
            format!("an unfinished store creation was found; {what}: {e}"),
        )
    };
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path.join(LOCK))
        .map_err(|e| fail("cannot open its lock file", e))?;
    match crate::directory::take_lock(&lock) {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(StoreError::backend(
                loc(),
                "the store is being created by another process (its lock is held)",
            ))
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(fail("cannot lock it", e)),
    }
    // The marker first: a kill during the clean-up leaves again a state
    // this function recognizes.
    for name in [FJALL_MARKER, FIRST_JOURNAL] {
        match std::fs::remove_file(path.join(name)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(fail(&format!("cannot remove its {name}"), e))
            }
            _ => {}
        }
    }
    match std::fs::remove_dir(path.join(KEYSPACES)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(fail("cannot remove its keyspaces folder", e))
        }
        _ => {}
    }
    // The lock file stays (fjall opens an existing one); the lock is
    // released when `lock` closes, before fjall takes it.
    drop(lock);
    Ok(())
}

/// The acknowledgment record of the fjall store in `path`, if it has one.
fn read_ack(path: &Path) -> Result<Option<crate::ack::Ack>, StoreError> {
    crate::ack::read(path, FJALL_ACK_FILE)
        .map_err(|e| StoreError::backend(path.display().to_string(), format!("cannot open: {e}")))
}

/// Read-only file system, permission denied, operation not permitted.
fn is_unwritable_io(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(30 | 13 | 1))
        || e.kind() == std::io::ErrorKind::PermissionDenied
}

/// The shadow directory of a read-only opening: table and blob files
/// linked (fjall never changes one once written), everything else copied.
/// Removed on drop.
#[derive(Debug)]
struct ShadowDir {
    path: PathBuf,
}

impl ShadowDir {
    fn mirror(store: &Path) -> std::io::Result<ShadowDir> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "shamap-read-only-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let shadow = ShadowDir { path };
        let _ = std::fs::remove_dir_all(&shadow.path);
        std::fs::create_dir_all(&shadow.path)?;
        let store = std::fs::canonicalize(store)?;
        let mut stack = vec![PathBuf::new()];
        while let Some(rel) = stack.pop() {
            for entry in std::fs::read_dir(store.join(&rel))? {
                let entry = entry?;
                let name = entry.file_name();
                let rel_child = rel.join(&name);
                let from = store.join(&rel_child);
                let to = shadow.path.join(&rel_child);
                if entry.file_type()?.is_dir() {
                    std::fs::create_dir_all(&to)?;
                    stack.push(rel_child);
                } else if immutable(&rel) {
                    link(&from, &to)?;
                } else {
                    std::fs::copy(&from, &to)?;
                }
            }
        }
        Ok(shadow)
    }
}

/// Table and blob files: written once under a new name, never changed.
fn immutable(dir: &Path) -> bool {
    matches!(
        dir.file_name().and_then(|n| n.to_str()),
        Some("tables" | "blobs")
    )
}

#[cfg(unix)]
fn link(from: &Path, to: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(from, to)
}

#[cfg(not(unix))]
fn link(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::copy(from, to).map(|_| ())
}

impl Drop for ShadowDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

impl NodeStore for FjallStore {
    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn read_value(&self, hash: &Hash256) -> Result<Option<Vec<u8>>, StoreError> {
        self.nodes
            .get(hash.0)
            .map(|v| v.map(|s| s.to_vec()))
            .map_err(|e| self.fail(&format!("cannot read node {hash}"), e))
    }

    fn contains(&self, hash: &Hash256) -> Result<bool, StoreError> {
        self.nodes
            .contains_key(hash.0)
            .map_err(|e| self.fail(&format!("cannot read node {hash}"), e))
    }

    fn write(&self, batch: Batch) -> Result<(), StoreError> {
        self.check_not_poisoned()?;
        self.write_with(batch, PersistMode::Buffer)
    }

    fn write_durably(&self, batch: Batch) -> Result<(), StoreError> {
        if self.shadow.is_some() && batch.is_empty() {
            return self.sync();
        }
        self.write_acknowledged(batch)
    }

    fn for_each_value(
        &self,
        f: &mut dyn FnMut(Hash256, &[u8]) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        for guard in self.nodes.iter() {
            let (k, v) = guard
                .into_inner()
                .map_err(|e| self.fail("cannot iterate nodes", e))?;
            let hash = Hash256::from_slice(&k).ok_or_else(|| {
                self.fail(
                    "cannot iterate nodes",
                    format!("a key of {} bytes is not a node hash", k.len()),
                )
            })?;
            if f(hash, &v).is_break() {
                break;
            }
        }
        Ok(())
    }

    fn get_meta(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.meta
            .get(name.as_bytes())
            .map(|v| v.map(|s| s.to_vec()))
            .map_err(|e| self.fail(&format!("cannot read metadata record '{name}'"), e))
    }

    fn disk_bytes(&self) -> Result<u64, StoreError> {
        crate::directory::dir_bytes(&self.path)
            .map_err(|e| self.fail("cannot measure the directory", e))
    }

    /// Syncs, numbered and acknowledged as a durable write is (a
    /// read-only store only syncs its shadow).
    fn sync(&self) -> Result<(), StoreError> {
        if self.shadow.is_some() {
            return self
                .db
                .persist(PersistMode::SyncAll)
                .map_err(|e| self.fail("cannot sync", e));
        }
        self.write_acknowledged(Batch::new())
    }

    /// Table files built directly, then moved to the last level.
    fn bulk_ingest(&self) -> Option<&dyn BulkIngest> {
        Some(self)
    }
}

impl BulkIngest for FjallStore {
    fn ingest_sorted(
        &self,
        nodes: &mut dyn Iterator<Item = (Hash256, Vec<u8>)>,
    ) -> Result<(), StoreError> {
        if self.shadow.is_some() {
            return Err(self.fail(
                "cannot write",
                "the store is open read-only (its directory cannot be written)",
            ));
        }
        let mut ingestion = self
            .nodes
            .start_ingestion()
            .map_err(|e| self.fail("cannot start a bulk write", e))?;
        // fjall panics on keys out of order: refuse them here instead.
        let mut last: Option<Hash256> = None;
        for (hash, value) in nodes {
            if last.is_some_and(|l| l >= hash) {
                return Err(self.fail(
                    "cannot bulk-write nodes",
                    format!("node {hash} is out of hash order"),
                ));
            }
            last = Some(hash);
            ingestion
                .write(hash.0.to_vec(), value)
                .map_err(|e| self.fail("cannot bulk-write nodes", e))?;
        }
        // The table files and the version naming them are fsynced by fjall
        // before `finish` returns.
        ingestion
            .finish()
            .map_err(|e| self.fail("cannot finish a bulk write", e))
    }

    fn finish_bulk(&self) -> Result<(), StoreError> {
        // An ingested run lands in level 0, uncompressed. Left there, the first level-0
        // compaction after a few write-buffer flushes merges the whole
        // imported state into level 1, then on down through the levels, in
        // the background of whatever runs next (measured: a 10M-entry
        // import's first 20 commits ran at about 1k writes/s while fjall
        // rewrote its 3 GB). One major compaction moves it to the last
        // level in one pass (compressed: fjall's policy compresses the
        // deeper levels), into tables whose filter and index blocks are
        // pinned, so later compactions only touch what later writes
        // overlap. (`major_compact` is hidden in fjall's docs; it blocks
        // until done, and its tables and version are fsynced.)
        self.nodes
            .major_compact()
            .map_err(|e| self.fail("cannot compact the bulk-written nodes", e))
    }

    fn ingest_unordered(&self, feed: &mut dyn FnMut(&mut NodeSink<'_>)) -> Result<(), StoreError> {
        BatchedIngest(self).ingest_unordered(feed)
    }
}
