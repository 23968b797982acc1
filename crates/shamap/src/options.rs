//! Construction options for a map.

use crate::error::SizeClassError;
use crate::hashfn::HashFunction;

/// Most classes the 3-bit pointer tag can name (tag 0 marks a leaf).
pub const MAX_SIZE_CLASSES: usize = 7;

/// The capacities an inner node's child array may have.
///
/// An inner node with `n` children always uses the smallest class whose
/// capacity is at least `n` (so the class is canonical and `check()` can
/// audit it). The largest class must be 16, the dense layout. The default,
/// `{2, 3, 4, 6, 9, 12, 16}`, spaces its capacities so that a node wastes
/// at most 3 slots whatever the map's size: uniformly random keys give a
/// child-count histogram whose humps move with the count (at 1M, nodes
/// just above the leaves hold 2-4 children and the last full level 7-13),
/// and this set leaves 0.5-0.8 bytes per entry of unused slots from 100k
/// to 30M entries, against 1.6-4.5 with rippled's `{2, 4, 6, 16}`
/// ([`SizeClasses::RIPPLED`]; docs/design.md, "The
/// memory target"). rippled PR #4804 proposed `{2, 4, 10, 16}`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SizeClasses {
    caps: [u8; MAX_SIZE_CLASSES],
    len: u8,
    /// `class_of[n]` = index of the smallest class holding `n` children.
    class_of: [u8; 17],
}

impl SizeClasses {
    /// The default classes, `{2, 3, 4, 6, 9, 12, 16}`.
    pub const DEFAULT: SizeClasses = match SizeClasses::build(&[2, 3, 4, 6, 9, 12, 16]) {
        Ok(c) => c,
        Err(_) => panic!("the default classes are valid"),
    };

    /// rippled's classes, `{2, 4, 6, 16}` (what the model of rippled's
    /// layout prices).
    pub const RIPPLED: SizeClasses = match SizeClasses::build(&[2, 4, 6, 16]) {
        Ok(c) => c,
        Err(_) => panic!("rippled's classes are valid"),
    };

    /// Builds a class set: 1 to 7 strictly increasing capacities in 1..=16,
    /// the last being 16.
    pub fn new(caps: &[u8]) -> Result<SizeClasses, SizeClassError> {
        SizeClasses::build(caps).map_err(|e| match e {
            Invalid::Count => SizeClassError::Count(caps.len()),
            Invalid::Range => SizeClassError::Range(caps.to_vec()),
            Invalid::NotIncreasing => SizeClassError::NotIncreasing(caps.to_vec()),
        })
    }

    const fn build(caps: &[u8]) -> Result<SizeClasses, Invalid> {
        if caps.is_empty() || caps.len() > MAX_SIZE_CLASSES {
            return Err(Invalid::Count);
        }
        let mut out = [0u8; MAX_SIZE_CLASSES];
        let mut i = 0;
        while i < caps.len() {
            if caps[i] == 0 || caps[i] > 16 {
                return Err(Invalid::Range);
            }
            if i > 0 && caps[i] <= caps[i - 1] {
                return Err(Invalid::NotIncreasing);
            }
            out[i] = caps[i];
            i += 1;
        }
        if caps[caps.len() - 1] != 16 {
            return Err(Invalid::Range);
        }
        let mut class_of = [0u8; 17];
        let mut n = 0;
        let mut c = 0;
        while n <= 16 {
            while out[c] < n as u8 {
                c += 1;
            }
            class_of[n] = c as u8;
            n += 1;
        }
        Ok(SizeClasses {
            caps: out,
            len: caps.len() as u8,
            class_of,
        })
    }

    /// Number of classes.
    pub const fn len(&self) -> usize {
        self.len as usize
    }

    /// Always false: a class set has at least one class (16).
    pub const fn is_empty(&self) -> bool {
        false
    }

    /// Capacity of class `class`.
    #[inline]
    pub const fn capacity(&self, class: usize) -> usize {
        self.caps[class] as usize
    }

    /// The capacities, smallest first.
    pub fn capacities(&self) -> &[u8] {
        &self.caps[..self.len as usize]
    }

    /// The class an inner node with `children` children uses.
    #[inline]
    pub const fn class_for(&self, children: usize) -> usize {
        self.class_of[children] as usize
    }
}

impl Default for SizeClasses {
    fn default() -> Self {
        SizeClasses::DEFAULT
    }
}

#[derive(Clone, Copy)]
enum Invalid {
    Count,
    Range,
    NotIncreasing,
}

/// Options fixed when a map is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MapOptions {
    /// Child-array capacity classes. Default: `{2, 3, 4, 6, 9, 12, 16}`.
    pub size_classes: SizeClasses,
    /// Hash large stale subtrees on the rayon thread pool. Default: on.
    pub parallel_hashing: bool,
    /// When node memory comes from 2 MiB regions backed by transparent huge
    /// pages (Linux `MADV_HUGEPAGE`; ignored elsewhere or when THP is
    /// disabled). Default: [`HugePages::Beyond`] 32 MiB of node blocks.
    pub huge_pages: HugePages,
    /// The node hash function. Default: [`HashFunction::Sha512Half`], the
    /// XRP Ledger's; [`HashFunction::Blake3`] gives maps that are faster to
    /// hash but have no XRPL meaning.
    pub hash: HashFunction,
    /// Whether leaves keep their hash. Default: [`LeafHashes::Stored`];
    /// [`LeafHashes::Recomputed`] is the hashless-leaf mode (32 bytes less
    /// per entry, leaf hashes computed again whenever their parent is).
    pub leaf_hashes: LeafHashes,
}

/// Whether a map stores each leaf's hash in the leaf, or recomputes it when
/// it is needed: the hashless-leaf mode's trade of hashing time for 32 bytes
/// per entry.
///
/// With [`LeafHashes::Recomputed`] a leaf chunk holds only its key and data.
/// When an inner node is rehashed, the hashes of all its leaf children (not
/// only the changed ones) are computed again, in the same multi-lane
/// batches as the changed nodes; a proof or a node-store walk hashes the
/// leaves it serializes or whose hashes it lists. Roots, proofs, snapshots,
/// diffs and `check()` are the same in both modes (`docs/design.md`, "The
/// hashless-leaf mode", has the layout and the measured costs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LeafHashes {
    /// Every leaf keeps its 32-byte hash (the default).
    #[default]
    Stored,
    /// Leaves keep no hash; it is computed when a parent, a proof or a walk
    /// needs it.
    Recomputed,
}

impl LeafHashes {
    /// True for [`LeafHashes::Stored`].
    #[inline]
    pub const fn stored(self) -> bool {
        matches!(self, LeafHashes::Stored)
    }

    /// `"stored"` or `"recomputed"` (as reports print it).
    pub const fn name(self) -> &'static str {
        match self {
            LeafHashes::Stored => "stored",
            LeafHashes::Recomputed => "recomputed",
        }
    }
}

/// Node bytes beyond which the default policy takes blocks from huge-page
/// regions (32 MiB: about 200k entries of 64-byte data).
pub const HUGE_PAGES_BEYOND: usize = 32 << 20;

/// Where a map's node blocks come from: base pages, or 2 MiB regions the
/// kernel is asked to back with transparent huge pages.
///
/// Huge pages mean fewer TLB misses on large maps. In paired runs on 1M
/// entries (a 2-core VM): `get_many` 1.33–1.49× faster, a root from scratch
/// 1.1–1.3×, 10k-write update blocks 1.13–1.21×; single gets and inserts
/// moved within the noise. A touched region is resident as a whole, so up
/// to one partly used 2 MiB region per process is held beyond the blocks in
/// use, which matters only for small maps: hence the default, which
/// switches once a map is large.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HugePages {
    /// Base pages only.
    Never,
    /// Huge-page regions from the first block.
    Always,
    /// Base pages until the map's pools have touched more than this many
    /// bytes of their blocks, huge-page regions for every block after that
    /// (blocks already taken stay where they are).
    Beyond(usize),
}

impl Default for HugePages {
    fn default() -> Self {
        HugePages::Beyond(HUGE_PAGES_BEYOND)
    }
}

impl Default for MapOptions {
    fn default() -> Self {
        MapOptions {
            size_classes: SizeClasses::DEFAULT,
            parallel_hashing: true,
            huge_pages: HugePages::default(),
            hash: HashFunction::Sha512Half,
            leaf_hashes: LeafHashes::Stored,
        }
    }
}

impl MapOptions {
    /// Options with parallel hashing on or off.
    pub fn with_parallel_hashing(mut self, on: bool) -> Self {
        self.parallel_hashing = on;
        self
    }

    /// Options with huge-page node memory always (`true`) or never
    /// (`false`); see [`HugePages`].
    pub fn with_huge_pages(mut self, on: bool) -> Self {
        self.huge_pages = if on {
            HugePages::Always
        } else {
            HugePages::Never
        };
        self
    }

    /// Options with the given node hash function.
    pub fn with_hash(mut self, hash: HashFunction) -> Self {
        self.hash = hash;
        self
    }

    /// Options with the given huge-page policy.
    pub fn with_huge_pages_policy(mut self, policy: HugePages) -> Self {
        self.huge_pages = policy;
        self
    }

    /// Options with the given size classes.
    pub fn with_size_classes(mut self, classes: SizeClasses) -> Self {
        self.size_classes = classes;
        self
    }

    /// Options whose leaves keep their hash or not; see [`LeafHashes`].
    pub fn with_leaf_hashes(mut self, leaf_hashes: LeafHashes) -> Self {
        self.leaf_hashes = leaf_hashes;
        self
    }

    /// The hashless-leaf mode: options with [`LeafHashes::Recomputed`].
    pub fn hashless_leaves(self) -> Self {
        self.with_leaf_hashes(LeafHashes::Recomputed)
    }

    /// The hashless-leaf mode under its old name.
    #[deprecated(note = "renamed to `MapOptions::hashless_leaves`")]
    pub fn compact(self) -> Self {
        self.hashless_leaves()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_classes_map_counts_to_smallest_fit() {
        let c = SizeClasses::RIPPLED;
        let caps: Vec<usize> = (0..=16).map(|n| c.capacity(c.class_for(n))).collect();
        assert_eq!(
            caps,
            [2, 2, 2, 4, 4, 6, 6, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16]
        );
        let c = SizeClasses::DEFAULT;
        let caps: Vec<usize> = (0..=16).map(|n| c.capacity(c.class_for(n))).collect();
        assert_eq!(
            caps,
            [2, 2, 2, 3, 4, 6, 6, 9, 9, 9, 12, 12, 12, 16, 16, 16, 16]
        );
    }

    #[test]
    fn invalid_class_sets_are_refused() {
        assert_eq!(SizeClasses::new(&[]), Err(SizeClassError::Count(0)));
        assert_eq!(
            SizeClasses::new(&[1, 2, 3, 4, 5, 6, 7, 16]),
            Err(SizeClassError::Count(8))
        );
        assert_eq!(
            SizeClasses::new(&[2, 4]),
            Err(SizeClassError::Range(vec![2, 4]))
        );
        assert_eq!(
            SizeClasses::new(&[4, 2, 16]),
            Err(SizeClassError::NotIncreasing(vec![4, 2, 16]))
        );
        assert!(SizeClasses::new(&[16]).is_ok());
        assert!(SizeClasses::new(&[1, 2, 4, 8, 10, 12, 16]).is_ok());
    }
}
