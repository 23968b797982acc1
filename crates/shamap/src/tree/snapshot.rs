//! Snapshots: immutable versions of a map in O(1), sharing structure.
//!
//! A snapshot holds one more reference to the map's (fully hashed) root.
//! Nodes referenced from more than one place are immutable; a writer copies
//! each shared node on its path before changing it, so a write costs one
//! copy per node on the path the first time the path is touched after a
//! snapshot, and a snapshot itself costs a few bytes. Nodes are freed when
//! the last tree referring to them lets go, whichever thread that is on.

use std::fmt;
use std::sync::Arc;

use crate::hash::Hash256;
use crate::hashfn::HashFunction;
use crate::kind::MapKind;
use crate::options::LeafHashes;
use crate::ptr::NodePtr;

use super::map::ShaMap;
use super::shared_arena::{drop_tree, lock, SharedArena};
use super::tree_ref::TreeRef;
use super::undo_log::UndoLog;

/// An immutable version of a map: `Send + Sync`, readable from any thread
/// while the map it came from goes on changing.
pub struct Snapshot {
    pub(crate) kind: MapKind,
    pub(crate) arena: SharedArena,
    pub(crate) root: NodePtr,
    pub(crate) len: usize,
    pub(crate) hash: Hash256,
    pub(crate) hash_fn: HashFunction,
    /// Whether leaves keep their hash.
    pub(crate) leaf_hashes: LeafHashes,
    /// The map's `parallel_hashing` option, kept for `to_map`.
    pub(crate) parallel_hashing: bool,
}

impl ShaMap {
    /// An immutable snapshot of the map as it is now. Computes the root hash
    /// first (snapshots are always fully hashed); otherwise O(1) in time and
    /// memory.
    pub fn snapshot(&mut self) -> Snapshot {
        let hash = self.root_hash();
        let root = lock(&self.arena).share(&self.root);
        Snapshot {
            kind: self.kind,
            arena: Arc::clone(&self.arena),
            root,
            len: self.len,
            hash,
            hash_fn: self.hash_fn,
            leaf_hashes: self.leaf_hashes,
            parallel_hashing: self.parallel_hashing,
        }
    }

    /// A mutable map that starts as a copy of `snapshot`, in O(1): it shares
    /// the snapshot's nodes and copies only the paths it changes.
    pub fn from_snapshot(snapshot: &Snapshot) -> ShaMap {
        let root = lock(&snapshot.arena).share(&snapshot.root);
        ShaMap {
            kind: snapshot.kind,
            arena: Arc::clone(&snapshot.arena),
            root,
            len: snapshot.len,
            pending_writes: 0,
            parallel_hashing: snapshot.parallel_hashing,
            hash_fn: snapshot.hash_fn,
            leaf_hashes: snapshot.leaf_hashes,
            undo: UndoLog::default(),
        }
    }
}

impl Snapshot {
    /// The map kind.
    pub fn kind(&self) -> MapKind {
        self.kind
    }

    /// The node hash function of the map it came from.
    pub fn hash_function(&self) -> HashFunction {
        self.hash_fn
    }

    /// The root hash (computed when the snapshot was taken).
    pub fn root_hash(&self) -> Hash256 {
        self.hash
    }

    /// A mutable map starting from this snapshot, in O(1).
    pub fn to_map(&self) -> ShaMap {
        ShaMap::from_snapshot(self)
    }

    /// The read-only view every read operation goes through.
    pub(crate) fn tree(&self) -> TreeRef<'_> {
        TreeRef {
            root: &self.root,
            len: self.len,
            leaf_hashes: self.leaf_hashes,
        }
    }

    /// True when both snapshots share their whole tree (same root node).
    pub fn same_tree(&self, other: &Snapshot) -> bool {
        Arc::ptr_eq(&self.arena, &other.arena) && self.root.same_chunk(&other.root)
    }
}

impl Clone for Snapshot {
    /// Another reference to the same version, in O(1).
    fn clone(&self) -> Snapshot {
        let root = lock(&self.arena).share(&self.root);
        Snapshot {
            kind: self.kind,
            arena: Arc::clone(&self.arena),
            root,
            len: self.len,
            hash: self.hash,
            hash_fn: self.hash_fn,
            leaf_hashes: self.leaf_hashes,
            parallel_hashing: self.parallel_hashing,
        }
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let root = std::mem::replace(&mut self.root, NodePtr::placeholder());
        drop_tree(&mut self.arena, root);
    }
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot")
            .field("kind", &self.kind)
            .field("len", &self.len)
            .field("root_hash", &self.hash)
            .finish()
    }
}
