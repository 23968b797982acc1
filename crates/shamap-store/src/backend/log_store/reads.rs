//! Reading nodes: a lookup through the index, one `pread` through the
//! calling thread's read window, and a pass over every live record.

use std::ops::ControlFlow;
use std::os::unix::fs::FileExt;

use shamap::Hash256;

use super::format;
use super::state::{PosReader, State};
use super::LogStore;
use crate::error::StoreError;

/// A [`ReadWindow`] reads this many bytes before the record it is for.
const WINDOW_BEFORE: u64 = 256;
/// A [`ReadWindow`] reads this many bytes from the record it is for on:
/// whole for every inner node and every leaf of an account-state map up
/// to ~950 bytes of data; a longer record takes a second read.
const WINDOW_FROM: u64 = 1024;

/// The log's bytes around the record a thread read last. Imports and
/// commits write a subtree's nodes together, so a walk's next node (a
/// leaf beside its parent) is often among them: measured at 1M entries,
/// 27% of a read's consecutive `pread`s fell within 4 KiB of each other.
/// Bytes below a log file's published end never change (writes append,
/// a failed or unfinished write is cut only above it, a reclaim makes a
/// new file with a new id), so a window is valid for as long as its
/// file; every node read from it is still verified by the caller.
pub(super) struct ReadWindow {
    /// [`State::file_id`] of the bytes' file; 0 for none.
    file_id: u64,
    /// Offset of `bytes` in that file.
    start: u64,
    bytes: Vec<u8>,
}

thread_local! {
    static READ_WINDOW: std::cell::RefCell<ReadWindow> = const {
        std::cell::RefCell::new(ReadWindow { file_id: 0, start: 0, bytes: Vec::new() })
    };
}

impl ReadWindow {
    /// The bytes of `s`'s log from `off` on, as far as this window holds
    /// them: from the window when it holds the whole record at `off`, else
    /// from one `pread` around `off` (up to the published end).
    fn record_at(&mut self, s: &State, off: u64) -> std::io::Result<&[u8]> {
        let inside = self.file_id == s.file_id && off >= self.start && {
            let at = (off - self.start) as usize;
            self.bytes
                .get(at..at + format::RECORD_HEADER_LEN)
                .is_some_and(|h| {
                    let value_len = format::record_value_len(h);
                    (at + format::NODE_HEAD_LEN).saturating_add(value_len) <= self.bytes.len()
                })
        };
        if !inside {
            let start = off.saturating_sub(WINDOW_BEFORE);
            let len = s.end.saturating_sub(start).min(WINDOW_BEFORE + WINDOW_FROM);
            self.file_id = 0;
            self.bytes.resize(len as usize, 0);
            s.file.read_exact_at(&mut self.bytes, start)?;
            (self.file_id, self.start) = (s.file_id, start);
        }
        Ok(self.bytes.get((off - self.start) as usize..).unwrap_or(&[]))
    }
}

impl LogStore {
    /// The stored value of `hash` (unverified: the caller checks it
    /// against its hash, as with every backend).
    pub(super) fn read(&self, hash: &Hash256) -> Result<Option<Vec<u8>>, StoreError> {
        let s = self.state();
        for (_, off) in s.index.probe(hash) {
            let found = READ_WINDOW.with_borrow_mut(|w| {
                let first = w
                    .record_at(&s, off)
                    .map_err(|e| self.fail(&format!("cannot read node {hash}"), e))?;
                self.value_in(&s, hash, off, first)
            })?;
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }

    /// The value of `hash` from the record at `off`, whose first bytes
    /// (as many as were read, up to the end of the log) are `first`; `None`
    /// when that record is not a put of `hash` (an index tag collision).
    fn value_in(
        &self,
        s: &State,
        hash: &Hash256,
        off: u64,
        first: &[u8],
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let n = first.len();
        let Some((range, encoding)) = format::node_value_range(first, hash) else {
            return Ok(None);
        };
        if range.end as u64 > s.end - off {
            return Err(StoreError::Corrupt {
                hash: *hash,
                reason: "its record runs past the end of the node log".to_owned(),
            });
        }
        let stored = if range.end <= n {
            first[range].to_vec()
        } else {
            let mut value = vec![0u8; range.len()];
            value[..n - range.start].copy_from_slice(&first[range.start..]);
            s.file
                .read_exact_at(&mut value[n - range.start..], off + n as u64)
                .map_err(|e| self.fail(&format!("cannot read node {hash}"), e))?;
            value
        };
        match encoding {
            format::Encoding::Plain => Ok(Some(stored)),
            sparse => match format::expand(sparse, &stored) {
                Some(v) => Ok(Some(v.into_owned())),
                None => Err(StoreError::Corrupt {
                    hash: *hash,
                    reason: "its sparse inner-node record does not decode".to_owned(),
                }),
            },
        }
    }

    /// Calls `f` with every live node, in log order.
    pub(super) fn each_value(
        &self,
        f: &mut dyn FnMut(Hash256, &[u8]) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        // A consistent view: the file and the live offsets as of now (the
        // records never change; a reclaim replaces the file, and this
        // keeps the old one open).
        let (file, mut offsets) = {
            let s = self.state();
            (s.file.clone(), s.index.offsets().collect::<Vec<u64>>())
        };
        if offsets.is_empty() {
            return Ok(());
        }
        // In log order, not hash order (nothing relies on the order; the
        // trait says so): the live records read front to back through one
        // buffer, skipping the dead ones, with 8 bytes of memory per node
        // (a hash-ordered pass would hold 40 bytes per node to sort).
        offsets.sort_unstable();
        let fail = |e: std::io::Error| self.fail("cannot iterate nodes", e);
        let len = file.metadata().map_err(fail)?.len();
        let mut reader = PosReader::new(&file, len, 1 << 20);
        let mut buf = Vec::new();
        for off in offsets {
            let (hash, stored, encoding) = reader.read_node_record(off, &mut buf).map_err(fail)?;
            // A sparse inner record that does not decode is passed on as it
            // is stored: raw, unverified bytes, which no check accepts.
            let value =
                format::expand(encoding, stored).unwrap_or(std::borrow::Cow::Borrowed(stored));
            if f(hash, &value).is_break() {
                break;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::fs::File;
    use std::io::Write;
    use std::sync::Arc;

    use super::*;
    use crate::node::{NodeObject, NodeType};
    use crate::store::{Batch, NodeStore};

    /// One thread reads nodes written side by side (from its read window),
    /// then nodes appended after its window was read, then every node
    /// again after a reclaim moved them all to a new file: each value
    /// is the one written, never stale bytes of the window.
    #[test]
    fn reads_through_the_read_window_follow_appends_and_reclaims() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = LogStore::open(dir.path()).expect("open");
        let nodes = |from: u8| -> Vec<NodeObject> {
            (from..from + 20)
                .map(|i| NodeObject::from_prefix(NodeType::AccountNode, &[i; 60]))
                .collect()
        };
        let check = |nodes: &[NodeObject]| {
            for n in nodes.iter().rev().chain(nodes) {
                let value = store.read_value(&n.hash()).expect("read");
                assert_eq!(value.as_deref(), Some(n.value()), "{}", n.hash());
            }
        };
        let put = |nodes: &[NodeObject]| {
            let mut batch = Batch::new();
            for n in nodes {
                batch.put_node(n.clone());
            }
            store.write_durably(batch).expect("write");
        };
        let (first, second) = (nodes(0), nodes(100));
        put(&first);
        check(&first);
        put(&second);
        check(&second);
        check(&first);
        let mut gone = Batch::new();
        for n in &first[..10] {
            gone.delete_node(n.hash());
        }
        // The window then holds the log's first bytes, where the
        // reclaim puts other records.
        assert!(store.read_value(&first[0].hash()).expect("read").is_some());
        store.write_durably(gone).expect("delete");
        store.reclaim_now().expect("reclaim");
        check(&first[10..]);
        check(&second);
        assert_eq!(store.read_value(&first[0].hash()).expect("read"), None);
    }

    /// A reclaim copies a log several times its 1 MiB read buffer,
    /// with records of every size from a few bytes to 700 KiB (past half
    /// the buffer: read directly) and so records that straddle the
    /// buffer's edge: every live node reads back as written, the deleted
    /// ones are gone, and `each_value` (the same buffered reader) sees
    /// exactly the live set.
    #[test]
    fn a_reclaim_through_the_read_buffer_copies_every_record_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = LogStore::open(dir.path()).expect("open");
        let nodes: Vec<NodeObject> = (0u32..400)
            .map(|i| {
                let len = match i % 50 {
                    0 => 700 << 10,
                    7 => 300 << 10,
                    _ => 1 + (i as usize * 7919) % 40_000,
                };
                let data: Vec<u8> = (0..len).map(|j| (i as usize * 31 + j) as u8).collect();
                NodeObject::from_prefix(NodeType::AccountNode, &data)
            })
            .collect();
        for chunk in nodes.chunks(37) {
            let mut batch = Batch::new();
            for n in chunk {
                batch.put_node(n.clone());
            }
            store.write_durably(batch).expect("write");
        }
        let mut gone = Batch::new();
        for n in nodes.iter().step_by(3) {
            gone.delete_node(n.hash());
        }
        store.write_durably(gone).expect("delete");
        store.reclaim_now().expect("reclaim");
        let mut live = std::collections::BTreeMap::new();
        for (i, n) in nodes.iter().enumerate() {
            let value = store.read_value(&n.hash()).expect("read");
            if i % 3 == 0 {
                assert_eq!(value, None, "node {i} was deleted");
            } else {
                assert_eq!(value.as_deref(), Some(n.value()), "node {i}");
                live.insert(n.hash(), n.value().to_vec());
            }
        }
        let mut seen = std::collections::BTreeMap::new();
        store
            .each_value(&mut |h, v| {
                seen.insert(h, v.to_vec());
                ControlFlow::Continue(())
            })
            .expect("each");
        assert!(seen == live, "each_value after the reclaim");
    }

    /// A read window serves only bytes of its own file, below the end
    /// published when it was read, and whole records.
    #[test]
    fn a_read_window_never_serves_another_files_bytes_or_past_the_end_it_read() {
        let file = |bytes: &[u8]| {
            let mut f = tempfile::tempfile().expect("tempfile");
            f.write_all(bytes).expect("write");
            Arc::new(f)
        };
        let state = |file: &Arc<File>, end: u64| State::empty(file.clone(), 0, end);
        // Zeros read as records of empty values: a window always "holds"
        // them, so only the checks below tell the files apart.
        let mut sevens = vec![0u8; 4096];
        sevens[1008..1040].fill(7);
        let (a, b) = (file(&[0u8; 4096]), file(&sevens));
        let (a, b_short, b) = (state(&a, 4096), state(&b, 1020), state(&b, 4096));
        let b = State {
            file_id: b_short.file_id,
            ..b
        };
        let mut w = ReadWindow {
            file_id: 0,
            start: 0,
            bytes: Vec::new(),
        };
        assert_eq!(w.record_at(&a, 900).expect("read")[8..40], [0; 32]);
        // Up to the end as published, not a's window.
        assert_eq!(w.record_at(&b_short, 900).expect("read").len(), 120);
        // The end has moved on: read again.
        assert_eq!(w.record_at(&b, 1000).expect("read")[8..40], [7; 32]);
        assert_eq!(
            w.record_at(&a, 1000).expect("read")[8..40],
            [0; 32],
            "b's bytes for a"
        );
    }
}
