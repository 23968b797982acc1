//! `UndoLog`: the previous value of every key that open undo sessions
//! wrote, bump-allocated in one buffer that is reused from session to
//! session (so records cost no allocation once it has grown). The sessions
//! themselves (`begin_session`, `undo`, ...) are in `undo.rs`.
//!
//! Record layout, appended at the end of the buffer (so it reads backwards):
//!
//! | bytes | field                                       |
//! |-------|---------------------------------------------|
//! | len   | previous data (absent when the key was new) |
//! | 4     | `len`, little-endian u32                    |
//! | 1     | 1 = key held `data` before, 0 = key was absent |
//! | 32    | key                                         |

use crate::error::MapError;
use crate::hash::Key;

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

    /// Opens a session; returns the new number of open sessions.
    pub(crate) fn begin(&mut self) -> usize {
        self.starts.push(self.buf.len());
        self.starts.len()
    }

    /// Number of open sessions.
    pub(crate) fn depth(&self) -> usize {
        self.starts.len()
    }

    /// Bytes of records held by open sessions.
    pub(crate) fn record_bytes(&self) -> usize {
        self.buf.len()
    }

    /// Closes the innermost session and takes its records out of the log:
    /// returns the whole buffer and where the session's records start.
    /// The log is empty until [`put_back`](Self::put_back) returns the
    /// buffer (the writes that replay the records are not logged).
    pub(crate) fn take_innermost(&mut self) -> Result<(Vec<u8>, usize), MapError> {
        let start = self.starts.pop().ok_or(MapError::NoSession)?;
        Ok((std::mem::take(&mut self.buf), start))
    }

    /// Returns the buffer taken by [`take_innermost`](Self::take_innermost),
    /// without the closed session's records (from `start` on).
    pub(crate) fn put_back(&mut self, mut buf: Vec<u8>, start: usize) {
        buf.truncate(start);
        self.buf = buf;
    }

    /// Closes the innermost session keeping its records, which now belong
    /// to its parent; with no parent left they are dropped.
    pub(crate) fn squash(&mut self) -> Result<(), MapError> {
        self.starts.pop().ok_or(MapError::NoSession)?;
        if self.starts.is_empty() {
            self.buf.clear();
        }
        Ok(())
    }

    /// Closes every session and drops their records (the buffer is kept).
    pub(crate) fn clear(&mut self) {
        self.starts.clear();
        self.buf.clear();
    }
}

/// Splits the newest record off the end of `buf[..end]`: returns the record's
/// start, its key and its previous data (if any).
pub(crate) fn newest(buf: &[u8], end: usize) -> (usize, Key, Option<&[u8]>) {
    let t = end - TRAILER;
    let len = u32::from_le_bytes([buf[t], buf[t + 1], buf[t + 2], buf[t + 3]]) as usize;
    let present = buf[t + 4] == 1;
    let key = Key::from_slice(&buf[t + 5..end]).expect("32 key bytes");
    let start = t - len;
    (start, key, present.then(|| &buf[start..t]))
}
