//! Shape statistics: child-count and depth histograms from a full walk.

use crate::ptr::{NodeArena, NodePtr};

use super::map::ShaMap;
use super::shared_arena::lock;
use super::snapshot::Snapshot;

/// The shape of a map's tree, counted by walking every node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShapeStats {
    /// `child_histogram[n]` = inner nodes with `n` children (the root
    /// included, so an empty map has one inner node with 0 children).
    pub child_histogram: [u64; 17],
    /// `depth_histogram[d]` = leaves at depth `d` (1..=64; index 0 unused).
    pub depth_histogram: [u64; 65],
    /// `inner_depth_histogram[d]` = inner nodes at depth `d` (0..=63).
    pub inner_depth_histogram: [u64; 65],
}

impl ShapeStats {
    /// Inner nodes, the root included.
    pub fn inner_nodes(&self) -> u64 {
        self.child_histogram.iter().sum()
    }

    /// Leaves.
    pub fn leaves(&self) -> u64 {
        self.depth_histogram.iter().sum()
    }

    /// Mean leaf depth (0 for an empty map).
    pub fn mean_leaf_depth(&self) -> f64 {
        let n = self.leaves();
        if n == 0 {
            return 0.0;
        }
        let total: u64 = self
            .depth_histogram
            .iter()
            .enumerate()
            .map(|(d, c)| d as u64 * c)
            .sum();
        total as f64 / n as f64
    }
}

impl ShaMap {
    /// Walks the tree and counts its shape. Cost: one visit per node, no
    /// hashing.
    pub fn shape_stats(&self) -> ShapeStats {
        ShapeStats::of(&self.root)
    }
}

impl Snapshot {
    /// Walks the snapshot's tree and counts its shape.
    pub fn shape_stats(&self) -> ShapeStats {
        ShapeStats::of(&self.root)
    }
}

impl ShaMap {
    /// Marks every node stale so that the next [`ShaMap::root_hash`]
    /// recomputes the whole tree. For benchmarks and cost measurement; the
    /// result is the same root.
    pub fn invalidate_hashes(&mut self) {
        let mut arena = lock(&self.arena);
        invalidate(&mut arena, &mut self.root, self.leaf_hashes.stored());
        self.pending_writes = self.len;
    }
}

impl ShapeStats {
    /// Walks the tree under `root` and counts its shape.
    fn of(root: &NodePtr) -> ShapeStats {
        let mut s = ShapeStats {
            child_histogram: [0; 17],
            depth_histogram: [0; 65],
            inner_depth_histogram: [0; 65],
        };
        walk(root, 0, &mut s);
        s
    }
}

fn walk(node: &NodePtr, depth: usize, s: &mut ShapeStats) {
    match node.inner() {
        None => s.depth_histogram[depth] += 1,
        Some(inner) => {
            s.child_histogram[inner.mask().count()] += 1;
            s.inner_depth_histogram[depth] += 1;
            for c in inner.children() {
                walk(c, depth + 1, s);
            }
        }
    }
}

/// Marks `node` and everything below it stale (leaves only when they keep
/// a hash: a hashless leaf has none).
fn invalidate(arena: &mut NodeArena, node: &mut NodePtr, leaf_hashes: bool) {
    if node.is_leaf() && !leaf_hashes {
        return;
    }
    arena.make_mut(node);
    node.clear_hash();
    if let Some(inner) = node.inner_mut() {
        for c in inner.into_children() {
            invalidate(arena, c, leaf_hashes);
        }
    }
}
