//! The one writer's state: the encoder, the next sequence number, the
//! write-out of unsynced bytes, and what a failure leaves
//! ([`Writer::poisoned`]). Appending through it is `append.rs`.

use std::fs::File;
use std::sync::{Arc, Mutex};

use super::format::BatchEncoder;
use super::recovery::Damage;

/// Once this many bytes written without a sync have gathered at the log's
/// end, a sync is started on another thread ([`WriteOut`]): a
/// bulk import's final sync then waits for the last few MiB instead of all
/// of them, the disk working while the CPU prepares the next batches.
const WRITE_OUT_BYTES: u64 = 8 << 20;

/// The writer's state, behind the store's writer lock.
pub(super) struct Writer {
    pub(super) encoder: BatchEncoder,
    pub(super) next_seq: u64,
    /// Where an unfinished write at the end of the log starts, found at
    /// opening: cut off before the next write, so that the next batch
    /// follows the last whole one.
    pub(super) cut: Option<u64>,
    /// Set when a write or sync failed in a way that leaves the file's
    /// state unknown: no more writes until the store is reopened.
    pub(super) poisoned: Option<String>,
    /// Bytes at the log's end written since the disk was last asked to
    /// take them (a sync, or [`WriteOut::start`]).
    pub(super) not_started: u64,
    pub(super) write_out: WriteOut,
    /// The acknowledgment record, opened at the first acknowledgment.
    pub(super) ack: Option<crate::backend::ack::AckFile>,
    /// The check of the log below the index checkpoint the opening
    /// started from ([`super::recovery::check_below`]), running on a
    /// thread of its own; the first write waits for it.
    pub(super) below_checkpoint: Option<std::thread::JoinHandle<Result<(), Damage>>>,
}

impl Writer {
    /// A writer whose next batch has sequence number `next_seq`.
    pub(super) fn new(next_seq: u64, cut: Option<u64>) -> Writer {
        Writer {
            encoder: BatchEncoder::default(),
            next_seq,
            cut,
            poisoned: None,
            not_started: 0,
            write_out: WriteOut::default(),
            ack: None,
            below_checkpoint: None,
        }
    }

    /// Why the store takes no more writes, if it does not: an earlier
    /// failure of this writer or of its background sync.
    pub(super) fn poison(&mut self) -> Option<&str> {
        if self.poisoned.is_none() {
            if let Some(e) = self.write_out.failure() {
                self.poisoned = Some(format!("an earlier sync failed ({e}); reopen the store"));
            }
        }
        self.poisoned.as_deref()
    }

    /// Counts `len` bytes written to `file` without a sync, starting a
    /// background sync once [`WRITE_OUT_BYTES`] have gathered.
    pub(super) fn wrote_unsynced(&mut self, file: &Arc<File>, len: u64) {
        self.not_started += len;
        if self.not_started >= WRITE_OUT_BYTES {
            self.write_out.start(file);
            self.not_started = 0;
        }
    }
}

/// Syncs the log on a thread of its own while the writer goes on: the
/// disk takes a bulk write's first batches while the CPU prepares the
/// next ones, and the commit point's sync waits only for the rest. A
/// failed background sync fails the store's next write or sync (its error
/// is reported to one sync of the file only, so it must not be lost).
#[derive(Default)]
pub(super) struct WriteOut {
    /// Started on first use.
    thread: Option<(
        std::sync::mpsc::SyncSender<Arc<File>>,
        std::thread::JoinHandle<()>,
    )>,
    failed: Arc<Mutex<Option<String>>>,
}

impl WriteOut {
    /// Has `file` synced soon, unless a sync that has not yet started is
    /// already waiting (it will cover what was written until now).
    pub(super) fn start(&mut self, file: &Arc<File>) {
        let (tx, _) = self.thread.get_or_insert_with(|| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Arc<File>>(1);
            let failed = self.failed.clone();
            let t = std::thread::Builder::new()
                .name("node log write-out".into())
                .spawn(move || {
                    for file in rx {
                        if let Err(e) = file.sync_data() {
                            let mut f = failed.lock().unwrap_or_else(|p| p.into_inner());
                            f.get_or_insert_with(|| e.to_string());
                        }
                    }
                })
                .expect("cannot start a thread");
            (tx, t)
        });
        let _ = tx.try_send(file.clone());
    }

    /// The error of a background sync that failed, if one did.
    pub(super) fn failure(&self) -> Option<String> {
        self.failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for WriteOut {
    fn drop(&mut self) {
        if let Some((tx, t)) = self.thread.take() {
            drop(tx);
            let _ = t.join();
        }
    }
}
