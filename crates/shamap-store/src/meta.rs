//! Metadata records: the format version and the list of retained roots.
//!
//! | record | bytes |
//! |---|---|
//! | `format_version` | u32 big-endian, [`FORMAT_VERSION_CURRENT`] |
//! | `retained` | repeated: name length (u8) ‖ name (UTF-8) ‖ 32-byte hash; oldest first |
//!
//! A retained hash is a ledger hash (its header node names the state and
//! transaction roots) or a map root. The last entry is the latest import.

use shamap::Hash256;

use crate::error::StoreError;
use crate::node::Node;
use crate::store::{Batch, NodeStore, NodeStoreExt};

/// Name of the format-version record.
pub const FORMAT_VERSION: &str = "format_version";
/// Name of the retained-roots record.
pub const RETAINED: &str = "retained";
/// The format this build writes and reads: values in rippled's NodeStore
/// format keyed by hash, metadata as in this module.
pub const FORMAT_VERSION_CURRENT: u32 = 1;

/// The current version as stored.
pub fn version_bytes() -> Vec<u8> {
    FORMAT_VERSION_CURRENT.to_be_bytes().to_vec()
}

/// Checks the store's format version, recording the current one in a store
/// that holds nothing yet. Fails with [`StoreError::UnknownVersion`] on any
/// other version, or on a store with nodes and no version.
pub fn check_format(store: &dyn NodeStore) -> Result<(), StoreError> {
    check_format_then(store, true)
}

/// [`check_format`], recording the version in an empty store if `record`.
fn check_format_then(store: &dyn NodeStore, record: bool) -> Result<(), StoreError> {
    let unknown = |found: String| StoreError::UnknownVersion {
        location: store.location(),
        found,
        supported: FORMAT_VERSION_CURRENT,
    };
    match store.get_meta(FORMAT_VERSION)? {
        Some(v) if v == version_bytes() => Ok(()),
        Some(v) => Err(unknown(match <[u8; 4]>::try_from(v.as_slice()) {
            Ok(b) => u32::from_be_bytes(b).to_string(),
            Err(_) => format!("of {} bytes", v.len()),
        })),
        None => {
            let mut any = false;
            store.for_each_value(&mut |_, _| {
                any = true;
                std::ops::ControlFlow::Break(())
            })?;
            if any {
                return Err(unknown("none (nodes without a version record)".to_owned()));
            }
            if record {
                store.put_meta(FORMAT_VERSION, version_bytes())?;
            }
            Ok(())
        }
    }
}

/// [`check_format`] for a store opened read-only: the same checks, and a
/// store that holds nothing yet is accepted as it is instead of having the
/// version record written.
pub fn check_format_read_only(store: &dyn NodeStore) -> Result<(), StoreError> {
    check_format_then(store, false)
}

/// A root the store keeps: its name and hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetainedRoot {
    /// A name for people (`ledger 38129`, `state <file>`, ...), at most 255 bytes.
    pub name: String,
    /// A ledger hash or a map root.
    pub hash: Hash256,
}

/// The longest name a retained root can have, in bytes (its length is
/// stored in one byte).
pub const MAX_NAME_LEN: usize = 255;

/// Refuses a root name longer than [`MAX_NAME_LEN`] bytes, before anything
/// is written under it (cut, two long names would become one).
pub fn check_name(store: &dyn NodeStore, name: &str) -> Result<(), StoreError> {
    // The name given is refused, not a record found: nothing stored is
    // malformed.
    let bad = |reason: String| {
        StoreError::backend(
            store.location(),
            format!("cannot retain a root under that name: {reason}"),
        )
    };
    if name.len() > MAX_NAME_LEN {
        return Err(bad(format!(
            "the root name is too long ({} bytes; at most {MAX_NAME_LEN})",
            name.len()
        )));
    }
    if name.is_empty() {
        return Err(bad("an empty root name".to_owned()));
    }
    // Names are printed one to a line (`shamap info`): a control
    // character (a newline among them) would break the listing.
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Err(bad(format!(
            "a root name with the control character {:?}",
            c
        )));
    }
    Ok(())
}

/// The retained roots, oldest first.
pub fn retained(store: &dyn NodeStore) -> Result<Vec<RetainedRoot>, StoreError> {
    let Some(bytes) = store.get_meta(RETAINED)? else {
        return Ok(Vec::new());
    };
    let bad = |reason: &str| StoreError::BadMeta {
        location: store.location(),
        name: RETAINED.to_owned(),
        reason: reason.to_owned(),
    };
    let mut out = Vec::new();
    let mut rest = bytes.as_slice();
    while let Some((&n, tail)) = rest.split_first() {
        let n = usize::from(n);
        if tail.len() < n + 32 {
            return Err(bad("truncated entry"));
        }
        let name = std::str::from_utf8(&tail[..n]).map_err(|_| bad("name is not UTF-8"))?;
        let hash = Hash256::from_slice(&tail[n..n + 32]).ok_or_else(|| bad("hash"))?;
        out.push(RetainedRoot {
            name: name.to_owned(),
            hash,
        });
        rest = &tail[n + 32..];
    }
    Ok(out)
}

/// How a hash given as a root is known to the store (see [`known_root`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KnownRoot {
    /// The zero hash: the empty map, a state every store can hold.
    Empty,
    /// A retained root (a ledger hash or a map root a commit recorded).
    Retained,
    /// The state or transaction map of a retained ledger.
    MapOfRetainedLedger,
    /// A stored ledger header: a root by its type, whether retained or not.
    LedgerHeader,
}

/// Checks that `hash` is a root this store knows before a caller reads,
/// writes or deletes anything under it: the zero hash (the empty map), a
/// retained root, the state or transaction map of a retained ledger, or a
/// stored ledger header (a node that can only be a root). Anything else,
/// an inner node's or a leaf's hash included, is [`StoreError::NotARoot`].
/// The nodes under it are not checked here: that is the walk's job.
pub fn known_root(store: &dyn NodeStore, hash: &Hash256) -> Result<KnownRoot, StoreError> {
    if hash.is_zero() {
        return Ok(KnownRoot::Empty);
    }
    let listed = retained(store)?;
    if listed.iter().any(|r| r.hash == *hash) {
        return Ok(KnownRoot::Retained);
    }
    for r in &listed {
        if let Some(obj) = store.get(&r.hash)? {
            if let Ok(Node::Ledger(h)) = obj.parse() {
                if h.account_hash == *hash || h.transaction_hash == *hash {
                    return Ok(KnownRoot::MapOfRetainedLedger);
                }
            }
        }
    }
    if let Some(obj) = store.get(hash)? {
        if let Ok(Node::Ledger(_)) = obj.parse() {
            return Ok(KnownRoot::LedgerHeader);
        }
    }
    Err(StoreError::NotARoot {
        location: store.location(),
        hash: *hash,
    })
}

/// The most recently added retained root.
pub fn latest(store: &dyn NodeStore) -> Result<Option<RetainedRoot>, StoreError> {
    Ok(retained(store)?.pop())
}

/// Adds to `batch` the record that makes `roots` the retained list. Names
/// are checked by the writers ([`check_name`]); one past the bound is cut
/// at a character boundary here rather than corrupt the record.
pub fn put_retained(batch: &mut Batch, roots: &[RetainedRoot]) {
    let mut bytes = Vec::with_capacity(roots.len() * 48);
    for r in roots {
        let mut name = r.name.as_str();
        while name.len() > 255 {
            // Cut at a character boundary at most 255 bytes in.
            let mut cut = 255;
            while !name.is_char_boundary(cut) {
                cut -= 1;
            }
            name = &name[..cut];
        }
        bytes.push(name.len() as u8);
        bytes.extend_from_slice(name.as_bytes());
        bytes.extend_from_slice(&r.hash.0);
    }
    batch.put_meta(RETAINED, bytes);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemStore;

    #[test]
    fn retained_list_round_trips() {
        let s = MemStore::new();
        assert_eq!(retained(&s).expect("empty"), vec![]);
        let roots = vec![
            RetainedRoot {
                name: "ledger 1".into(),
                hash: Hash256([1; 32]),
            },
            RetainedRoot {
                name: "é".repeat(200),
                hash: Hash256([2; 32]),
            },
        ];
        let mut b = Batch::new();
        put_retained(&mut b, &roots);
        s.write(b).expect("write");
        let back = retained(&s).expect("decodes");
        assert_eq!(back[0], roots[0]);
        assert_eq!(back[1].hash, roots[1].hash);
        assert!(back[1].name.len() <= 255);
        assert_eq!(
            latest(&s).expect("ok").map(|r| r.hash),
            Some(Hash256([2; 32]))
        );
    }

    #[test]
    fn unknown_versions_are_refused() {
        let s = MemStore::new();
        check_format(&s).expect("current version");
        s.put_meta(FORMAT_VERSION, 7u32.to_be_bytes().to_vec())
            .expect("write");
        let err = check_format(&s).expect_err("version 7");
        assert!(err.to_string().contains("format version 7"), "{err}");
    }
}
