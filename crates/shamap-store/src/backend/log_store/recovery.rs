//! The scan at opening: reads the log from its start (or from an index
//! checkpoint), applies every whole batch, and tells an unfinished write
//! at the end (cut off by the next writer) from damage (an error naming
//! the byte offset).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use super::checkpoint::Checkpoint;
use super::format::{self, Record, FILE_HEADER_LEN};
use super::index::{Index, WARM_CHUNK};
use super::state::{PosReader, State};
use crate::backend::ack::{Ack, ACK_FILE};

/// Bytes of a disk sector: what a power loss writes whole or not at all.
const SECTOR: u64 = 512;

/// What reading a log found.
pub(super) struct Scanned {
    pub(super) index: Index,
    pub(super) meta: std::collections::BTreeMap<String, Vec<u8>>,
    /// End of the last whole batch.
    pub(super) end: u64,
    pub(super) live_bytes: u64,
    pub(super) next_seq: u64,
    /// Where an unfinished write at the end starts, if there is one.
    pub(super) torn_from: Option<u64>,
    /// Bytes of batches read (after the checkpoint, if one was used).
    pub(super) scanned_bytes: u64,
    /// Batches read.
    pub(super) batches: u64,
    /// With [`Scan::tolerate_damage`]: every damage met, in log order (the
    /// batches it hit were skipped).
    pub(super) damage: Vec<Damage>,
    /// The end and next sequence number of the index checkpoint the scan
    /// started from, if it did.
    pub(super) from_checkpoint: Option<(u64, u64)>,
}

/// Damage found in a log: where, and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damage {
    /// The byte offset.
    pub at: u64,
    /// What was found there, and what was expected.
    pub what: String,
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the node log is damaged at byte {}: {}",
            self.at, self.what
        )
    }
}

/// How to read a log.
#[derive(Default)]
pub(super) struct Scan {
    /// Start from this index checkpoint (already checked against the log).
    pub(super) from: Option<Checkpoint>,
    /// The last batch acknowledged as durable: the log must hold it.
    pub(super) ack: Option<Ack>,
    /// Go on past damage (skipping what it hit, to the next whole batch)
    /// and list it, instead of stopping at the first: the audit of
    /// `verify --db`, which then tells which roots it affects.
    pub(super) tolerate_damage: bool,
    /// The end and next sequence number an index checkpoint recorded,
    /// checked against the batches read (the audit, which reads the log
    /// from its start): a batch must end there, and the next one must
    /// have that number.
    pub(super) confirm_checkpoint: Option<(u64, u64)>,
}

/// Reads the log: checks the file header, applies every whole batch in
/// sequence, and tells an unfinished write at the end (cut off by the
/// caller) from damage (an error naming the offset). A batch out of
/// sequence (replayed, reordered, or after a gap) is damage; so is a log
/// whose last whole batch comes before the acknowledged one.
pub(super) fn scan(file: &File, how: Scan) -> Result<Scanned, String> {
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    let mut header = [0u8; FILE_HEADER_LEN as usize];
    file.read_exact_at(&mut header, 0)
        .map_err(|_| format!("not a node log ({len} bytes, shorter than its header)"))?;
    format::check_file_header(&header)?;
    let shared = Arc::new(file.try_clone().map_err(|e| e.to_string())?);
    let mut s = State::empty(shared, (len / 200) as usize, FILE_HEADER_LEN);
    // The sequence number the next batch must have; `None` before the
    // first batch of a log (a rewritten log starts where the old one was).
    let mut expected: Option<u64> = None;
    let mut pos = FILE_HEADER_LEN;
    let from_checkpoint = how.from.as_ref().map(|c| (c.end, c.next_seq));
    if let Some(c) = how.from {
        (s.index, s.meta, s.live_bytes, pos) = (c.index, c.meta, c.live_bytes, c.end);
        expected = (c.end > FILE_HEADER_LEN).then_some(c.next_seq);
    }
    let scan_from = pos;
    let mut damage = Vec::new();
    let mut batches = 0u64;
    // Where the batch the acknowledgment names was seen to end.
    let mut acked_end_seen = None;
    // Whether a batch was seen to end where the checkpoint to confirm
    // says one does.
    let mut checkpoint_seen = false;
    let mut body = Vec::new();
    let mut reader = PosReader::new(file, len, 4 << 20);
    // Where the whole batches end, and whether what follows may be a write
    // that never finished (`Some`) or is damage.
    let torn_from = loop {
        if pos == len {
            break None;
        }
        let at = pos;
        let found = read_batch(&mut reader, pos, len, &mut body)?;
        let problem = match found {
            Batch::Torn => break Some(pos),
            Batch::Damaged(what) => Some(what),
            Batch::Whole { seq, body_len } => {
                let next_pos = pos + format::BATCH_HEADER_LEN as u64 + body_len;
                match expected {
                    Some(want) if seq != want => Some(format!(
                        "the batch there has sequence number {seq} where {want} was expected (a batch replayed, reordered or left out)"
                    )),
                    _ => match format::records(&body).collect::<Result<Vec<_>, _>>() {
                        // The checksum matched but a record does not
                        // decode: the writer was wrong, damage all the same.
                        Err(e) => Some(format!("a record of the batch there: {e}")),
                        Ok(records) => {
                            let body_start = pos + format::BATCH_HEADER_LEN as u64;
                            apply(&mut s, body_start, &records).map_err(|e| e.to_string())?;
                            if how.ack.is_some_and(|a| a.seq == seq) {
                                acked_end_seen = Some(next_pos);
                            }
                            expected = Some(seq + 1);
                            batches += 1;
                            pos = next_pos;
                            if let Some(d) = confirm(how.confirm_checkpoint, seq, pos) {
                                // Damage below the checkpoint, whatever
                                // the acknowledgment says: a writer's
                                // check below the checkpoint refuses it.
                                checkpoint_seen = true;
                                if !how.tolerate_damage {
                                    return Err(d.to_string());
                                }
                                damage.push(d);
                            } else if how.confirm_checkpoint.is_some_and(|c| c.0 == pos) {
                                checkpoint_seen = true;
                            }
                            None
                        }
                    },
                }
            }
        };
        let Some(what) = problem else { continue };
        if past_ack(how.ack, expected) {
            // Nothing from here on was acknowledged as durable: whatever
            // is wrong with it is a write a crash or a power loss cut
            // short (any of its unsynced pages may be lost), cut off.
            break Some(at);
        }
        let d = Damage {
            at,
            what: before_ack(what, how.ack),
        };
        if !how.tolerate_damage {
            return Err(d.to_string());
        }
        damage.push(d);
        // On to the next whole batch, if there is one; what lies between
        // is lost.
        match later_whole_batch(file, at, len)? {
            Some(next) => {
                pos = next;
                let mut h = [0u8; format::BATCH_HEADER_LEN];
                file.read_exact_at(&mut h, next)
                    .map_err(|e| e.to_string())?;
                expected = format::decode_batch_header(&h).ok().map(|h| h.seq);
            }
            None => break None,
        }
    };
    let end = if damage.last().is_some_and(|d| d.at >= pos) {
        pos
    } else {
        torn_from.unwrap_or(len)
    };
    if let Some(cut) = torn_from.filter(|_| !past_ack(how.ack, expected)) {
        // An unfinished write is the last thing in the log, unless the
        // acknowledged batch lies behind it (then everything after that
        // batch is an unfinished write, whole batches among it or not).
        if let Some(later) = later_whole_batch(file, cut, len)? {
            let d = Damage {
                at: cut,
                what: format!(
                    "the batch there is not whole, and a whole batch follows at byte {later}"
                ),
            };
            if !how.tolerate_damage {
                return Err(d.to_string());
            }
            damage.push(d);
        }
    }
    let next_seq = expected.unwrap_or(0);
    if let Some((cend, cnext)) = how.confirm_checkpoint {
        if !checkpoint_seen && cend > FILE_HEADER_LEN {
            let d = Damage {
                at: cend.min(end),
                what: format!(
                    "the index checkpoint ({}) recorded batch {} ending at byte {cend}, but no whole batch of the log ends there (its whole batches end at byte {end}): the log was cut short or rewritten",
                    super::checkpoint::CHECKPOINT_FILE,
                    cnext.saturating_sub(1)
                ),
            };
            if !how.tolerate_damage {
                return Err(d.to_string());
            }
            damage.push(d);
        }
    }
    if let Some(a) = how.ack {
        let whole_through = next_seq.checked_sub(1).filter(|_| expected.is_some());
        let missing = match whole_through {
            None => true,
            Some(last) => last < a.seq,
        };
        let d = if missing {
            let (at, found) = match torn_from {
                Some(cut) => (cut, "the log's last batch there is not whole".to_owned()),
                None => (
                    end,
                    format!(
                        "the log ends there after batch {}",
                        whole_through.map_or("none".to_owned(), |l| l.to_string())
                    ),
                ),
            };
            Some(Damage {
                at,
                what: format!(
                    "{found}, but batch {} (ending at byte {}) was acknowledged as durable ({ACK_FILE}): acknowledged commits are missing (the log was cut short, damaged or replaced by an older copy)",
                    a.seq, a.end
                ),
            })
        } else {
            acked_end_seen.filter(|&e| e != a.end).map(|e| Damage {
                at: e,
                what: format!(
                    "batch {} ends here, but {ACK_FILE} recorded it ending at byte {} (this log is not the one it describes)",
                    a.seq, a.end
                ),
            })
        };
        if let Some(d) = d {
            if !how.tolerate_damage {
                return Err(d.to_string());
            }
            damage.push(d);
        }
    }
    Ok(Scanned {
        index: s.index,
        meta: s.meta,
        end,
        live_bytes: s.live_bytes,
        next_seq,
        torn_from,
        scanned_bytes: end - scan_from,
        batches,
        damage,
        from_checkpoint,
    })
}

/// The damage when batch `seq`, ending at `end`, ends where the
/// checkpoint to confirm (`(end, next_seq)`) says a batch ends, but not
/// the batch it names.
fn confirm(checkpoint: Option<(u64, u64)>, seq: u64, end: u64) -> Option<Damage> {
    let (cend, cnext) = checkpoint?;
    (cend == end && cnext != seq + 1).then(|| Damage {
        at: end,
        what: format!(
            "batch {seq} ends here, but the index checkpoint ({}) recorded batch {} ending here (the log was rewritten after the checkpoint, or the checkpoint describes another log)",
            super::checkpoint::CHECKPOINT_FILE,
            cnext.saturating_sub(1)
        ),
    })
}

/// True when the batches read so far (the next one expected to have
/// number `expected`) include the one `ack` names: what follows was never
/// acknowledged as durable.
fn past_ack(ack: Option<Ack>, expected: Option<u64>) -> bool {
    matches!((ack, expected), (Some(a), Some(e)) if e > a.seq)
}

/// What damage found before the acknowledged batch is: its description,
/// naming the batch it keeps from the store.
fn before_ack(what: String, ack: Option<Ack>) -> String {
    match ack {
        Some(a) => format!(
            "{what}, at or before batch {} (ending at byte {}), which was acknowledged as durable ({ACK_FILE})",
            a.seq, a.end
        ),
        None => what,
    }
}

/// Checks the log's batches in `[FILE_HEADER_LEN, to)` without applying
/// them: both checksums of each, its records, and that their sequence
/// numbers run on to `next_seq` at `to` (what an index checkpoint at `to`
/// recorded). What a writer that opened from a checkpoint runs before its
/// first write: damage below the checkpoint, which its opening did not
/// read, is found before anything is written above it.
pub(super) fn check_below(file: &File, to: u64, next_seq: u64) -> Result<(), Damage> {
    let io = |e: String| Damage {
        at: FILE_HEADER_LEN,
        what: format!("cannot be read: {e}"),
    };
    let mut reader = PosReader::new(file, to, 4 << 20);
    let mut body = Vec::new();
    let mut pos = FILE_HEADER_LEN;
    let mut expected: Option<u64> = None;
    while pos < to {
        let what = match read_batch(&mut reader, pos, to, &mut body).map_err(io)? {
            Batch::Torn => "the batch there is not whole, below the index checkpoint".to_owned(),
            Batch::Damaged(what) => what,
            Batch::Whole { seq, body_len } => {
                if let Some(want) = expected.filter(|&w| w != seq) {
                    format!("the batch there has sequence number {seq} where {want} was expected (a batch replayed, reordered or left out)")
                } else if let Some(Err(e)) = format::records(&body).find(|r| r.is_err()) {
                    format!("a record of the batch there: {e}")
                } else {
                    expected = Some(seq + 1);
                    pos += format::BATCH_HEADER_LEN as u64 + body_len;
                    continue;
                }
            }
        };
        return Err(Damage { at: pos, what });
    }
    match expected {
        Some(got) if got != next_seq => Err(Damage {
            at: to,
            what: format!(
                "the batches below the index checkpoint end with number {}, where it recorded {}",
                got - 1,
                next_seq.saturating_sub(1)
            ),
        }),
        _ => Ok(()),
    }
}

/// What [`read_batch`] found at an offset.
enum Batch {
    /// A whole batch (both checksums match); its body is in the buffer.
    Whole { seq: u64, body_len: u64 },
    /// What may be a write that never finished: a header never written,
    /// a batch the file ends inside, or a body with a sector of zeros.
    Torn,
    /// Anything else that is not a whole batch.
    Damaged(String),
}

/// Reads the batch at `pos` of a log of `len` bytes (its body into `body`).
fn read_batch(
    file: &mut PosReader<'_>,
    pos: u64,
    len: u64,
    body: &mut Vec<u8>,
) -> Result<Batch, String> {
    let mut h = [0u8; format::BATCH_HEADER_LEN];
    if len - pos < h.len() as u64 {
        return Ok(Batch::Torn);
    }
    file.read_at(&mut h, pos).map_err(|e| e.to_string())?;
    let header = match format::decode_batch_header(&h) {
        Ok(header) => header,
        // A header never written (its sector still zero) is an
        // unfinished write; anything else in its place is damage.
        Err(_) if h == [0; format::BATCH_HEADER_LEN] => return Ok(Batch::Torn),
        Err(e) => return Ok(Batch::Damaged(e)),
    };
    let body_start = pos + h.len() as u64;
    if header.body_len > len - body_start {
        // The file ends inside the batch: a write cut short.
        return Ok(Batch::Torn);
    }
    body.resize(header.body_len as usize, 0);
    file.read_at(body, body_start).map_err(|e| e.to_string())?;
    if crc32c::crc32c(body) != header.body_crc {
        // After a power loss some sectors of the last write may never
        // have reached the disk (they read as zeros); a body without
        // such a sector was written and then damaged.
        if has_zero_sector(body, body_start) {
            return Ok(Batch::Torn);
        }
        return Ok(Batch::Damaged(
            "the batch there fails its checksum".to_owned(),
        ));
    }
    Ok(Batch::Whole {
        seq: header.seq,
        body_len: header.body_len,
    })
}

/// Applies the records of one whole batch whose body starts at
/// `body_start` to `s`.
fn apply(s: &mut State, body_start: u64, records: &[(usize, Record<'_>)]) -> std::io::Result<()> {
    for chunk in records.chunks(WARM_CHUNK) {
        let puts = || {
            chunk.iter().filter_map(|(_, r)| match r {
                Record::PutNode { hash, .. } => Some(hash),
                _ => None,
            })
        };
        s.index.reserve(puts().count());
        s.index.warm(puts());
        for &(at, ref record) in chunk {
            match *record {
                Record::PutNode { hash, value, .. } => {
                    let off = body_start + at as u64;
                    let rec = format::node_record_len(value.len()) as u64;
                    s.put_in_index(&hash, off, rec)?;
                }
                Record::DeleteNode(hash) => {
                    s.remove_from_index(&hash)?;
                }
                Record::PutMeta { name, value } => {
                    s.meta.insert(name.to_owned(), value.to_vec());
                }
                Record::DeleteMeta(name) => {
                    s.meta.remove(name);
                }
            }
        }
    }
    Ok(())
}

/// True when `bytes`, found at file offset `at`, hold a whole sector of
/// zeros (at a sector boundary of the file): a sector that was never
/// written.
fn has_zero_sector(bytes: &[u8], at: u64) -> bool {
    let first = at.next_multiple_of(SECTOR) - at;
    bytes.get(first as usize..).is_some_and(|rest| {
        rest.chunks_exact(SECTOR as usize)
            .any(|c| c.iter().all(|&b| b == 0))
    })
}

/// The offset of a whole batch (header and body checksums matching) in
/// `(from, len)`, if any: what tells damage in the middle of the log from an
/// unfinished write at its end. Reads the rest of the file once, in
/// pieces; a candidate header's body is read and checked in pieces too.
fn later_whole_batch(file: &File, from: u64, len: u64) -> Result<Option<u64>, String> {
    const PIECE: u64 = 1 << 20;
    let hl = format::BATCH_HEADER_LEN as u64;
    let mut buf = vec![0u8; (PIECE + hl) as usize];
    let mut at = from + 8;
    while at + hl <= len {
        // Holes (zeros never written) hold no batch: skipped unread.
        match super::files::next_data(file, at).map_err(|e| e.to_string())? {
            Some(data) => at = data & !7,
            None => break,
        }
        if at + hl > len {
            break;
        }
        let n = (PIECE + hl).min(len - at);
        let chunk = &mut buf[..n as usize];
        file.read_exact_at(chunk, at).map_err(|e| e.to_string())?;
        if chunk.iter().all(|&b| b == 0) {
            // Zeros written: no header starts here either.
            at += PIECE;
            continue;
        }
        let mut i = 0u64;
        while i + hl <= n && i < PIECE {
            let h: &[u8; format::BATCH_HEADER_LEN] = chunk[i as usize..(i + hl) as usize]
                .try_into()
                .expect("header length");
            if let Ok(header) = format::decode_batch_header(h) {
                let start = at + i + hl;
                if header.body_len <= len - start
                    && body_crc(file, start, header.body_len)? == header.body_crc
                {
                    return Ok(Some(at + i));
                }
            }
            i += 8;
        }
        at += PIECE;
    }
    Ok(None)
}

/// crc32c of `len` bytes of `file` from `start`, read in pieces.
fn body_crc(file: &File, start: u64, len: u64) -> Result<u32, String> {
    let mut crc = 0u32;
    let mut buf = vec![0u8; (len.min(1 << 20)) as usize];
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(buf.len() as u64) as usize;
        file.read_exact_at(&mut buf[..n], start + done)
            .map_err(|e| e.to_string())?;
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        done += n as u64;
    }
    Ok(crc)
}
