//! `ShaMap`: an XRPL SHAMap over 256-bit keys.

use std::fmt;
use std::sync::{Arc, Mutex};

use crate::error::MapError;
use crate::hash::{Hash256, Key, Nibble};
use crate::hashfn::HashFunction;
use crate::kind::MapKind;
use crate::options::{LeafHashes, MapOptions};
use crate::ptr::{NodeArena, NodePtr};

use super::shared_arena::{drop_tree, lock, SharedArena};
use super::tree_ref::TreeRef;
use super::undo_log::UndoLog;

/// Most bytes of data one item may hold.
pub const MAX_DATA_LEN: usize = u32::MAX as usize;

/// An XRPL SHAMap: a Merkle radix-16 tree over 256-bit keys whose root hash
/// is exactly rippled's for the same items.
///
/// The shape depends only on the set of keys: the root is always an inner
/// node; below it an inner node exists at a nibble prefix exactly when two
/// or more keys share that prefix; a leaf sits at the first depth where its
/// key is alone. Hashes are computed lazily: every change marks the path from
/// the root to the change as stale, and [`ShaMap::root_hash`] rehashes only
/// stale nodes.
///
/// Memory: nodes live in slab pools owned by the map; see
/// [`ShaMap::mem_stats`] and `docs/design.md`.
pub struct ShaMap {
    pub(crate) kind: MapKind,
    pub(crate) arena: SharedArena,
    /// Always an inner node.
    pub(crate) root: NodePtr,
    pub(crate) len: usize,
    /// Writes since the last `root_hash()`; decides whether to hash in parallel.
    pub(crate) pending_writes: usize,
    pub(crate) parallel_hashing: bool,
    /// The node hash function, fixed at creation.
    pub(crate) hash_fn: HashFunction,
    /// Whether leaves keep their hash (the arena's layout), fixed at creation.
    pub(crate) leaf_hashes: LeafHashes,
    /// Undo records of open sessions.
    pub(crate) undo: UndoLog,
}

/// What a write may do when the key is present or absent.
#[derive(Clone, Copy, PartialEq, Eq)]
enum WriteMode {
    Insert,
    Update,
    Upsert,
}

/// What a successful write did.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Written {
    Added,
    Replaced,
}

impl ShaMap {
    /// An empty map of `kind` with default options.
    pub fn new(kind: MapKind) -> ShaMap {
        ShaMap::with_options(kind, MapOptions::default())
    }

    /// An empty map of `kind` with the given options.
    pub fn with_options(kind: MapKind, options: MapOptions) -> ShaMap {
        let mut arena = NodeArena::with_policy(
            options.size_classes,
            options.huge_pages,
            options.leaf_hashes,
        );
        let root = arena.new_inner();
        ShaMap {
            kind,
            arena: Arc::new(Mutex::new(arena)),
            root,
            len: 0,
            pending_writes: 0,
            parallel_hashing: options.parallel_hashing,
            hash_fn: options.hash,
            leaf_hashes: options.leaf_hashes,
            undo: UndoLog::default(),
        }
    }

    /// The map's kind, fixed at creation.
    pub fn kind(&self) -> MapKind {
        self.kind
    }

    /// The options the map was made with.
    pub fn options(&self) -> MapOptions {
        let arena = lock(&self.arena);
        MapOptions::default()
            .with_size_classes(*arena.classes())
            .with_parallel_hashing(self.parallel_hashing)
            .with_huge_pages_policy(arena.policy())
            .with_hash(self.hash_fn)
            .with_leaf_hashes(self.leaf_hashes)
    }

    /// The node hash function, fixed at creation.
    pub fn hash_function(&self) -> HashFunction {
        self.hash_fn
    }

    /// The read-only view every read operation goes through.
    pub(crate) fn tree(&self) -> TreeRef<'_> {
        TreeRef {
            root: &self.root,
            len: self.len,
            leaf_hashes: self.leaf_hashes,
        }
    }

    /// Adds an item; fails with [`MapError::KeyExists`] when the key is
    /// present (rippled's `addItem`).
    pub fn insert(&mut self, key: Key, data: &[u8]) -> Result<(), MapError> {
        self.write(key, data, WriteMode::Insert, self.undo.active())
            .map(|_| ())
    }

    /// Replaces the data of a present key; fails with
    /// [`MapError::KeyMissing`] when absent (rippled's `updateGiveItem`).
    pub fn update(&mut self, key: Key, data: &[u8]) -> Result<(), MapError> {
        self.write(key, data, WriteMode::Update, self.undo.active())
            .map(|_| ())
    }

    /// Inserts or replaces. Returns true when the key was new.
    pub fn upsert(&mut self, key: Key, data: &[u8]) -> Result<bool, MapError> {
        self.write(key, data, WriteMode::Upsert, self.undo.active())
            .map(|w| w == Written::Added)
    }

    /// Removes an item; fails with [`MapError::KeyMissing`] when absent
    /// (rippled's `delItem`).
    pub fn remove(&mut self, key: &Key) -> Result<(), MapError> {
        let log = self.undo.active();
        self.remove_logged(key, log)
    }

    /// `remove` without an undo record (used to replay undo records).
    pub(crate) fn remove_unlogged(&mut self, key: &Key) -> Result<(), MapError> {
        self.remove_logged(key, false)
    }

    pub(crate) fn write_unlogged(&mut self, key: Key, data: &[u8]) -> Result<bool, MapError> {
        self.write(key, data, WriteMode::Upsert, false)
            .map(|w| w == Written::Added)
    }

    fn remove_logged(&mut self, key: &Key, log: bool) -> Result<(), MapError> {
        let mut arena = lock(&self.arena);
        arena.make_mut(&mut self.root);
        let undo = if log { Some(&mut self.undo) } else { None };
        if remove_below(&mut arena, &mut self.root, 0, key, undo) {
            self.len -= 1;
            self.pending_writes += 1;
            self.root.clear_hash();
            Ok(())
        } else {
            Err(MapError::KeyMissing(*key))
        }
    }

    /// Removes every item. In an undo session every item's value is
    /// recorded first (O(n)), so that [`undo`](ShaMap::undo) brings them
    /// all back. The map continues with a fresh arena; the old one is let go
    /// as on a drop (wholesale when nothing else shares it).
    pub fn clear(&mut self) {
        if self.undo.active() {
            let mut undo = std::mem::take(&mut self.undo);
            for (key, data) in self.iter() {
                undo.record(key, Some(data));
            }
            self.undo = undo;
        }
        // The empty map starts a fresh arena; the old one goes as on a drop.
        let mut fresh = self.fresh_arena();
        let root = fresh.new_inner();
        self.replace_arena(fresh, root);
        self.len = 0;
        self.pending_writes = 0;
    }

    /// The key-order repack: lays the map's nodes out anew, in key order,
    /// in a fresh arena, and lets the old one go as on a drop. O(n): every
    /// node is copied once, stored hashes (and stale marks) included, so
    /// contents, root hash, options and open undo sessions are unchanged.
    ///
    /// Two things come back. Memory: free chunks left by removals and by
    /// inner nodes that changed size class return to the system, since the
    /// fresh pools hold exactly the live nodes. Speed: a map grown by random
    /// writes has its nodes scattered through its pools; laid out in key
    /// order (as [`ShaMap::from_sorted`] builds one), later rehashing and
    /// batched writes touch fewer distinct memory pages (`docs/design.md`,
    /// "Layout in memory and `repack()`", has the measurements: at 1M
    /// entries a root from scratch 0.73–0.75× the time, `apply` blocks
    /// 0.89×). `Clone` makes the same key-order copy.
    ///
    /// Snapshots taken before keep the old arena and their nodes, which the
    /// map no longer shares: while they live, memory holds both copies.
    pub fn repack(&mut self) {
        let mut fresh = self.fresh_arena();
        let root = fresh.clone_tree(&self.root);
        self.replace_arena(fresh, root);
    }

    /// The key-order repack under its old name.
    #[deprecated(note = "renamed to `ShaMap::repack`")]
    pub fn compact(&mut self) {
        self.repack();
    }

    /// An empty arena with this map's size classes and huge-page policy.
    fn fresh_arena(&self) -> NodeArena {
        let a = lock(&self.arena);
        NodeArena::with_policy(*a.classes(), a.policy(), a.leaf_hashes())
    }

    /// Moves the map to `arena` with `root` (a tree in it), letting the old
    /// arena and tree go as on a drop.
    fn replace_arena(&mut self, arena: NodeArena, root: NodePtr) {
        let old_root = std::mem::replace(&mut self.root, root);
        let mut old = std::mem::replace(&mut self.arena, Arc::new(Mutex::new(arena)));
        drop_tree(&mut old, old_root);
    }

    fn write(
        &mut self,
        key: Key,
        data: &[u8],
        mode: WriteMode,
        log: bool,
    ) -> Result<Written, MapError> {
        if data.len() > MAX_DATA_LEN {
            return Err(MapError::DataTooLong { len: data.len() });
        }
        let mut arena = lock(&self.arena);
        arena.make_mut(&mut self.root);
        let undo = if log { Some(&mut self.undo) } else { None };
        let w = write_below(&mut arena, &mut self.root, 0, &key, data, mode, undo)?;
        if w == Written::Added {
            self.len += 1;
        }
        self.pending_writes += 1;
        self.root.clear_hash();
        Ok(w)
    }
}

/// The child of the inner node `node` on branch `b`, if any.
#[inline]
fn child_on(node: &mut NodePtr, b: Nibble) -> Option<&mut NodePtr> {
    node.inner_mut()
        .expect("paths run through inner nodes")
        .into_child(b)
}

/// Writes into the subtree of the inner node `node` at `depth`. On success
/// every inner node on the path below `node` is marked stale (the caller
/// marks `node`).
fn write_below(
    arena: &mut NodeArena,
    node: &mut NodePtr,
    depth: usize,
    key: &Key,
    data: &[u8],
    mode: WriteMode,
    undo: Option<&mut UndoLog>,
) -> Result<Written, MapError> {
    let b = key.nibble(depth);
    let Some(child) = child_on(node, b) else {
        if mode == WriteMode::Update {
            return Err(MapError::KeyMissing(*key));
        }
        if let Some(u) = undo {
            u.record(key, None);
        }
        let leaf = arena.new_leaf(key, data);
        arena.insert_child(node, b, leaf);
        return Ok(Written::Added);
    };
    if !child.is_leaf() {
        arena.make_mut(child);
        let w = write_below(arena, child, depth + 1, key, data, mode, undo)?;
        child.clear_hash();
        return Ok(w);
    }
    let other = *child.leaf().expect("checked is_leaf").key();
    if other == *key {
        if mode == WriteMode::Insert {
            return Err(MapError::KeyExists(*key));
        }
        if let Some(u) = undo {
            u.record(key, Some(child.leaf().expect("checked is_leaf").data()));
        }
        arena.set_leaf_data(child, data);
        return Ok(Written::Replaced);
    }
    if mode == WriteMode::Update {
        return Err(MapError::KeyMissing(*key));
    }
    if let Some(u) = undo {
        u.record(key, None);
    }
    // Two keys now share the prefix down to `split`: replace the leaf with a
    // chain of inner nodes from depth+1 to `split`, where they part.
    let split = key.common_prefix_nibbles(&other);
    debug_assert!(split > depth && split < 64);
    let old_leaf = std::mem::replace(child, arena.new_inner());
    let mut cur = child;
    for d in depth + 1..split {
        let b = key.nibble(d);
        let next = arena.new_inner();
        arena.insert_child(cur, b, next);
        cur = cur
            .inner_mut()
            .expect("just made inner")
            .into_child(b)
            .expect("just inserted");
    }
    let new_leaf = arena.new_leaf(key, data);
    arena.insert_child(cur, key.nibble(split), new_leaf);
    arena.insert_child(cur, other.nibble(split), old_leaf);
    Ok(Written::Added)
}

/// Removes `key` from the subtree of the inner node `node` at `depth`.
/// Returns false when absent. A child inner node left with a single leaf is
/// replaced by that leaf, so the shape stays canonical (`node` itself is
/// collapsed, if needed, by its caller; the root never is).
fn remove_below(
    arena: &mut NodeArena,
    node: &mut NodePtr,
    depth: usize,
    key: &Key,
    undo: Option<&mut UndoLog>,
) -> bool {
    let b = key.nibble(depth);
    let Some(child) = child_on(node, b) else {
        return false;
    };
    if let Some(leaf) = child.leaf() {
        if leaf.key() != key {
            return false;
        }
        if let Some(u) = undo {
            u.record(key, Some(leaf.data()));
        }
        let leaf = arena.remove_child(node, b);
        arena.release(leaf);
        return true;
    }
    arena.make_mut(child);
    if !remove_below(arena, child, depth + 1, key, undo) {
        return false;
    }
    let inner = child.inner().expect("checked not a leaf");
    let mask = inner.mask();
    if mask.count() == 1 && inner.children()[0].is_leaf() {
        let only = mask.branches().next().expect("one branch");
        let leaf = arena.remove_child(child, only);
        let emptied = std::mem::replace(child, leaf);
        arena.free_node(emptied);
    } else {
        child.clear_hash();
    }
    true
}

impl Drop for ShaMap {
    fn drop(&mut self) {
        let root = std::mem::replace(&mut self.root, NodePtr::placeholder());
        drop_tree(&mut self.arena, root);
    }
}

impl Clone for ShaMap {
    /// A deep copy with its own pools: O(n), sharing nothing. For an O(1)
    /// copy take a [`crate::Snapshot`] and call `to_map()` on it. The copy
    /// has the contents and options but no open undo sessions: it starts
    /// with everything committed.
    fn clone(&self) -> ShaMap {
        let mut arena = self.fresh_arena();
        let root = arena.clone_tree(&self.root);
        ShaMap {
            kind: self.kind,
            arena: Arc::new(Mutex::new(arena)),
            root,
            len: self.len,
            pending_writes: self.pending_writes,
            parallel_hashing: self.parallel_hashing,
            hash_fn: self.hash_fn,
            leaf_hashes: self.leaf_hashes,
            undo: UndoLog::default(),
        }
    }
}

impl fmt::Debug for ShaMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShaMap")
            .field("kind", &self.kind)
            .field("len", &self.len)
            .field("root_hash", &self.cached_root_hash())
            .finish()
    }
}

impl ShaMap {
    /// The root hash if it is current, without computing anything.
    pub fn cached_root_hash(&self) -> Option<Hash256> {
        if self.len == 0 {
            Some(Hash256::ZERO)
        } else {
            let h = *self.root.hash();
            (!h.is_zero()).then_some(h)
        }
    }
}
