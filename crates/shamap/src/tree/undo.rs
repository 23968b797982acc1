//! Undo sessions, kept in the map's `UndoLog` (`undo_log.rs`, which also
//! has the record layout).
//!
//! Undo replays the records of the innermost session newest first; since
//! the tree's shape depends only on its key set, the contents and the root
//! hash come back exactly. Squash merges a session into its parent by
//! forgetting where it started; commit empties the log.

use crate::error::MapError;

use super::map::ShaMap;
use super::undo_log::newest;

impl ShaMap {
    /// Opens an undo session (sessions nest) and returns the new depth.
    /// From now on each write also records the key's previous value.
    pub fn begin_session(&mut self) -> usize {
        self.undo.begin()
    }

    /// Number of open sessions.
    pub fn session_depth(&self) -> usize {
        self.undo.depth()
    }

    /// Restores the contents (and so the root hash) the map had when the
    /// innermost session began, and closes that session.
    pub fn undo(&mut self) -> Result<(), MapError> {
        let (buf, start) = self.undo.take_innermost()?;
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
        self.undo.put_back(buf, start);
        Ok(())
    }

    /// Merges the innermost session into its parent: its changes stay, and
    /// undoing the parent undoes them too. With no parent, the changes
    /// become permanent. O(1).
    pub fn squash(&mut self) -> Result<(), MapError> {
        self.undo.squash()
    }

    /// Makes every change so far permanent: closes all sessions and drops
    /// their records (the buffer is kept for the next session).
    pub fn commit(&mut self) {
        self.undo.clear();
    }

    /// Bytes of undo records held by open sessions.
    pub fn undo_bytes(&self) -> usize {
        self.undo.record_bytes()
    }
}
