//! A map backed by a node store: opened by root hash, read and written
//! through a bounded cache of verified nodes, committed in one atomic batch.
//!
//! # Model
//!
//! The map is a tree of `Child` slots. A slot is empty, *clean* (just the
//! 32-byte hash of a node that is in the store) or *dirty* (a node held in
//! memory: created or changed since the last write, or loaded on the path of
//! a change). Reads walk dirty nodes in memory and clean ones through the
//! node cache: a hashbrown map from hash to a decoded node, with CLOCK
//! eviction, whose misses load the node from the store and verify it (a
//! value that does not hash to its key, or that does not fit its place in
//! the tree, is an error naming the hash and nibble path, never data).
//!
//! Writes turn the clean nodes on the key's path into dirty ones (keeping
//! their known hash and a `stored` mark until something below changes) and
//! then change the leaf, as the in-memory engine does, including rippled's
//! collapse of an inner node left with one leaf.
//!
//! # Memory
//!
//! One budget ([`BackedOptions::budget_bytes`]) covers the clean cache and
//! the dirty nodes together. Once the dirty nodes take more than a quarter
//! of it, they are *spilled*: hashed and written to the store in one batch
//! (without recording a root, so they are unreferenced until a commit), then
//! replaced by clean slots. The clean cache gets whatever the dirty nodes
//! leave. Scans do not fill the cache. So the nodes held in RAM stay within
//! the budget whatever the size of the stored state.
//!
//! # Commit and crash safety
//!
//! [`BackedMap::commit`] hashes the dirty nodes and writes them, together
//! with the retained-roots record naming the new root, in one atomic batch.
//! A process killed at any point reopens at the previous committed root or
//! at the new one, with every node reachable from it present: spilled nodes
//! were written before, in their own batches, and nothing names them until
//! the commit's batch lands. Only after the batch is written do the dirty
//! nodes become clean slots, so a failed write loses nothing in memory.
//!
//! Garbage collection ([`crate::gc()`]) in the same process is safe beside a
//! backed map: the map pins the root its clean slots hang under (the one
//! opened, or its last spill or commit), `gc` keeps what the pins reach,
//! and spills and commits wait while a collection runs.

use std::collections::VecDeque;
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex, MutexGuard};

use hashbrown::HashMap;
use shamap::node_hash;
use shamap::xrpl::sha512_half;
use shamap::{Hash256, Key, MapKind};

use crate::error::StoreError;
use crate::meta::{self, RetainedRoot};
use crate::node::{Node, NodeObject, NodeType};
use crate::reader::nibble_path;
use crate::store::{Batch, NodeStore};

/// Options of a [`BackedMap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackedOptions {
    /// Bytes of nodes held in memory: the clean-node cache plus the dirty
    /// nodes. Default 64 MiB. The store backend's own caches and buffers
    /// (fjall's block cache and memtables) are outside this budget.
    pub budget_bytes: usize,
}

impl Default for BackedOptions {
    fn default() -> Self {
        BackedOptions {
            budget_bytes: 64 << 20,
        }
    }
}

impl BackedOptions {
    /// A budget of `mb` MiB.
    pub fn with_budget_mb(mb: u64) -> BackedOptions {
        BackedOptions {
            budget_bytes: usize::try_from(mb.saturating_mul(1 << 20)).unwrap_or(usize::MAX),
        }
    }
}

/// Dirty nodes are spilled once they exceed `budget / DIRTY_SHARE`.
const DIRTY_SHARE: usize = 4;

/// Counters of a [`BackedMap`], for reports and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackedStats {
    /// The memory budget.
    pub budget_bytes: usize,
    /// Bytes the clean cache holds now (charged per entry: the decoded node,
    /// its table slot, its CLOCK entry and the `Arc` header).
    pub cache_bytes: usize,
    /// The most the clean cache ever held.
    pub cache_peak_bytes: usize,
    /// Nodes in the clean cache.
    pub cache_entries: usize,
    /// Bytes charged to dirty nodes since the last write-out.
    pub dirty_bytes: usize,
    /// The most dirty bytes ever held (before a spill or commit).
    pub dirty_peak_bytes: usize,
    /// Node lookups answered by the cache.
    pub hits: u64,
    /// Node lookups that loaded (and verified) a node from the store.
    pub loads: u64,
    /// Nodes evicted from the cache.
    pub evictions: u64,
    /// Write-outs of dirty nodes before a commit.
    pub spills: u64,
    /// Nodes written (spills and commits).
    pub nodes_written: u64,
}

/// A node as the cache holds it: decoded, verified, compact.
#[derive(Debug)]
enum CleanNode {
    /// An inner node: its branch mask and the hashes of present children in
    /// branch order.
    Inner { mask: u16, hashes: Box<[Hash256]> },
    /// A leaf.
    Leaf { key: Key, data: Box<[u8]> },
}

impl CleanNode {
    fn child(&self, branch: usize) -> Option<Hash256> {
        match self {
            CleanNode::Inner { mask, hashes } if mask & (1 << branch) != 0 => {
                let below = u32::from(*mask) & ((1u32 << branch) - 1);
                Some(hashes[below.count_ones() as usize])
            }
            _ => None,
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            CleanNode::Inner { hashes, .. } => hashes.len() * 32,
            CleanNode::Leaf { data, .. } => data.len(),
        }
    }

    fn from_children(children: &[Hash256; 16]) -> CleanNode {
        let mut mask = 0u16;
        let mut hashes = Vec::with_capacity(16);
        for (b, h) in children.iter().enumerate() {
            if !h.is_zero() {
                mask |= 1 << b;
                hashes.push(*h);
            }
        }
        CleanNode::Inner {
            mask,
            hashes: hashes.into_boxed_slice(),
        }
    }
}

struct Slot {
    node: Arc<CleanNode>,
    charge: usize,
    referenced: bool,
}

/// Bytes charged for one cache entry beyond the node's heap bytes: the
/// table slot (with hashbrown's control byte and 1/8 spare capacity), the
/// CLOCK ring entry and the `Arc` allocation.
const ENTRY_OVERHEAD: usize = (std::mem::size_of::<(Hash256, Slot)>() + 1) * 8 / 7
    + std::mem::size_of::<Hash256>()
    + 16
    + std::mem::size_of::<CleanNode>();

/// The bounded cache of clean nodes: hash → decoded node, CLOCK eviction.
#[derive(Default)]
struct NodeCache {
    map: HashMap<Hash256, Slot>,
    clock: VecDeque<Hash256>,
    bytes: usize,
    peak: usize,
    hits: u64,
    loads: u64,
    evictions: u64,
}

impl NodeCache {
    fn get(&mut self, hash: &Hash256) -> Option<Arc<CleanNode>> {
        let slot = self.map.get_mut(hash)?;
        slot.referenced = true;
        self.hits += 1;
        Some(Arc::clone(&slot.node))
    }

    /// Inserts a node, then evicts until the cache fits `capacity`.
    fn insert(&mut self, hash: Hash256, node: Arc<CleanNode>, capacity: usize) {
        let charge = ENTRY_OVERHEAD + node.heap_bytes();
        if charge > capacity {
            self.shrink_to(capacity);
            return;
        }
        if self.map.contains_key(&hash) {
            return;
        }
        self.map.insert(
            hash,
            Slot {
                node,
                charge,
                referenced: false,
            },
        );
        self.clock.push_back(hash);
        self.bytes += charge;
        self.shrink_to(capacity);
        self.peak = self.peak.max(self.bytes);
    }

    /// CLOCK: a referenced entry gets a second chance; the first one that
    /// is not is evicted.
    fn shrink_to(&mut self, capacity: usize) {
        while self.bytes > capacity {
            let Some(h) = self.clock.pop_front() else {
                break;
            };
            let Some(slot) = self.map.get_mut(&h) else {
                continue;
            };
            if slot.referenced {
                slot.referenced = false;
                self.clock.push_back(h);
            } else {
                let slot = self.map.remove(&h).expect("present");
                self.bytes -= slot.charge;
                self.evictions += 1;
            }
        }
        if self.map.len() < self.map.capacity() / 4 && self.map.capacity() > 1024 {
            self.map.shrink_to_fit();
            self.clock.shrink_to_fit();
        }
    }
}

/// A slot of the working tree.
enum Child {
    Empty,
    /// A node in the store, by hash.
    Clean(Hash256),
    /// A node in memory.
    Dirty(Dirty),
}

/// A node in memory (boxed by kind: a dirty leaf does not pay for an
/// inner node's sixteen slots).
enum Dirty {
    Inner(Box<Inner>),
    Leaf(Box<Leaf>),
}

struct Inner {
    children: [Child; 16],
    /// Known hash (None once something below changed).
    hash: Option<Hash256>,
    /// True when the node (hence its whole subtree) is in the store.
    stored: bool,
}

struct Leaf {
    key: Key,
    data: Vec<u8>,
    hash: Option<Hash256>,
    stored: bool,
}

/// Bytes charged for a dirty inner node.
const DIRTY_INNER_BYTES: usize = std::mem::size_of::<Inner>() + 16;

fn dirty_leaf_bytes(data_len: usize) -> usize {
    std::mem::size_of::<Leaf>() + 16 + data_len
}

impl Inner {
    fn empty() -> Inner {
        Inner {
            children: std::array::from_fn(|_| Child::Empty),
            hash: None,
            stored: false,
        }
    }

    fn count(&self) -> usize {
        self.children
            .iter()
            .filter(|c| !matches!(c, Child::Empty))
            .count()
    }

    fn touch(&mut self) {
        self.hash = None;
        self.stored = false;
    }
}

fn set_nibble(key: &mut Key, depth: usize, nibble: usize) {
    let b = &mut key.0[depth / 2];
    let n = nibble as u8;
    if depth.is_multiple_of(2) {
        *b = (*b & 0x0F) | (n << 4);
    } else {
        *b = (*b & 0xF0) | n;
    }
}

fn branch(key: &Key, depth: usize) -> usize {
    usize::from(key.nibble(depth).get())
}

/// The store, map kind and cache: everything a walk needs besides the tree.
struct Loader<'s> {
    store: &'s dyn NodeStore,
    kind: MapKind,
    node_type: NodeType,
    budget: usize,
    cache: Mutex<NodeCache>,
}

impl Loader<'_> {
    fn cache(&self) -> MutexGuard<'_, NodeCache> {
        // A panic while holding the lock leaves the cache consistent (every
        // mutation completes before the next can start), so poison is moot.
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The node under `hash` at depth `depth` on the path of `path`:
    /// from the cache, or loaded, verified and checked against its place
    /// (inner nodes above depth 64 and of this map's type; leaves of this
    /// map's kind whose key starts with the path). `keep` puts a loaded
    /// node in the cache, within `capacity`.
    fn fetch(
        &self,
        hash: &Hash256,
        path: &Key,
        depth: usize,
        keep: Option<usize>,
    ) -> Result<Arc<CleanNode>, StoreError> {
        if let Some(n) = self.cache().get(hash) {
            return Ok(n);
        }
        let place = |e: StoreError| e.at(*hash, &nibble_path(path, depth));
        let obj = self.store.load(hash).map_err(place)?;
        let node = obj.parse().map_err(place)?;
        let wrong = |found: &'static str| {
            place(StoreError::WrongType {
                hash: *hash,
                found,
                expected: "a node of this map at this place",
            })
        };
        let clean = match node {
            Node::Inner(children) => {
                if obj.node_type() != Some(self.node_type) {
                    return Err(wrong("an inner node of another map kind"));
                }
                if depth >= 64 {
                    return Err(wrong("an inner node below depth 64"));
                }
                CleanNode::from_children(&children)
            }
            Node::Leaf { kind, key, data } => {
                if kind != self.kind {
                    return Err(wrong("a leaf of another map kind"));
                }
                if depth == 0 {
                    return Err(wrong("a leaf as a map root"));
                }
                if key.masked(depth) != path.masked(depth) {
                    return Err(place(StoreError::Corrupt {
                        hash: *hash,
                        reason: format!("leaf key {key} is not on its path"),
                    }));
                }
                CleanNode::Leaf {
                    key,
                    data: data.into_boxed_slice(),
                }
            }
            Node::Ledger(_) => return Err(wrong("a ledger header")),
        };
        let clean = Arc::new(clean);
        let mut cache = self.cache();
        cache.loads += 1;
        if let Some(capacity) = keep {
            cache.insert(*hash, Arc::clone(&clean), capacity);
        }
        Ok(clean)
    }
}

/// A SHAMap backed by a [`NodeStore`]; see the [module docs](self).
pub struct BackedMap<'s> {
    loader: Loader<'s>,
    /// The root this map's clean slots hang under, pinned against `gc`.
    pin: crate::writers::Pin,
    root: Child,
    committed: Hash256,
    dirty_bytes: usize,
    dirty_peak: usize,
    spills: u64,
    nodes_written: u64,
}

impl std::fmt::Debug for BackedMap<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackedMap")
            .field("store", &self.loader.store.location())
            .field("kind", &self.loader.kind)
            .field("committed", &self.committed)
            .finish_non_exhaustive()
    }
}

/// What a removal below an inner node did.
enum Removed {
    No,
    /// Removed; `single_leaf` when the inner node now holds exactly one
    /// child and it is a leaf (its parent must take the leaf's place).
    Yes {
        single_leaf: bool,
    },
}

impl<'s> BackedMap<'s> {
    /// Opens the map of kind `kind` whose root is `root` (zero: the empty
    /// map), loading and verifying the root node.
    pub fn open(
        store: &'s dyn NodeStore,
        root: Hash256,
        kind: MapKind,
        opts: BackedOptions,
    ) -> Result<BackedMap<'s>, StoreError> {
        let map = BackedMap {
            pin: crate::writers::Pin::new(store, root),
            loader: Loader {
                store,
                kind,
                node_type: NodeType::for_map(kind),
                budget: opts.budget_bytes,
                cache: Mutex::new(NodeCache::default()),
            },
            root: if root.is_zero() {
                Child::Empty
            } else {
                Child::Clean(root)
            },
            committed: root,
            dirty_bytes: 0,
            dirty_peak: 0,
            spills: 0,
            nodes_written: 0,
        };
        if !root.is_zero() {
            let cap = map.cache_capacity();
            match *map.loader.fetch(&root, &Key::ZERO, 0, Some(cap))? {
                CleanNode::Inner { .. } => {}
                CleanNode::Leaf { .. } => unreachable!("fetch refuses a leaf at depth 0"),
            }
        }
        Ok(map)
    }

    /// An empty map on `store`, nothing written yet.
    pub fn new(store: &'s dyn NodeStore, kind: MapKind, opts: BackedOptions) -> BackedMap<'s> {
        BackedMap::open(store, Hash256::ZERO, kind, opts).expect("an empty map loads nothing")
    }

    /// The map kind.
    pub fn kind(&self) -> MapKind {
        self.loader.kind
    }

    /// The root recorded by the last [`BackedMap::commit`] (or the one
    /// opened).
    pub fn committed_root(&self) -> Hash256 {
        self.committed
    }

    /// True when something changed since the last commit (or open).
    pub fn is_dirty(&self) -> bool {
        match &self.root {
            Child::Empty => !self.committed.is_zero(),
            Child::Clean(h) => *h != self.committed,
            Child::Dirty(d) => match d {
                Dirty::Inner(i) => !(i.stored && i.hash == Some(self.committed)),
                Dirty::Leaf(_) => true,
            },
        }
    }

    fn cache_capacity(&self) -> usize {
        self.loader.budget.saturating_sub(self.dirty_bytes)
    }

    /// Counters: cache size and hits, loads, evictions, spills.
    pub fn stats(&self) -> BackedStats {
        let c = self.loader.cache();
        BackedStats {
            budget_bytes: self.loader.budget,
            cache_bytes: c.bytes,
            cache_peak_bytes: c.peak,
            cache_entries: c.map.len(),
            dirty_bytes: self.dirty_bytes,
            dirty_peak_bytes: self.dirty_peak,
            hits: c.hits,
            loads: c.loads,
            evictions: c.evictions,
            spills: self.spills,
            nodes_written: self.nodes_written,
        }
    }

    /// The data under `key`.
    pub fn get(&self, key: &Key) -> Result<Option<Vec<u8>>, StoreError> {
        let cap = Some(self.cache_capacity());
        let mut depth = 0;
        let mut at = &self.root;
        let mut hash = loop {
            match at {
                Child::Empty => return Ok(None),
                Child::Clean(h) => break *h,
                Child::Dirty(d) => match d {
                    Dirty::Leaf(l) => return Ok((l.key == *key).then(|| l.data.clone())),
                    Dirty::Inner(i) => {
                        at = &i.children[branch(key, depth)];
                        depth += 1;
                    }
                },
            }
        };
        loop {
            let node = self.loader.fetch(&hash, key, depth, cap)?;
            match &*node {
                CleanNode::Leaf { key: k, data } => {
                    return Ok((k == key).then(|| data.to_vec()));
                }
                CleanNode::Inner { .. } => match node.child(branch(key, depth)) {
                    None => return Ok(None),
                    Some(h) => {
                        hash = h;
                        depth += 1;
                    }
                },
            }
        }
    }

    /// True when `key` is present.
    pub fn contains(&self, key: &Key) -> Result<bool, StoreError> {
        Ok(self.get(key)?.is_some())
    }

    /// Calls `f` with every item in ascending key order until it breaks.
    /// Nodes read only for the scan do not enter the cache, so a scan of a
    /// state larger than the budget neither grows memory nor flushes the
    /// cache's working set.
    pub fn for_each(
        &self,
        f: &mut dyn FnMut(&Key, &[u8]) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        self.visit(&self.root, Key::ZERO, 0, f).map(|_| ())
    }

    fn visit(
        &self,
        child: &Child,
        path: Key,
        depth: usize,
        f: &mut dyn FnMut(&Key, &[u8]) -> ControlFlow<()>,
    ) -> Result<ControlFlow<()>, StoreError> {
        match child {
            Child::Empty => Ok(ControlFlow::Continue(())),
            Child::Dirty(d) => match d {
                Dirty::Leaf(l) => Ok(f(&l.key, &l.data)),
                Dirty::Inner(i) => {
                    for (b, c) in i.children.iter().enumerate() {
                        let mut p = path;
                        set_nibble(&mut p, depth, b);
                        if self.visit(c, p, depth + 1, f)?.is_break() {
                            return Ok(ControlFlow::Break(()));
                        }
                    }
                    Ok(ControlFlow::Continue(()))
                }
            },
            Child::Clean(h) => {
                let node = self.loader.fetch(h, &path, depth, None)?;
                match &*node {
                    CleanNode::Leaf { key, data } => Ok(f(key, data)),
                    CleanNode::Inner { .. } => {
                        for b in 0..16 {
                            if let Some(ch) = node.child(b) {
                                let mut p = path;
                                set_nibble(&mut p, depth, b);
                                if self.visit(&Child::Clean(ch), p, depth + 1, f)?.is_break() {
                                    return Ok(ControlFlow::Break(()));
                                }
                            }
                        }
                        Ok(ControlFlow::Continue(()))
                    }
                }
            }
        }
    }

    fn charge_dirty(&mut self, bytes: usize) {
        self.dirty_bytes += bytes;
        self.dirty_peak = self.dirty_peak.max(self.dirty_bytes);
    }

    /// Makes the root a dirty inner node (loading it if clean).
    fn root_inner(&mut self) -> Result<(), StoreError> {
        let cap = self.cache_capacity();
        let added = materialize(&self.loader, &mut self.root, &Key::ZERO, 0, cap)?;
        self.charge_dirty(added);
        if matches!(self.root, Child::Empty) {
            self.root = Child::Dirty(Dirty::Inner(Box::new(Inner::empty())));
            self.charge_dirty(DIRTY_INNER_BYTES);
        }
        Ok(())
    }

    /// Runs `change` on the root (made a dirty inner node first) with the
    /// loader and the cache capacity, then charges what it added and spills
    /// if needed.
    fn change_root<T>(
        &mut self,
        change: impl FnOnce(&Loader<'s>, &mut Inner, usize, &mut usize) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.root_inner()?;
        let cap = self.cache_capacity();
        let Child::Dirty(Dirty::Inner(root)) = &mut self.root else {
            unreachable!("root_inner made the root a dirty inner node")
        };
        let mut charged = 0;
        let out = change(&self.loader, root, cap, &mut charged)?;
        self.charge_dirty(charged);
        self.maybe_spill()?;
        Ok(out)
    }

    /// Sets `key` to `data`; true when the key was new. On an error (a
    /// node on the path missing or bad) the map is unchanged.
    pub fn upsert(&mut self, key: Key, data: &[u8]) -> Result<bool, StoreError> {
        self.change_root(|loader, root, cap, charged| {
            write_in(loader, root, 0, &key, data, cap, charged)
        })
    }

    /// Removes `key`; true when it was present. On an error the map is
    /// unchanged.
    pub fn remove(&mut self, key: &Key) -> Result<bool, StoreError> {
        if !self.contains(key)? {
            return Ok(false);
        }
        let r = self.change_root(|loader, root, cap, charged| {
            remove_in(loader, root, 0, key, cap, charged)
        })?;
        Ok(matches!(r, Removed::Yes { .. }))
    }

    /// The root hash of the map as it is now (hashing dirty nodes; nothing
    /// is written).
    pub fn root_hash(&mut self) -> Hash256 {
        let kind = self.loader.kind;
        match &mut self.root {
            Child::Empty => Hash256::ZERO,
            Child::Clean(h) => *h,
            Child::Dirty(d) => match d {
                Dirty::Inner(i) if i.count() == 0 => Hash256::ZERO,
                _ => hash_dirty(kind, d),
            },
        }
    }

    fn maybe_spill(&mut self) -> Result<(), StoreError> {
        if self.dirty_bytes > self.loader.budget / DIRTY_SHARE {
            self.spills += 1;
            self.write_out(None)?;
        }
        Ok(())
    }

    /// Writes every dirty node, plus (for a commit) the retained record
    /// naming the root, in one batch; then turns the dirty nodes into clean
    /// slots (into the cache). Returns the root.
    fn write_out(&mut self, record: Option<&str>) -> Result<Hash256, StoreError> {
        let kind = self.loader.kind;
        let node_type = self.loader.node_type;
        let mut batch = Batch::new();
        let mut written = 0;
        let root = match &mut self.root {
            Child::Empty => Hash256::ZERO,
            Child::Clean(h) => *h,
            Child::Dirty(d) => match d {
                Dirty::Inner(i) if i.count() == 0 => Hash256::ZERO,
                _ => collect(kind, node_type, &mut self.root, &mut batch, &mut written),
            },
        };
        if let Some(name) = record {
            let mut roots = meta::retained(self.loader.store)?;
            let entry = RetainedRoot {
                name: name.to_owned(),
                hash: root,
            };
            match roots.iter_mut().find(|r| r.name == name) {
                Some(r) => *r = entry,
                None => roots.push(entry),
            }
            meta::put_retained(&mut batch, &roots);
        }
        if !batch.is_empty() {
            // Collections wait for this write and see the new pin after it.
            let _writing = self.pin.write_lock();
            self.loader.store.write(batch)?;
            self.pin.set(root);
        }
        self.nodes_written += written;
        // Written: dirty nodes become clean slots, their content cached.
        self.dirty_bytes = 0;
        if root.is_zero() {
            self.root = Child::Empty;
        } else {
            let cap = self.cache_capacity();
            let mut cache = self.loader.cache();
            settle(&mut self.root, &mut cache, cap);
        }
        Ok(root)
    }

    /// Writes all dirty nodes and records the root as retained root `name`
    /// (replacing the entry of that name, or appending one), in one atomic
    /// batch. Returns the root. On an error nothing is lost from memory and
    /// the store keeps its previous committed root.
    pub fn commit(&mut self, name: &str) -> Result<Hash256, StoreError> {
        let root = self.write_out(Some(name))?;
        self.committed = root;
        Ok(root)
    }
}

/// Turns a clean slot into a dirty node (loaded, verified, keeping its hash
/// and `stored` mark); returns the bytes charged. Leaves other slots alone.
fn materialize(
    loader: &Loader<'_>,
    slot: &mut Child,
    path: &Key,
    depth: usize,
    cap: usize,
) -> Result<usize, StoreError> {
    let Child::Clean(h) = slot else {
        return Ok(0);
    };
    let h = *h;
    let node = loader.fetch(&h, path, depth, Some(cap))?;
    let (dirty, bytes) = match &*node {
        CleanNode::Inner { .. } => {
            let mut inner = Inner::empty();
            for (b, c) in inner.children.iter_mut().enumerate() {
                if let Some(ch) = node.child(b) {
                    *c = Child::Clean(ch);
                }
            }
            inner.hash = Some(h);
            inner.stored = true;
            (Dirty::Inner(Box::new(inner)), DIRTY_INNER_BYTES)
        }
        CleanNode::Leaf { key, data } => (
            Dirty::Leaf(Box::new(Leaf {
                key: *key,
                data: data.to_vec(),
                hash: Some(h),
                stored: true,
            })),
            dirty_leaf_bytes(data.len()),
        ),
    };
    *slot = Child::Dirty(dirty);
    Ok(bytes)
}

fn new_leaf(key: Key, data: &[u8], charged: &mut usize) -> Child {
    *charged += dirty_leaf_bytes(data.len());
    Child::Dirty(Dirty::Leaf(Box::new(Leaf {
        key,
        data: data.to_vec(),
        hash: None,
        stored: false,
    })))
}

/// An inner node at `depth` (and more below while the keys agree) holding
/// the leaves `a` (key `a_key`) and `b` (key `b_key`).
fn split(depth: usize, a: Child, a_key: &Key, b: Child, b_key: &Key, charged: &mut usize) -> Child {
    let mut inner = Inner::empty();
    *charged += DIRTY_INNER_BYTES;
    let (na, nb) = (branch(a_key, depth), branch(b_key, depth));
    if na == nb {
        inner.children[na] = split(depth + 1, a, a_key, b, b_key, charged);
    } else {
        inner.children[na] = a;
        inner.children[nb] = b;
    }
    Child::Dirty(Dirty::Inner(Box::new(inner)))
}

/// Writes `key` below `inner` (at `depth`); true when the key was new.
fn write_in(
    loader: &Loader<'_>,
    inner: &mut Inner,
    depth: usize,
    key: &Key,
    data: &[u8],
    cap: usize,
    charged: &mut usize,
) -> Result<bool, StoreError> {
    let b = branch(key, depth);
    let slot = &mut inner.children[b];
    // A clean leaf that is not ours moves down unchanged (its hash does not
    // depend on its depth); anything else clean is loaded.
    if let Child::Clean(h) = slot {
        let node = loader.fetch(h, key, depth + 1, Some(cap))?;
        if let CleanNode::Leaf { key: other, .. } = &*node {
            if other != key {
                let existing = std::mem::replace(slot, Child::Empty);
                *slot = split(
                    depth + 1,
                    existing,
                    other,
                    new_leaf(*key, data, charged),
                    key,
                    charged,
                );
                inner.touch();
                return Ok(true);
            }
        }
        *charged += materialize(loader, slot, key, depth + 1, cap)?;
    }
    let added = match slot {
        Child::Empty => {
            *slot = new_leaf(*key, data, charged);
            true
        }
        Child::Clean(_) => unreachable!("materialized above"),
        Child::Dirty(d) => match d {
            Dirty::Leaf(l) if l.key == *key => {
                *charged += data.len().saturating_sub(l.data.len());
                l.data.clear();
                l.data.extend_from_slice(data);
                l.hash = None;
                l.stored = false;
                false
            }
            Dirty::Leaf(l) => {
                let other = l.key;
                let existing = std::mem::replace(slot, Child::Empty);
                *slot = split(
                    depth + 1,
                    existing,
                    &other,
                    new_leaf(*key, data, charged),
                    key,
                    charged,
                );
                true
            }
            Dirty::Inner(child) => write_in(loader, child, depth + 1, key, data, cap, charged)?,
        },
    };
    inner.touch();
    Ok(added)
}

/// True when the node in `slot` (at `depth` on `path`) is a leaf.
fn is_leaf(
    loader: &Loader<'_>,
    slot: &Child,
    path: &Key,
    depth: usize,
    cap: usize,
) -> Result<bool, StoreError> {
    Ok(match slot {
        Child::Empty => false,
        Child::Clean(h) => matches!(
            *loader.fetch(h, path, depth, Some(cap))?,
            CleanNode::Leaf { .. }
        ),
        Child::Dirty(d) => matches!(d, Dirty::Leaf(_)),
    })
}

/// Removes `key` (known present) below `inner` at `depth`. Everything that
/// can fail (loads) happens before the tree changes.
fn remove_in(
    loader: &Loader<'_>,
    inner: &mut Inner,
    depth: usize,
    key: &Key,
    cap: usize,
    charged: &mut usize,
) -> Result<Removed, StoreError> {
    let b = branch(key, depth);
    *charged += materialize(loader, &mut inner.children[b], key, depth + 1, cap)?;
    let target = match &mut inner.children[b] {
        Child::Empty => return Ok(Removed::No),
        Child::Clean(_) => unreachable!("materialized above"),
        Child::Dirty(d) => match d {
            Dirty::Leaf(l) => {
                if l.key != *key {
                    return Ok(Removed::No);
                }
                true
            }
            Dirty::Inner(_) => false,
        },
    };
    if target {
        let count = inner.count();
        let single_leaf = if count == 2 {
            let o = (0..16)
                .find(|&o| o != b && !matches!(inner.children[o], Child::Empty))
                .expect("two children");
            let mut path = key.masked(depth);
            set_nibble(&mut path, depth, o);
            is_leaf(loader, &inner.children[o], &path, depth + 1, cap)?
        } else {
            false
        };
        inner.children[b] = Child::Empty;
        inner.touch();
        return Ok(Removed::Yes { single_leaf });
    }
    let Child::Dirty(d) = &mut inner.children[b] else {
        unreachable!("checked above")
    };
    let Dirty::Inner(child) = d else {
        unreachable!("checked above")
    };
    match remove_in(loader, child, depth + 1, key, cap, charged)? {
        Removed::No => Ok(Removed::No),
        Removed::Yes { single_leaf } => {
            if single_leaf {
                let only = child
                    .children
                    .iter_mut()
                    .find(|c| !matches!(c, Child::Empty))
                    .map(|c| std::mem::replace(c, Child::Empty))
                    .expect("one child");
                inner.children[b] = only;
            }
            inner.touch();
            Ok(Removed::Yes {
                single_leaf: single_leaf && inner.count() == 1,
            })
        }
    }
}

fn leaf_prefix_bytes(kind: MapKind, l: &Leaf) -> Vec<u8> {
    node_hash::leaf_message(kind, &l.key, &l.data)
}

fn child_hash(kind: MapKind, c: &mut Child) -> Hash256 {
    match c {
        Child::Empty => Hash256::ZERO,
        Child::Clean(h) => *h,
        Child::Dirty(d) => hash_dirty(kind, d),
    }
}

fn inner_prefix_bytes(children: &[Hash256; 16]) -> node_hash::InnerMessage {
    node_hash::inner_message(children)
}

/// The hash of a dirty node, computing (and keeping) what is unknown.
fn hash_dirty(kind: MapKind, d: &mut Dirty) -> Hash256 {
    match d {
        Dirty::Leaf(l) => *l
            .hash
            .get_or_insert_with(|| kind.leaf_hash(&l.key, &l.data)),
        Dirty::Inner(i) => {
            if let Some(h) = i.hash {
                return h;
            }
            let mut hashes = [Hash256::ZERO; 16];
            for (h, c) in hashes.iter_mut().zip(i.children.iter_mut()) {
                *h = child_hash(kind, c);
            }
            let h = sha512_half(&[&inner_prefix_bytes(&hashes)]);
            i.hash = Some(h);
            h
        }
    }
}

/// Adds every dirty node below and at `slot` that the store lacks to
/// `batch`; returns the slot's hash. Nodes stay dirty (see [`settle`]).
fn collect(
    kind: MapKind,
    node_type: NodeType,
    slot: &mut Child,
    batch: &mut Batch,
    written: &mut u64,
) -> Hash256 {
    let d = match slot {
        Child::Empty => return Hash256::ZERO,
        Child::Clean(h) => return *h,
        Child::Dirty(d) => d,
    };
    match d {
        Dirty::Leaf(l) => {
            if let (true, Some(h)) = (l.stored, l.hash) {
                return h;
            }
            let obj = NodeObject::from_prefix(node_type, &leaf_prefix_bytes(kind, l));
            let h = obj.hash();
            l.hash = Some(h);
            batch.put_node(obj);
            *written += 1;
            h
        }
        Dirty::Inner(i) => {
            if let (true, Some(h)) = (i.stored, i.hash) {
                return h;
            }
            let mut hashes = [Hash256::ZERO; 16];
            for (h, c) in hashes.iter_mut().zip(i.children.iter_mut()) {
                *h = collect(kind, node_type, c, batch, written);
            }
            let obj = NodeObject::from_prefix(node_type, &inner_prefix_bytes(&hashes));
            let h = obj.hash();
            i.hash = Some(h);
            batch.put_node(obj);
            *written += 1;
            h
        }
    }
}

/// After a write: every dirty node becomes a clean slot, its content moved
/// into the cache (within `cap`).
fn settle(slot: &mut Child, cache: &mut NodeCache, cap: usize) {
    let Child::Dirty(d) = slot else {
        return;
    };
    let (h, clean) = match d {
        Dirty::Leaf(l) => (
            l.hash.expect("hashed by collect"),
            CleanNode::Leaf {
                key: l.key,
                data: std::mem::take(&mut l.data).into_boxed_slice(),
            },
        ),
        Dirty::Inner(i) => {
            let mut hashes = [Hash256::ZERO; 16];
            for (h, c) in hashes.iter_mut().zip(i.children.iter_mut()) {
                settle(c, cache, cap);
                *h = match c {
                    Child::Empty => Hash256::ZERO,
                    Child::Clean(h) => *h,
                    Child::Dirty(_) => unreachable!("settled"),
                };
            }
            (
                i.hash.expect("hashed by collect"),
                CleanNode::from_children(&hashes),
            )
        }
    };
    cache.insert(h, Arc::new(clean), cap);
    *slot = Child::Clean(h);
}
