//! Memory statistics: where every byte of a map goes, counted from the
//! allocator's own books (never estimated).

use crate::alloc::BLOCK_SIZE;
use crate::tree::ShaMap;

/// One inner-node size class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InnerClassStats {
    /// Child slots per array in this class.
    pub capacity: usize,
    /// Inner nodes using this class.
    pub nodes: usize,
    /// Occupied child slots.
    pub slots_used: usize,
    /// Allocated but unoccupied child slots.
    pub slots_unused: usize,
    /// Bytes per node chunk (hash + slots).
    pub chunk_bytes: usize,
    /// Blocks the class's pool holds.
    pub blocks: usize,
}

/// One leaf pool (leaves whose chunk has this size).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeafPoolStats {
    /// Bytes per chunk.
    pub chunk_bytes: usize,
    /// Leaves in the pool.
    pub leaves: usize,
    /// Blocks the pool holds.
    pub blocks: usize,
}

/// Bytes by category. `total` is the sum of the other fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ByteBreakdown {
    /// Stored hashes of inner nodes (32 each).
    pub inner_hashes: usize,
    /// Occupied child slots (8-byte stamped pointers).
    pub child_slots_used: usize,
    /// Allocated, unoccupied child slots (size-class rounding).
    pub child_slots_unused: usize,
    /// Stored hashes of leaves (32 each; none in the hashless-leaf mode).
    pub leaf_hashes: usize,
    /// Item keys (32 each).
    pub leaf_keys: usize,
    /// Item data.
    pub leaf_data: usize,
    /// Leaf chunk bytes beyond hash, key and data: padding to 8, the
    /// length word of leaves of 64 KiB or more, and in the hashless-leaf mode
    /// the unused hash room of leaves too large for a pool.
    pub leaf_padding: usize,
    /// Touched pool bytes not in live chunks: block headers, freed chunks,
    /// and the rest of the last touched page of each block.
    pub pool_slack: usize,
    /// Not part of `total`: pool address space reserved but never touched
    /// (the untouched tail of partly used blocks). Blocks are fresh `mmap`
    /// regions on Unix, so these pages are not resident; elsewhere they may
    /// be.
    pub pool_untouched: usize,
    /// The map's own struct, bookkeeping vectors, the reference-count
    /// table of shared nodes (about 24 bytes per shared node) and the undo
    /// log's buffer.
    pub other: usize,
    /// Everything.
    pub total: usize,
}

/// A map's memory, counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemStats {
    /// Items.
    pub entries: usize,
    /// Whether leaves keep their hash (else the hashless-leaf mode).
    pub leaf_hashes: crate::LeafHashes,
    /// Inner nodes, the root included.
    pub inner_nodes: usize,
    /// Leaf nodes (equal to `entries`).
    pub leaf_nodes: usize,
    /// Per inner size class, smallest first.
    pub inner_classes: Vec<InnerClassStats>,
    /// Per leaf pool in use, smallest chunk first.
    pub leaf_pools: Vec<LeafPoolStats>,
    /// Leaves too large for a pool (own allocation from the global allocator).
    pub large_leaves: usize,
    /// Nodes referenced from more than one tree (shared with snapshots or
    /// undo records).
    pub shared_nodes: usize,
    /// Bytes by category.
    pub bytes: ByteBreakdown,
}

impl MemStats {
    /// Bytes per entry beyond its key and data (0 for an empty map).
    pub fn overhead_per_entry(&self) -> f64 {
        if self.entries == 0 {
            return 0.0;
        }
        let overhead = self.bytes.total - self.bytes.leaf_keys - self.bytes.leaf_data;
        overhead as f64 / self.entries as f64
    }

    /// Allocated child slots per inner node.
    pub fn slots_per_inner(&self) -> f64 {
        let slots: usize = self
            .inner_classes
            .iter()
            .map(|c| c.nodes * c.capacity)
            .sum();
        slots as f64 / self.inner_nodes.max(1) as f64
    }
}

impl ShaMap {
    /// Counts where the map's memory goes. Cost: proportional to the number
    /// of pools, not of nodes.
    ///
    /// The pools are shared with the map's snapshots and undo records, so
    /// while any exist the figures cover every version together (nodes they
    /// share are counted once); `entries` is this map's item count.
    pub fn mem_stats(&self) -> MemStats {
        let mut s = mem_stats_of(&crate::tree::lock_arena(&self.arena), self.len());
        let undo = self.undo.capacity_bytes();
        s.bytes.other += undo;
        s.bytes.total += undo;
        s
    }
}

impl crate::Snapshot {
    /// Counts the memory of the pools this snapshot shares with its map and
    /// the map's other versions; see [`ShaMap::mem_stats`].
    pub fn mem_stats(&self) -> MemStats {
        mem_stats_of(&crate::tree::lock_arena(&self.arena), self.len())
    }
}

fn mem_stats_of(arena: &crate::ptr::NodeArena, entries: usize) -> MemStats {
    {
        let c = arena.counters();
        let mut b = ByteBreakdown::default();
        let mut inner_classes = Vec::new();
        let mut pool_bytes = 0;
        let mut touched_bytes = 0;
        let mut live_chunk_bytes = 0;
        for ((cap, p), used) in c.inner_pools.iter().zip(&c.slots_used_by_class) {
            let nodes = p.live_chunks;
            inner_classes.push(InnerClassStats {
                capacity: *cap,
                nodes,
                slots_used: *used,
                slots_unused: nodes * cap - used,
                chunk_bytes: p.chunk_size,
                blocks: p.blocks,
            });
            b.inner_hashes += 32 * nodes;
            b.child_slots_used += 8 * used;
            b.child_slots_unused += 8 * (nodes * cap - used);
            pool_bytes += p.blocks * BLOCK_SIZE;
            touched_bytes += p.touched_bytes;
            live_chunk_bytes += nodes * p.chunk_size;
        }
        let mut leaf_pools = Vec::new();
        let mut leaf_chunk_bytes = c.large_leaf_bytes;
        for p in &c.leaf_pools {
            leaf_pools.push(LeafPoolStats {
                chunk_bytes: p.chunk_size,
                leaves: p.live_chunks,
                blocks: p.blocks,
            });
            pool_bytes += p.blocks * BLOCK_SIZE;
            touched_bytes += p.touched_bytes;
            live_chunk_bytes += p.live_chunks * p.chunk_size;
            leaf_chunk_bytes += p.live_chunks * p.chunk_size;
        }
        let stored = arena.leaf_hashes().stored();
        b.leaf_hashes = if stored { 32 * c.leaves } else { 0 };
        b.leaf_keys = 32 * c.leaves;
        b.leaf_data = c.leaf_data_bytes;
        b.leaf_padding = leaf_chunk_bytes - b.leaf_hashes - b.leaf_keys - c.leaf_data_bytes;
        b.pool_slack = touched_bytes - live_chunk_bytes;
        b.pool_untouched = pool_bytes - touched_bytes;
        b.other =
            std::mem::size_of::<ShaMap>() + arena.bookkeeping_bytes() + 24 * arena.shared_nodes();
        b.total = b.inner_hashes
            + b.child_slots_used
            + b.child_slots_unused
            + b.leaf_hashes
            + b.leaf_keys
            + b.leaf_data
            + b.leaf_padding
            + b.pool_slack
            + b.other
            + c.large_leaf_bytes;
        // Large leaves' hash/key/data are already counted above; what is
        // double counted is their chunk bytes, which `leaf_chunk_bytes` holds.
        b.total -= c.large_leaf_bytes;
        MemStats {
            entries,
            leaf_hashes: arena.leaf_hashes(),
            inner_nodes: inner_classes.iter().map(|c| c.nodes).sum(),
            leaf_nodes: c.leaves,
            inner_classes,
            leaf_pools,
            large_leaves: c.large_leaves,
            shared_nodes: arena.shared_nodes(),
            bytes: b,
        }
    }
}
