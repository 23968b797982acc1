//! The index checkpoint: the node log's index, metadata and counters as
//! of a length of the log, saved when a writer closes the store, so that
//! the next opening reads them (at 10M entries 128 MiB, a fraction of a
//! second) and scans only the log written after that length, instead of
//! the whole log (2.6 GB, 3–5 s).
//!
//! A checkpoint speeds an opening up; it is never needed. It is used when
//! every check passes (otherwise the whole log is scanned, as without one,
//! or the opening refuses, see below):
//! - its own bytes: magic, version, lengths and a crc32c over all of them;
//! - it names the log file it describes (device and inode, and the
//!   identity in the log's header, [`super::format`]) and a length the log
//!   still has, and the crc32c of the log's last bytes below that
//!   length (up to 4 KiB) matches;
//! - the index it holds is a well-formed table (see `Index::from_slots`),
//!   every offset below its length.
//!
//! Bytes of the log below a length it once had never change while it is
//! the same file (writes append; an unfinished write is cut only above the
//! last whole batch; a reclaim writes a new file and renames it over).
//! So what a checkpoint describes stays true until a reclaim, which
//! removes it (and syncs the directory) before it renames the new log into
//! place; a writer that opens the store keeps it (the log only grows after
//! it) and replaces it with its own when it closes. A checkpoint that names
//! the log's file and contradicts it (the log is shorter than its length,
//! or its last bytes below it differ) is therefore evidence that the log
//! lost bytes: the opening refuses, naming the offset. One whose own bytes
//! are damaged, or that names another file (a copied store), is ignored.
//!
//! The identity matters because a file system may give a new file the inode
//! of one removed (ext4 does): `rm nodes.log nodes.ack` and a new store in
//! the same directory must not meet the old log's checkpoint as its own.
//! A log made by this build has a random identity, which its checkpoints
//! record; a checkpoint whose identity differs from the log's is one of
//! another log, ignored like one naming another inode (and removed when a
//! new log is created).
//!
//! Layout (little-endian): magic `SHMAPIDX`, version `u32` (2; version 1,
//! of earlier builds, held 0 in the next field and is read as a checkpoint
//! of a log without identity), the log's identity `u32`; the log's device `u64` and inode `u64`; the length covered `u64`,
//! the crc32c of the log's last `min(4096, covered - 16)` bytes below it
//! `u32`, reserved `u32`; the next batch sequence number `u64`; live record
//! bytes `u64`; the index's `bits` `u32`, reserved `u32`, its entry count
//! `u64`; the metadata count `u32`, then each record: name length `u32`,
//! name, value length `u32`, value; then the index's `2^bits` slots, `u64`
//! each; last the crc32c `u32` of everything before it.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::{FileExt, MetadataExt};

use std::path::Path;

use super::format::FILE_HEADER_LEN;
use super::index::Index;

/// The checkpoint's file name in the store's directory.
pub const CHECKPOINT_FILE: &str = "nodes.idx";
/// Where a checkpoint is written before it is renamed into place.
pub const CHECKPOINT_TMP_FILE: &str = "nodes.idx.tmp";

const MAGIC: &[u8; 8] = b"SHMAPIDX";
const VERSION: u32 = 2;
/// The version earlier builds wrote: no log identity.
const VERSION_WITHOUT_IDENTITY: u32 = 1;
/// How many of the log's last bytes below the covered length are checked.
const TAIL_CHECK: u64 = 4096;

/// What a checkpoint holds: the opening's state as of `end`.
#[derive(Debug)]
pub struct Checkpoint {
    /// The log file's device and inode.
    pub(crate) log_id: (u64, u64),
    /// The identity in the log's header (0: a log without one).
    pub(crate) log_identity: u32,
    /// The log's length covered: the end of its last whole batch.
    pub(crate) end: u64,
    /// crc32c of the log's last bytes below `end` (see `tail_crc`).
    pub(crate) tail_crc: u32,
    /// The sequence number of the next batch.
    pub(crate) next_seq: u64,
    /// Bytes of live node records below `end`.
    pub(crate) live_bytes: u64,
    /// The metadata records.
    pub(crate) meta: BTreeMap<String, Vec<u8>>,
    /// Where each live node's record starts.
    pub(crate) index: Index,
}

/// The device and inode of `file`.
pub(crate) fn file_id(file: &File) -> std::io::Result<(u64, u64)> {
    let m = file.metadata()?;
    Ok((m.dev(), m.ino()))
}

/// The identity in `log`'s header (0 for a log without one, or whose
/// header does not read as a node log's: such a log has no checkpoint).
pub(crate) fn log_identity(log: &File) -> std::io::Result<u32> {
    let mut h = [0u8; FILE_HEADER_LEN as usize];
    log.read_exact_at(&mut h, 0)?;
    Ok(super::format::check_file_header(&h).unwrap_or(0))
}

/// crc32c of `log`'s last `min(4096, end - 16)` bytes below `end`.
pub(crate) fn tail_crc(log: &File, end: u64) -> std::io::Result<u32> {
    let start = end.saturating_sub(TAIL_CHECK).max(FILE_HEADER_LEN);
    let mut buf = vec![0u8; end.saturating_sub(start) as usize];
    log.read_exact_at(&mut buf, start)?;
    Ok(crc32c::crc32c(&buf))
}

/// A writer that keeps the crc32c of what passes through it.
struct CrcWriter<W> {
    inner: W,
    crc: u32,
}

impl<W: Write> CrcWriter<W> {
    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.crc = crc32c::crc32c_append(self.crc, bytes);
        self.inner.write_all(bytes)
    }
}

/// Writes `c`'s bytes to `out` (through a buffer: the index is written
/// in pieces, never copied whole).
pub(crate) fn encode(c: &Checkpoint, out: impl Write) -> std::io::Result<()> {
    let mut w = CrcWriter {
        inner: std::io::BufWriter::with_capacity(1 << 20, out),
        crc: 0,
    };
    w.put(MAGIC)?;
    w.put(&VERSION.to_le_bytes())?;
    w.put(&c.log_identity.to_le_bytes())?;
    w.put(&c.log_id.0.to_le_bytes())?;
    w.put(&c.log_id.1.to_le_bytes())?;
    w.put(&c.end.to_le_bytes())?;
    w.put(&c.tail_crc.to_le_bytes())?;
    w.put(&0u32.to_le_bytes())?;
    w.put(&c.next_seq.to_le_bytes())?;
    w.put(&c.live_bytes.to_le_bytes())?;
    w.put(&c.index.bits().to_le_bytes())?;
    w.put(&0u32.to_le_bytes())?;
    w.put(&(c.index.len() as u64).to_le_bytes())?;
    w.put(&(c.meta.len() as u32).to_le_bytes())?;
    for (name, value) in &c.meta {
        w.put(&(name.len() as u32).to_le_bytes())?;
        w.put(name.as_bytes())?;
        w.put(&(value.len() as u32).to_le_bytes())?;
        w.put(value)?;
    }
    for piece in c.index.slots().chunks(4096) {
        let bytes: Vec<u8> = piece.iter().flat_map(|s| s.to_le_bytes()).collect();
        w.put(&bytes)?;
    }
    let crc = w.crc;
    w.inner.write_all(&crc.to_le_bytes())?;
    w.inner.flush()
}

/// Reads fields off a checkpoint of `left` bytes, keeping their crc32c;
/// never allocates more than the bytes left.
struct Fields<R> {
    inner: R,
    left: u64,
    crc: u32,
}

impl<R: std::io::Read> Fields<R> {
    fn fill(&mut self, buf: &mut [u8]) -> Result<(), String> {
        if (buf.len() as u64) > self.left {
            return Err("cut short".into());
        }
        self.inner.read_exact(buf).map_err(|e| e.to_string())?;
        self.left -= buf.len() as u64;
        self.crc = crc32c::crc32c_append(self.crc, buf);
        Ok(())
    }
    fn bytes(&mut self, n: usize) -> Result<Vec<u8>, String> {
        if n as u64 > self.left {
            return Err("cut short".into());
        }
        let mut v = vec![0u8; n];
        self.fill(&mut v)?;
        Ok(v)
    }
    fn u32(&mut self) -> Result<u32, String> {
        let mut b = [0u8; 4];
        self.fill(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }
    fn u64(&mut self) -> Result<u64, String> {
        let mut b = [0u8; 8];
        self.fill(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }
}

/// Decodes a checkpoint's bytes, checking everything that needs no log:
/// the crc, the lengths, the metadata's names, the index's form and that
/// every offset in it is below the covered length.
pub fn decode(bytes: &[u8]) -> Result<Checkpoint, String> {
    decode_from(bytes, bytes.len() as u64)
}

/// [`decode`] of the `len` bytes `input` yields, read in pieces.
fn decode_from(input: impl std::io::Read, len: u64) -> Result<Checkpoint, String> {
    let mut c = Fields {
        inner: input,
        left: len.checked_sub(4).ok_or("shorter than its checksum")?,
        crc: 0,
    };
    if c.bytes(MAGIC.len())? != MAGIC {
        return Err("not an index checkpoint".into());
    }
    let version = c.u32()?;
    let log_identity = c.u32()?;
    match version {
        VERSION => {}
        VERSION_WITHOUT_IDENTITY if log_identity == 0 => {}
        _ => {
            return Err(format!(
                "version {version} with log identity {log_identity:#x}"
            ))
        }
    }
    let log_id = (c.u64()?, c.u64()?);
    let end = c.u64()?;
    if end < FILE_HEADER_LEN {
        return Err(format!("a covered length of {end}"));
    }
    let tail_crc = c.u32()?;
    c.u32()?;
    let next_seq = c.u64()?;
    let live_bytes = c.u64()?;
    let bits = c.u32()?;
    c.u32()?;
    let len = c.u64()?;
    let mut meta = BTreeMap::new();
    for _ in 0..c.u32()? {
        let n = c.u32()? as usize;
        let name =
            String::from_utf8(c.bytes(n)?).map_err(|_| "a metadata name that is not UTF-8")?;
        let n = c.u32()? as usize;
        let value = c.bytes(n)?;
        meta.insert(name, value);
    }
    if bits >= 40 || c.left != (1u64 << bits) * 8 {
        return Err(format!(
            "{} bytes of index where 2^{bits} slots take {}",
            c.left,
            (1u128 << bits.min(100)) * 8
        ));
    }
    let mut slots = Vec::with_capacity(1 << bits);
    let mut piece = vec![0u8; 8 * 4096];
    while c.left > 0 {
        let n = (c.left as usize).min(piece.len());
        c.fill(&mut piece[..n])?;
        slots.extend(
            piece[..n]
                .chunks_exact(8)
                .map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes"))),
        );
    }
    let mut crc = [0u8; 4];
    c.inner.read_exact(&mut crc).map_err(|e| e.to_string())?;
    if c.crc != u32::from_le_bytes(crc) {
        return Err("its checksum does not match".into());
    }
    let index = Index::from_slots(slots, bits, end)?;
    if index.len() as u64 != len {
        return Err(format!(
            "an index of {} entries where its header says {len}",
            index.len()
        ));
    }
    Ok(Checkpoint {
        log_id,
        log_identity,
        end,
        tail_crc,
        next_seq,
        live_bytes,
        meta,
        index,
    })
}

/// The checkpoint in `dir` for the log `log` (of `log_len` bytes): `Some`
/// when there is one and it describes this log, `None` when there is none
/// or it is not usable (its own bytes damaged, not a regular file, or made
/// for another log file: the caller scans the whole log then). `Err` when
/// it describes this very file (device, inode and identity) and contradicts it: the
/// log is shorter than the length it recorded, or its bytes below that
/// length changed. Those bytes never change while the file is the log
/// (see the module doc), so the log lost bytes that a writer had closed
/// with: the caller refuses to open, naming what was found.
pub(crate) fn load(dir: &Path, log: &File, log_len: u64) -> Result<Option<Checkpoint>, String> {
    let Ok(Some(file)) =
        crate::backend::directory::open_side_file(&dir.join(CHECKPOINT_FILE), false)
    else {
        return Ok(None);
    };
    let Ok(len) = file.metadata().map(|m| m.len()) else {
        return Ok(None);
    };
    let Ok(c) = decode_from(std::io::BufReader::with_capacity(1 << 20, file), len) else {
        return Ok(None);
    };
    if file_id(log).map_err(|e| e.to_string())? != c.log_id
        || log_identity(log).map_err(|e| e.to_string())? != c.log_identity
    {
        return Ok(None);
    }
    if c.end > log_len {
        return Err(format!(
            "the node log is damaged at byte {log_len}: it ends there, but the index checkpoint ({CHECKPOINT_FILE}) recorded {} bytes when the last writer closed it: the log was cut short",
            c.end
        ));
    }
    if tail_crc(log, c.end).map_err(|e| e.to_string())? != c.tail_crc {
        let start = c.end.saturating_sub(TAIL_CHECK).max(FILE_HEADER_LEN);
        return Err(format!(
            "the node log is damaged at bytes {start}..{}: they differ from what the index checkpoint ({CHECKPOINT_FILE}) recorded when the last writer closed it",
            c.end
        ));
    }
    Ok(Some(c))
}

/// Writes `c` as the checkpoint of `dir`: to a temporary file, synced,
/// renamed into place, the directory synced.
pub(crate) fn save(dir: &Path, c: &Checkpoint) -> std::io::Result<()> {
    let tmp = dir.join(CHECKPOINT_TMP_FILE);
    let written = (|| {
        // Never a FIFO or a symlink someone put there: see `create_exclusive`.
        let f = super::files::create_exclusive(&tmp)?;
        encode(c, &f)?;
        f.sync_all()?;
        std::fs::rename(&tmp, dir.join(CHECKPOINT_FILE))?;
        super::files::sync_dir(dir)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Removes `dir`'s checkpoint (and a temporary one a save left), and
/// syncs the directory when there was one: done by a reclaim before it
/// puts a new log in place, so that no checkpoint names a file that is
/// gone (whose device and inode a later file could take).
pub(crate) fn remove(dir: &Path) -> std::io::Result<()> {
    let mut removed = false;
    for name in [CHECKPOINT_FILE, CHECKPOINT_TMP_FILE] {
        match std::fs::remove_file(dir.join(name)) {
            Ok(()) => removed = true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    if removed {
        super::files::sync_dir(dir)?;
    }
    Ok(())
}
