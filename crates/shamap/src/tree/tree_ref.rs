//! `TreeRef`: the read-only view of one tree that maps and snapshots hand
//! to every read operation.

use crate::options::LeafHashes;
use crate::ptr::NodePtr;

/// A read-only view of one tree (a map's or a snapshot's): every read
/// operation is written once, on this view. The lookups, iteration and
/// bound searches are implemented in `iter.rs`, diffs and proofs walk it
/// in `diff.rs` and `prove.rs`.
#[derive(Clone, Copy)]
pub(crate) struct TreeRef<'a> {
    /// The root: a tree's root (an inner node), or the top of a subtree
    /// that `subtree_items` walks.
    pub(crate) root: &'a NodePtr,
    /// Number of items in the tree (unused by `subtree_items`).
    pub(crate) len: usize,
    /// Whether the tree's leaves keep their hash (else none may be read).
    pub(crate) leaf_hashes: LeafHashes,
}
