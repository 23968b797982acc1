//! What readers see of a node log ([`State`]: the file, the index into it,
//! the metadata) and the lookups of a record through the index.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use shamap::Hash256;

use super::format::{self, NODE_HEAD_LEN};
use super::index::Index;

/// The log as readers see it, published under the store's lock: a
/// batch's records are all in it or none.
pub(super) struct State {
    pub(super) file: Arc<File>,
    /// Names `file` among every log file this process opened (from
    /// [`next_file_id`]): a thread's read window holds bytes of one.
    pub(super) file_id: u64,
    pub(super) index: Index,
    pub(super) meta: BTreeMap<String, Vec<u8>>,
    /// End of the last published batch.
    pub(super) end: u64,
    /// Bytes of live node records.
    pub(super) live_bytes: u64,
    /// Bytes of the log the opening read batch by batch (all of it without
    /// a usable index checkpoint, else what was written after it).
    pub(super) scanned_bytes: u64,
}

static NEXT_FILE_ID: AtomicU64 = AtomicU64::new(1);

/// A number for a log file opened by this process, never given twice.
pub(super) fn next_file_id() -> u64 {
    NEXT_FILE_ID.fetch_add(1, Ordering::Relaxed)
}

impl State {
    /// An empty state over `file`.
    pub(super) fn empty(file: Arc<File>, capacity: usize, end: u64) -> State {
        State {
            file,
            file_id: next_file_id(),
            index: Index::with_capacity(capacity),
            meta: BTreeMap::new(),
            end,
            live_bytes: 0,
            scanned_bytes: 0,
        }
    }

    /// The index slot and record length of `hash`, confirmed by reading the
    /// candidates' records.
    pub(super) fn find(&self, hash: &Hash256) -> std::io::Result<Option<(usize, u64)>> {
        for (slot, off) in self.index.probe(hash) {
            if let Some(len) = record_len_if_of(&self.file, off, hash)? {
                return Ok(Some((slot, len)));
            }
        }
        Ok(None)
    }

    /// Points the index at `hash`'s new record of `len` bytes at `at`, in
    /// one probe, and counts it live (the record it replaces, if any, dead).
    pub(super) fn put_in_index(
        &mut self,
        hash: &Hash256,
        at: u64,
        len: u64,
    ) -> std::io::Result<()> {
        let State { file, index, .. } = self;
        let mut old_len = None;
        index.upsert(hash, at, |off| {
            old_len = record_len_if_of(file, off, hash)?;
            Ok::<bool, std::io::Error>(old_len.is_some())
        })?;
        self.live_bytes = self.live_bytes + len - old_len.unwrap_or(0);
        Ok(())
    }

    /// Removes `hash` from the index, if it is there, counting its record
    /// dead; true when it was there.
    pub(super) fn remove_from_index(&mut self, hash: &Hash256) -> std::io::Result<bool> {
        match self.find(hash)? {
            Some((slot, old)) => {
                self.live_bytes -= old;
                self.index.remove_at(slot);
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

/// The first [`NODE_HEAD_LEN`] bytes of the record at `off`: the one
/// place a record's header is read from the file.
pub(super) fn read_head(file: &File, off: u64) -> std::io::Result<[u8; NODE_HEAD_LEN]> {
    let mut head = [0u8; NODE_HEAD_LEN];
    file.read_exact_at(&mut head, off)?;
    Ok(head)
}

/// The length of the record at `off` when it is a put of `hash` (an index
/// candidate confirmed), else `None`.
fn record_len_if_of(file: &File, off: u64, hash: &Hash256) -> std::io::Result<Option<u64>> {
    let head = read_head(file, off)?;
    Ok(format::node_value_range(&head, hash).map(|(r, _)| format::node_record_len(r.len()) as u64))
}

/// The node record the index names at `off`: its hash, the stored bytes'
/// range from `off` and their encoding; an error when the record there is
/// not a node put (the index and the log disagree).
pub(super) fn indexed_node(
    head: &[u8; NODE_HEAD_LEN],
    off: u64,
) -> std::io::Result<(Hash256, std::ops::Range<usize>, format::Encoding)> {
    format::node_head(head).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("the index names a record at byte {off} that is not a node"),
        )
    })
}

/// A file read through a buffer of its own with `pread`s, never through
/// the file's shared cursor: readers of one log on several threads (the
/// scan of a writer's opening, a pass over every node, a check running
/// beside the writer) never move each other's place.
pub(super) struct PosReader<'f> {
    file: &'f File,
    /// Bytes of the file from `start`.
    buf: Vec<u8>,
    start: u64,
    /// How far the file is read (its length when the reader was made).
    len: u64,
}

impl<'f> PosReader<'f> {
    /// A reader of the first `len` bytes of `file`, buffering `capacity`
    /// bytes at a time.
    pub(super) fn new(file: &'f File, len: u64, capacity: usize) -> PosReader<'f> {
        PosReader {
            file,
            buf: Vec::with_capacity(capacity),
            start: 0,
            len,
        }
    }

    /// Fills `out` with the bytes at `at`.
    pub(super) fn read_at(&mut self, out: &mut [u8], at: u64) -> std::io::Result<()> {
        let n = out.len() as u64;
        let past = || {
            std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("{n} bytes at byte {at} run past the end of the file"),
            )
        };
        let end = at
            .checked_add(n)
            .filter(|&e| e <= self.len)
            .ok_or_else(past)?;
        if out.len() >= self.buf.capacity() / 2 {
            return self.file.read_exact_at(out, at);
        }
        let held = self.start + self.buf.len() as u64;
        if at < self.start || end > held {
            let take = (self.len - at).min(self.buf.capacity() as u64) as usize;
            self.buf.resize(take, 0);
            self.start = at;
            self.file.read_exact_at(&mut self.buf, at)?;
        }
        let from = (at - self.start) as usize;
        out.copy_from_slice(&self.buf[from..from + out.len()]);
        Ok(())
    }

    /// Reads the node record at `off` into `buf`: its hash, stored bytes
    /// and their encoding; through this reader's buffer, so that a pass
    /// over records in log order takes a `pread` per buffer, not two per
    /// node.
    pub(super) fn read_node_record<'b>(
        &mut self,
        off: u64,
        buf: &'b mut Vec<u8>,
    ) -> std::io::Result<(Hash256, &'b [u8], format::Encoding)> {
        let mut head = [0u8; NODE_HEAD_LEN];
        self.read_at(&mut head, off)?;
        let (hash, range, encoding) = indexed_node(&head, off)?;
        buf.resize(range.len(), 0);
        self.read_at(buf, off + range.start as u64)?;
        Ok((hash, buf, encoding))
    }
}
