//! Admission: which loaded nodes the cache keeps ([`Keep`]), the
//! doorkeeper of recently loaded leaves, and probation.

use shamap::Hash256;

use super::{CleanNode, NodeCache};

/// Which of the nodes a walk loads from the store enter the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Keep {
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
pub(super) const DOORKEEPER_SLOTS: usize = 1 << 14;

/// Leaves held on probation (searched on every cache miss: a scan of
/// their 8-byte prefixes, 512 bytes).
pub(super) const PROBATION_LEAVES: usize = 64;

/// The first 8 bytes of a hash (uniform: SHA-512Half), as a number.
pub(super) fn hash_prefix(hash: &Hash256) -> u64 {
    u64::from_le_bytes(hash.0[..8].try_into().expect("8 bytes"))
}

/// Bytes charged for a leaf on probation: its place in the queue and its
/// data, rounded up to the allocator's 16-byte granularity.
pub(super) fn probation_charge(node: &CleanNode) -> usize {
    let data = match node {
        CleanNode::Leaf { data, .. } => data.len(),
        CleanNode::Inner { .. } => 0,
    };
    std::mem::size_of::<(u64, Hash256, CleanNode)>() + data.div_ceil(16) * 16
}

impl NodeCache {
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
    pub(super) fn seen_before(&mut self, hash: &Hash256, capacity: usize) -> bool {
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
    pub(super) fn take_on_probation(&mut self, hash: &Hash256) -> Option<CleanNode> {
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
    pub(super) fn put_on_probation(&mut self, hash: Hash256, node: CleanNode, capacity: usize) {
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
}
