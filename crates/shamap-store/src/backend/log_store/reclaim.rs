//! The reclaim: when most of the log is dead (deleted or replaced
//! records), the log rewrites its live records and the metadata to a new
//! log, synced and renamed over the old one, to reclaim the dead bytes.

use std::fs::File;
use std::io::Write;
use std::sync::Arc;

use super::format::{self, BatchEncoder, FILE_HEADER_LEN};
use super::index::Index;
use super::state::{next_file_id, PosReader, State};
use super::writer::Writer;
use super::{checkpoint, files, LogStore, LOG_FILE, NEW_LOG_FILE};
use crate::error::StoreError;

/// A reclaim writes the live records in batches of about this many bytes
/// (its buffer, beside the new index and the list of offsets).
const RECLAIM_BATCH_BYTES: usize = 4 << 20;
/// A reclaim reads the old log through a buffer of this many bytes.
const RECLAIM_READ_BYTES: usize = 1 << 20;
/// A write starts a reclaim ([`LogStore::reclaim_if_mostly_dead`]) when
/// dead bytes exceed live bytes and are at least this many: a gc's rewrite
/// costs at most about twice what it freed.
const MOSTLY_DEAD_MIN_DEAD: u64 = 4 << 20;

/// A reclaim asked for ([`LogStore::reclaim_if_worthwhile`], at the end of
/// a gc) starts when dead bytes are at least this many and a quarter of
/// the log.
const WORTHWHILE_MIN_DEAD: u64 = 1 << 20;

/// Room in the batch buffer past [`RECLAIM_BATCH_BYTES`] for the record
/// that crosses it (a larger one grows the buffer).
const RECLAIM_BATCH_SLACK: usize = 64 << 10;

/// Bytes a reclaim of a log of `end` bytes with `live_nodes` nodes
/// allocates while it runs, beside the index in use: the sorted list of
/// offsets ([`LiveOffsets`]), the new index, the batch buffer and the read
/// buffer.
fn reclaim_bytes(end: u64, live_nodes: usize) -> usize {
    live_nodes * LiveOffsets::bytes_each(end)
        + Index::with_capacity(live_nodes).heap_bytes()
        + RECLAIM_BATCH_BYTES
        + RECLAIM_BATCH_SLACK
        + RECLAIM_READ_BYTES
}

/// The live records' offsets, sorted: in 4 bytes each (the offset over 8,
/// records being 8-aligned) while the log is under 32 GiB, else 8.
enum LiveOffsets {
    Eighths(Vec<u32>),
    Bytes(Vec<u64>),
}

impl LiveOffsets {
    fn bytes_each(end: u64) -> usize {
        if end >> 3 <= u64::from(u32::MAX) {
            4
        } else {
            8
        }
    }

    fn sorted(index: &Index, end: u64) -> LiveOffsets {
        let mut offsets = if LiveOffsets::bytes_each(end) == 4 {
            let mut v = Vec::with_capacity(index.len());
            v.extend(
                index
                    .offsets()
                    .map(|o| u32::try_from(o >> 3).expect("a log under 32 GiB")),
            );
            LiveOffsets::Eighths(v)
        } else {
            let mut v = Vec::with_capacity(index.len());
            v.extend(index.offsets());
            LiveOffsets::Bytes(v)
        };
        match &mut offsets {
            LiveOffsets::Eighths(v) => v.sort_unstable(),
            LiveOffsets::Bytes(v) => v.sort_unstable(),
        }
        offsets
    }

    fn len(&self) -> usize {
        match self {
            LiveOffsets::Eighths(v) => v.len(),
            LiveOffsets::Bytes(v) => v.len(),
        }
    }

    fn iter(&self) -> Box<dyn Iterator<Item = u64> + '_> {
        match self {
            LiveOffsets::Eighths(v) => Box::new(v.iter().map(|&o| u64::from(o) << 3)),
            LiveOffsets::Bytes(v) => Box::new(v.iter().copied()),
        }
    }
}

/// True when dead bytes are past half the way to starting a reclaim.
fn reclaim_near(end: u64, live: u64) -> bool {
    let dead = end - live;
    dead >= MOSTLY_DEAD_MIN_DEAD / 2 && dead * 2 > live
}

impl LogStore {
    /// What the index's next growth or the next reclaim will allocate
    /// beside the index (once either is near).
    pub(super) fn bytes_reserved_ahead(s: &State) -> usize {
        let reclaim = if reclaim_near(s.end, s.live_bytes) {
            reclaim_bytes(s.end, s.index.len())
        } else {
            0
        };
        s.index.growth_bytes_ahead().max(reclaim)
    }

    /// Reclaims (copies the live records to a new log) when most of the log
    /// is dead.
    pub(super) fn reclaim_if_mostly_dead(&self, w: &mut Writer) -> Result<(), StoreError> {
        let (end, live) = {
            let s = self.state();
            (s.end, s.live_bytes)
        };
        let dead = end - live;
        if dead < MOSTLY_DEAD_MIN_DEAD || dead <= live {
            return Ok(());
        }
        self.reclaim(w)
    }

    /// Reclaims (copies the live records to a new log) when a quarter of
    /// the log (and at least 1 MiB) is dead: records deleted, or written
    /// again (a damaged copy repaired, a node stored twice by earlier
    /// builds). What a gc calls last, whether or not it deleted anything.
    pub fn reclaim_if_worthwhile(&self) -> Result<(), StoreError> {
        if self.inner.read_only {
            return Ok(());
        }
        let mut w = self.inner.writer.lock().unwrap_or_else(|p| p.into_inner());
        let (end, live) = {
            let s = self.state();
            (s.end, s.live_bytes)
        };
        let dead = end - live;
        if dead < WORTHWHILE_MIN_DEAD || dead * 4 < end {
            return Ok(());
        }
        self.reclaim(&mut w)
    }

    /// The reclaim, now, however little is dead: writes every live node
    /// and the metadata to a new log, syncs it and renames it over the old
    /// one; readers switch to it under the lock (one that has the old file
    /// open reads it to the end of its read). A crash before the rename
    /// leaves the old log, whole; after it, the new one.
    pub fn reclaim_now(&self) -> Result<(), StoreError> {
        let mut w = self.inner.writer.lock().unwrap_or_else(|p| p.into_inner());
        if self.inner.read_only {
            return Err(self.fail(
                "cannot reclaim the node log's dead bytes",
                "the store is open read-only",
            ));
        }
        self.reclaim(&mut w)
    }

    /// [`LogStore::reclaim_if_worthwhile`] under its old name.
    #[deprecated(note = "renamed to `LogStore::reclaim_if_worthwhile`")]
    pub fn compact_if_worthwhile(&self) -> Result<(), StoreError> {
        self.reclaim_if_worthwhile()
    }

    /// [`LogStore::reclaim_now`] under its old name.
    #[deprecated(note = "renamed to `LogStore::reclaim_now`")]
    pub fn compact_now(&self) -> Result<(), StoreError> {
        self.reclaim_now()
    }

    fn reclaim(&self, w: &mut Writer) -> Result<(), StoreError> {
        if let Some(why) = w.poison() {
            return Err(self.fail("cannot reclaim the node log's dead bytes", why));
        }
        let (old, offsets, meta, live) = {
            let s = self.state();
            let offsets = LiveOffsets::sorted(&s.index, s.end);
            (s.file.clone(), offsets, s.meta.clone(), s.live_bytes)
        };
        let tmp = self.inner.path.join(NEW_LOG_FILE);
        let built = (|| -> std::io::Result<(File, Index, u64, u64)> {
            let mut file = files::create_log(&tmp)?;
            // The start of the batch being built.
            let mut pos = FILE_HEADER_LEN;
            let mut index = Index::with_capacity(offsets.len());
            let mut e = BatchEncoder::with_capacity(RECLAIM_BATCH_BYTES + RECLAIM_BATCH_SLACK);
            e.begin();
            let mut buf = Vec::new();
            let mut flush = |e: &mut BatchEncoder, pos: &mut u64, seq: &mut u64| {
                e.finish(*seq);
                *seq += 1;
                file.write_all(e.bytes())?;
                *pos += e.len() as u64;
                e.begin();
                std::io::Result::Ok(())
            };
            let mut seq = w.next_seq;
            // In log order through one buffer: a `pread` per MiB, not two
            // per node.
            let mut reader = PosReader::new(&old, old.metadata()?.len(), RECLAIM_READ_BYTES);
            for off in offsets.iter() {
                let (hash, stored, encoding) = reader.read_node_record(off, &mut buf)?;
                let value = format::expand(encoding, stored).ok_or_else(|| {
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("node {hash}: its sparse inner-node record does not decode"),
                    )
                })?;
                let (at, _) = e.put_node(&hash, &value);
                index.insert_new(&hash, pos + at as u64);
                if e.len() >= RECLAIM_BATCH_BYTES {
                    flush(&mut e, &mut pos, &mut seq)?;
                }
            }
            drop(offsets);
            for (name, value) in &meta {
                e.put_meta(name, value);
            }
            flush(&mut e, &mut pos, &mut seq)?;
            file.sync_data()?;
            Ok((file, index, pos, seq))
        })();
        let (file, index, end, next_seq) = match built {
            Ok(b) => b,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(self.fail("cannot reclaim the node log's dead bytes", e));
            }
        };
        // No checkpoint may name the old file once it is gone (a later
        // file could take its device and inode).
        checkpoint::remove(&self.inner.path)
            .and_then(|()| std::fs::rename(&tmp, self.inner.path.join(LOG_FILE)))
            .and_then(|()| files::sync_dir(&self.inner.path))
            .map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                self.fail("cannot reclaim the node log's dead bytes", e)
            })?;
        // The new log's batches are numbered on from the old one's.
        w.next_seq = next_seq;
        // An unfinished write found at opening was in the replaced file:
        // cutting the new one there would leave zeros up to that offset.
        w.cut = None;
        {
            let mut s = self.inner.state.write().unwrap_or_else(|p| p.into_inner());
            s.file = Arc::new(file);
            s.file_id = next_file_id();
            s.index = index;
            s.end = end;
            s.live_bytes = live;
        }
        self.acknowledge(w, next_seq - 1, end).map_err(|f| {
            // The rewritten log is in place and synced; what this process
            // holds and what the next opening reads could part from here.
            w.poisoned = Some(format!("{}; reopen the store", f.error));
            f.error
        })
    }
}
