//! A first ledger built whole from the successor list and the scanned objects.

use shamap::Key;

use crate::build::{Cursor, ObjectRow, Scratch};
use crate::{key_of, ClioError, FIRST_KEY, LAST_KEY};

use super::*;

impl<'r, 's> ClioVerifier<'r, 's> {
    /// Builds the state at `seq` whole: scans `objects` and `successor`
    /// (see `build`), then walks the successor list from `00…00` as a merge
    /// of the sorted successor rows and objects, inserting each listed
    /// key's object in key order. The problems come in key order: a listed
    /// key without a live object, then where the walk stopped (a key
    /// without a successor row, a successor that is not a key or not above
    /// it); when there is no other, each live object the list left out.
    pub(super) fn build_full(
        &mut self,
        seq: u32,
        problems: &mut Vec<Problem>,
    ) -> Result<(), ClioError> {
        let (mut objects, mut edges) = {
            let mut scratch = Scratch::new(None)?;
            self.reader
                .scan_state(seq, true, true, &mut |row| scratch.push(row))?;
            scratch.finish()?
        };
        // Live objects the walk passed over: the first few, and a count.
        let mut unlisted: Vec<(Key, i64)> = Vec::new();
        let mut more_unlisted = 0u64;
        let mut pass_over =
            |objects: &mut Cursor<ObjectRow>, until: Option<&Key>| -> Result<(), ClioError> {
                while let Some(o) = objects.peek()? {
                    if until.is_some_and(|u| o.key >= *u) {
                        break;
                    }
                    if let Some(o) = objects.next_row()? {
                        if !o.object.is_empty() {
                            if unlisted.len() < MAX_LIST_PROBLEMS {
                                unlisted.push((o.key, o.seq));
                            } else {
                                more_unlisted += 1;
                            }
                        }
                    }
                }
                Ok(())
            };
        let mut more = 0u64;
        let mut key = FIRST_KEY;
        let stop = loop {
            while edges.peek()?.is_some_and(|e| e.key < key) {
                edges.next_row()?;
            }
            let next = match edges.peek()? {
                Some(e) if e.key == key => edges.next_row()?.map(|e| e.next).unwrap_or_default(),
                _ => {
                    break Some(format!(
                        "the successor list stops here: no successor row at or below ledger {seq}"
                    ))
                }
            };
            let Some(next) = key_of(&next) else {
                break Some(format!("its successor is {} bytes, not a key", next.len()));
            };
            if next <= key {
                break Some(format!(
                    "the successor list is out of order: its successor {next} is not above it"
                ));
            }
            if next == LAST_KEY {
                break None;
            }
            pass_over(&mut objects, Some(&next))?;
            let row = match objects.peek()? {
                Some(o) if o.key == next => objects.next_row()?,
                _ => None,
            };
            let what = match row {
                Some(o) if !o.object.is_empty() => {
                    self.map.upsert(next, &o.object)?;
                    self.entries += 1;
                    None
                }
                Some(o) => Some(format!(
                    "in the successor list at ledger {seq} but deleted (at ledger {})",
                    o.seq
                )),
                None => Some(format!(
                    "in the successor list at ledger {seq} but has no object at or below it"
                )),
            };
            if let Some(what) = what {
                if problems.len() < MAX_LIST_PROBLEMS {
                    problems.push(Problem { key: next, what });
                } else {
                    more += 1;
                }
            }
            key = next;
        };
        if more > 0 {
            problems.push(Problem {
                key,
                what: format!(
                    "and {more} more listed keys at ledger {seq} without a live object, not named here"
                ),
            });
        }
        if let Some(what) = stop {
            problems.push(Problem { key, what });
        }
        pass_over(&mut objects, None)?;
        // A walk that stopped leaves out what follows: only a whole list
        // is judged on what it leaves out.
        if problems.is_empty() {
            for (key, s) in &unlisted {
                problems.push(Problem {
                    key: *key,
                    what: format!(
                        "live at ledger {seq} (its object is of ledger {s}) but missing from the successor list"
                    ),
                });
            }
            if more_unlisted > 0 {
                if let Some((key, _)) = unlisted.last() {
                    problems.push(Problem {
                        key: *key,
                        what: format!(
                            "and {more_unlisted} more live keys after it missing from the successor list, not named here"
                        ),
                    });
                }
            }
        }
        Ok(())
    }
}
