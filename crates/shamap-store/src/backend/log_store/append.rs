//! Appending a batch through the one [`Writer`]: the checks and steps
//! every append takes, here once, for [`LogStore::append`] and the bulk
//! write (`ingest.rs`); syncing, acknowledging, and undoing what a failed
//! write left.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::MutexGuard;

use shamap::Hash256;

use super::index;
use super::writer::Writer;
use super::{LogStore, LOG_FILE};
use crate::backend::ack::{Ack, ACK_FILE};
use crate::error::{facts, StoreError};
use crate::store::{Batch, Op};

/// The encoder's buffer is kept between writes up to this capacity (a
/// larger batch's is given back: it would stay in the process's memory).
const ENCODER_KEEP_BYTES: usize = 8 << 20;

/// What [`LogStore::acknowledge`] says when it fails.
const ACK_FAILED: &str = "cannot record the commit as acknowledged";

/// A failed acknowledgment: the error, and whether the record may have
/// been written (opening it failed: it was not).
pub(super) struct AckFailure {
    pub(super) error: StoreError,
    pub(super) touched: bool,
}

/// The message of a store error, without the store's name (which the
/// error it goes into names again).
fn message_of(e: &StoreError) -> String {
    match e {
        StoreError::Backend { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

/// What publishing a written batch does to the store's state, one per
/// change, in the batch's order.
enum Effect {
    /// `hash`'s record starts at `at` and takes `len` bytes.
    PutNode {
        hash: Hash256,
        at: u64,
        len: u64,
    },
    DeleteNode(Hash256),
    PutMeta {
        name: String,
        value: Vec<u8>,
    },
    DeleteMeta(String),
}

fn check_name(name: &str) -> Result<(), String> {
    if name.len() > 255 {
        return Err(format!(
            "a metadata name of {} bytes (at most 255)",
            name.len()
        ));
    }
    Ok(())
}

impl LogStore {
    /// The writer, ready to append: refused when the store is open
    /// read-only or the writer is poisoned.
    pub(super) fn writer_for_append(&self) -> Result<MutexGuard<'_, Writer>, StoreError> {
        if self.inner.read_only {
            return Err(self.fail(
                "cannot write",
                "the store is open read-only (its directory cannot be written)",
            ));
        }
        let mut w = self.inner.writer.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(why) = w.poison() {
            return Err(self.fail("cannot write", why));
        }
        self.check_log_in_place(&mut w)?;
        self.wait_for_check_below(&mut w)?;
        Ok(w)
    }

    /// Waits for the check of the log below the index checkpoint, if one
    /// runs; damage it found stops the writer (nothing is written on top
    /// of a damaged log).
    pub(super) fn wait_for_check_below(&self, w: &mut Writer) -> Result<(), StoreError> {
        let Some(check) = w.below_checkpoint.take() else {
            return Ok(());
        };
        let why = match check.join() {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(damage)) => format!(
                "{damage} (below the index checkpoint the opening started from); {}",
                facts::DAMAGED_LOG
            ),
            Err(_) => "the check of the log below the index checkpoint failed".to_owned(),
        };
        w.poisoned = Some(why.clone());
        Err(self.fail("cannot write", why))
    }

    /// Refuses (and stops the writer) when the file at the log's path is
    /// no longer the file this store writes: the log was removed, renamed
    /// or replaced while the store was open, so what it writes would not
    /// be what the next opening reads.
    pub(super) fn check_log_in_place(&self, w: &mut Writer) -> Result<(), StoreError> {
        use std::os::unix::fs::MetadataExt;
        let ours = self.state().file.metadata().map(|m| (m.dev(), m.ino()));
        let there = std::fs::metadata(self.inner.path.join(LOG_FILE)).map(|m| (m.dev(), m.ino()));
        let why = match (ours, there) {
            (Ok(a), Ok(b)) if a == b => return Ok(()),
            (Ok(_), Ok(_)) => format!("{LOG_FILE} was replaced by another file while this store was open for writing"),
            (_, Err(e)) => format!("{LOG_FILE} was removed or cannot be seen ({e}) while this store was open for writing"),
            (Err(e), _) => format!("the open log cannot be examined ({e})"),
        };
        let why = format!("{why}; nothing more is written (reopen the store)");
        w.poisoned = Some(why.clone());
        Err(self.fail("cannot write", why))
    }

    /// Records batch `seq`, ending the log at `end`, as acknowledged
    /// durable (after it was synced), once the log is confirmed to be the
    /// file at the store's path. An error means the commit is not
    /// acknowledged (although the batch is on disk); it says whether the
    /// record may have been written ([`AckFailure::touched`]).
    pub(super) fn acknowledge(&self, w: &mut Writer, seq: u64, end: u64) -> Result<(), AckFailure> {
        let untouched = |error| AckFailure {
            error,
            touched: false,
        };
        self.check_log_in_place(w).map_err(untouched)?;
        crate::backend::ack::record_in(&mut w.ack, &self.inner.path, ACK_FILE, Ack { seq, end })
            .map_err(|e| AckFailure {
                error: self.fail(ACK_FAILED, format!("{ACK_FILE}: {}", e.error)),
                touched: e.touched,
            })
    }

    /// After batch `seq`, written at `start` and synced, could not be
    /// recorded as acknowledged: the writer takes no more writes (what
    /// this process holds in memory and what the next opening reads
    /// could otherwise part), and the batch is cut back and its number
    /// handed back when the record was never touched, so that the error's
    /// word "not committed" is true and the store opens as it was before
    /// the batch. When the record may have been written, or the cut
    /// fails, the batch stays (it is whole and synced: the next opening
    /// takes it) and the error says the commit may have landed.
    pub(super) fn undo_unacknowledged(
        &self,
        w: &mut Writer,
        file: &File,
        seq: u64,
        start: u64,
        failure: AckFailure,
    ) -> StoreError {
        let cut = if failure.touched {
            Err("the record may have been written".to_owned())
        } else {
            file.set_len(start)
                .and_then(|()| file.sync_data())
                .map_err(|e| e.to_string())
        };
        let (poison, words) = match cut {
            Ok(()) => {
                w.next_seq = seq;
                (
                    format!("an earlier commit could not be recorded as acknowledged ({ACK_FILE}); reopen the store"),
                    "its batch was cut back from the log: not committed".to_owned(),
                )
            }
            Err(why) => (
                format!("an earlier commit could not be recorded as acknowledged ({ACK_FILE}) nor undone ({why}); reopen the store"),
                format!("the commit may have landed: its batch {seq} is synced and the next opening takes it ({why})"),
            ),
        };
        w.poisoned = Some(poison);
        StoreError::backend(
            self.inner.location.clone(),
            format!("{}; {words}", message_of(&failure.error)),
        )
    }

    /// At a writer's opening: the whole batches the scan accepted after
    /// the last acknowledged one (written by a writer that died before it
    /// acknowledged them, or by one whose record a power loss kept from
    /// the disk) are synced and recorded as acknowledged. Readers may have
    /// seen them since the crash; from now on they are the store's, and a
    /// later loss of them is refused like any other.
    pub(super) fn acknowledge_recovered(&self, acked: Option<Ack>) -> Result<(), StoreError> {
        let mut w = self.inner.writer.lock().unwrap_or_else(|p| p.into_inner());
        let Some(last) = w.next_seq.checked_sub(1) else {
            return Ok(());
        };
        let (file, end) = {
            let s = self.state();
            (s.file.clone(), s.end)
        };
        if end <= super::format::FILE_HEADER_LEN || acked.is_some_and(|a| a.seq >= last) {
            return Ok(());
        }
        file.sync_data()
            .map_err(|e| self.fail("cannot sync the batches found at opening", e))?;
        self.acknowledge(&mut w, last, end).map_err(|f| f.error)
    }

    /// Refuses a batch that would end past the largest offset the index
    /// holds.
    pub(super) fn check_size(&self, end: u64) -> Result<(), StoreError> {
        if end > index::MAX_OFFSET {
            return Err(self.fail(
                "cannot write",
                "the node log has reached its largest size (128 GiB); run gc",
            ));
        }
        Ok(())
    }

    /// Appends `batch` and publishes it; with `durable`, syncs first.
    pub(super) fn append(&self, batch: Batch, durable: bool) -> Result<(), StoreError> {
        let mut w = self.writer_for_append()?;
        if batch.is_empty() {
            return if durable {
                self.sync_locked(&mut w)
            } else {
                Ok(())
            };
        }
        let (file, start) = {
            let s = self.state();
            (s.file.clone(), s.end)
        };
        let w = &mut *w;
        let seq = w.next_seq;
        let e = &mut w.encoder;
        e.begin();
        // What publishing will do, in the batch's order; the node values
        // are dropped here, outside the readers' lock.
        let mut effects: Vec<Effect> = Vec::new();
        let mut puts = 0;
        for op in batch.into_ops() {
            effects.push(match op {
                Op::PutNode { hash, value } => {
                    let (at, len) = e.put_node(&hash, &value);
                    puts += 1;
                    Effect::PutNode {
                        hash,
                        at: start + at as u64,
                        len: len as u64,
                    }
                }
                Op::DeleteNode(hash) => {
                    e.delete_node(&hash);
                    Effect::DeleteNode(hash)
                }
                Op::PutMeta { name, value } => {
                    check_name(&name).map_err(|m| self.fail("cannot write", m))?;
                    e.put_meta(&name, &value);
                    Effect::PutMeta { name, value }
                }
                Op::DeleteMeta(name) => {
                    check_name(&name).map_err(|m| self.fail("cannot write", m))?;
                    e.delete_meta(&name);
                    Effect::DeleteMeta(name)
                }
            });
        }
        e.finish(seq);
        let end = start + e.len() as u64;
        self.check_size(end)?;
        self.cut_unfinished(w, &file)?;
        let e = &mut w.encoder;
        if let Err(err) = file.write_all_at(e.bytes(), start) {
            return Err(self.undo_failed_write(w, &file, start, err));
        }
        e.shrink(ENCODER_KEEP_BYTES);
        w.next_seq += 1;
        if durable {
            self.sync_file(w, &file)?;
            if let Err(failure) = self.acknowledge(w, seq, end) {
                return Err(self.undo_unacknowledged(w, &file, seq, start, failure));
            }
        } else {
            w.wrote_unsynced(&file, end - start);
        }
        // Publish: index and metadata, under one lock.
        let read_fail = |e| self.fail("cannot read the node log", e);
        let deleted_any = {
            let mut s = self.inner.state.write().unwrap_or_else(|p| p.into_inner());
            s.index.reserve(puts);
            s.index.warm(effects.iter().filter_map(|f| match f {
                Effect::PutNode { hash, .. } => Some(hash),
                _ => None,
            }));
            let mut deleted_any = false;
            for f in effects {
                match f {
                    Effect::PutNode { hash, at, len } => {
                        s.put_in_index(&hash, at, len).map_err(read_fail)?;
                    }
                    Effect::DeleteNode(hash) => {
                        deleted_any |= s.remove_from_index(&hash).map_err(read_fail)?;
                    }
                    Effect::PutMeta { name, value } => {
                        s.meta.insert(name, value);
                    }
                    Effect::DeleteMeta(name) => {
                        s.meta.remove(&name);
                    }
                }
            }
            s.end = end;
            deleted_any
        };
        if deleted_any {
            self.reclaim_if_mostly_dead(w)?;
        }
        Ok(())
    }

    /// Cuts off the unfinished write found at opening, if it is still
    /// there: before the first write, so that it follows the last whole
    /// batch.
    pub(super) fn cut_unfinished(&self, w: &mut Writer, file: &File) -> Result<(), StoreError> {
        if let Some(cut) = w.cut {
            file.set_len(cut)
                .and_then(|()| file.sync_data())
                .map_err(|e| self.fail("cannot cut off an unfinished write", e))?;
            w.cut = None;
        }
        Ok(())
    }

    /// After a write of a batch at `start` failed: cuts off whatever part
    /// was written, so that the next batch follows the last whole one; if
    /// even that fails, the file's end is unknown and the store takes no
    /// more writes. Returns the error to report.
    pub(super) fn undo_failed_write(
        &self,
        w: &mut Writer,
        file: &File,
        start: u64,
        err: std::io::Error,
    ) -> StoreError {
        if let Err(cut) = file.set_len(start) {
            w.poisoned = Some(format!(
                "an earlier write failed ({err}) and could not be undone ({cut}); reopen the store"
            ));
        }
        self.fail("cannot write batch", err)
    }

    /// Syncs the log (the store's [`crate::NodeStore::sync`]) and records
    /// everything written until now as acknowledged.
    pub(super) fn sync_locked(&self, w: &mut Writer) -> Result<(), StoreError> {
        if let Some(why) = w.poison() {
            return Err(self.fail("cannot sync", why));
        }
        self.wait_for_check_below(w)?;
        let (file, end) = {
            let s = self.state();
            (s.file.clone(), s.end)
        };
        self.sync_file(w, &file)?;
        match w.next_seq.checked_sub(1) {
            Some(seq) if end > super::format::FILE_HEADER_LEN => {
                self.acknowledge(w, seq, end).map_err(|failure| {
                    // What was written is published and synced: it stays,
                    // and the next opening takes it.
                    w.poisoned = Some(format!("an earlier sync could not be recorded as acknowledged ({ACK_FILE}); reopen the store"));
                    StoreError::backend(
                        self.inner.location.clone(),
                        format!("{}; the writes before it are synced and stay (the next opening takes them)", message_of(&failure.error)),
                    )
                })
            }
            _ => Ok(()),
        }
    }

    /// fdatasync; a failure poisons the writer (after a failed fsync the
    /// kernel may have dropped the pages, so nothing written since the last
    /// good one can be trusted to be on disk).
    pub(super) fn sync_file(&self, w: &mut Writer, file: &File) -> Result<(), StoreError> {
        w.not_started = 0;
        file.sync_data().map_err(|e| {
            w.poisoned = Some(format!("an earlier sync failed ({e}); reopen the store"));
            self.fail("cannot sync", e)
        })?;
        // A background sync that failed meanwhile may have taken the
        // error this one would have reported.
        match w.poison() {
            Some(why) => Err(self.fail("cannot sync", why)),
            None => Ok(()),
        }
    }
}
