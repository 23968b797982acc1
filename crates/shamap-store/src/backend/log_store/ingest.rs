//! The node log's bulk write ([`BulkIngest::ingest_unordered`]): an import
//! into an empty log on two threads. The calling thread encodes the nodes
//! into batches of about [`INGEST_BATCH_BYTES`]; a second thread writes
//! each batch at its place in the log and publishes it to the index, while
//! the first encodes the next. Each batch is written and published whole,
//! as [`LogStore::write`] does one, in order; nothing is synced (the root
//! record's durable write does that, see `write_snapshot`).
//!
//! At 1M entries (1.36M nodes, 213 MB) the encoding thread takes ~120 ms
//! and the writing one ~110 ms (pwrite ~50, index ~60) side by side,
//! ~120–170 ms in all; why two threads, measured against one:
//! docs/design.md, "Bulk import on two threads".
//!
//! [`BulkIngest::ingest_unordered`]: crate::BulkIngest::ingest_unordered

use std::os::unix::fs::FileExt;
use std::sync::mpsc;

use shamap::Hash256;

use super::format::BatchEncoder;
use super::index::WARM_CHUNK;
use super::state::State;
use super::LogStore;
use crate::error::StoreError;
use crate::store::NodeSink;

/// Encoded bytes per batch of a bulk write.
pub const INGEST_BATCH_BYTES: usize = 4 << 20;

/// One encoded batch on its way to the log.
#[derive(Default)]
struct Encoded {
    encoder: BatchEncoder,
    /// Where in the log the batch starts.
    start: u64,
    /// Its sequence number.
    seq: u64,
    /// Each node's hash, record offset in the log and record length.
    puts: Vec<(Hash256, u64, u64)>,
}

impl Encoded {
    fn end(&self) -> u64 {
        self.start + self.encoder.len() as u64
    }
}

impl LogStore {
    pub(super) fn ingest(&self, feed: &mut dyn FnMut(&mut NodeSink<'_>)) -> Result<(), StoreError> {
        let mut guard = self.writer_for_append()?;
        let w = &mut *guard;
        let (file, start) = {
            let s = self.state();
            (s.file.clone(), s.end)
        };
        self.cut_unfinished(w, &file)?;

        let (full, to_write) = mpsc::sync_channel::<Encoded>(1);
        let (spent, to_reuse) = mpsc::channel::<Encoded>();
        let mut failure: Option<StoreError> = None;
        let mut seq = w.next_seq;
        let written = std::thread::scope(|scope| {
            let file = &file;
            let writer = scope.spawn(move || -> Result<(), Failed> {
                for batch in to_write {
                    file.write_all_at(batch.encoder.bytes(), batch.start)
                        .map_err(|e| Failed::Write(batch.start, batch.seq, e))?;
                    let mut s = self.inner.state.write().unwrap_or_else(|p| p.into_inner());
                    publish(&mut s, &batch.puts, batch.end()).map_err(Failed::Publish)?;
                    drop(s);
                    let _ = spent.send(batch);
                }
                Ok(())
            });

            let mut batch = Encoded {
                start,
                ..Encoded::default()
            };
            batch.encoder.begin();
            {
                // Sends the batch to the writing thread and starts the next;
                // false once the batch cannot be sent (the log would pass its
                // largest size, or the writing thread stopped on an error).
                let mut send = |batch: &mut Encoded, failure: &mut Option<StoreError>| -> bool {
                    batch.encoder.finish(seq);
                    batch.seq = seq;
                    let end = batch.end();
                    if let Err(e) = self.check_size(end) {
                        *failure = Some(e);
                        return false;
                    }
                    let mut next = to_reuse.try_recv().unwrap_or_default();
                    next.encoder.begin();
                    next.puts.clear();
                    next.start = end;
                    let len = end - batch.start;
                    if full.send(std::mem::replace(batch, next)).is_err() {
                        return false;
                    }
                    seq += 1;
                    w.wrote_unsynced(file, len);
                    true
                };
                let mut stopped = false;
                feed(&mut |hash, value| {
                    if stopped {
                        return;
                    }
                    let (at, len) = batch.encoder.put_node(hash, value);
                    batch
                        .puts
                        .push((*hash, batch.start + at as u64, len as u64));
                    if batch.encoder.len() >= INGEST_BATCH_BYTES {
                        stopped = !send(&mut batch, &mut failure);
                    }
                });
                if !stopped && !batch.puts.is_empty() {
                    send(&mut batch, &mut failure);
                }
            }
            drop(full);
            writer
                .join()
                .expect("the node log's writing thread panicked")
        });
        // Batches before the failed one (or all) are in the log and the
        // index; the sequence numbers sent were used.
        w.next_seq = seq;
        match written {
            Ok(()) => {}
            // The failed batch, and any after it, were never published:
            // the next batch takes the failed one's place and number.
            Err(Failed::Write(at, failed_seq, err)) => {
                w.next_seq = failed_seq;
                return Err(self.undo_failed_write(w, &file, at, err));
            }
            Err(Failed::Publish(err)) => {
                w.poisoned = Some(format!(
                    "the index could not be brought up to date ({err}); reopen the store"
                ));
                return Err(self.fail("cannot read the node log", err));
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Why the writing thread stopped.
enum Failed {
    /// Writing the batch at this offset, of this sequence number, failed;
    /// nothing of it was published.
    Write(u64, u64, std::io::Error),
    /// Publishing a written batch failed part way (a read of the log, to
    /// tell two nodes with one index tag apart, failed).
    Publish(std::io::Error),
}

/// Publishes one written batch of node puts: the index points at the new
/// records, the live bytes count them, and the log ends at `end`.
fn publish(s: &mut State, puts: &[(Hash256, u64, u64)], end: u64) -> std::io::Result<()> {
    s.index.reserve(puts.len());
    for chunk in puts.chunks(WARM_CHUNK) {
        s.index.warm(chunk.iter().map(|p| &p.0));
        for (hash, at, len) in chunk {
            s.put_in_index(hash, *at, *len)?;
        }
    }
    s.end = end;
    Ok(())
}
