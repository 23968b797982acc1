//! NuDB's log file (`nudb.log`), read in memory only, and the stamp that
//! tells a reader whether a live store moved under it.
//!
//! NuDB 2.0.9's commit (`basic_store::commit`) runs in this order:
//!
//! 1. the log's 62-byte header, naming the key and data files' sizes
//!    before the commit, written and synced;
//! 2. the commit's records (and spills) appended to `nudb.dat`;
//! 3. each bucket the commit changes, as it was before, appended to the
//!    log (`u64 index ‖ bucket`: count, spill, entries), and the log
//!    synced;
//! 4. the new buckets written over the key file (new ones past its end);
//! 5. both files synced, the log truncated to 0 and synced.
//!
//! So a non-empty log whose header is whole describes the store as it was
//! before the commit under way: the data file up to `dat_file_size`, the
//! key file's first `key_file_size` bytes, with the logged buckets in
//! place of the key file's. That is the view [`super::dir::NudbDir`]
//! reads, whether the writer is still at work (a running rippled) or was
//! stopped there (what NuDB's recovery restores on the next open); the
//! log itself is never written. A log shorter than its header is a commit
//! that had not yet touched either file's committed bytes (recovery
//! discards it).
//!
//! | bytes | log header field |
//! |---|---|
//! | 0..8 | `nudb.log` |
//! | 8..10 | version (2) |
//! | 10..18 | uid |
//! | 18..26 | appnum |
//! | 26..28 | key size |
//! | 28..36 | salt |
//! | 36..44 | pepper |
//! | 44..46 | block size |
//! | 46..54 | key file size before the commit |
//! | 54..62 | data file size before the commit |

use std::path::Path;
use std::time::SystemTime;

use hashbrown::HashMap;

use super::header::check_magic;
use super::key_file::{u16_at, u64_at, Bucket, BUCKET_HEAD_LEN, ENTRY_LEN};

/// Bytes of the log's header.
pub const LOG_HEADER_LEN: usize = 62;

/// Bytes of the log read at most (far above what one commit logs: every
/// bucket of a key file of 4 GiB would not fit, and no commit changes
/// them all).
pub const MAX_LOG_BYTES: u64 = 1 << 30;

/// A whole log header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogHeader {
    /// Format version.
    pub version: u16,
    /// The store's uid.
    pub uid: u64,
    /// Appnum.
    pub appnum: u64,
    /// Key size.
    pub key_size: u16,
    /// Salt.
    pub salt: u64,
    /// Block size.
    pub block_size: u16,
    /// The key file's size before the commit.
    pub key_file_size: u64,
    /// The data file's size before the commit.
    pub dat_file_size: u64,
}

/// What `nudb.log` holds.
#[derive(Clone, Debug, Default)]
pub enum LogState {
    /// Absent or empty: no commit under way.
    #[default]
    Clear,
    /// Shorter than its header: a commit that has not yet changed
    /// committed bytes.
    Started {
        /// Its length.
        len: u64,
    },
    /// A commit under way (or stopped): the store before it.
    Commit {
        /// The header.
        header: LogHeader,
        /// The buckets as they were, by index (the first copy of each: a
        /// log names a bucket once).
        buckets: HashMap<u64, Bucket>,
        /// Bytes of a last record cut short (a log still being written).
        cut: u64,
    },
}

/// Reads the log at `path` (in memory; never written). The error is one
/// line naming the file.
pub fn read_log(path: &Path, capacity: usize) -> Result<LogState, String> {
    let name = path.display();
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(LogState::Clear),
        Err(e) => return Err(format!("{name}: {e}")),
    };
    if !meta.file_type().is_file() {
        return Err(format!(
            "{name}: {}, not NuDB's log file",
            super::sqlite::kind_name(meta.file_type())
        ));
    }
    if meta.len() == 0 {
        return Ok(LogState::Clear);
    }
    if meta.len() > MAX_LOG_BYTES {
        return Err(format!(
            "{name}: {} bytes, more than a commit's log could hold ({MAX_LOG_BYTES})",
            meta.len()
        ));
    }
    let b = std::fs::read(path).map_err(|e| format!("{name}: {e}"))?;
    parse_log(&b, capacity).map_err(|e| format!("{name}: {e}"))
}

/// Parses a log's bytes (see the module docs).
pub fn parse_log(b: &[u8], capacity: usize) -> Result<LogState, String> {
    if b.is_empty() {
        return Ok(LogState::Clear);
    }
    if b.len() < LOG_HEADER_LEN {
        return Ok(LogState::Started {
            len: b.len() as u64,
        });
    }
    check_magic(b, "nudb.log", "a NuDB log file")?;
    let header = LogHeader {
        version: u16_at(b, 8),
        uid: u64_at(b, 10),
        appnum: u64_at(b, 18),
        key_size: u16_at(b, 26),
        salt: u64_at(b, 28),
        block_size: u16_at(b, 44),
        key_file_size: u64_at(b, 46),
        dat_file_size: u64_at(b, 54),
    };
    let mut buckets = HashMap::new();
    let mut at = LOG_HEADER_LEN;
    let mut cut = 0;
    while at < b.len() {
        let head = 8 + BUCKET_HEAD_LEN;
        if b.len() - at < head {
            cut = (b.len() - at) as u64;
            break;
        }
        let index = u64_at(b, at);
        let count = usize::from(u16_at(b, at + 8));
        if count > capacity {
            return Err(format!(
                "the logged bucket {index} at byte {at} holds {count} entries, above the capacity {capacity}"
            ));
        }
        let len = BUCKET_HEAD_LEN + count * ENTRY_LEN;
        if b.len() - at - 8 < len {
            cut = (b.len() - at) as u64;
            break;
        }
        let bucket = Bucket::parse(&b[at + 8..at + 8 + len], capacity)
            .map_err(|e| format!("the logged bucket {index} at byte {at}: {e}"))?;
        buckets.entry(index).or_insert(bucket);
        at += 8 + len;
    }
    Ok(LogState::Commit {
        header,
        buckets,
        cut,
    })
}

/// A file's length and modification time, as a reader saw them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileStamp {
    /// Length (0 when absent).
    pub len: u64,
    /// Modification time (none when absent).
    pub modified: Option<SystemTime>,
}

impl FileStamp {
    /// `path`'s stamp now.
    pub fn of(path: &Path) -> FileStamp {
        match std::fs::metadata(path) {
            Ok(m) => FileStamp {
                len: m.len(),
                modified: m.modified().ok(),
            },
            Err(_) => FileStamp {
                len: 0,
                modified: None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_header(key_file_size: u64, dat_file_size: u64) -> Vec<u8> {
        let mut b = b"nudb.log".to_vec();
        b.extend_from_slice(&2u16.to_be_bytes());
        b.extend_from_slice(&7u64.to_be_bytes());
        b.extend_from_slice(&1u64.to_be_bytes());
        b.extend_from_slice(&32u16.to_be_bytes());
        b.extend_from_slice(&9u64.to_be_bytes());
        b.extend_from_slice(&super::super::key_file::pepper(9).to_be_bytes());
        b.extend_from_slice(&4096u16.to_be_bytes());
        b.extend_from_slice(&key_file_size.to_be_bytes());
        b.extend_from_slice(&dat_file_size.to_be_bytes());
        assert_eq!(b.len(), LOG_HEADER_LEN);
        b
    }

    fn bucket(index: u64, entries: &[(u64, u64, u64)], spill: u64) -> Vec<u8> {
        let mut b = index.to_be_bytes().to_vec();
        b.extend_from_slice(&(entries.len() as u16).to_be_bytes());
        b.extend_from_slice(&spill.to_be_bytes()[2..]);
        for &(o, s, h) in entries {
            for v in [o, s, h] {
                b.extend_from_slice(&v.to_be_bytes()[2..]);
            }
        }
        b
    }

    #[test]
    fn a_log_parses_to_the_store_before_its_commit() {
        assert!(matches!(parse_log(b"", 227), Ok(LogState::Clear)));
        assert!(matches!(
            parse_log(b"nudb.log", 227),
            Ok(LogState::Started { len: 8 })
        ));
        let mut b = log_header(4096 * 3, 5000);
        b.extend(bucket(1, &[(92, 10, 5), (200, 20, 9)], 0));
        b.extend(bucket(0, &[], 4444));
        b.extend(bucket(1, &[], 0));
        let LogState::Commit {
            header,
            buckets,
            cut,
        } = parse_log(&b, 227).expect("parses")
        else {
            panic!("a commit");
        };
        assert_eq!(
            (header.key_file_size, header.dat_file_size),
            (4096 * 3, 5000)
        );
        assert_eq!((header.uid, header.block_size), (7, 4096));
        assert_eq!(cut, 0);
        assert_eq!(buckets.len(), 2);
        assert_eq!(buckets[&1].entries.len(), 2, "the first copy is kept");
        assert_eq!(buckets[&0].spill, 4444);
        // A last record cut short is left out, not refused.
        let mut short = b.clone();
        short.extend(&bucket(2, &[(300, 1, 1)], 0)[..20]);
        let Ok(LogState::Commit { buckets, cut, .. }) = parse_log(&short, 227) else {
            panic!("a commit");
        };
        assert_eq!((buckets.len(), cut), (2, 20));
        // A count above the capacity, and another magic, are refused.
        let mut bad = log_header(4096 * 3, 5000);
        bad.extend(bucket(0, &[(1, 1, 1); 3], 0));
        assert!(parse_log(&bad, 2).expect_err("count").contains("capacity"));
        let mut bad = b;
        bad[0] = b'x';
        assert!(parse_log(&bad, 227).is_err());
    }
}
