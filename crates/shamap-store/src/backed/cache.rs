//! The backed map's node cache: clean nodes decoded and verified, by hash,
//! within a byte capacity, and the [`Loader`] that answers a walk's node
//! lookups from it or from the store (through the store's one verified
//! fetch).
//!
//! Memory: the nodes are held encoded, back to back, in *segments* of one
//! size (a 64th of the budget, a power of two from 4 KiB to 1 MiB), each
//! appended to until full; a table maps each node's hash prefix to its
//! place. What the cache charges is what it has allocated: its segments,
//! whole, and its tables at their capacity; no allocation per node. (With
//! one or two allocations per node, the allocator held about 11 MiB more
//! than the 64 MiB charged: size classes, and slabs left partly used by
//! eviction in random order.) A hit decodes the node into an owned
//! [`CleanNode`]: an inner node's hashes by value, a leaf's data in one
//! `Vec` (which the walks that read a leaf hand on).
//!
//! Admission: walks that change the map keep every node they load
//! ([`Keep::All`]); scans keep none; lookups keep inner nodes and admit a
//! leaf only on its second use: a leaf loaded once waits on *probation*
//! (the last few, a bounded share of the capacity), and a *doorkeeper* of
//! recently loaded leaves' hash prefixes admits a leaf seen again.
//!
//! Eviction: the oldest segment goes, whole; a node in it used since it
//! was written there is copied to the newest segment instead (a second
//! chance, as CLOCK gives).

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

use hashbrown::HashMap;
use shamap::{BranchMask, Hash256, Key, MapKind, Nibble};

use crate::error::StoreError;
use crate::fetch::{fetch_required, MapNode};
use crate::node::NodeType;
use crate::node_id::NodeId;
use crate::store::NodeStore;

/// A node as a walk gets it from the cache: decoded, verified, owned.
/// Returned by value and dropped soon after (never held in bulk), so an
/// inner node's sixteen hashes stay off the heap.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub(super) enum CleanNode {
    /// An inner node: its branch mask and its children's hashes by branch
    /// (zero where the mask has no child).
    Inner {
        mask: BranchMask,
        hashes: [Hash256; 16],
    },
    /// A leaf.
    Leaf { key: Key, data: Vec<u8> },
}

impl CleanNode {
    pub(super) fn child(&self, branch: Nibble) -> Option<Hash256> {
        match self {
            CleanNode::Inner { mask, hashes } if mask.has(branch) => {
                Some(hashes[usize::from(branch.get())])
            }
            _ => None,
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
        CleanNode::Inner {
            mask,
            hashes: *children,
        }
    }

    /// Bytes of the node's encoding in a segment ([`encode_entry`]),
    /// after the entry's head.
    fn body_len(&self) -> usize {
        match self {
            CleanNode::Inner { mask, .. } => 1 + 2 + 32 * mask.count(),
            CleanNode::Leaf { data, .. } => 1 + 32 + data.len(),
        }
    }
}

/// An entry in a segment: the node's hash, the length of its body (`u32`,
/// little-endian), then the body: `INNER`, the mask (`u16`, bit `b` for
/// branch `b`), the present children's hashes in branch order; or `LEAF`,
/// the key, the data.
const ENTRY_HEAD: usize = 32 + 4;
const INNER: u8 = 1;
const LEAF: u8 = 0;

/// Appends `node`'s entry under `hash` to `out`.
fn encode_entry(hash: &Hash256, node: &CleanNode, out: &mut Vec<u8>) {
    out.extend_from_slice(&hash.0);
    let body_len = u32::try_from(node.body_len()).expect("an entry fits its segment");
    out.extend_from_slice(&body_len.to_le_bytes());
    match node {
        CleanNode::Inner { mask, hashes } => {
            out.push(INNER);
            let bits = Nibble::all()
                .filter(|b| mask.has(*b))
                .fold(0u16, |m, b| m | 1 << b.get());
            out.extend_from_slice(&bits.to_le_bytes());
            for b in Nibble::all().filter(|b| mask.has(*b)) {
                out.extend_from_slice(&hashes[usize::from(b.get())].0);
            }
        }
        CleanNode::Leaf { key, data } => {
            out.push(LEAF);
            out.extend_from_slice(&key.0);
            out.extend_from_slice(data);
        }
    }
}

/// The node of an entry's body, as [`encode_entry`] wrote it.
fn decode_body(body: &[u8]) -> CleanNode {
    let hash_at = |at: usize| Hash256(body[at..at + 32].try_into().expect("32 bytes"));
    if body[0] == INNER {
        let bits = u16::from_le_bytes([body[1], body[2]]);
        let mut mask = BranchMask::default();
        let mut hashes = [Hash256::ZERO; 16];
        let mut at = 3;
        for b in Nibble::all().filter(|b| bits & 1 << b.get() != 0) {
            mask = mask.with(b);
            hashes[usize::from(b.get())] = hash_at(at);
            at += 32;
        }
        CleanNode::Inner { mask, hashes }
    } else {
        CleanNode::Leaf {
            key: Key(body[1..33].try_into().expect("32 bytes")),
            data: body[33..].to_vec(),
        }
    }
}

/// Where a node's entry is: its segment's number and its offset there,
/// the offset's top bit set once the node is used after it was written
/// ([`REFERENCED`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Place {
    segment: u32,
    offset: u32,
}

/// The bit of [`Place::offset`] that marks an entry used since it was
/// written (segments are at most 1 MiB, so offsets need 20 bits).
const REFERENCED: u32 = 1 << 31;

impl Place {
    fn at(self) -> usize {
        (self.offset & !REFERENCED) as usize
    }

    fn referenced(self) -> bool {
        self.offset & REFERENCED != 0
    }
}

/// A segment: its number (they increase by one, oldest first) and its
/// entries, in a buffer allocated once at the segment's size.
struct Segment {
    number: u32,
    bytes: Vec<u8>,
}

/// The segment size for a budget: a 64th of it, a power of two from 4 KiB
/// to 1 MiB. Eviction frees a segment at a time, so at least eight fit the
/// cache's smallest share (an eighth of the budget) once the budget is
/// 256 KiB or more.
fn segment_bytes_for(budget: usize) -> usize {
    (budget / 64)
        .clamp(4 << 10, 1 << 20)
        .next_power_of_two()
        .min(1 << 20)
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

/// Bytes charged for a leaf on probation: its place in the queue and its
/// data, rounded up to the allocator's 16-byte granularity.
fn probation_charge(node: &CleanNode) -> usize {
    let data = match node {
        CleanNode::Leaf { data, .. } => data.len(),
        CleanNode::Inner { .. } => 0,
    };
    std::mem::size_of::<(u64, Hash256, CleanNode)>() + data.div_ceil(16) * 16
}

/// The bounded cache of clean nodes: hash → encoded node in a segment.
pub(super) struct NodeCache {
    segment_bytes: usize,
    /// Oldest first; the last is the one appended to.
    segments: VecDeque<Segment>,
    /// The number the next segment gets.
    next_segment: u32,
    /// Hash prefix → entry. Two nodes whose hashes share 8 bytes share a
    /// slot: the later one takes it (the entry's full hash is compared on
    /// every hit).
    index: HashMap<u64, Place>,
    /// The doorkeeper of [`Keep::Reused`]: slot `i` holds the first 8
    /// bytes of the hash of the last leaf loaded by a lookup whose prefix
    /// is `i` modulo the slot count (empty until a lookup loads a leaf).
    recent_leaves: Vec<u64>,
    /// The last [`PROBATION_LEAVES`] leaves lookups loaded and did not
    /// admit, oldest first, with their hashes' first 8 bytes: a write or
    /// lookup of the same key soon after (read, modify, write) takes its
    /// leaf from here, and admits it, instead of loading it again.
    probation: VecDeque<(u64, Hash256, CleanNode)>,
    probation_bytes: usize,
    pub(super) peak: usize,
    pub(super) hits: u64,
    pub(super) loads: u64,
    pub(super) evictions: u64,
}

impl NodeCache {
    /// An empty cache for a memory budget of `budget` bytes (which sets
    /// its segment size).
    pub(super) fn new(budget: usize) -> NodeCache {
        NodeCache {
            segment_bytes: segment_bytes_for(budget),
            segments: VecDeque::new(),
            next_segment: 0,
            index: HashMap::new(),
            recent_leaves: Vec::new(),
            probation: VecDeque::new(),
            probation_bytes: 0,
            peak: 0,
            hits: 0,
            loads: 0,
            evictions: 0,
        }
    }

    /// Nodes cached.
    pub(super) fn entries(&self) -> usize {
        self.index.len()
    }

    /// The bytes of an index table with room for `entries` (hashbrown
    /// keeps at least 8 buckets per 7 entries, a power of two, each a slot
    /// and a control byte).
    fn index_bytes(entries: usize) -> usize {
        let buckets = (entries * 8 / 7).next_power_of_two();
        buckets * (std::mem::size_of::<(u64, Place)>() + 1)
    }

    /// Bytes the tables have allocated.
    fn table_bytes(&self) -> usize {
        self.index.allocation_size()
            + self.segments.capacity() * std::mem::size_of::<Segment>()
            + self.recent_leaves.capacity() * std::mem::size_of::<u64>()
            + self.probation.capacity() * std::mem::size_of::<(u64, Hash256, CleanNode)>()
    }

    fn segments_bytes(&self) -> usize {
        self.segments.len() * self.segment_bytes
    }

    /// Bytes the cache holds: its segments, its tables and the leaves on
    /// probation.
    pub(super) fn held_bytes(&self) -> usize {
        self.segments_bytes() + self.probation_bytes + self.table_bytes()
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

    /// Takes the leaf `hash` off probation, if it is there.
    fn take_on_probation(&mut self, hash: &Hash256) -> Option<CleanNode> {
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
    fn put_on_probation(&mut self, hash: Hash256, node: CleanNode, capacity: usize) {
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

    /// The segment numbered `number`, if it is still held.
    fn segment(&self, number: u32) -> Option<&Segment> {
        let first = self.segments.front()?.number;
        let seg = self.segments.get(number.wrapping_sub(first) as usize)?;
        (seg.number == number).then_some(seg)
    }

    /// The whole entry at `place` (head and body).
    fn entry(&self, place: Place) -> &[u8] {
        let seg = self
            .segment(place.segment)
            .expect("the index names only held segments");
        let at = place.at();
        let body_len = u32::from_le_bytes(
            seg.bytes[at + 32..at + ENTRY_HEAD]
                .try_into()
                .expect("4 bytes"),
        ) as usize;
        &seg.bytes[at..at + ENTRY_HEAD + body_len]
    }

    /// The place of the entry for `hash`, if it is cached.
    fn find(&self, hash: &Hash256) -> Option<Place> {
        let place = *self.index.get(&hash_prefix(hash))?;
        (self.entry(place)[..32] == hash.0).then_some(place)
    }

    fn get(&mut self, hash: &Hash256) -> Option<CleanNode> {
        let place = self.find(hash)?;
        let node = decode_body(&self.entry(place)[ENTRY_HEAD..]);
        if let Some(p) = self.index.get_mut(&hash_prefix(hash)) {
            p.offset |= REFERENCED;
        }
        self.hits += 1;
        Some(node)
    }

    /// Room for an entry of `len` bytes at the end of the newest segment,
    /// within `capacity` if it can be had: a new segment if one more fits,
    /// otherwise the oldest one recycled ([`NodeCache::recycle_oldest`]).
    /// The new entry's place.
    fn room_for(&mut self, len: usize, capacity: usize) -> Place {
        loop {
            if let Some(seg) = self.segments.back() {
                if seg.bytes.len() + len <= self.segment_bytes {
                    return Place {
                        segment: seg.number,
                        offset: u32::try_from(seg.bytes.len()).expect("segments are at most 1 MiB"),
                    };
                }
            }
            if self.segments.is_empty() || self.held_bytes() + self.segment_bytes <= capacity {
                let number = self.next_number();
                self.segments.push_back(Segment {
                    number,
                    bytes: Vec::with_capacity(self.segment_bytes),
                });
            } else {
                self.recycle_oldest();
            }
        }
    }

    fn next_number(&mut self) -> u32 {
        let n = self.next_segment;
        self.next_segment = n.wrapping_add(1);
        n
    }

    /// Inserts a node, then evicts until the cache fits `capacity`.
    pub(super) fn insert(&mut self, hash: Hash256, node: &CleanNode, capacity: usize) {
        let len = ENTRY_HEAD + node.body_len();
        if len > self.segment_bytes || self.segment_bytes > capacity {
            self.shrink_to(capacity);
            return;
        }
        if self.find(&hash).is_some() {
            return;
        }
        // hashbrown grows into a new table of twice the buckets (both held
        // while it moves the entries) once its spare room is used up, by
        // entries or by the tombstones removals leave, while it is more
        // than half full; at most half full it rehashes in place. Growing
        // only when the old table and the grown one (three times the
        // table's bytes) fit the capacity beside the entries, and
        // otherwise evicting down to half full, keeps the growth inside
        // the budget: letting it grow and shrink back put peaks of three
        // tables' bytes (45 MB at a 64 MiB budget) over the budget, and
        // counting only the grown table left the old one (4.3 MiB at 64
        // MiB) over it while the entries moved.
        if self.index.len() + 1 > self.index.capacity() / 2
            && self.segments_bytes() + self.probation_bytes + len + 3 * self.table_bytes()
                > capacity
        {
            // Recycling (not dropping) keeps the second chances; two rounds
            // clear every mark.
            let mut rounds = 2 * self.segments.len();
            while self.index.len() + 1 > self.index.capacity() / 2 && rounds > 0 {
                self.recycle_oldest();
                rounds -= 1;
            }
        }
        let place = self.room_for(len, capacity);
        encode_entry(
            &hash,
            node,
            &mut self.segments.back_mut().expect("room made").bytes,
        );
        let table = self.table_bytes();
        self.index.insert(hash_prefix(&hash), place);
        self.note_move(table);
        self.shrink_to(capacity);
        self.peak = self.peak.max(self.held_bytes());
    }

    /// Drops whole segments, oldest first, until the cache fits `capacity`.
    fn shrink_to(&mut self, capacity: usize) {
        while self.held_bytes() > capacity && self.drop_oldest() {}
        // Tables four times larger than their contents give the memory back, to
        // twice what they hold: a cache that shrinks for a block's dirty
        // nodes and grows back after the commit must not rehash both ways
        // every block. Tables that alone exceed a small budget give theirs
        // back too, so the budget holds whatever its size.
        if (self.index.len() < self.index.capacity() / 4 && self.index.capacity() > 1024)
            || self.held_bytes() > capacity
        {
            // The smaller table is allocated while the old one is held:
            // room for it first, so the move stays inside the capacity
            // (shrinking from a full table put 4.4 MiB over 64 MiB).
            while self.held_bytes() + Self::index_bytes(self.index.len() * 2) > capacity
                && self.drop_oldest()
            {}
            let table = self.table_bytes();
            self.index.shrink_to(self.index.len() * 2);
            self.note_move(table);
            self.segments.shrink_to(self.segments.len() * 2);
        }
    }

    /// Counts in [`NodeCache::peak`] a move of the index into a table of
    /// another size, if one just happened: the old table (`old_table`
    /// bytes) and the new one were both held while the entries moved.
    fn note_move(&mut self, old_table: usize) {
        let table = self.table_bytes();
        if table != old_table {
            let moving = self.segments_bytes() + self.probation_bytes + old_table + table;
            self.peak = self.peak.max(moving);
        }
    }

    /// Calls `f(prefix, start, end)` for each entry of `bytes` that the
    /// index still places at segment `number` (not superseded by a node
    /// sharing its prefix).
    fn live_entries(
        index: &HashMap<u64, Place>,
        number: u32,
        bytes: &[u8],
        mut f: impl FnMut(u64, Place, usize, usize),
    ) {
        let mut at = 0;
        while at < bytes.len() {
            let prefix = u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
            let body_len =
                u32::from_le_bytes(bytes[at + 32..at + ENTRY_HEAD].try_into().expect("4 bytes"))
                    as usize;
            let end = at + ENTRY_HEAD + body_len;
            if let Some(p) = index.get(&prefix) {
                if p.segment == number && p.at() == at {
                    f(prefix, *p, at, end);
                }
            }
            at = end;
        }
    }

    /// Evicts every node of the oldest segment and frees it. False when
    /// there is none.
    fn drop_oldest(&mut self) -> bool {
        let Some(old) = self.segments.pop_front() else {
            return false;
        };
        let mut gone = Vec::new();
        Self::live_entries(&self.index, old.number, &old.bytes, |prefix, _, _, _| {
            gone.push(prefix);
        });
        self.evictions += gone.len() as u64;
        for prefix in gone {
            self.index.remove(&prefix);
        }
        true
    }

    /// Makes the oldest segment the newest: the nodes in it used since they
    /// were written there move to its front, unmarked (their second
    /// chance), the others leave the cache, and what they held is room for
    /// new entries. Its buffer is reused: a full cache allocates nothing.
    fn recycle_oldest(&mut self) {
        let Some(mut old) = self.segments.pop_front() else {
            return;
        };
        let number = self.next_number();
        let mut kept: Vec<(u64, usize, usize)> = Vec::new();
        let mut gone = Vec::new();
        Self::live_entries(&self.index, old.number, &old.bytes, |prefix, p, at, end| {
            if p.referenced() {
                kept.push((prefix, at, end));
            } else {
                gone.push(prefix);
            }
        });
        self.evictions += gone.len() as u64;
        for prefix in gone {
            self.index.remove(&prefix);
        }
        // Entries move only toward the front, in order: no overlap with an
        // entry not yet moved.
        let mut to = 0;
        for (prefix, at, end) in kept {
            old.bytes.copy_within(at..end, to);
            self.index.insert(
                prefix,
                Place {
                    segment: number,
                    offset: u32::try_from(to).expect("segments are at most 1 MiB"),
                },
            );
            to += end - at;
        }
        old.bytes.truncate(to);
        old.number = number;
        self.segments.push_back(old);
    }
}

/// A verified node as the cache holds it.
fn clean_node(node: MapNode) -> CleanNode {
    match node {
        MapNode::Inner(children) => CleanNode::from_children(&children),
        MapNode::Leaf { key, data } => CleanNode::Leaf { key, data },
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
            cache: Mutex::new(NodeCache::new(budget)),
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
    ) -> Result<CleanNode, StoreError> {
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
                    cache.insert(*hash, &n, capacity);
                    return Ok(n);
                }
            }
        }
        let clean = clean_node(fetch_required(self.store, hash, self.kind, id)?.node);
        let mut cache = self.cache();
        cache.loads += 1;
        match keep {
            Keep::Nothing => {}
            Keep::All { capacity } => cache.insert(*hash, &clean, capacity),
            Keep::Reused { capacity } => {
                if matches!(clean, CleanNode::Inner { .. }) || cache.seen_before(hash, capacity) {
                    cache.insert(*hash, &clean, capacity);
                } else {
                    cache.put_on_probation(*hash, clean.clone(), capacity);
                }
            }
        }
        Ok(clean)
    }

    /// [`Loader::fetch`] of many nodes, each a hash and the position it was
    /// reached at, cached within `capacity`: the ones not cached are read
    /// in one go ([`NodeStore::read_values`]) and verified together (their
    /// hashes in one multi-lane batch), instead of one by one. Calls
    /// `each(i, node)` with the node of `wanted[i]`, the cached ones first;
    /// the first failure is returned.
    pub(super) fn fetch_many(
        &self,
        wanted: &[(Hash256, NodeId)],
        capacity: usize,
        mut each: impl FnMut(usize, &CleanNode),
    ) -> Result<(), StoreError> {
        // The nodes to read, and which of `wanted` each answers.
        let mut missing: Vec<(Hash256, NodeId)> = Vec::new();
        let mut answers: Vec<(usize, usize)> = Vec::new();
        let mut reading: HashMap<Hash256, usize> = HashMap::new();
        {
            let mut cache = self.cache();
            for (i, (hash, id)) in wanted.iter().enumerate() {
                let cached = match cache.get(hash) {
                    Some(n) => Some(n),
                    None => cache.take_on_probation(hash).inspect(|n| {
                        // Used twice: admitted.
                        cache.hits += 1;
                        cache.insert(*hash, n, capacity);
                    }),
                };
                match cached {
                    Some(n) => {
                        n.check_place(hash, id)?;
                        each(i, &n);
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
                        answers.push((i, at));
                    }
                }
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let hashes: Vec<Hash256> = missing.iter().map(|m| m.0).collect();
        let values = self.store.read_values(&hashes)?;
        let mut loaded = Vec::with_capacity(missing.len());
        for f in crate::fetch::fetched_values(self.kind, &missing, values) {
            loaded.push(clean_node(f?.node));
        }
        {
            let mut cache = self.cache();
            cache.loads += loaded.len() as u64;
            for ((hash, _), node) in missing.iter().zip(&loaded) {
                cache.insert(*hash, node, capacity);
            }
        }
        for (i, at) in answers {
            each(i, &loaded[at]);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap as ModelMap;

    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    fn random_hash(rng: &mut SmallRng) -> Hash256 {
        Hash256(rng.gen())
    }

    fn random_node(rng: &mut SmallRng) -> CleanNode {
        if rng.gen_bool(0.5) {
            let mut children = [Hash256::ZERO; 16];
            for c in children.iter_mut() {
                if rng.gen_bool(0.6) {
                    *c = random_hash(rng);
                }
            }
            CleanNode::from_children(&children)
        } else {
            let len = rng.gen_range(0..600);
            CleanNode::Leaf {
                key: Key(rng.gen()),
                data: (0..len).map(|_| rng.gen()).collect(),
            }
        }
    }

    fn same(a: &CleanNode, b: &CleanNode) -> bool {
        match (a, b) {
            (
                CleanNode::Inner {
                    mask: ma,
                    hashes: ha,
                },
                CleanNode::Inner {
                    mask: mb,
                    hashes: hb,
                },
            ) => ma == mb && ha == hb,
            (CleanNode::Leaf { key: ka, data: da }, CleanNode::Leaf { key: kb, data: db }) => {
                ka == kb && da == db
            }
            _ => false,
        }
    }

    /// Random inserts and gets, the capacity changing on the way (as the
    /// dirty nodes and the store's share do): every hit is the node
    /// inserted under that hash, the cache never holds more than the
    /// capacity an insert is given once it returns, and the index names only held
    /// segments (a get of every model node decodes without panicking).
    #[test]
    fn the_cache_answers_what_was_inserted_within_its_capacity() {
        let seed = crate::test_support::seed();
        let mut rng = SmallRng::seed_from_u64(seed);
        let budget = 1 << 20;
        let mut cache = NodeCache::new(budget);
        let mut model: ModelMap<Hash256, CleanNode> = ModelMap::new();
        let mut hashes: Vec<Hash256> = Vec::new();
        let mut capacity = budget / 2;
        let (mut hits, mut evicted) = (0, 0);
        for step in 0..60_000 {
            if step % 5_000 == 0 {
                capacity = rng.gen_range(budget / 8..=budget);
            }
            if hashes.is_empty() || rng.gen_bool(0.4) {
                let hash = random_hash(&mut rng);
                let node = random_node(&mut rng);
                let peak = cache.peak;
                cache.insert(hash, &node, capacity);
                model.insert(hash, node);
                hashes.push(hash);
                // Nor does the index's move into a grown or shrunk table
                // (old and new held at once) go past it.
                assert!(
                    cache.peak == peak || cache.peak <= capacity,
                    "seed {seed}: step {step}: {} bytes held at the peak, capacity {capacity}",
                    cache.peak
                );
                // An insert shrinks the cache to the capacity it is given.
                assert!(
                    cache.held_bytes() <= capacity,
                    "seed {seed}: step {step}: {} bytes held, capacity {capacity}",
                    cache.held_bytes()
                );
            } else {
                // Recent nodes more often, as a working set.
                let back = rng.gen_range(0..hashes.len().min(3_000));
                let hash = hashes[hashes.len() - 1 - back];
                match cache.get(&hash) {
                    Some(n) => {
                        assert!(
                            same(&n, &model[&hash]),
                            "seed {seed}: step {step}: another node"
                        );
                        hits += 1;
                    }
                    None => evicted += 1,
                }
            }
        }
        assert!(
            hits > 1_000 && evicted > 1_000,
            "seed {seed}: {hits} hits, {evicted} misses"
        );
        for (hash, node) in &model {
            if let Some(n) = cache.get(hash) {
                assert!(same(&n, node), "seed {seed}: another node at the end");
            }
        }
    }

    /// Small nodes make the index a large share of the cache: its moves
    /// into a grown table (as entries come) and a shrunk one (as the
    /// capacity falls), both tables held at once, stay inside the capacity.
    #[test]
    fn the_index_moves_into_a_new_table_inside_the_capacity() {
        let seed = crate::test_support::seed();
        let mut rng = SmallRng::seed_from_u64(seed);
        let budget = 4 << 20;
        let mut cache = NodeCache::new(budget);
        let mut moves = 0;
        for round in 0..8 {
            // Full, then a fraction: the fall leaves the table too large.
            let capacity = if round % 2 == 0 {
                rng.gen_range(budget / 2..=budget)
            } else {
                rng.gen_range(budget / 8..=budget / 3)
            };
            for step in 0..40_000 {
                let table = cache.table_bytes();
                let peak = cache.peak;
                let node = CleanNode::Leaf {
                    key: Key(rng.gen()),
                    data: vec![1; rng.gen_range(0..16)],
                };
                cache.insert(random_hash(&mut rng), &node, capacity);
                moves += usize::from(cache.table_bytes() != table);
                assert!(
                    cache.peak == peak || cache.peak <= capacity,
                    "seed {seed}: round {round}, step {step}: {} bytes held while the index moved, capacity {capacity}",
                    cache.peak
                );
            }
        }
        assert!(moves >= 6, "seed {seed}: the index moved {moves} times");
    }

    /// A node read since it was written survives its segment's recycling
    /// (once); one not read leaves the cache.
    #[test]
    fn a_node_used_since_it_was_written_gets_a_second_chance() {
        let mut rng = SmallRng::seed_from_u64(7);
        let budget = 1 << 20;
        let capacity = budget / 2;
        let mut cache = NodeCache::new(budget);
        let leaf = |rng: &mut SmallRng| CleanNode::Leaf {
            key: Key(rng.gen()),
            data: vec![7; 200],
        };
        let (used, unused) = (random_hash(&mut rng), random_hash(&mut rng));
        cache.insert(used, &leaf(&mut rng), capacity);
        cache.insert(unused, &leaf(&mut rng), capacity);
        assert!(cache.get(&used).is_some());
        // Fill the cache until the first segment has been recycled.
        let first = cache.segments.front().expect("a segment").number;
        while cache.segments.iter().any(|s| s.number == first) {
            cache.insert(random_hash(&mut rng), &leaf(&mut rng), capacity);
        }
        assert!(
            cache.find(&unused).is_none(),
            "a node never read is evicted"
        );
        assert!(
            cache.find(&used).is_some(),
            "a node read has its second chance"
        );
        // Not read again: the next recycling of its segment evicts it.
        let now = cache.find(&used).expect("held").segment;
        while cache.segments.iter().any(|s| s.number == now) {
            cache.insert(random_hash(&mut rng), &leaf(&mut rng), capacity);
        }
        assert!(
            cache.find(&used).is_none(),
            "no third chance without a read"
        );
        assert!(cache.held_bytes() <= capacity);
    }

    /// Two nodes whose hashes share their first 8 bytes (the table's key):
    /// the later one takes the slot, and the earlier one is a miss, never
    /// answered with the other's node.
    #[test]
    fn nodes_sharing_a_hash_prefix_are_told_apart() {
        let mut cache = NodeCache::new(1 << 20);
        let mut a = Hash256([1; 32]);
        let mut b = Hash256([1; 32]);
        a.0[31] = 2;
        b.0[31] = 3;
        let node = |byte: u8| CleanNode::Leaf {
            key: Key([byte; 32]),
            data: vec![byte; 10],
        };
        cache.insert(a, &node(0xA), 1 << 19);
        assert!(
            matches!(cache.get(&a), Some(CleanNode::Leaf { key, .. }) if key == Key([0xA; 32]))
        );
        assert!(cache.get(&b).is_none(), "b was never inserted");
        cache.insert(b, &node(0xB), 1 << 19);
        assert!(
            matches!(cache.get(&b), Some(CleanNode::Leaf { key, .. }) if key == Key([0xB; 32]))
        );
        assert!(cache.get(&a).is_none(), "a's slot went to b");
        assert_eq!(cache.entries(), 1);
    }
}
