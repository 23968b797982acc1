//! A first ledger's objects, kept in an unnamed scratch file while the
//! ledger is read and verified, then written from there: the state is read
//! from the store once, not twice. Memory: the file's buffer and one batch
//! of objects; disk: the objects (about 230 bytes each on mainnet-shaped
//! states) in the system's temporary directory, gone when dropped.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

use shamap::Key;

use crate::build::scratch_error as fail;
use crate::ClioError;

/// Buffer of the file, each way.
const BUFFER: usize = 1 << 20;

/// A batch of objects, as [`Spool::each_batch`] gives them.
type Batch<'a> = &'a [(Key, Vec<u8>)];

/// Objects written to a scratch file, in the order given.
pub(crate) struct Spool {
    dir: PathBuf,
    file: BufWriter<File>,
    /// Objects written.
    pub(crate) len: u64,
}

impl Spool {
    /// An empty spool in the system's temporary directory.
    pub(crate) fn new() -> Result<Spool, ClioError> {
        let dir = std::env::temp_dir();
        let file =
            tempfile::tempfile_in(&dir).map_err(|e| fail(&dir, "cannot create a file", e))?;
        Ok(Spool {
            file: BufWriter::with_capacity(BUFFER, file),
            dir,
            len: 0,
        })
    }

    /// Appends object `data` of `key`.
    pub(crate) fn push(&mut self, key: &Key, data: &[u8]) -> Result<(), ClioError> {
        let len = u32::try_from(data.len())
            .map_err(|_| fail(&self.dir, "cannot write", "an object over 4 GiB"))?;
        self.file
            .write_all(&key.0)
            .and_then(|()| self.file.write_all(&len.to_le_bytes()))
            .and_then(|()| self.file.write_all(data))
            .map_err(|e| fail(&self.dir, "cannot write", e))?;
        self.len += 1;
        Ok(())
    }

    /// Calls `f` with the objects, `batch` at a time, in the order pushed.
    pub(crate) fn each_batch(
        self,
        batch: usize,
        f: &mut dyn FnMut(Batch<'_>) -> Result<(), ClioError>,
    ) -> Result<(), ClioError> {
        let Spool { dir, file, len } = self;
        let mut file = file
            .into_inner()
            .map_err(|e| fail(&dir, "cannot write", e.error()))?;
        file.seek(SeekFrom::Start(0))
            .map_err(|e| fail(&dir, "cannot read", e))?;
        let mut r = BufReader::with_capacity(BUFFER, file);
        let mut out = Vec::with_capacity(batch.min(1 << 16));
        for _ in 0..len {
            let mut head = [0u8; 36];
            r.read_exact(&mut head)
                .map_err(|e| fail(&dir, "cannot read", e))?;
            let mut key = Key([0; 32]);
            key.0.copy_from_slice(&head[..32]);
            let n = u32::from_le_bytes([head[32], head[33], head[34], head[35]]) as usize;
            let mut data = vec![0u8; n];
            r.read_exact(&mut data)
                .map_err(|e| fail(&dir, "cannot read", e))?;
            out.push((key, data));
            if out.len() == batch {
                f(&out)?;
                out.clear();
            }
        }
        f(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_come_back_in_order_a_batch_at_a_time() {
        let objects: Vec<(Key, Vec<u8>)> = (0u8..25)
            .map(|i| (Key([i; 32]), vec![i; usize::from(i) * 3]))
            .collect();
        let mut spool = Spool::new().expect("spool");
        for (k, d) in &objects {
            spool.push(k, d).expect("push");
        }
        assert_eq!(spool.len, 25);
        let mut back = Vec::new();
        let mut sizes = Vec::new();
        spool
            .each_batch(10, &mut |b| {
                sizes.push(b.len());
                back.extend_from_slice(b);
                Ok(())
            })
            .expect("read back");
        assert_eq!(sizes, [10, 10, 5]);
        assert_eq!(back, objects);
    }
}
