//! Flushing fjall's write buffers: on the last drop of a store, and
//! before a bulk import's end, with a deadline.

use fjall::{Database, Keyspace, PersistMode};

/// Flushes the write buffers when the last clone of a store is dropped, so
/// the next opening need not replay a large journal into memory (a killed
/// process skips this; the journal keeps its writes durable regardless).
pub(super) struct FlushOnDrop {
    pub(super) pending: std::sync::atomic::AtomicU64,
    pub(super) keyspaces: [Keyspace; 2],
    /// Keeps the database (and its flush workers) alive until the flush.
    pub(super) _db: Database,
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
pub(super) const FLUSH_DEADLINE: std::time::Duration = std::time::Duration::from_secs(120);

/// Seals `ks`'s write buffer and waits until the background flush has
/// written it to a table, in bounded time. fjall's own wait polls until no
/// sealed buffer is left, for ever: a flush that fails (no space left)
/// stops its worker and poisons the database, and that wait never ends. This
/// one asks the database after every poll and returns the failure instead.
pub(super) fn flush_and_wait(db: &Database, ks: &Keyspace) -> Result<(), String> {
    ks.rotate_memtable().map_err(|e| e.to_string())?;
    wait_for_flushes(db, ks)
}

/// Waits until `ks` has no sealed write buffer left (every one flushed to
/// a table), in bounded time, returning a failed flush as an error (see
/// [`flush_and_wait`]).
pub(super) fn wait_for_flushes(db: &Database, ks: &Keyspace) -> Result<(), String> {
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
