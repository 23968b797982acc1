//! Undo sessions: a log of the previous value of every key a session
//! writes, bump-allocated in one buffer that is reused from session to
//! session (so records cost no allocation once it has grown).
//!
//! Record layout, appended at the end of the buffer (so it reads backwards):
//!
//! | bytes | field                                       |
//! |-------|---------------------------------------------|
//! | len   | previous data (absent when the key was new) |
//! | 4     | `len`, little-endian u32                    |
//! | 1     | 1 = key held `data` before, 0 = key was absent |
//! | 32    | key                                         |
//!
//! Undo replays the records of the innermost session newest first; since
//! the tree's shape depends only on its key set, the contents and the root
//! hash come back exactly. Squash merges a session into its parent by
//! forgetting where it started; commit empties the log.

use crate::error::MapError;
use crate::hash::Key;

use super::map::ShaMap;

const TRAILER: usize = 4 + 1 + 32;

/// Previous values written by open sessions.
#[derive(Default)]
pub(crate) struct UndoLog {
    buf: Vec<u8>,
    /// Where each open session's records start, outermost first.
    starts: Vec<usize>,
}

impl UndoLog {
    /// True while a session is open (writes must be recorded).
    #[inline]
    pub(crate) fn active(&self) -> bool {
        !self.starts.is_empty()
    }

    /// Records that `key` held `old` (or nothing) before a write.
    pub(crate) fn record(&mut self, key: &Key, old: Option<&[u8]>) {
        let data = old.unwrap_or(&[]);
        let len = u32::try_from(data.len()).expect("item data is at most u32::MAX bytes");
        self.buf.extend_from_slice(data);
        self.buf.extend_from_slice(&len.to_le_bytes());
        self.buf.push(u8::from(old.is_some()));
        self.buf.extend_from_slice(&key.0);
    }

    /// Bytes held by the log's buffer.
    pub(crate) fn capacity_bytes(&self) -> usize {
        self.buf.capacity() + self.starts.capacity() * std::mem::size_of::<usize>()
    }
}

/// Splits the newest record off the end of `buf[..end]`: returns the record's
/// start, its key and its previous data (if any).
fn newest(buf: &[u8], end: usize) -> (usize, Key, Option<&[u8]>) {
    let t = end - TRAILER;
    let len = u32::from_le_bytes([buf[t], buf[t + 1], buf[t + 2], buf[t + 3]]) as usize;
    let present = buf[t + 4] == 1;
    let key = Key::from_slice(&buf[t + 5..end]).expect("32 key bytes");
    let start = t - len;
    (start, key, present.then(|| &buf[start..t]))
}

impl ShaMap {
    /// Opens an undo session (sessions nest) and returns the new depth.
    /// From now on each write also records the key's previous value.
    pub fn begin_session(&mut self) -> usize {
        self.undo.starts.push(self.undo.buf.len());
        self.undo.starts.len()
    }

    /// Number of open sessions.
    pub fn session_depth(&self) -> usize {
        self.undo.starts.len()
    }

    /// Restores the contents (and so the root hash) the map had when the
    /// innermost session began, and closes that session.
    pub fn undo(&mut self) -> Result<(), MapError> {
        let start = self.undo.starts.pop().ok_or(MapError::NoSession)?;
        let buf = std::mem::take(&mut self.undo.buf);
        let mut end = buf.len();
        while end > start {
            let (rec_start, key, old) = newest(&buf, end);
            let res = match old {
                Some(data) => self.write_unlogged(key, data).map(|_| ()),
                None => self.remove_unlogged(&key),
            };
            res.expect("undo replays the inverse of recorded writes");
            end = rec_start;
        }
        let mut buf = buf;
        buf.truncate(start);
        self.undo.buf = buf;
        Ok(())
    }

    /// Merges the innermost session into its parent: its changes stay, and
    /// undoing the parent undoes them too. With no parent, the changes
    /// become permanent. O(1).
    pub fn squash(&mut self) -> Result<(), MapError> {
        self.undo.starts.pop().ok_or(MapError::NoSession)?;
        if self.undo.starts.is_empty() {
            self.undo.buf.clear();
        }
        Ok(())
    }

    /// Makes every change so far permanent: closes all sessions and drops
    /// their records (the buffer is kept for the next session).
    pub fn commit(&mut self) {
        self.undo.starts.clear();
        self.undo.buf.clear();
    }

    /// Bytes of undo records held by open sessions.
    pub fn undo_bytes(&self) -> usize {
        self.undo.buf.len()
    }
}
