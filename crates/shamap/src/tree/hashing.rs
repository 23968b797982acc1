//! Incremental hashing: only nodes marked stale since the last call are
//! rehashed; a stale node is one whose stored hash is all zero.
//!
//! Using zero as the "stale" mark needs no extra bit anywhere. It is also
//! safe: were a real node hash ever zero (probability 2^-256), the node would
//! merely be rehashed again on each call, to the same value.

use crate::hash::Hash256;
use crate::kind::MapKind;
use crate::ptr::NodeBox;
use crate::xrpl::prefix::HashPrefix;
use crate::xrpl::sha512half::sha512_half;

use super::map::ShaMap;

/// Bytes hashed for an inner node: prefix and sixteen child hashes.
pub(crate) const INNER_HASH_INPUT: usize = 4 + 16 * 32;

impl ShaMap {
    /// The root hash: 32 zero bytes for an empty map, else the hash of the
    /// root inner node. Rehashes only nodes changed since the last call.
    pub fn root_hash(&mut self) -> Hash256 {
        if self.len == 0 {
            return Hash256::ZERO;
        }
        rehash(self.kind, &mut self.root)
    }
}

/// Brings `node`'s stored hash up to date and returns it.
pub(crate) fn rehash(kind: MapKind, node: &mut NodeBox) -> Hash256 {
    let stored = *node.hash();
    if !stored.is_zero() {
        return stored;
    }
    let h = if let Some(leaf) = node.leaf() {
        kind.leaf_hash(leaf.key(), leaf.data())
    } else {
        let inner = node.inner_mut().expect("not a leaf");
        let mask = inner.mask();
        let mut buf = [0u8; INNER_HASH_INPUT];
        buf[..4].copy_from_slice(HashPrefix::INNER_NODE.bytes());
        for (child, b) in inner.into_children().iter_mut().zip(mask.branches()) {
            let off = 4 + 32 * usize::from(b.get());
            buf[off..off + 32].copy_from_slice(&rehash(kind, child).0);
        }
        sha512_half(&[&buf])
    };
    node.set_hash(h);
    h
}
