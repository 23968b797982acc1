//! The state at one sequence, read whole and put in key order: the rows
//! of a state scan ([`super::ClioReader::scan_state`], which come in token
//! order) written to unnamed scratch files (`O_TMPFILE` where the system
//! has it: nothing to list or remove) by the key's top 7 bits, then read
//! back a file at a time, each sorted in memory.
//!
//! So a first ledger's build and the final audit walk the scanned rows in
//! key order beside the map (the successor list's walk is a merge of two
//! sorted streams, and a backed map is built left to right), with a few
//! hundred kilobytes per million keys in memory besides the map: one
//! bucket of rows at a time, and the files' write buffers.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};

use shamap::Key;

use super::reader::StateRow;
use super::{key_of, ClioError};

/// Scratch files per table: one per value of the key's top 7 bits (a
/// full build holds one file's rows in memory at a time: a 128th of the
/// state; 64 files peaked 2 MiB higher on the 1M-object benchmark).
const BUCKETS: usize = 128;
/// Write buffer of each scratch file.
const WRITE_BUFFER: usize = 16 << 10;

fn bucket(key: &Key) -> usize {
    usize::from(key.0[0] >> 1)
}

/// A key's newest `objects` row at or below the scanned sequence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ObjectRow {
    pub key: Key,
    pub seq: i64,
    /// Empty: deleted.
    pub object: Vec<u8>,
}

/// A key's newest `successor` row at or below the scanned sequence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct EdgeRow {
    pub key: Key,
    /// `next` as stored (the caller checks it is a key).
    pub next: Vec<u8>,
}

/// A scratch file's failure, naming its directory.
pub(crate) fn scratch_error(dir: &Path, what: &str, e: impl std::fmt::Display) -> ClioError {
    ClioError::Scratch {
        dir: dir.display().to_string(),
        what: format!("{what}: {e}"),
    }
}

/// Scratch files being written: the rows of a state scan by table and
/// the key's top bits.
pub(super) struct Scratch {
    dir: PathBuf,
    objects: Vec<BufWriter<File>>,
    edges: Vec<BufWriter<File>>,
    /// Rows written.
    pub rows: u64,
}

impl Scratch {
    /// Unnamed scratch files in `parent` (the system's temporary
    /// directory when `None`), gone when closed.
    pub fn new(parent: Option<&Path>) -> Result<Scratch, ClioError> {
        let dir = parent.map_or_else(std::env::temp_dir, Path::to_path_buf);
        let open = || {
            tempfile::tempfile_in(&dir)
                .map(|f| BufWriter::with_capacity(WRITE_BUFFER, f))
                .map_err(|e| scratch_error(&dir, "cannot create a file", e))
        };
        let objects = (0..BUCKETS).map(|_| open()).collect::<Result<_, _>>()?;
        let edges = (0..BUCKETS).map(|_| open()).collect::<Result<_, _>>()?;
        Ok(Scratch {
            dir,
            objects,
            edges,
            rows: 0,
        })
    }

    /// Writes a scanned row; a key that is not 32 bytes is left out (no
    /// state map or successor list can hold it).
    pub fn push(&mut self, row: StateRow) -> Result<(), ClioError> {
        let (files, key, seq, value) = match &row {
            StateRow::Object(k, s, v) => (&mut self.objects, k, *s, v),
            StateRow::Successor(k, s, v) => (&mut self.edges, k, *s, v),
        };
        let Some(key) = key_of(key) else {
            return Ok(());
        };
        let len = u32::try_from(value.len()).unwrap_or(u32::MAX);
        let value = &value[..len as usize];
        let f = &mut files[bucket(&key)];
        f.write_all(&key.0)
            .and_then(|()| f.write_all(&seq.to_le_bytes()))
            .and_then(|()| f.write_all(&len.to_le_bytes()))
            .and_then(|()| f.write_all(value))
            .map_err(|e| scratch_error(&self.dir, "cannot write", e))?;
        self.rows += 1;
        Ok(())
    }

    /// Flushes the files: ready to be read in key order, objects and
    /// successor rows each by a cursor of its own.
    pub fn finish(self) -> Result<(Cursor<ObjectRow>, Cursor<EdgeRow>), ClioError> {
        let dir = self.dir;
        let done = |files: Vec<BufWriter<File>>| {
            files
                .into_iter()
                .map(|f| {
                    let mut f = f
                        .into_inner()
                        .map_err(|e| scratch_error(&dir, "cannot write", e.error()))?;
                    f.rewind()
                        .map_err(|e| scratch_error(&dir, "cannot read", e))?;
                    Ok(f)
                })
                .collect::<Result<Vec<File>, ClioError>>()
        };
        let objects = Cursor::new(dir.clone(), done(self.objects)?, |mut rows| {
            // One per key: the newest (a scan gives one already).
            rows.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
            rows.dedup_by(|b, a| a.0 == b.0);
            rows.into_iter()
                .map(|(key, seq, object)| ObjectRow { key, seq, object })
                .collect()
        });
        let edges = Cursor::new(dir.clone(), done(self.edges)?, |mut rows| {
            // Each key's newest successor row.
            rows.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
            rows.dedup_by(|b, a| a.0 == b.0);
            rows.into_iter()
                .map(|(key, _, next)| EdgeRow { key, next })
                .collect()
        });
        Ok((objects, edges))
    }
}

type Raw = (Key, i64, Vec<u8>);

/// Rows of one table in ascending key order, a scratch file at a time.
pub(super) struct Cursor<T> {
    dir: PathBuf,
    /// The files still to read, the next one last.
    files: Vec<File>,
    /// The loaded bucket's rows still to come, the next one last.
    rows: Vec<T>,
    order: fn(Vec<Raw>) -> Vec<T>,
}

impl<T> Cursor<T> {
    fn new(dir: PathBuf, mut files: Vec<File>, order: fn(Vec<Raw>) -> Vec<T>) -> Cursor<T> {
        files.reverse();
        Cursor {
            dir,
            files,
            rows: Vec::new(),
            order,
        }
    }

    /// Loads buckets until one has rows (or none is left).
    fn fill(&mut self) -> Result<(), ClioError> {
        while self.rows.is_empty() {
            let Some(f) = self.files.pop() else { break };
            let raw = read_bucket(f).map_err(|e| scratch_error(&self.dir, "cannot read", e))?;
            let mut rows = (self.order)(raw);
            rows.reverse();
            self.rows = rows;
        }
        Ok(())
    }

    /// The next row, not taken.
    pub fn peek(&mut self) -> Result<Option<&T>, ClioError> {
        self.fill()?;
        Ok(self.rows.last())
    }

    /// The next row.
    pub fn next_row(&mut self) -> Result<Option<T>, ClioError> {
        self.fill()?;
        Ok(self.rows.pop())
    }
}

fn read_bucket(f: File) -> std::io::Result<Vec<Raw>> {
    let mut r = BufReader::new(f);
    let mut out = Vec::new();
    let mut head = [0u8; 44];
    loop {
        match r.read_exact(&mut head) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(out),
            Err(e) => return Err(e),
        }
        let mut key = [0u8; 32];
        key.copy_from_slice(&head[..32]);
        let seq = i64::from_le_bytes(head[32..40].try_into().unwrap_or_default());
        let len = u32::from_le_bytes(head[40..44].try_into().unwrap_or_default());
        let mut value = vec![0; len as usize];
        r.read_exact(&mut value)?;
        out.push((Key(key), seq, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(b0: u8, b31: u8) -> Vec<u8> {
        let mut k = vec![0; 32];
        k[0] = b0;
        k[31] = b31;
        k
    }

    #[test]
    fn rows_come_back_in_key_order_newest_per_key() {
        let mut s = Scratch::new(None).expect("scratch");
        let rows = [
            StateRow::Object(key(9, 1), 5, b"b".to_vec()),
            StateRow::Object(key(1, 2), 3, b"a".to_vec()),
            StateRow::Object(key(1, 1), 4, Vec::new()),
            StateRow::Object(vec![1, 2, 3], 4, b"short key".to_vec()),
            StateRow::Successor(key(1, 1), 2, key(1, 2)),
            StateRow::Successor(key(1, 1), 7, key(9, 1)),
            StateRow::Successor(key(0, 0), 1, key(1, 1)),
            StateRow::Successor(key(1, 1), 5, key(3, 3)),
        ];
        for r in rows {
            s.push(r).expect("push");
        }
        assert_eq!(s.rows, 7);
        let (mut o, mut e) = s.finish().expect("finish");
        let mut got = Vec::new();
        while let Some(r) = o.next_row().expect("read") {
            got.push((r.key.0[0], r.key.0[31], r.seq, r.object));
        }
        assert_eq!(
            got,
            vec![
                (1, 1, 4, Vec::new()),
                (1, 2, 3, b"a".to_vec()),
                (9, 1, 5, b"b".to_vec())
            ]
        );
        assert_eq!(e.peek().expect("read").map(|r| r.key.0[0]), Some(0));
        let mut got = Vec::new();
        while let Some(r) = e.next_row().expect("read") {
            got.push((r.key.0[0], r.key.0[31], r.next));
        }
        assert_eq!(got, vec![(0, 0, key(1, 1)), (1, 1, key(9, 1))]);
    }
}
