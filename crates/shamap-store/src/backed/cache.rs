//! The backed map's node cache: clean nodes decoded and verified, by hash,
//! within a byte capacity, and the [`Loader`] that answers a walk's node
//! lookups from it or from the store (through the store's one verified
//! fetch).
//!
//! Admission and eviction: walks that change the map keep every node they
//! load ([`Keep::All`]); scans keep none; lookups keep inner nodes and admit
//! a leaf only on its second use: a leaf loaded once waits on *probation*
//! (the last few, a bounded share of the capacity), and a *doorkeeper* of
//! recently loaded leaves' hash prefixes admits a leaf seen again.
//! Eviction is CLOCK (a referenced entry gets a second chance). The hash
//! table's allocated capacity is charged to the budget with the nodes.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use hashbrown::HashMap;
use shamap::{BranchMask, Hash256, Key, MapKind, Nibble};

use crate::error::StoreError;
use crate::fetch::{fetch_required, MapNode};
use crate::node::NodeType;
use crate::node_id::NodeId;
use crate::store::NodeStore;

/// A node as the cache holds it: decoded, verified, compact.
#[derive(Debug)]
pub(super) enum CleanNode {
    /// An inner node: its branch mask and the hashes of present children in
    /// branch order.
    Inner {
        mask: BranchMask,
        hashes: Box<[Hash256]>,
    },
    /// A leaf.
    Leaf { key: Key, data: Box<[u8]> },
}

impl CleanNode {
    pub(super) fn child(&self, branch: Nibble) -> Option<Hash256> {
        match self {
            CleanNode::Inner { mask, hashes } if mask.has(branch) => {
                Some(hashes[mask.slot(branch)])
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

    /// Checks that this node, cached where it was first loaded, may also
    /// sit at `id` (the place checks of the one fetch: a node's hash does
    /// not say where it sits, so a parent may name it anywhere).
    fn check_place(&self, hash: &Hash256, id: &NodeId) -> Result<(), StoreError> {
        match self {
            CleanNode::Inner { mask, .. } => id.check_inner(*hash, mask.count()),
            CleanNode::Leaf { key, .. } => id.check_leaf(*hash, key),
        }
    }

    pub(super) fn from_children(children: &[Hash256; 16]) -> CleanNode {
        let mask = Nibble::all()
            .zip(children)
            .filter(|(_, h)| !h.is_zero())
            .fold(BranchMask::default(), |m, (b, _)| m.with(b));
        // Allocated at its size (no growth, no shrink on boxing).
        let hashes: Box<[Hash256]> = children.iter().filter(|h| !h.is_zero()).copied().collect();
        CleanNode::Inner { mask, hashes }
    }
}

pub(super) struct Slot {
    node: Arc<CleanNode>,
    /// Bytes charged ([`entry_charge`]: a node's value is at most a few
    /// KiB, far below `u32`).
    charge: u32,
    referenced: bool,
}

/// Bytes charged for one cache entry: its `Arc` allocation (counts and
/// node) and the node's own heap block, each rounded up to the allocator's
/// 16-byte granularity. The table and the CLOCK ring are charged at their
/// allocated capacity ([`NodeCache::table_bytes`]), not per entry: a hash
/// table just grown is half empty, and charging an entry for 8/7 of a slot
/// made the cache's real memory 1.2–1.6× its budget (measured: peak RSS of
/// the `durable` commit step at budgets of 8, 64 and 256 MiB).
fn entry_charge(node: &CleanNode) -> usize {
    let round16 = |n: usize| n.div_ceil(16) * 16;
    round16(16 + std::mem::size_of::<CleanNode>()) + round16(node.heap_bytes())
}

/// Which of the nodes a walk loads from the store enter the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Keep {
    /// None: a scan, whose nodes would flush the working set.
    Nothing,
    /// Every one, within `capacity` bytes: walks that change the map and
    /// prefetches, whose nodes are about to be used again.
    All { capacity: usize },
    /// Inner nodes at once, a leaf only on its second load while the
    /// doorkeeper remembers its first ([`NodeCache::seen_before`]); within
    /// `capacity` bytes. For lookups: a leaf is on one key's path only, and
    /// most of a random lookup's leaves are never read again, while every
    /// inner node is shared by the keys below it.
    Reused { capacity: usize },
}

/// Most slots of the doorkeeper: the leaves a map's lookups loaded last,
/// one 8-byte hash prefix each (128 KiB, charged to the cache).
const DOORKEEPER_SLOTS: usize = 1 << 14;

/// Leaves held on probation (searched on every cache miss: a scan of
/// their 8-byte prefixes, 512 bytes).
const PROBATION_LEAVES: usize = 64;

/// The first 8 bytes of a hash (uniform: SHA-512Half), as a number.
fn hash_prefix(hash: &Hash256) -> u64 {
    u64::from_le_bytes(hash.0[..8].try_into().expect("8 bytes"))
}

/// Bytes charged for a leaf on probation: its entry's, and its place in
/// the probation queue.
fn probation_charge(node: &CleanNode) -> usize {
    entry_charge(node) + std::mem::size_of::<(u64, Hash256, Arc<CleanNode>)>()
}

/// The bounded cache of clean nodes: hash → decoded node, CLOCK eviction.
#[derive(Default)]
pub(super) struct NodeCache {
    pub(super) map: HashMap<Hash256, Slot>,
    clock: VecDeque<Hash256>,
    /// The doorkeeper of [`Keep::Reused`]: slot `i` holds the first 8
    /// bytes of the hash of the last leaf loaded by a lookup whose prefix
    /// is `i` modulo the slot count (empty until a lookup loads a leaf).
    recent_leaves: Vec<u64>,
    /// The last [`PROBATION_LEAVES`] leaves lookups loaded and did not
    /// admit, oldest first, with their hashes' first 8 bytes: a write or
    /// lookup of the same key soon after (read, modify, write) takes its
    /// leaf from here, and admits it, instead of loading it again.
    probation: VecDeque<(u64, Hash256, Arc<CleanNode>)>,
    probation_bytes: usize,
    pub(super) bytes: usize,
    pub(super) peak: usize,
    pub(super) hits: u64,
    pub(super) loads: u64,
    pub(super) evictions: u64,
}

impl NodeCache {
    /// Bytes the table and the CLOCK ring have allocated (hashbrown keeps
    /// 8 buckets per 7 of capacity, each a slot and a control byte).
    fn table_bytes(&self) -> usize {
        self.map.capacity() * 8 / 7 * (std::mem::size_of::<(Hash256, Slot)>() + 1)
            + self.clock.capacity() * std::mem::size_of::<Hash256>()
            + self.recent_leaves.capacity() * std::mem::size_of::<u64>()
    }

    /// The doorkeeper of [`Keep::Reused`] (as in TinyLFU's): true when the
    /// leaf `hash` was loaded before and is still remembered, which admits
    /// it to the cache; otherwise it is remembered (in place of whichever
    /// leaf shared its slot) and false. A leaf read once costs the cache 8
    /// bytes, not an entry that evicts shared inner nodes; a leaf read
    /// again soon is cached from its second load on. Measured on the
    /// `durable` read step at 1M entries: 10–11% more random reads per
    /// second than caching every leaf (caching none: 11–16%).
    ///
    /// Its slots are made at the first call: [`DOORKEEPER_SLOTS`], or as
    /// many as fit a 64th of `capacity`.
    fn seen_before(&mut self, hash: &Hash256, capacity: usize) -> bool {
        if self.recent_leaves.is_empty() {
            let slots = (capacity / 64 / std::mem::size_of::<u64>()).clamp(8, DOORKEEPER_SLOTS);
            self.recent_leaves = vec![0; slots];
        }
        let prefix = hash_prefix(hash);
        let slots = self.recent_leaves.len();
        let slot = &mut self.recent_leaves[prefix as usize % slots];
        if *slot == prefix {
            true
        } else {
            *slot = prefix;
            false
        }
    }

    /// Bytes the cache holds: its entries and its tables.
    pub(super) fn held_bytes(&self) -> usize {
        self.bytes + self.probation_bytes + self.table_bytes()
    }

    /// Takes the leaf `hash` off probation, if it is there.
    fn take_on_probation(&mut self, hash: &Hash256) -> Option<Arc<CleanNode>> {
        let prefix = hash_prefix(hash);
        let at = self
            .probation
            .iter()
            .position(|(p, h, _)| *p == prefix && h == hash)?;
        let (_, _, node) = self.probation.remove(at).expect("found");
        self.probation_bytes -= probation_charge(&node);
        Some(node)
    }

    /// Puts a leaf a lookup did not admit on probation, the oldest ones
    /// leaving beyond [`PROBATION_LEAVES`] or an eighth of `capacity`;
    /// then evicts until the cache fits `capacity`.
    fn put_on_probation(&mut self, hash: Hash256, node: Arc<CleanNode>, capacity: usize) {
        self.probation_bytes += probation_charge(&node);
        self.probation.push_back((hash_prefix(&hash), hash, node));
        while self.probation.len() > PROBATION_LEAVES || self.probation_bytes > capacity / 8 {
            let Some((_, _, old)) = self.probation.pop_front() else {
                break;
            };
            self.probation_bytes -= probation_charge(&old);
        }
        self.shrink_to(capacity);
        self.peak = self.peak.max(self.held_bytes());
    }

    fn get(&mut self, hash: &Hash256) -> Option<Arc<CleanNode>> {
        let slot = self.map.get_mut(hash)?;
        slot.referenced = true;
        self.hits += 1;
        Some(Arc::clone(&slot.node))
    }

    /// Inserts a node, then evicts until the cache fits `capacity`.
    pub(super) fn insert(&mut self, hash: Hash256, node: Arc<CleanNode>, capacity: usize) {
        let charge = entry_charge(&node);
        if charge > capacity {
            self.shrink_to(capacity);
            return;
        }
        if self.map.contains_key(&hash) {
            return;
        }
        // hashbrown grows into a new table of twice the buckets (both held
        // while it moves the entries) once its spare room is used up, by
        // entries or by the tombstones evictions leave, while it is more
        // than half full; at most half full it rehashes in place. Growing
        // only when the grown table fits the capacity beside the entries
        // (and otherwise evicting down to half full) keeps the growth
        // inside the budget: letting it grow and shrink back put peaks of
        // three tables' bytes (45 MB at a 64 MiB budget) over the budget.
        if self.map.len() + 1 > self.map.capacity() / 2
            && self.bytes + self.probation_bytes + charge + 2 * self.table_bytes() > capacity
        {
            while self.map.len() + 1 > self.map.capacity() / 2 && self.evict_one() {}
        }
        self.map.insert(
            hash,
            Slot {
                node,
                charge: u32::try_from(charge).unwrap_or(u32::MAX),
                referenced: false,
            },
        );
        self.clock.push_back(hash);
        self.bytes += charge;
        self.shrink_to(capacity);
        self.peak = self.peak.max(self.held_bytes());
    }

    /// CLOCK: a referenced entry gets a second chance; the first one that
    /// is not is evicted.
    fn shrink_to(&mut self, capacity: usize) {
        while self.held_bytes() > capacity && self.evict_one() {}
        // Tables four times larger than their contents give the memory back, to
        // twice what they hold: a cache that shrinks for a block's dirty
        // nodes and grows back after the commit must not rehash both ways
        // every block. Tables that alone exceed a small budget give theirs
        // back too, so the budget holds whatever its size.
        if (self.map.len() < self.map.capacity() / 4 && self.map.capacity() > 1024)
            || self.held_bytes() > capacity
        {
            self.map.shrink_to(self.map.len() * 2);
            self.clock.shrink_to(self.clock.len() * 2);
        }
    }
}

impl NodeCache {
    /// CLOCK: a referenced entry gets a second chance; the first one that
    /// is not is evicted. False when nothing is left to evict.
    fn evict_one(&mut self) -> bool {
        while let Some(h) = self.clock.pop_front() {
            let Some(slot) = self.map.get_mut(&h) else {
                continue;
            };
            if slot.referenced {
                slot.referenced = false;
                self.clock.push_back(h);
            } else {
                let slot = self.map.remove(&h).expect("present");
                self.bytes -= slot.charge as usize;
                self.evictions += 1;
                return true;
            }
        }
        false
    }
}

/// A verified node as the cache holds it.
fn clean_node(node: MapNode) -> CleanNode {
    match node {
        MapNode::Inner(children) => CleanNode::from_children(&children),
        MapNode::Leaf { key, data } => CleanNode::Leaf {
            key,
            data: data.into_boxed_slice(),
        },
    }
}

/// The store, map kind and cache: everything a walk needs besides the tree.
pub(super) struct Loader<'s> {
    pub(super) store: &'s dyn NodeStore,
    pub(super) kind: MapKind,
    pub(super) node_type: NodeType,
    pub(super) budget: usize,
    cache: Mutex<NodeCache>,
}

impl<'s> Loader<'s> {
    /// A loader for a map of kind `kind` on `store`, its cache empty, for
    /// a memory budget of `budget` bytes.
    pub(super) fn new(store: &'s dyn NodeStore, kind: MapKind, budget: usize) -> Loader<'s> {
        Loader {
            store,
            kind,
            node_type: NodeType::for_map(kind),
            budget,
            cache: Mutex::new(NodeCache::default()),
        }
    }

    pub(super) fn cache(&self) -> MutexGuard<'_, NodeCache> {
        // A panic while holding the lock leaves the cache consistent (every
        // mutation completes before the next can start), so poison is moot.
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The node under `hash` at `id`: from the cache, or through the
    /// store's one verified fetch (`crate::fetch`: hash, type and place; a
    /// cache hit is checked against the place too). `keep` says whether a
    /// loaded node enters the cache.
    pub(super) fn fetch(
        &self,
        hash: &Hash256,
        id: &NodeId,
        keep: Keep,
    ) -> Result<Arc<CleanNode>, StoreError> {
        {
            let mut cache = self.cache();
            if let Some(n) = cache.get(hash) {
                n.check_place(hash, id)?;
                return Ok(n);
            }
            // Used twice: admitted (a scan, which keeps nothing, reads
            // the store instead).
            let capacity = match keep {
                Keep::Nothing => None,
                Keep::All { capacity } | Keep::Reused { capacity } => Some(capacity),
            };
            if let Some(capacity) = capacity {
                if let Some(n) = cache.take_on_probation(hash) {
                    n.check_place(hash, id)?;
                    cache.hits += 1;
                    cache.insert(*hash, Arc::clone(&n), capacity);
                    return Ok(n);
                }
            }
        }
        let clean = Arc::new(clean_node(
            fetch_required(self.store, hash, self.kind, id)?.node,
        ));
        let mut cache = self.cache();
        cache.loads += 1;
        match keep {
            Keep::Nothing => {}
            Keep::All { capacity } => cache.insert(*hash, Arc::clone(&clean), capacity),
            Keep::Reused { capacity } => {
                if matches!(*clean, CleanNode::Inner { .. }) || cache.seen_before(hash, capacity) {
                    cache.insert(*hash, Arc::clone(&clean), capacity);
                } else {
                    cache.put_on_probation(*hash, Arc::clone(&clean), capacity);
                }
            }
        }
        Ok(clean)
    }

    /// [`Loader::fetch`] of many nodes, each a hash and the position it was
    /// reached at, cached within `capacity`: the ones not cached are read
    /// in one go ([`NodeStore::read_values`]) and verified together (their
    /// hashes in one multi-lane batch), instead of one by one. In order;
    /// the first failure is returned.
    pub(super) fn fetch_many(
        &self,
        wanted: &[(Hash256, NodeId)],
        capacity: usize,
    ) -> Result<Vec<Arc<CleanNode>>, StoreError> {
        // Each wanted node: cached, or the index of its read in `missing`.
        let mut found: Vec<Result<Arc<CleanNode>, usize>> = Vec::with_capacity(wanted.len());
        let mut missing: Vec<(Hash256, NodeId)> = Vec::new();
        let mut reading: HashMap<Hash256, usize> = HashMap::new();
        {
            let mut cache = self.cache();
            for (hash, id) in wanted {
                let cached = match cache.get(hash) {
                    Some(n) => Some(n),
                    None => cache.take_on_probation(hash).inspect(|n| {
                        // Used twice: admitted.
                        cache.hits += 1;
                        cache.insert(*hash, Arc::clone(n), capacity);
                    }),
                };
                match cached {
                    Some(n) => {
                        n.check_place(hash, id)?;
                        found.push(Ok(n));
                    }
                    None => {
                        // A node on several paths is read once; at another
                        // place (a damaged store: a valid node has one),
                        // read and checked again there.
                        let at = match reading.get(hash) {
                            Some(&at) if missing[at].1 == *id => at,
                            _ => {
                                reading.insert(*hash, missing.len());
                                missing.push((*hash, *id));
                                missing.len() - 1
                            }
                        };
                        found.push(Err(at));
                    }
                }
            }
        }
        let mut loaded = Vec::with_capacity(missing.len());
        if !missing.is_empty() {
            let hashes: Vec<Hash256> = missing.iter().map(|m| m.0).collect();
            let values = self.store.read_values(&hashes)?;
            for f in crate::fetch::fetched_values(self.kind, &missing, values) {
                loaded.push(Arc::new(clean_node(f?.node)));
            }
            let mut cache = self.cache();
            cache.loads += loaded.len() as u64;
            for ((hash, _), node) in missing.iter().zip(&loaded) {
                cache.insert(*hash, Arc::clone(node), capacity);
            }
        }
        Ok(found
            .into_iter()
            .map(|f| f.unwrap_or_else(|at| Arc::clone(&loaded[at])))
            .collect())
    }
}
