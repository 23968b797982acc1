//! NuDB's data file (`nudb.dat`): a 92-byte header, then records
//! appended one after another (cppalliance/NuDB `format.hpp`, `visit.ipp`;
//! big-endian integers):
//!
//! | bytes | header field |
//! |---|---|
//! | 0..8 | `nudb.dat` |
//! | 8..10 | version (2) |
//! | 10..18 | uid |
//! | 18..26 | appnum (rippled: 1) |
//! | 26..28 | key size (rippled: 32) |
//! | 28..92 | reserved |
//!
//! A data record is a u48 value size (never 0), the key, the value. A
//! spill record is a u48 zero, a u16 size and a bucket of that many bytes
//! (the entries a full key-file bucket could not hold); a spill offset in a
//! bucket points at that inner bucket, 8 bytes into its record.
//!
//! Files are opened read-only and read with positional reads
//! (`FileExt::read_at`): no lock, no write, no seek shared between threads.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::header::{check_len, check_magic, read_header};
use super::key_file::{u16_at, u48, u64_at, Bucket, NUDB_VERSION};

/// Bytes of the data file's header.
pub const DAT_HEADER_LEN: usize = 92;
/// Bytes of a record's size field.
pub const SIZE_LEN: usize = 6;
/// Bytes before a spill record's bucket (the zero size and the u16 size).
pub const SPILL_HEAD_LEN: usize = 8;
/// The largest value NuDB stores (its sizes are at most 32 bits).
pub const MAX_RECORD_VALUE: u64 = u32::MAX as u64;
/// The longest record a scan reads whole (64 MiB of value): far above any
/// rippled object, so that a damaged size field cannot make the reader
/// allocate what the file length allows.
pub const MAX_SCAN_RECORD: u64 = (64 << 20) + 64;

/// The data file's header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatHeader {
    /// Format version.
    pub version: u16,
    /// The store's unique id.
    pub uid: u64,
    /// The application's number (rippled: 1).
    pub appnum: u64,
    /// Bytes of a key.
    pub key_size: u16,
}

impl DatHeader {
    /// Parses and checks a data file's header.
    pub fn parse(b: &[u8]) -> Result<DatHeader, String> {
        check_len(b, DAT_HEADER_LEN, "a data file header")?;
        check_magic(b, "nudb.dat", "a NuDB data file")?;
        let h = DatHeader {
            version: u16_at(b, 8),
            uid: u64_at(b, 10),
            appnum: u64_at(b, 18),
            key_size: u16_at(b, 26),
        };
        if h.version != NUDB_VERSION {
            return Err(format!(
                "format version {} (this reader reads NuDB version {NUDB_VERSION})",
                h.version
            ));
        }
        if h.key_size < 1 {
            return Err("key size 0".to_owned());
        }
        Ok(h)
    }
}

/// One record found by a scan of the data file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record {
    /// A data record: its value starts `key_size` bytes after the key.
    Data {
        /// Bytes of the value.
        size: u64,
    },
    /// A spill record of `size` bucket bytes.
    Spill {
        /// Bytes of its bucket.
        size: u64,
    },
}

impl Record {
    /// `data record` or `spill record`, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Record::Data { .. } => "data record",
            Record::Spill { .. } => "spill record",
        }
    }

    /// Bytes the record takes in the file, all fields included.
    pub fn len(&self, key_size: usize) -> u64 {
        match *self {
            Record::Data { size } => SIZE_LEN as u64 + key_size as u64 + size,
            Record::Spill { size } => SPILL_HEAD_LEN as u64 + size,
        }
    }

    /// Parses a record's head from `b` (at least 8 bytes, or what is left
    /// of the file): `None` when `b` is too short to tell.
    pub fn head(b: &[u8]) -> Option<Record> {
        if b.len() < SIZE_LEN {
            return None;
        }
        match u48(b, 0) {
            0 if b.len() >= SPILL_HEAD_LEN => Some(Record::Spill {
                size: u64::from(u16_at(b, SIZE_LEN)),
            }),
            0 => None,
            size => Some(Record::Data { size }),
        }
    }
}

/// A data file opened for positional reads.
#[derive(Debug)]
pub struct DatFile {
    /// Its path, for messages.
    pub path: PathBuf,
    file: File,
    /// Its header.
    pub header: DatHeader,
    /// Its length when opened: records past it are not read (a live store
    /// appends beyond it).
    pub len: u64,
}

impl DatFile {
    /// Opens and checks `path` (read-only).
    pub fn open(path: &Path) -> Result<DatFile, String> {
        let (file, len, b) = read_header::<DAT_HEADER_LEN>(path, "a data file header")?;
        let header = DatHeader::parse(&b).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(DatFile {
            path: path.to_owned(),
            file,
            header,
            len,
        })
    }

    /// Reads `buf.len()` bytes at `offset`, which must lie in the file as
    /// opened; `what` says what is read, for the message.
    pub fn read_exact_at(&self, buf: &mut [u8], offset: u64, what: &str) -> Result<(), String> {
        let end = offset.checked_add(buf.len() as u64);
        if offset < DAT_HEADER_LEN as u64 || end.is_none_or(|e| e > self.len) {
            return Err(format!(
                "{}: {what} at byte {offset} ({} bytes) lies outside the records (file of {} bytes)",
                self.path.display(),
                buf.len(),
                self.len
            ));
        }
        self.file.read_exact_at(buf, offset).map_err(|e| {
            format!(
                "{}: reading {what} at byte {offset}: {e}",
                self.path.display()
            )
        })
    }

    /// The key of the data record starting at `offset`, when its size field
    /// and key lie whole in the file (a record cut short by truncation
    /// still names its key); `None` for a spill record or bytes missing.
    pub fn key_at(&self, offset: u64) -> Option<Vec<u8>> {
        let ks = usize::from(self.header.key_size);
        let mut b = vec![0u8; SIZE_LEN + ks];
        self.read_exact_at(&mut b, offset, "a record's key").ok()?;
        (u48(&b, 0) != 0).then(|| b.split_off(SIZE_LEN))
    }

    /// The data record at `offset` that a bucket entry says holds a value
    /// of `size` bytes: returns its key and value, checking that the
    /// record's own size field agrees with the entry.
    pub fn read_record(&self, offset: u64, size: u64) -> Result<(Vec<u8>, Vec<u8>), String> {
        let mut buf = Vec::new();
        self.read_record_into(offset, size, &mut buf)?;
        let value = buf.split_off(usize::from(self.header.key_size));
        Ok((buf, value))
    }

    /// [`DatFile::read_record`] into `buf` (resized): the record's key and
    /// value, one after the other, in a buffer the caller reuses.
    pub fn read_record_into(
        &self,
        offset: u64,
        size: u64,
        buf: &mut Vec<u8>,
    ) -> Result<(), String> {
        let ks = usize::from(self.header.key_size);
        if size == 0 || size > MAX_SCAN_RECORD || size > self.len {
            return Err(format!(
                "{}: a bucket entry gives the record at byte {offset} a value of {size} bytes, impossible in a file of {} bytes",
                self.path.display(),
                self.len
            ));
        }
        buf.resize(SIZE_LEN + ks + size as usize, 0);
        self.read_exact_at(buf, offset, "the record a bucket entry names")?;
        let own = u48(buf, 0);
        if own != size {
            return Err(format!(
                "{}: the record at byte {offset} has a value of {own} bytes, its bucket entry says {size}",
                self.path.display()
            ));
        }
        buf.drain(..SIZE_LEN);
        Ok(())
    }

    /// The spill bucket at `offset` (8 bytes into its spill record),
    /// holding at most `capacity` entries.
    pub fn read_spill(&self, offset: u64, capacity: usize) -> Result<Bucket, String> {
        let mut head = [0u8; SPILL_HEAD_LEN];
        let start = offset.saturating_sub(SPILL_HEAD_LEN as u64);
        self.read_exact_at(&mut head, start, "a spill record")?;
        if u48(&head, 0) != 0 {
            return Err(format!(
                "{}: the spill at byte {offset} is not in a spill record (the record at byte {start} is a data record)",
                self.path.display()
            ));
        }
        let size = usize::from(u16_at(&head, SIZE_LEN));
        let mut b = vec![0u8; size];
        self.read_exact_at(&mut b, offset, "a spill bucket")?;
        Bucket::parse(&b, capacity).map_err(|e| {
            format!(
                "{}: the spill bucket at byte {offset}: {e}",
                self.path.display()
            )
        })
    }

    /// A reader of the file's records from its header on, in blocks of
    /// about `block` bytes.
    pub fn chunks(&self, block: usize) -> Result<Chunks, String> {
        let file = File::open(&self.path).map_err(|e| format!("{}: {e}", self.path.display()))?;
        Ok(Chunks {
            file,
            path: self.path.clone(),
            key_size: usize::from(self.header.key_size),
            len: self.len,
            next: DAT_HEADER_LEN as u64,
            block: block.max(1 << 16),
            carry: Vec::new(),
            done: false,
        })
    }
}

/// A run of whole records read from the data file.
#[derive(Debug, Default)]
pub struct Chunk {
    /// The bytes read.
    pub bytes: Vec<u8>,
    /// File offset of `bytes[0]`.
    pub start: u64,
    /// Where each record starts in `bytes`, and what it is.
    pub records: Vec<(usize, Record)>,
    /// A record that does not fit in the file, found at the end of this
    /// chunk: its offset and the message (the scan ends there).
    pub broken: Option<(u64, String)>,
}

/// Reads the data file sequentially in large blocks, cut at record
/// boundaries: what the audit's reader thread runs.
#[derive(Debug)]
pub struct Chunks {
    file: File,
    path: PathBuf,
    key_size: usize,
    len: u64,
    next: u64,
    block: usize,
    carry: Vec<u8>,
    done: bool,
}

impl Chunks {
    /// The next chunk, `None` at the end. A record running past the end of
    /// the file ends the scan with [`Chunk::broken`] set.
    pub fn next_chunk(&mut self) -> Result<Option<Chunk>, String> {
        self.next_chunk_reusing(None)
    }

    /// [`Self::next_chunk`], reading into `spare`'s buffers (a chunk done
    /// with) instead of new ones: a scan that hands its chunks back
    /// allocates no block after the first few (with a large block freed at
    /// once, as the `shamap` binary's allocator does, every new one costs
    /// its pages' faults again: 2.5 s of system time over a 3 GB file).
    pub fn next_chunk_reusing(&mut self, spare: Option<Chunk>) -> Result<Option<Chunk>, String> {
        if self.done {
            return Ok(None);
        }
        let start = self.next - self.carry.len() as u64;
        let (mut bytes, mut records) =
            spare.map_or_else(Default::default, |c| (c.bytes, c.records));
        bytes.clear();
        records.clear();
        bytes.extend_from_slice(&self.carry);
        self.carry.clear();
        let want = (self.block as u64).min(self.len - self.next) as usize;
        let have = bytes.len();
        bytes.resize(have + want, 0);
        self.file
            .read_exact_at(&mut bytes[have..], self.next)
            .map_err(|e| {
                format!(
                    "{}: reading at byte {}: {e}",
                    self.path.display(),
                    self.next
                )
            })?;
        self.next += want as u64;
        let at_end = self.next == self.len;
        let mut chunk = Chunk {
            start,
            records,
            ..Chunk::default()
        };
        let mut pos = 0usize;
        loop {
            let rest = &bytes[pos..];
            if rest.is_empty() {
                break;
            }
            let head = Record::head(rest);
            let fits = head.map(|r| (r, r.len(self.key_size)));
            match fits {
                Some((r, n)) if n > MAX_SCAN_RECORD => {
                    let offset = start + pos as u64;
                    chunk.broken = Some((
                        offset,
                        format!(
                            "{}: the {} at byte {offset} declares {n} bytes, above the {MAX_SCAN_RECORD}-byte limit of a rippled object (damaged size field)",
                            self.path.display(),
                            r.name()
                        ),
                    ));
                    self.done = true;
                    break;
                }
                Some((r, n)) if n <= rest.len() as u64 => {
                    chunk.records.push((pos, r));
                    pos += n as usize;
                }
                Some((r, n)) if !at_end => {
                    // The record goes on in the next block; a record longer
                    // than the file is refused without reading on.
                    let offset = start + pos as u64;
                    if offset + n > self.len {
                        chunk.broken = Some((offset, self.past_end(offset, r, n)));
                        self.done = true;
                        break;
                    }
                    self.block = self.block.max(n as usize);
                    break;
                }
                None if !at_end => break,
                other => {
                    let offset = start + pos as u64;
                    let msg = match other {
                        Some((r, n)) => self.past_end(offset, r, n),
                        None => format!(
                            "{}: {} bytes at byte {offset} are too few for a record head (the file is truncated)",
                            self.path.display(),
                            rest.len()
                        ),
                    };
                    chunk.broken = Some((offset, msg));
                    self.done = true;
                    break;
                }
            }
        }
        if !self.done {
            self.carry.extend_from_slice(&bytes[pos..]);
            bytes.truncate(pos);
            if at_end {
                self.done = true;
            }
        } else {
            bytes.truncate(pos);
        }
        chunk.bytes = bytes;
        Ok(Some(chunk))
    }

    fn past_end(&self, offset: u64, r: Record, n: u64) -> String {
        format!(
            "{}: the {} at byte {offset} takes {n} bytes, past the end of the file ({} bytes; truncated or damaged)",
            self.path.display(),
            r.name(),
            self.len
        )
    }

    /// Bytes of the file (as opened).
    pub fn file_len(&self) -> u64 {
        self.len
    }

    /// Offset the next read starts at.
    pub fn position(&self) -> u64 {
        self.next
    }
}
