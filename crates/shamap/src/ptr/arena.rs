//! `NodeArena`: makes, reshapes and frees node chunks from slab pools.
//!
//! Inner nodes come from one pool per size class; leaves from one pool per
//! chunk size (multiples of 8 up to `MAX_POOLED_CHUNK`), and larger leaves
//! from the global allocator. The arena keeps exact counters so that memory
//! statistics are counted, never estimated.

use super::mask::BranchMask;
use super::node::{
    inner_chunk_size, leaf_chunk_size, NodePtr, CHILDREN_OFFSET, DATA_OFFSET, HASH_OFFSET,
    KEY_OFFSET, LEAF_HASH_ROOM, LONG_DATA_OFFSET, LONG_LEAF, LONG_LEN_OFFSET,
};
use super::tagged::Tagged;
use crate::alloc::{BlockSource, PoolStats, SlabPool};
#[cfg(test)]
use crate::hash::Hash256;
use crate::hash::{Key, Nibble};
use crate::options::{HugePages, LeafHashes, SizeClasses};
#[cfg(test)]
use std::ptr::NonNull;

/// Largest leaf chunk served from a pool; larger ones use the global allocator.
/// Pools for larger sizes are sparse (few leaves per size), so their
/// partly filled blocks would cost more than a malloc header per leaf.
pub(crate) const MAX_POOLED_CHUNK: usize = 1024;

/// Exact counters kept by the arena.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ArenaCounters {
    /// Per inner size class: (capacity, pool counters).
    pub inner_pools: Vec<(usize, PoolStats)>,
    /// Leaf pools that hold at least one block.
    pub leaf_pools: Vec<PoolStats>,
    /// Leaves in chunks of their own (too large for a pool), and the bytes
    /// the allocator holds for them.
    pub large_leaves: usize,
    pub large_leaf_bytes: usize,
    /// Occupied child slots over all inner nodes.
    pub child_slots_used: usize,
    /// Occupied child slots per size class.
    pub slots_used_by_class: Vec<usize>,
    /// Sum of leaf data lengths.
    pub leaf_data_bytes: usize,
    /// Leaves alive.
    pub leaves: usize,
}

/// Allocates, reshapes, shares and frees nodes for one map and all its
/// snapshots.
///
/// Sharing: a node referenced by more than one node word (after a
/// snapshot, by the snapshot's tree and the map's) has an entry in `shared`
/// counting the references beyond the first; a node without an entry has
/// exactly one. Shared nodes are immutable: a writer first calls
/// [`NodeArena::make_mut`], which copies a shared node (path copying), and
/// [`NodeArena::release`] frees a node only when its last reference goes.
/// When nothing is shared the table is empty and costs one branch per step.
pub(crate) struct NodeArena {
    classes: SizeClasses,
    /// Whether leaf chunks hold a hash (the hashless-leaf mode's do not).
    leaf_hashes: LeafHashes,
    /// The huge-page policy the arena was made with.
    policy: HugePages,
    /// Where new blocks come from now (`Pages` until a `Beyond` policy's
    /// threshold is passed).
    source: BlockSource,
    shared: hashbrown::HashMap<usize, u32>,
    inner: Vec<SlabPool>,
    leaf: Vec<Option<SlabPool>>,
    large_leaves: usize,
    large_leaf_bytes: usize,
    child_slots_used: usize,
    slots_used_by_class: [usize; crate::options::MAX_SIZE_CLASSES],
    leaf_data_bytes: usize,
    leaves: usize,
}

impl NodeArena {
    /// An arena whose inner nodes use `classes`.
    #[cfg(test)]
    pub(crate) fn new(classes: SizeClasses) -> NodeArena {
        NodeArena::with_policy(classes, HugePages::Never, LeafHashes::Stored)
    }

    /// An arena whose inner nodes use `classes`, whose pools take their
    /// blocks as `policy` says, and whose leaves keep their hash or not.
    pub(crate) fn with_policy(
        classes: SizeClasses,
        policy: HugePages,
        leaf_hashes: LeafHashes,
    ) -> NodeArena {
        let source = match policy {
            HugePages::Always => BlockSource::Huge,
            HugePages::Never | HugePages::Beyond(_) => BlockSource::Pages,
        };
        let inner = (0..classes.len())
            .map(|c| SlabPool::with_source(inner_chunk_size(classes.capacity(c)), source))
            .collect();
        NodeArena {
            classes,
            leaf_hashes,
            policy,
            source,
            shared: hashbrown::HashMap::new(),
            inner,
            leaf: Vec::new(),
            large_leaves: 0,
            large_leaf_bytes: 0,
            child_slots_used: 0,
            slots_used_by_class: [0; crate::options::MAX_SIZE_CLASSES],
            leaf_data_bytes: 0,
            leaves: 0,
        }
    }

    /// Where the pools' new blocks come from now.
    #[cfg(test)]
    pub(crate) fn source(&self) -> BlockSource {
        self.source
    }

    /// The huge-page policy the arena was made with.
    pub(crate) fn policy(&self) -> HugePages {
        self.policy
    }

    /// Whether leaf chunks hold their hash.
    pub(crate) fn leaf_hashes(&self) -> LeafHashes {
        self.leaf_hashes
    }

    /// Bytes a pooled leaf chunk with a full layout of `chunk` bytes takes
    /// here: the hashless-leaf mode leaves out the hash.
    #[inline]
    fn pooled_leaf_size(&self, chunk: usize) -> usize {
        if self.leaf_hashes.stored() {
            chunk
        } else {
            chunk - LEAF_HASH_ROOM
        }
    }

    /// Under a `Beyond` policy, moves new blocks to huge-page regions once
    /// the pools have touched more than the threshold. Called every 4096 new
    /// nodes (summing the pools' counters is a few dozen loads).
    ///
    /// Touched bytes, not blocks held: every leaf size has its own pool,
    /// whose last block is mostly untouched (about 22 MiB over a small
    /// mainnet-shaped map's 110 pools), and counting it switched maps of
    /// 100k entries (25 MiB of nodes) to huge regions, each resident whole
    /// once touched: peak RSS 1.28× the counted bytes, against 1.06 before.
    #[inline]
    fn maybe_switch_source(&mut self, made: usize) {
        if !made.is_multiple_of(4096) || self.source == BlockSource::Huge {
            return;
        }
        let HugePages::Beyond(limit) = self.policy else {
            return;
        };
        let touched: usize = self
            .inner
            .iter()
            .chain(self.leaf.iter().flatten())
            .map(|p| p.stats().touched_bytes)
            .sum();
        if touched > limit {
            self.source = BlockSource::Huge;
            for p in self.inner.iter_mut().chain(self.leaf.iter_mut().flatten()) {
                p.set_source(BlockSource::Huge);
            }
        }
    }

    /// The size classes in use.
    pub(crate) fn classes(&self) -> &SizeClasses {
        &self.classes
    }

    /// Counters for statistics.
    pub(crate) fn counters(&self) -> ArenaCounters {
        ArenaCounters {
            inner_pools: self
                .inner
                .iter()
                .enumerate()
                .map(|(c, p)| (self.classes.capacity(c), p.stats()))
                .collect(),
            leaf_pools: self
                .leaf
                .iter()
                .flatten()
                .map(SlabPool::stats)
                .filter(|s| s.blocks > 0)
                .collect(),
            large_leaves: self.large_leaves,
            large_leaf_bytes: self.large_leaf_bytes,
            child_slots_used: self.child_slots_used,
            slots_used_by_class: self.slots_used_by_class[..self.classes.len()].to_vec(),
            leaf_data_bytes: self.leaf_data_bytes,
            leaves: self.leaves,
        }
    }

    /// Heap bytes of the arena's own bookkeeping (pool headers and vectors).
    pub(crate) fn bookkeeping_bytes(&self) -> usize {
        std::mem::size_of::<NodeArena>()
            + self.inner.capacity() * std::mem::size_of::<SlabPool>()
            + self.leaf.capacity() * std::mem::size_of::<Option<SlabPool>>()
    }

    /// Audits every pool's internal lists and counters.
    pub(crate) fn audit(&self) -> Result<(), String> {
        for p in self.inner.iter().chain(self.leaf.iter().flatten()) {
            p.audit()
                .map_err(|e| format!("pool of {}-byte chunks: {e}", p.chunk_size()))?;
        }
        Ok(())
    }

    fn leaf_pool(&mut self, chunk: usize) -> &mut SlabPool {
        let i = chunk / 8;
        if self.leaf.len() <= i {
            self.leaf.resize_with(i + 1, || None);
        }
        let source = self.source;
        self.leaf[i].get_or_insert_with(|| SlabPool::with_source(chunk, source))
    }

    /// A new leaf holding `key` and `data`, hash not yet computed.
    pub(crate) fn new_leaf(&mut self, key: &Key, data: &[u8]) -> NodePtr {
        let len = data.len();
        let chunk = leaf_chunk_size(len);
        let (p, hashless) = if chunk <= MAX_POOLED_CHUNK {
            let size = self.pooled_leaf_size(chunk);
            let hashless = size != chunk;
            let c = self.leaf_pool(size).alloc();
            // A hashless leaf's word names the chunk minus the hash room (see
            // `node.rs`): still inside the block, which starts with a
            // 64-byte header before its first chunk.
            let p = if hashless {
                c.map_addr(|a| {
                    std::num::NonZeroUsize::new(a.get() - LEAF_HASH_ROOM)
                        .expect("a chunk lies 64 bytes or more into its block")
                })
            } else {
                c
            };
            (p, hashless)
        } else {
            let (p, footprint) = crate::alloc::alloc_large(chunk);
            self.large_leaves += 1;
            self.large_leaf_bytes += footprint;
            (p, false)
        };
        let long = len >= usize::from(LONG_LEAF);
        let data_off = if long { LONG_DATA_OFFSET } else { DATA_OFFSET };
        // SAFETY: `p` is a fresh chunk of `leaf_chunk_size(len)` bytes, or
        // (hashless-leaf mode) a fresh chunk of 32 bytes less whose address
        // is `p + 32`, `p` lying inside the same block; so the hash (when the
        // chunk has one), key, optional length and `len` data bytes all fit;
        // source and destination cannot overlap (the chunk is new).
        unsafe {
            let b = p.as_ptr();
            if !hashless {
                b.add(HASH_OFFSET).write_bytes(0, 32);
            }
            b.add(KEY_OFFSET)
                .copy_from_nonoverlapping(key.0.as_ptr(), 32);
            if long {
                b.add(LONG_LEN_OFFSET)
                    .cast::<u64>()
                    .write_unaligned((len as u64).to_le());
            }
            b.add(data_off).copy_from_nonoverlapping(data.as_ptr(), len);
        }
        self.leaves += 1;
        self.leaf_data_bytes += len;
        self.maybe_switch_source(self.leaves);
        let stamp = if long { LONG_LEAF } else { len as u16 };
        NodePtr(Tagged::new(p, 0, stamp))
    }

    /// A new inner node with no children, hash not yet computed.
    pub(crate) fn new_inner(&mut self) -> NodePtr {
        let class = self.classes.class_for(0);
        let p = self.inner[class].alloc();
        // SAFETY: a fresh inner chunk has at least 32 bytes for the hash.
        unsafe { p.as_ptr().write_bytes(0, 32) };
        NodePtr(Tagged::new(p, class as u8 + 1, 0))
    }

    /// A new inner node whose children are `children` (taken out of the
    /// vector, which is left empty), hash not yet computed: one chunk of the
    /// smallest class that fits, the node a series of `insert_child` calls
    /// would end with. Branches must be strictly ascending.
    pub(crate) fn new_inner_from(&mut self, children: &mut Vec<(Nibble, NodePtr)>) -> NodePtr {
        let n = children.len();
        let mut mask = BranchMask(0);
        for (b, _) in children.iter() {
            assert!(
                mask.0 >> b.get() == 0,
                "new_inner_from: branches not strictly ascending"
            );
            mask = mask.with(*b);
        }
        let class = self.classes.class_for(n);
        let p = self.inner[class].alloc();
        let base = p.as_ptr();
        // SAFETY: a fresh inner chunk has room for the hash and
        // capacity(class) >= n child words (class_for(n)); each word is moved
        // in from the vector, which gives up ownership through `drain`.
        unsafe {
            base.add(HASH_OFFSET).write_bytes(0, 32);
            let slots = base.add(CHILDREN_OFFSET).cast::<NodePtr>();
            for (i, (_, child)) in children.drain(..).enumerate() {
                slots.add(i).write(child);
            }
        }
        self.slots_used_by_class[class] += n;
        self.child_slots_used += n;
        NodePtr(Tagged::new(p, class as u8 + 1, mask.0))
    }

    /// Replaces a leaf's data (keeping its key), moving it to a chunk of the
    /// right size when the size changes. The hash is marked stale.
    pub(crate) fn set_leaf_data(&mut self, leaf: &mut NodePtr, data: &[u8]) {
        if self.is_shared(leaf) {
            // Shared leaves are immutable: the writer gets a new one.
            let key = *leaf.leaf().expect("set_leaf_data on a leaf").key();
            let fresh = self.new_leaf(&key, data);
            let old = std::mem::replace(leaf, fresh);
            self.release(old);
            return;
        }
        let old_len = leaf.leaf_len();
        let same_chunk = leaf_chunk_size(old_len) == leaf_chunk_size(data.len())
            && (old_len >= usize::from(LONG_LEAF)) == (data.len() >= usize::from(LONG_LEAF));
        if same_chunk && data.len() < usize::from(LONG_LEAF) {
            // SAFETY: same chunk size and layout, so the data fits at offset 64;
            // `&mut NodePtr` gives exclusive access; `data` is caller memory,
            // distinct from the chunk (a `&mut` to the chunk exists).
            unsafe {
                leaf.base()
                    .as_ptr()
                    .add(DATA_OFFSET)
                    .copy_from_nonoverlapping(data.as_ptr(), data.len());
            }
            self.leaf_data_bytes = self.leaf_data_bytes - old_len + data.len();
            leaf.0.set_stamp(data.len() as u16);
            if self.leaf_hashes.stored() {
                leaf.clear_hash();
            }
            return;
        }
        let key = *leaf.leaf().expect("set_leaf_data on a leaf").key();
        let fresh = self.new_leaf(&key, data);
        let old = std::mem::replace(leaf, fresh);
        self.free_node(old);
    }

    /// Adds `child` on the empty branch `b` of `node`, growing the child
    /// array to the next size class when it is full.
    pub(crate) fn insert_child(&mut self, node: &mut NodePtr, b: Nibble, child: NodePtr) {
        let mask = node.mask_bits();
        assert!(
            !node.is_leaf() && !mask.has(b),
            "insert_child on a leaf or an occupied branch"
        );
        let n = mask.count();
        let slot = mask.slot(b);
        let class = node.class_index();
        let new_mask = mask.with(b);
        if n < self.classes.capacity(class) {
            let children = node.children_ptr();
            // SAFETY: slots 0..n are initialised and capacity > n, so moving
            // slots slot..n up by one stays inside the chunk; then slot `slot`
            // is written with the new child (the old bits there were moved).
            unsafe {
                std::ptr::copy(children.add(slot), children.add(slot + 1), n - slot);
                children.add(slot).write(child);
            }
            node.0.set_stamp(new_mask.0);
            self.slots_used_by_class[class] += 1;
        } else {
            let new_class = self.classes.class_for(n + 1);
            self.slots_used_by_class[class] -= n;
            self.slots_used_by_class[new_class] += n + 1;
            let p = self.inner[new_class].alloc();
            let old_children = node.children_ptr();
            // SAFETY: the new chunk holds capacity(new_class) > n slots plus
            // the hash; the old chunk's first n slots are initialised; the
            // chunks are distinct. The children are moved bitwise and the old
            // chunk is freed without reading them again.
            unsafe {
                let dst = p.as_ptr();
                dst.copy_from_nonoverlapping(node.base().as_ptr(), 32);
                let new_children = dst.add(32).cast::<NodePtr>();
                new_children.copy_from_nonoverlapping(old_children, slot);
                new_children.add(slot).write(child);
                new_children
                    .add(slot + 1)
                    .copy_from_nonoverlapping(old_children.add(slot), n - slot);
                self.inner[class].free(node.base());
            }
            node.0 = Tagged::new(p, new_class as u8 + 1, new_mask.0);
        }
        self.child_slots_used += 1;
    }

    /// Takes the child on branch `b` out of `node`, shrinking the child array
    /// to the smallest size class that fits.
    pub(crate) fn remove_child(&mut self, node: &mut NodePtr, b: Nibble) -> NodePtr {
        let mask = node.mask_bits();
        assert!(
            !node.is_leaf() && mask.has(b),
            "remove_child on a leaf or an empty branch"
        );
        let n = mask.count();
        let slot = mask.slot(b);
        let class = node.class_index();
        let new_mask = mask.without(b);
        let new_class = self.classes.class_for(n - 1);
        let children = node.children_ptr();
        // SAFETY: `slot < n`, so the slot is initialised; reading moves the
        // child out, and the slot is overwritten or abandoned below.
        let child = unsafe { children.add(slot).read() };
        if new_class == class {
            // SAFETY: slots slot+1..n are initialised; moving them down by one
            // stays inside the chunk.
            unsafe { std::ptr::copy(children.add(slot + 1), children.add(slot), n - 1 - slot) };
            node.0.set_stamp(new_mask.0);
            self.slots_used_by_class[class] -= 1;
        } else {
            self.slots_used_by_class[class] -= n;
            self.slots_used_by_class[new_class] += n - 1;
            let p = self.inner[new_class].alloc();
            // SAFETY: the new chunk has capacity >= n - 1; the old chunk's
            // slots other than `slot` are initialised and moved bitwise; the
            // chunks are distinct; the old chunk is freed without reading it
            // again.
            unsafe {
                let dst = p.as_ptr();
                dst.copy_from_nonoverlapping(node.base().as_ptr(), 32);
                let new_children = dst.add(32).cast::<NodePtr>();
                new_children.copy_from_nonoverlapping(children, slot);
                new_children
                    .add(slot)
                    .copy_from_nonoverlapping(children.add(slot + 1), n - 1 - slot);
                self.inner[class].free(node.base());
            }
            node.0 = Tagged::new(p, new_class as u8 + 1, new_mask.0);
        }
        self.child_slots_used -= 1;
        child
    }

    /// Disposes of the tree under `root` when this arena is about to be
    /// dropped with it, i.e. no other root (snapshot or map) shares the
    /// arena. Pooled chunks need no freeing one by one: they go when their
    /// pools drop and unmap whole blocks. Only leaves with allocations of
    /// their own are freed, found from the node words alone (a leaf's size
    /// is in its word), so leaf chunks are never read: dropping a 1M-entry
    /// map reads its ~25 MB of inner chunks, not its ~150 MB of nodes.
    pub(crate) fn dispose_tree(&mut self, root: NodePtr) {
        debug_assert!(self.shared.is_empty(), "a shared node outlives its arena");
        if self.large_leaves > 0 {
            self.free_large_leaves_under(&root);
        }
        debug_assert_eq!(self.large_leaves, 0, "a large leaf not found");
        root.discard_word();
    }

    /// Frees every leaf with its own allocation under `node` (itself
    /// included), leaving the words that point at them dangling: only for
    /// [`dispose_tree`](Self::dispose_tree), which never reads them again.
    fn free_large_leaves_under(&mut self, node: &NodePtr) {
        if node.is_leaf() {
            let chunk = leaf_chunk_size(node.leaf_len());
            if chunk > MAX_POOLED_CHUNK {
                self.large_leaves -= 1;
                // SAFETY: the leaf came from `alloc_large(chunk)` and is
                // live; its word is discarded with the tree by the caller
                // and nothing reads the chunk again.
                unsafe {
                    self.large_leaf_bytes -= crate::alloc::large_footprint(node.base(), chunk);
                    crate::alloc::free_large(node.base(), chunk);
                }
            }
            return;
        }
        for c in node.inner().expect("not a leaf").children() {
            self.free_large_leaves_under(c);
        }
    }

    /// Frees one node. An inner node must have no children left.
    pub(crate) fn free_node(&mut self, node: NodePtr) {
        if node.is_leaf() {
            let len = node.leaf_len();
            let chunk = leaf_chunk_size(len);
            self.leaves -= 1;
            self.leaf_data_bytes -= len;
            if chunk <= MAX_POOLED_CHUNK {
                let size = self.pooled_leaf_size(chunk);
                let addr = node.base().map_addr(|a| {
                    std::num::NonZeroUsize::new(a.get() + (chunk - size))
                        .expect("no overflow below 2^48")
                });
                let pool = self.leaf[size / 8]
                    .as_mut()
                    .expect("a pooled leaf's pool exists");
                // SAFETY: `addr` is the chunk the leaf was allocated as from
                // this pool (same size; a hashless leaf's word names it minus
                // the hash room) and, being consumed here, is not used again.
                unsafe { pool.free(addr) };
            } else {
                self.large_leaves -= 1;
                // SAFETY: the leaf came from `alloc_large(chunk)` and is live.
                let footprint = unsafe { crate::alloc::large_footprint(node.base(), chunk) };
                self.large_leaf_bytes -= footprint;
                // SAFETY: allocated by `alloc_large(chunk)` in `new_leaf`.
                unsafe { crate::alloc::free_large(node.base(), chunk) };
            }
        } else {
            assert_eq!(
                node.mask_bits(),
                BranchMask(0),
                "free_node on an inner node with children"
            );
            let class = node.class_index();
            // SAFETY: the inner node came from the pool of its class (its
            // tag) and is consumed here.
            unsafe { self.inner[class].free(node.base()) };
        }
    }

    /// A deep copy, into this arena, of a tree from any arena whose leaves
    /// keep their hash or not as this one's do (stored hashes included:
    /// the tree's stale marks carry over). Children are copied before their parent and each inner
    /// node is made once in its final size class, so the copy is laid out as
    /// [`ShaMap::from_sorted`](crate::ShaMap::from_sorted) lays out a map: the
    /// leaves in key order, each class pool's inner nodes in key order
    /// (parents after children), no chunk freed along the way.
    pub(crate) fn clone_tree(&mut self, src: &NodePtr) -> NodePtr {
        let mut frames = Vec::new();
        self.clone_below(src, 0, &mut frames)
    }

    /// [`clone_tree`](Self::clone_tree) at `depth`, with one reusable
    /// children buffer per depth in `frames`.
    fn clone_below(
        &mut self,
        src: &NodePtr,
        depth: usize,
        frames: &mut Vec<Vec<(Nibble, NodePtr)>>,
    ) -> NodePtr {
        let mut out = if let Some(leaf) = src.leaf() {
            self.new_leaf(leaf.key(), leaf.data())
        } else {
            let inner = src.inner().expect("not a leaf");
            if frames.len() <= depth {
                frames.resize_with(depth + 1, Vec::new);
            }
            let mut children = std::mem::take(&mut frames[depth]);
            // The children are hinted all at once, and while one child is
            // copied the next one's children are: a tree grown by random
            // writes has its nodes anywhere, so most of them are misses.
            let kids = inner.children();
            for c in kids {
                c.prefetch_chunk();
            }
            for (i, (child, b)) in kids.iter().zip(inner.mask().branches()).enumerate() {
                if let Some(next) = kids.get(i + 1).and_then(NodePtr::inner) {
                    for g in next.children() {
                        g.prefetch_chunk();
                    }
                }
                children.push((b, self.clone_below(child, depth + 1, frames)));
            }
            let out = self.new_inner_from(&mut children);
            frames[depth] = children;
            out
        };
        if !out.is_leaf() || self.leaf_hashes.stored() {
            out.set_hash(*src.hash());
        }
        out
    }

    /// True when more than one node word refers to `node`'s chunk.
    #[inline]
    pub(crate) fn is_shared(&self, node: &NodePtr) -> bool {
        !self.shared.is_empty() && self.shared.contains_key(&node.base().as_ptr().addr())
    }

    /// Nodes currently referenced more than once.
    pub(crate) fn shared_nodes(&self) -> usize {
        self.shared.len()
    }

    /// A second reference to `node`: the node becomes shared (immutable)
    /// until all but one reference are released.
    pub(crate) fn share(&mut self, node: &NodePtr) -> NodePtr {
        *self.shared.entry(node.base().as_ptr().addr()).or_insert(0) += 1;
        NodePtr(node.0.duplicate())
    }

    /// Drops one reference; frees the node, and releases its children, when
    /// it was the last.
    pub(crate) fn release(&mut self, node: NodePtr) {
        if self.drop_reference(&node) {
            // Another word still refers to the chunk; this one just goes.
            node.discard_word();
            return;
        }
        if node.is_leaf() {
            self.free_node(node);
            return;
        }
        for child in self.take_children(node).into_iter().flatten() {
            self.release(child);
        }
    }

    /// Decrements `node`'s extra-reference count; false when it had none.
    fn drop_reference(&mut self, node: &NodePtr) -> bool {
        if self.shared.is_empty() {
            return false;
        }
        let addr = node.base().as_ptr().addr();
        match self.shared.get_mut(&addr) {
            None => false,
            Some(c) => {
                *c -= 1;
                if *c == 0 {
                    self.shared.remove(&addr);
                }
                true
            }
        }
    }

    /// Frees an inner chunk, returning its children (branch order).
    fn take_children(&mut self, node: NodePtr) -> [Option<NodePtr>; 16] {
        let n = node.mask_bits().count();
        let class = node.class_index();
        let mut out: [Option<NodePtr>; 16] = Default::default();
        let children = node.children_ptr();
        for (i, slot) in out.iter_mut().enumerate().take(n) {
            // SAFETY: slots 0..n are initialised; each is read once and the
            // chunk is freed below without reading them again.
            *slot = Some(unsafe { children.add(i).read() });
        }
        self.child_slots_used -= n;
        self.slots_used_by_class[class] -= n;
        // SAFETY: the chunk came from the pool of its class and its children
        // were moved out above; `node` is consumed.
        unsafe { self.inner[class].free(node.base()) };
        node.discard_word();
        out
    }

    /// Makes the node in `slot` exclusively owned, copying it first when it
    /// is shared (the copy's children become shared with the original).
    pub(crate) fn make_mut(&mut self, slot: &mut NodePtr) {
        if !self.is_shared(slot) {
            return;
        }
        let copy = if let Some(leaf) = slot.leaf() {
            let mut c = self.new_leaf(leaf.key(), leaf.data());
            if self.leaf_hashes.stored() {
                c.set_hash(*slot.hash());
            }
            c
        } else {
            let class = slot.class_index();
            let n = slot.mask_bits().count();
            let p = self.inner[class].alloc();
            let src = slot.children_ptr();
            // SAFETY: the new chunk has the same class, so room for the hash
            // and n slots; the source slots 0..n are initialised; the chunks
            // are distinct. Copying the words duplicates each child
            // reference, which is counted just below.
            unsafe {
                let dst = p.as_ptr();
                dst.copy_from_nonoverlapping(slot.base().as_ptr(), 32);
                dst.add(32)
                    .cast::<NodePtr>()
                    .copy_from_nonoverlapping(src, n);
            }
            for i in 0..n {
                // SAFETY: slot i < n is an initialised word; only its address
                // is read, through a shared reference that does not outlive
                // this statement.
                let addr = unsafe { (*src.add(i)).base().as_ptr().addr() };
                *self.shared.entry(addr).or_insert(0) += 1;
            }
            self.child_slots_used += n;
            self.slots_used_by_class[class] += n;
            NodePtr(Tagged::new(p, slot.0.tag(), slot.0.stamp()))
        };
        let original = std::mem::replace(slot, copy);
        let had_extra = self.drop_reference(&original);
        debug_assert!(had_extra, "make_mut copied a node that was not shared");
        original.discard_word();
    }
}

impl Drop for NodeArena {
    fn drop(&mut self) {
        // Pools release their blocks when dropped. Large leaves must have been
        // freed first, by the last holder (`dispose_tree` or `release`).
        debug_assert_eq!(self.large_leaves, 0, "large leaves leaked");
    }
}

/// Raw chunk address, for tests of the pointer module.
#[cfg(test)]
pub(crate) fn chunk_addr(n: &NodePtr) -> NonNull<u8> {
    n.base()
}

#[cfg(test)]
mod tests;
