//! The scan at opening: reads the log from its start (or from an index
//! checkpoint), applies every whole batch, and tells an unfinished write
//! at the end (cut off by the next writer) from damage (an error naming
//! the byte offset).

use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use super::checkpoint::Checkpoint;
use super::format::{self, Record, FILE_HEADER_LEN};
use super::index::Index;
use super::ingest::WARM_CHUNK;
use super::state::State;

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
}

/// Reads the log: checks the file header, applies every whole batch, and
/// tells an unfinished write at the end (cut off by the caller) from damage
/// in the middle (an error naming the offset).
pub(super) fn scan(file: &File, from: Option<Checkpoint>) -> Result<Scanned, String> {
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    let mut header = [0u8; FILE_HEADER_LEN as usize];
    file.read_exact_at(&mut header, 0)
        .map_err(|_| format!("not a node log ({len} bytes, shorter than its header)"))?;
    format::check_file_header(&header)?;
    let shared = Arc::new(file.try_clone().map_err(|e| e.to_string())?);
    let mut s = State::empty(shared, (len / 200) as usize, FILE_HEADER_LEN);
    let mut next_seq = 0;
    let mut pos = FILE_HEADER_LEN;
    if let Some(c) = from {
        (s.index, s.meta, s.live_bytes, next_seq, pos) =
            (c.index, c.meta, c.live_bytes, c.next_seq, c.end);
    }
    let scan_from = pos;
    let mut reader = BufReader::with_capacity(4 << 20, file);
    reader
        .seek(std::io::SeekFrom::Start(pos))
        .map_err(|e| e.to_string())?;
    let mut body = Vec::new();
    // Where the whole batches end, and whether what follows may be a write
    // that never finished (`Some`) or is damage (`Err`).
    let torn_from = loop {
        if pos == len {
            break None;
        }
        let mut h = [0u8; format::BATCH_HEADER_LEN];
        if len - pos < h.len() as u64 {
            break Some(pos);
        }
        reader.read_exact(&mut h).map_err(|e| e.to_string())?;
        let header = match format::decode_batch_header(&h) {
            Ok(header) => header,
            // A header never written (its sector still zero) is an
            // unfinished write; anything else in its place is damage.
            Err(_) if h == [0; format::BATCH_HEADER_LEN] => break Some(pos),
            Err(e) => return Err(format!("the node log is damaged at byte {pos}: {e}")),
        };
        let body_start = pos + h.len() as u64;
        if header.body_len > len - body_start {
            // The file ends inside the batch: a write cut short.
            break Some(pos);
        }
        body.resize(header.body_len as usize, 0);
        reader.read_exact(&mut body).map_err(|e| e.to_string())?;
        if crc32c::crc32c(&body) != header.body_crc {
            // After a power loss some sectors of the last write may never
            // have reached the disk (they read as zeros); a body without
            // such a sector was written and then damaged.
            if has_zero_sector(&body, body_start) {
                break Some(pos);
            }
            return Err(format!(
                "the node log is damaged at byte {pos}: the batch there fails its checksum"
            ));
        }
        // The checksum matched: every record decodes (or the writer was
        // wrong, which is damage all the same).
        let records = format::records(&body)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("batch at byte {pos}: {e}"))?;
        apply(&mut s, body_start, &records).map_err(|e| e.to_string())?;
        next_seq = header.seq + 1;
        pos = body_start + header.body_len;
    };
    if let Some(cut) = torn_from {
        // An unfinished write is the last thing in the log.
        if let Some(later) = later_whole_batch(file, cut, len)? {
            return Err(format!(
                "the node log is damaged at byte {cut}: the batch there is not whole, and a whole batch follows at byte {later}"
            ));
        }
    }
    Ok(Scanned {
        index: s.index,
        meta: s.meta,
        end: torn_from.unwrap_or(len),
        live_bytes: s.live_bytes,
        next_seq,
        torn_from,
        scanned_bytes: torn_from.unwrap_or(len) - scan_from,
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
        let n = (PIECE + hl).min(len - at);
        let chunk = &mut buf[..n as usize];
        file.read_exact_at(chunk, at).map_err(|e| e.to_string())?;
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
