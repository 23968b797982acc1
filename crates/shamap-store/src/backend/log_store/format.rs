//! The bytes of a node log (`nodes.log`): a file header, then batches, each
//! a header and a body of records. Everything is little-endian and 8-byte
//! aligned, so that a record's offset divided by 8 fits the index.
//!
//! ```text
//! file header (16 B)   "SHAMAPNL" ‖ version u32 ‖ log identity u32
//! batch header (32 B)  "BTCH" ‖ 0u32 ‖ body length u64 ‖ sequence u64 ‖
//!                      body crc32c u32 ‖ crc32c of the 28 bytes before it u32
//! record (8 B + ...)   kind u8 ‖ key length u8 ‖ 0u16 ‖ value length u32 ‖
//!                      key ‖ value ‖ zeros to a multiple of 8
//! ```
//!
//! Versions: 2 (written by this build) holds the log's identity, a random
//! non-zero number drawn when the file is created ([`file_header`]), which
//! the index checkpoint records: a checkpoint left by an earlier log never
//! describes a new one, even when the file system gives the new file the
//! old one's inode. Version 1 (earlier builds) has 0 there, no identity;
//! this build reads it as a log of identity 0 (its records are the same)
//! and keeps appending to it, and a reclaim rewrites it as version 2.
//! A build that reads only version 1 refuses a version 2 log by name.
//!
//! Kinds: 1 node put (key: the 32-byte hash, value: the stored node), 2 node
//! delete (key: the hash, no value), 3 metadata put (key: the record's
//! name), 4 metadata delete, 5 inner-node put in the sparse inner encoding
//! (key: the hash, value: the node type byte ‖ rippled's NuDB inner-node
//! codec, sparse form, [`crate::inner_codec`]: a mask and only the present
//! child hashes). Inner nodes low in a tree have few children, so their
//! 525-byte values are mostly zeros; the sparse encoding cuts the log (and
//! every commit's write and fsync) by about a third. A read restores the
//! plain value, which the caller verifies against its hash as always: a
//! damaged sparse inner record is a corrupt node, never data. A batch is applied whole or not at all: its
//! body's checksum covers every record, and a reader (the scan at opening)
//! applies nothing of a batch until the checksum has matched.
//!
//! This module only encodes and decodes bytes: it is the decoder of
//! outside bytes the `node_log` fuzz target drives.

use shamap::Hash256;

/// The first 8 bytes of every node log.
pub const MAGIC: &[u8; 8] = b"SHAMAPNL";
/// The layout version this build writes (it reads 1 too).
pub const VERSION: u32 = 2;
/// The layout version without a log identity.
pub const VERSION_WITHOUT_IDENTITY: u32 = 1;
/// Bytes of the file header.
pub const FILE_HEADER_LEN: u64 = 16;
/// Bytes of a batch header.
pub const BATCH_HEADER_LEN: usize = 32;
/// Bytes of a record header.
pub const RECORD_HEADER_LEN: usize = 8;
/// The largest body a batch may declare: more is damage, not data (the
/// writer cuts its batches far smaller).
pub const MAX_BODY_LEN: u64 = 1 << 32;
const BATCH_MAGIC: [u8; 4] = *b"BTCH";

const PUT_NODE: u8 = 1;
const DELETE_NODE: u8 = 2;
const PUT_META: u8 = 3;
const DELETE_META: u8 = 4;
const PUT_SPARSE_INNER: u8 = 5;

/// The file header of a new log: this build's version and a new identity
/// ([`new_log_identity`]).
pub fn file_header() -> [u8; FILE_HEADER_LEN as usize] {
    file_header_with(new_log_identity())
}

/// The file header of a log of identity `identity` (non-zero).
pub fn file_header_with(identity: u32) -> [u8; FILE_HEADER_LEN as usize] {
    let mut h = [0u8; FILE_HEADER_LEN as usize];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&identity.to_le_bytes());
    h
}

/// A random non-zero log identity: from the standard library's randomly
/// keyed hasher (seeded from the operating system's random source), the
/// time and the process id.
pub fn new_log_identity() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    h.write_u128(now);
    h.write_u32(std::process::id());
    let x = h.finish();
    match (x ^ (x >> 32)) as u32 {
        0 => 1,
        n => n,
    }
}

/// Checks a file header: the magic, then the version. Returns the log's
/// identity (0 for a version 1 log, which has none).
pub fn check_file_header(h: &[u8]) -> Result<u32, String> {
    if h.len() < FILE_HEADER_LEN as usize || &h[..8] != MAGIC {
        return Err("not a node log (its first bytes are not SHAMAPNL)".to_owned());
    }
    let version = u32::from_le_bytes([h[8], h[9], h[10], h[11]]);
    let identity = u32::from_le_bytes([h[12], h[13], h[14], h[15]]);
    match version {
        VERSION_WITHOUT_IDENTITY if identity == 0 => Ok(0),
        VERSION if identity != 0 => Ok(identity),
        VERSION_WITHOUT_IDENTITY | VERSION => Err(format!(
            "not a node log of version {version}: its header's identity field holds {identity:#x}"
        )),
        _ => Err(format!(
            "node log layout version {version} is not supported (this build reads versions {VERSION_WITHOUT_IDENTITY} and {VERSION})"
        )),
    }
}

/// `n` rounded up to a multiple of 8.
pub fn align8(n: usize) -> usize {
    (n + 7) & !7
}

/// Bytes a node record of a `value_len`-byte value takes.
pub fn node_record_len(value_len: usize) -> usize {
    align8(RECORD_HEADER_LEN + 32 + value_len)
}

/// A decoded batch header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchHeader {
    /// Bytes of the body that follows (a multiple of 8).
    pub body_len: u64,
    /// The writer's sequence number of the batch.
    pub seq: u64,
    /// crc32c of the body.
    pub body_crc: u32,
}

/// Decodes a batch header, checking its magic, its own checksum and the
/// body length's alignment and bound.
pub fn decode_batch_header(h: &[u8; BATCH_HEADER_LEN]) -> Result<BatchHeader, String> {
    if h[..4] != BATCH_MAGIC {
        return Err("no batch header here".to_owned());
    }
    let crc = u32::from_le_bytes([h[28], h[29], h[30], h[31]]);
    if crc32c::crc32c(&h[..28]) != crc {
        return Err("a batch header fails its checksum".to_owned());
    }
    let body_len = u64::from_le_bytes(h[8..16].try_into().expect("8 bytes"));
    if !body_len.is_multiple_of(8) || body_len > MAX_BODY_LEN {
        return Err(format!(
            "a batch header declares a body of {body_len} bytes"
        ));
    }
    Ok(BatchHeader {
        body_len,
        seq: u64::from_le_bytes(h[16..24].try_into().expect("8 bytes")),
        body_crc: u32::from_le_bytes([h[24], h[25], h[26], h[27]]),
    })
}

/// Builds one batch in a reusable buffer: [`BatchEncoder::begin`], records,
/// [`BatchEncoder::finish`]; then `bytes()` is what goes to the file.
#[derive(Debug, Default)]
pub struct BatchEncoder {
    buf: Vec<u8>,
}

impl BatchEncoder {
    /// An encoder whose buffer holds `bytes` without growing.
    pub fn with_capacity(bytes: usize) -> BatchEncoder {
        BatchEncoder {
            buf: Vec::with_capacity(bytes),
        }
    }

    /// Starts a batch (dropping the previous one).
    pub fn begin(&mut self) {
        self.buf.clear();
        self.buf.resize(BATCH_HEADER_LEN, 0);
    }

    /// Bytes so far, header included: the offset of the next record from
    /// the batch's start.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// True when no record has been added since [`BatchEncoder::begin`].
    pub fn is_empty(&self) -> bool {
        self.buf.len() <= BATCH_HEADER_LEN
    }

    fn record(&mut self, kind: u8, key: &[u8], value: &[u8]) -> usize {
        let at = self.buf.len();
        let key_len = u8::try_from(key.len()).expect("keys are at most 255 bytes");
        let value_len = u32::try_from(value.len()).expect("values are under 4 GiB");
        self.buf.extend_from_slice(&[kind, key_len, 0, 0]);
        self.buf.extend_from_slice(&value_len.to_le_bytes());
        self.buf.extend_from_slice(key);
        self.buf.extend_from_slice(value);
        self.buf.resize(align8(self.buf.len()), 0);
        at
    }

    /// Adds a node put (an inner node in the sparse encoding); returns the
    /// record's offset from the batch's start and the record's length.
    pub fn put_node(&mut self, hash: &Hash256, value: &[u8]) -> (usize, usize) {
        let at = self.buf.len();
        if let Some(node_type) = sparse_inner_type(value) {
            self.buf
                .extend_from_slice(&[PUT_SPARSE_INNER, 32, 0, 0, 0, 0, 0, 0]);
            self.buf.extend_from_slice(&hash.0);
            self.buf.push(node_type);
            if let Some(n) = crate::inner_codec::encode_inner_into(value, &mut self.buf) {
                let value_len = (1 + n) as u32;
                self.buf[at + 4..at + 8].copy_from_slice(&value_len.to_le_bytes());
                self.buf.resize(align8(self.buf.len()), 0);
                return (at, self.buf.len() - at);
            }
            // Not an inner node after all.
            self.buf.truncate(at);
        }
        self.record(PUT_NODE, &hash.0, value);
        (at, self.buf.len() - at)
    }

    /// Adds a node delete.
    pub fn delete_node(&mut self, hash: &Hash256) {
        self.record(DELETE_NODE, &hash.0, &[]);
    }

    /// Adds a metadata put. `name` must be at most 255 bytes.
    pub fn put_meta(&mut self, name: &str, value: &[u8]) {
        self.record(PUT_META, name.as_bytes(), value);
    }

    /// Adds a metadata delete. `name` must be at most 255 bytes.
    pub fn delete_meta(&mut self, name: &str) {
        self.record(DELETE_META, name.as_bytes(), &[]);
    }

    /// Fills in the header for sequence number `seq`.
    pub fn finish(&mut self, seq: u64) {
        let body_len = (self.buf.len() - BATCH_HEADER_LEN) as u64;
        let body_crc = crc32c::crc32c(&self.buf[BATCH_HEADER_LEN..]);
        let h = &mut self.buf[..BATCH_HEADER_LEN];
        h[..4].copy_from_slice(&BATCH_MAGIC);
        h[4..8].fill(0);
        h[8..16].copy_from_slice(&body_len.to_le_bytes());
        h[16..24].copy_from_slice(&seq.to_le_bytes());
        h[24..28].copy_from_slice(&body_crc.to_le_bytes());
        let crc = crc32c::crc32c(&h[..28]);
        h[28..32].copy_from_slice(&crc.to_le_bytes());
    }

    /// The batch's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Drops a large buffer (after a bulk write) so it is not kept.
    pub fn shrink(&mut self, keep: usize) {
        if self.buf.capacity() > keep {
            self.buf = Vec::new();
        }
    }
}

/// The type byte of a stored value that may be an inner node stored in
/// the sparse encoding (one whose plain value [`expand`] restores exactly):
/// a zero header and a node type; the caller checks the rest.
fn sparse_inner_type(value: &[u8]) -> Option<u8> {
    let header = value.get(..crate::node::VALUE_HEADER_LEN)?;
    if header[..8] != [0; 8] || value.len() != crate::inner_codec::INNER_VALUE_LEN {
        return None;
    }
    crate::node::NodeType::from_byte(header[8])?;
    Some(header[8])
}

/// How a node record holds its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// The value as stored.
    Plain,
    /// An inner node: type byte ‖ sparse inner encoding
    /// ([`crate::inner_codec`]).
    SparseInner,
}

impl Encoding {
    /// [`Encoding::SparseInner`] under its old name.
    #[deprecated(note = "renamed to `Encoding::SparseInner`")]
    #[allow(non_upper_case_globals)]
    pub const CompactInner: Encoding = Encoding::SparseInner;
}

/// The plain value of a node record's stored bytes; `None` when sparse
/// inner bytes do not decode.
pub fn expand(encoding: Encoding, stored: &[u8]) -> Option<std::borrow::Cow<'_, [u8]>> {
    match encoding {
        Encoding::Plain => Some(std::borrow::Cow::Borrowed(stored)),
        Encoding::SparseInner => {
            let (&t, encoded) = stored.split_first()?;
            let node_type = crate::node::NodeType::from_byte(t)?;
            crate::inner_codec::decode_inner(encoded, node_type).map(std::borrow::Cow::Owned)
        }
    }
}

/// One decoded record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record<'a> {
    /// A node stored under its hash.
    PutNode {
        /// The hash.
        hash: Hash256,
        /// The stored bytes (see `encoding`).
        value: &'a [u8],
        /// How they hold the value.
        encoding: Encoding,
    },
    /// A node removed.
    DeleteNode(Hash256),
    /// A metadata record set.
    PutMeta {
        /// The record's name.
        name: &'a str,
        /// Its bytes.
        value: &'a [u8],
    },
    /// A metadata record removed.
    DeleteMeta(&'a str),
}

/// Decodes the record at the start of `bytes`: the record and its length
/// (aligned), or what is wrong with it.
pub fn decode_record(bytes: &[u8]) -> Result<(Record<'_>, usize), String> {
    if bytes.len() < RECORD_HEADER_LEN {
        return Err("a record header is cut short".to_owned());
    }
    let (kind, key_len) = (bytes[0], bytes[1] as usize);
    let value_len = record_value_len(bytes);
    let end = RECORD_HEADER_LEN
        .checked_add(key_len)
        .and_then(|n| n.checked_add(value_len))
        .filter(|&n| n <= bytes.len())
        .ok_or_else(|| format!("a record of {value_len} value bytes runs past its batch"))?;
    let key = &bytes[RECORD_HEADER_LEN..RECORD_HEADER_LEN + key_len];
    let value = &bytes[RECORD_HEADER_LEN + key_len..end];
    let hash = || {
        Hash256::from_slice(key).ok_or_else(|| format!("a node record with a {key_len}-byte key"))
    };
    let name =
        || std::str::from_utf8(key).map_err(|_| "a metadata record's name is not UTF-8".to_owned());
    let record = match kind {
        PUT_NODE => Record::PutNode {
            hash: hash()?,
            value,
            encoding: Encoding::Plain,
        },
        PUT_SPARSE_INNER => Record::PutNode {
            hash: hash()?,
            value,
            encoding: Encoding::SparseInner,
        },
        DELETE_NODE if value.is_empty() => Record::DeleteNode(hash()?),
        PUT_META => Record::PutMeta {
            name: name()?,
            value,
        },
        DELETE_META if value.is_empty() => Record::DeleteMeta(name()?),
        DELETE_NODE | DELETE_META => return Err("a delete record with a value".to_owned()),
        other => return Err(format!("a record of unknown kind {other}")),
    };
    Ok((record, align8(end).min(bytes.len())))
}

/// The records of a batch body (already checked against its checksum),
/// each with its offset from the body's start; stops at the first that
/// does not decode, with the reason.
pub fn records(body: &[u8]) -> impl Iterator<Item = Result<(usize, Record<'_>), String>> {
    let mut at = 0usize;
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed || at >= body.len() {
            return None;
        }
        match decode_record(&body[at..]) {
            Ok((r, len)) => {
                let here = at;
                at += len;
                Some(Ok((here, r)))
            }
            Err(e) => {
                failed = true;
                Some(Err(e))
            }
        }
    })
}

/// Bytes of a node record's start: its header and its key (the hash).
pub const NODE_HEAD_LEN: usize = RECORD_HEADER_LEN + 32;

/// The value length a record header declares (`head` holds at least the
/// [`RECORD_HEADER_LEN`] bytes of a record's header).
pub fn record_value_len(head: &[u8]) -> usize {
    u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize
}

/// The node record whose first [`NODE_HEAD_LEN`] bytes are `head`: its
/// hash, the stored bytes' range from the record's start and their
/// encoding; `None` when the record is not a node put.
pub fn node_head(
    head: &[u8; NODE_HEAD_LEN],
) -> Option<(Hash256, std::ops::Range<usize>, Encoding)> {
    let hash = Hash256::from_slice(&head[RECORD_HEADER_LEN..]).expect("32 bytes");
    node_value_range(head, &hash).map(|(range, encoding)| (hash, range, encoding))
}

/// The node record at the start of `bytes`, if it is a put of `hash`: the
/// stored bytes' range within `bytes` (which may end past `bytes` when only
/// the record's start was read) and their encoding. `None` for any other
/// record.
pub fn node_value_range(
    bytes: &[u8],
    hash: &Hash256,
) -> Option<(std::ops::Range<usize>, Encoding)> {
    if bytes.len() < RECORD_HEADER_LEN + 32 || bytes[1] != 32 {
        return None;
    }
    let encoding = match bytes[0] {
        PUT_NODE => Encoding::Plain,
        PUT_SPARSE_INNER => Encoding::SparseInner,
        _ => return None,
    };
    if bytes[RECORD_HEADER_LEN..RECORD_HEADER_LEN + 32] != hash.0 {
        return None;
    }
    let value_len = record_value_len(bytes);
    let start = NODE_HEAD_LEN;
    Some((start..start + value_len, encoding))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_round_trips_and_any_flipped_bit_is_caught() {
        let mut e = BatchEncoder::default();
        e.begin();
        let h = Hash256([7; 32]);
        let (at, len) = e.put_node(&h, b"value bytes");
        assert_eq!(len, node_record_len(11));
        e.delete_node(&Hash256([9; 32]));
        e.put_meta("retained", b"xyz");
        e.delete_meta("old");
        e.finish(42);
        let bytes = e.bytes().to_vec();
        let header = decode_batch_header(bytes[..32].try_into().expect("32")).expect("header");
        assert_eq!(header.seq, 42);
        assert_eq!(header.body_len as usize, bytes.len() - 32);
        let body = &bytes[32..];
        assert_eq!(crc32c::crc32c(body), header.body_crc);
        let recs: Vec<_> = records(body).collect::<Result<_, _>>().expect("records");
        assert_eq!(recs.len(), 4);
        assert_eq!(
            recs[0],
            (
                at - 32,
                Record::PutNode {
                    hash: h,
                    value: b"value bytes",
                    encoding: Encoding::Plain,
                }
            )
        );
        assert_eq!(recs[3].1, Record::DeleteMeta("old"));
        assert_eq!(
            node_value_range(&bytes[at..], &h),
            Some((40..51, Encoding::Plain))
        );
        assert_eq!(node_value_range(&bytes[at..], &Hash256([8; 32])), None);
        for bit in 0..bytes.len() * 8 {
            let mut b = bytes.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            let caught = match decode_batch_header(b[..32].try_into().expect("32")) {
                Err(_) => true,
                Ok(h) => {
                    h.body_len as usize != b.len() - 32 || crc32c::crc32c(&b[32..]) != h.body_crc
                }
            };
            assert!(caught, "bit {bit} flipped unnoticed");
        }
    }

    #[test]
    fn inner_nodes_are_stored_sparse_and_restored_exactly() {
        use crate::node::{NodeObject, NodeType};
        let mut children = [Hash256::ZERO; 16];
        children[3] = Hash256([3; 32]);
        children[12] = Hash256([12; 32]);
        let obj = NodeObject::from_prefix(
            NodeType::AccountNode,
            &shamap::node_hash::inner_message(&children),
        );
        let mut e = BatchEncoder::default();
        e.begin();
        let (at, len) = e.put_node(&obj.hash(), obj.value());
        assert!(len < obj.value().len() / 4, "{len} bytes");
        let (range, enc) = node_value_range(&e.bytes()[at..], &obj.hash()).expect("record");
        assert_eq!(enc, Encoding::SparseInner);
        let back = expand(enc, &e.bytes()[at..][range.clone()]).expect("expands");
        assert_eq!(&*back, obj.value());
        // A damaged sparse inner record does not expand, or expands to bytes
        // that do not hash to the key (the caller's check).
        let mut bad = e.bytes()[at..][range].to_vec();
        bad[0] = 77;
        assert!(expand(enc, &bad).is_none());
        // A value with a non-zero header, or of an inner node's length and
        // header but not an inner node's prefix, is kept as it is.
        let mut odd_header = obj.value().to_vec();
        odd_header[0] = 1;
        let mut odd_prefix = obj.value().to_vec();
        odd_prefix[9] ^= 0xFF;
        for odd in [odd_header, odd_prefix] {
            let (at, len) = e.put_node(&obj.hash(), &odd);
            assert_eq!(len, node_record_len(odd.len()));
            let (range, enc) = node_value_range(&e.bytes()[at..], &obj.hash()).expect("record");
            assert_eq!(enc, Encoding::Plain);
            assert_eq!(&e.bytes()[at..][range], &odd[..]);
        }
    }

    #[test]
    fn file_headers_are_checked() {
        assert!(check_file_header(&file_header()).is_ok_and(|id| id != 0));
        assert_eq!(check_file_header(&file_header_with(77)), Ok(77));
        assert_ne!(
            file_header(),
            file_header(),
            "each log gets its own identity"
        );
        // Version 1: no identity.
        let mut v1 = file_header_with(5);
        v1[8..16].copy_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(check_file_header(&v1), Ok(0));
        v1[12] = 3;
        assert!(check_file_header(&v1).is_err());
        let mut v2 = file_header_with(5);
        v2[12] = 0;
        assert!(
            check_file_header(&v2).is_err(),
            "version 2 without identity"
        );
        let mut h = file_header();
        h[8] = 9;
        assert!(check_file_header(&h)
            .expect_err("version 9")
            .contains("version 9"));
        assert!(check_file_header(b"SHAMAPNX\x01\0\0\0\0\0\0\0").is_err());
        assert!(check_file_header(b"SHAM").is_err());
    }
}
