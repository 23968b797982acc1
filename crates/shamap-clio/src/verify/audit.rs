//! The final audit: rows of Clio's tables at odds with the verified state.

use std::ops::ControlFlow;

use shamap::Key;

use crate::build::{ObjectRow, Scratch};
use crate::ClioError;

use super::*;

impl<'r, 's> ClioVerifier<'r, 's> {
    /// After the last ledger of a run, reads every key's newest object at
    /// or below the last verified ledger (a scan of `objects`, as a full
    /// build's) and compares them, in key order, with the verified state:
    /// an object row written without its `diff` row (which the
    /// ledger-by-ledger pass cannot see, since it reads only diff keys)
    /// differs here, whether its key is in the state or not. Each finding
    /// names the ledger of the stray row and the key.
    pub fn audit(&self) -> Result<Vec<AuditFinding>, ClioError> {
        let Some((seq, _)) = self.prev else {
            return Ok(Vec::new());
        };
        let (mut rows, _) = {
            let mut scratch = Scratch::new(None)?;
            self.reader
                .scan_state(seq, true, false, &mut |row| scratch.push(row))?;
            scratch.finish()?
        };
        let mut findings = Vec::new();
        let stray = |o: ObjectRow, findings: &mut Vec<AuditFinding>| {
            if !o.object.is_empty() {
                findings.push(AuditFinding {
                    seq: o.seq,
                    key: o.key,
                    what: format!(
                        "an object written at ledger {} that no diff row lists: the key is not live in the verified state at ledger {seq}",
                        o.seq
                    ),
                });
            }
        };
        let mut failed = None;
        let mut compare = |key: &Key, data: &[u8]| -> Result<(), ClioError> {
            while let Some(o) = rows.peek()? {
                if o.key >= *key {
                    break;
                }
                if let Some(o) = rows.next_row()? {
                    stray(o, &mut findings);
                }
            }
            let row = match rows.peek()? {
                Some(o) if o.key == *key => rows.next_row()?,
                _ => None,
            };
            let (at, what) = match row {
                Some(o) if o.object == data => return Ok(()),
                Some(o) if o.object.is_empty() => (
                    o.seq,
                    format!("a deletion written at ledger {} that no diff row lists (the verified state at ledger {seq} holds the key)", o.seq),
                ),
                Some(o) => (
                    o.seq,
                    format!("an object written at ledger {} that no diff row lists: it differs from the verified state at ledger {seq}", o.seq),
                ),
                None => (
                    i64::from(seq),
                    format!("live in the verified state at ledger {seq} but has no object row"),
                ),
            };
            findings.push(AuditFinding {
                seq: at,
                key: *key,
                what,
            });
            Ok(())
        };
        self.map.for_each(&mut |k, d| match compare(k, d) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                failed = Some(e);
                ControlFlow::Break(())
            }
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        while let Some(o) = rows.next_row()? {
            stray(o, &mut findings);
        }
        findings.sort_by_key(|f| (f.seq, f.key));
        Ok(findings)
    }
}
