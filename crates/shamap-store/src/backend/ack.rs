//! The acknowledgment record: the sequence number (and, for the node log,
//! the end) of the last write a store reported durable, in a small file
//! beside the store's own (`nodes.ack` for the node log, `shamap.ack` in
//! a fjall directory). Opening refuses a store whose data ends before it:
//! an acknowledged commit is missing (a log or journal cut short, a batch
//! it holds damaged, an older copy put in its place), and a torn write
//! cannot explain it, since that write was synced before it was
//! acknowledged.
//!
//! Layout (32 bytes, little-endian): magic `SHMAPACK`, the batch's
//! sequence number `u64`, the log's end after it `u64`, reserved `u32`,
//! crc32c of the 28 bytes before it `u32`. It is made whole before it
//! appears (written and synced under a temporary name, renamed into
//! place, the directory synced), so that no crash leaves an empty one;
//! an empty or all-zero record (left by earlier builds, which created it
//! in place) reads as no record, the crash before its first write that it
//! is. Then it is overwritten in place (one sector, one `pwrite`) after
//! each durable write has been synced, and synced itself when the writer
//! closes: after a crash of the
//! process it is always current; after a power loss or an operating
//! system crash it may be older than the last acknowledged batch (never
//! newer than what the log holds, since the log was synced before it was
//! written), so a log cut back to an earlier batch that it does not name
//! is not caught then. Batch sequence numbers run on across reclaims,
//! so the record stays true of a rewritten log.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::backend::directory::open_side_file;

/// The record's file name in a node log's directory.
pub const ACK_FILE: &str = "nodes.ack";
/// Bytes of the record.
pub const ACK_LEN: usize = 32;
const MAGIC: &[u8; 8] = b"SHMAPACK";

/// The last batch acknowledged as durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    /// Its sequence number.
    pub seq: u64,
    /// The log's end after it (where the next batch starts).
    pub end: u64,
}

/// The record's bytes.
pub fn encode(a: Ack) -> [u8; ACK_LEN] {
    let mut b = [0u8; ACK_LEN];
    b[..8].copy_from_slice(MAGIC);
    b[8..16].copy_from_slice(&a.seq.to_le_bytes());
    b[16..24].copy_from_slice(&a.end.to_le_bytes());
    let crc = crc32c::crc32c(&b[..28]);
    b[28..].copy_from_slice(&crc.to_le_bytes());
    b
}

/// Decodes a record's bytes (exactly [`ACK_LEN`] of them).
pub fn decode(b: &[u8]) -> Result<Ack, String> {
    if b.len() != ACK_LEN {
        return Err(format!("{} bytes, not {ACK_LEN}", b.len()));
    }
    if &b[..8] != MAGIC {
        return Err("not an acknowledgment record".to_owned());
    }
    if crc32c::crc32c(&b[..28]) != u32::from_le_bytes(b[28..].try_into().expect("4 bytes")) {
        return Err("its checksum does not match".to_owned());
    }
    Ok(Ack {
        seq: u64::from_le_bytes(b[8..16].try_into().expect("8 bytes")),
        end: u64::from_le_bytes(b[16..24].try_into().expect("8 bytes")),
    })
}

/// The record `name` in `dir`, if there is one; an error names what is
/// wrong with one that is there (the caller refuses to open: without it,
/// the store cannot tell an acknowledged commit that is missing).
pub(crate) fn read(dir: &Path, name: &str) -> Result<Option<Ack>, String> {
    let path = dir.join(name);
    let why = |e: &dyn std::fmt::Display| format!("{name} cannot be read: {e}");
    let Some(file) = open_side_file(&path, false).map_err(|e| why(&e))? else {
        return Ok(None);
    };
    let len = file.metadata().map_err(|e| why(&e))?.len();
    if len == 0 {
        // Created and never written: a crash before its first record.
        return Ok(None);
    }
    if len != ACK_LEN as u64 {
        return Err(format!("{name} is damaged: {len} bytes, not {ACK_LEN}"));
    }
    let mut b = [0u8; ACK_LEN];
    file.read_exact_at(&mut b, 0).map_err(|e| why(&e))?;
    if b == [0; ACK_LEN] {
        // Its size reached the disk, its first record did not.
        return Ok(None);
    }
    decode(&b)
        .map(Some)
        .map_err(|e| format!("{name} is damaged: {e}"))
}

/// Why recording an acknowledgment failed, and whether the record may
/// have been written (or put in place) all the same.
#[derive(Debug)]
pub(crate) struct RecordError {
    /// What failed.
    pub(crate) error: std::io::Error,
    /// False when the record is certainly as it was: opening or creating
    /// it failed before anything was put in place.
    pub(crate) touched: bool,
}

/// Records `a` in `slot`'s record, opening the record `name` in `dir`
/// first when `slot` is empty, or creating it whole (see the module docs)
/// when there is none.
pub(crate) fn record_in(
    slot: &mut Option<AckFile>,
    dir: &Path,
    name: &str,
    a: Ack,
) -> Result<(), RecordError> {
    let untouched = |error| RecordError {
        error,
        touched: false,
    };
    use crate::backend::fault::{ack_fault, AckStage};
    if let Some(error) = ack_fault(dir, AckStage::Open) {
        return Err(untouched(error));
    }
    if slot.is_none() {
        match open_side_file(&dir.join(name), true).map_err(untouched)? {
            Some(file) => *slot = Some(AckFile { file }),
            None => {
                *slot = Some(AckFile::create(dir, name, a)?);
                return Ok(());
            }
        }
    }
    let f = slot.as_ref().expect("opened above");
    if let Some(error) = ack_fault(dir, AckStage::Record) {
        return Err(RecordError {
            error,
            touched: true,
        });
    }
    f.record(a).map_err(|error| RecordError {
        error,
        touched: true,
    })
}

/// The writer's handle on the record, opened (or created) at its first
/// acknowledgment.
#[derive(Debug)]
pub(crate) struct AckFile {
    file: File,
}

impl AckFile {
    /// Creates the record `name` in `dir` holding `a`: written and synced
    /// as `<name>.tmp` (created exclusively, never through a link, after a
    /// leftover is removed), renamed into place, the directory synced.
    fn create(dir: &Path, name: &str, a: Ack) -> Result<AckFile, RecordError> {
        use std::os::unix::fs::OpenOptionsExt;
        let untouched = |error| RecordError {
            error,
            touched: false,
        };
        let tmp = dir.join(format!("{name}.tmp"));
        match std::fs::remove_file(&tmp) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(untouched(e)),
            _ => {}
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&tmp)
            .map_err(untouched)?;
        let made = file
            .write_all_at(&encode(a), 0)
            .and_then(|()| file.sync_all())
            .and_then(|()| std::fs::rename(&tmp, dir.join(name)));
        if let Err(e) = made {
            let _ = std::fs::remove_file(&tmp);
            return Err(untouched(e));
        }
        // Renamed: the record is in place, if not yet durably.
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|error| RecordError {
                error,
                touched: true,
            })?;
        Ok(AckFile { file })
    }

    /// Records `a` (after the batch it names was synced).
    pub(crate) fn record(&self, a: Ack) -> std::io::Result<()> {
        self.file.write_all_at(&encode(a), 0)
    }

    /// Syncs the record.
    pub(crate) fn sync(&self) -> std::io::Result<()> {
        self.file.sync_data()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_any_flipped_bit_is_caught() {
        let a = Ack {
            seq: 77,
            end: 123_456,
        };
        let b = encode(a);
        assert_eq!(decode(&b), Ok(a));
        for bit in 0..ACK_LEN * 8 {
            let mut bad = b;
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(decode(&bad).is_err(), "bit {bit} flipped unnoticed");
        }
        assert!(decode(&b[..31]).is_err());
    }
}
