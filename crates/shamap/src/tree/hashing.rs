//! Incremental hashing: only nodes marked stale since the last call are
//! rehashed; a stale node is one whose stored hash is all zero.
//!
//! Using zero as the "stale" mark needs no extra bit anywhere. It is also
//! safe: were a real node hash ever zero (probability 2^-256), the node would
//! merely be rehashed again on each call, to the same value.

use rayon::prelude::*;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::hash::Hash256;
use crate::hashfn::HashFunction;
use crate::node_hash;
use crate::ptr::{
    hash_stale_inner_children, inner_message, rehash_batched, BatchWork, LeafHashing, NodeArena,
    NodePtr,
};

use super::map::ShaMap;
use super::shared_arena::lock;

/// Writes since the last `root_hash()` from which hashing fans out to the
/// rayon thread pool; below it the work is too small to share.
pub const PARALLEL_MIN_WRITES: usize = 1024;

/// Depth above which stale children are hashed as separate parallel tasks
/// (up to 16 + 256 tasks); below it each task hashes serially.
const PARALLEL_DEPTH: usize = 2;

/// What one `root_hash` computed: the hashing work, for cost accounting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HashWork {
    /// Leaves hashed.
    pub leaves: u64,
    /// Bytes of leaf hash input (prefix, data and key).
    pub leaf_bytes: u64,
    /// Inner nodes hashed (516 bytes of input each).
    pub inner: u64,
}

/// Counters shared by parallel hashing tasks.
#[derive(Default)]
struct WorkCounter {
    leaves: AtomicU64,
    leaf_bytes: AtomicU64,
    inner: AtomicU64,
}

impl WorkCounter {
    fn get(&self) -> HashWork {
        HashWork {
            leaves: self.leaves.load(Ordering::Relaxed),
            leaf_bytes: self.leaf_bytes.load(Ordering::Relaxed),
            inner: self.inner.load(Ordering::Relaxed),
        }
    }
}

impl ShaMap {
    /// How this map's leaves are hashed (kind, and whether they keep it).
    pub(crate) fn leaf_hashing(&self) -> LeafHashing {
        LeafHashing {
            kind: self.kind,
            stored: self.leaf_hashes.stored(),
        }
    }

    /// Like [`ShaMap::root_hash`], also reporting how many nodes and bytes
    /// were hashed (the input of a hashing-floor benchmark).
    pub fn root_hash_with_work(&mut self) -> (Hash256, HashWork) {
        let work = WorkCounter::default();
        let h = self.root_hash_on(true, &work);
        (h, work.get())
    }

    /// The root hash: 32 zero bytes for an empty map, else the hash of the
    /// root inner node. Rehashes only nodes changed since the last call.
    ///
    /// After many writes (at least [`PARALLEL_MIN_WRITES`]) and when
    /// [`crate::MapOptions::parallel_hashing`] is on, stale subtrees are
    /// hashed on the current rayon thread pool (install a pool to choose the
    /// thread count). The result is identical either way.
    pub fn root_hash(&mut self) -> Hash256 {
        self.root_hash_on(true, &WorkCounter::default())
    }

    /// [`ShaMap::root_hash`] on the calling thread only.
    pub fn root_hash_serial(&mut self) -> Hash256 {
        self.root_hash_on(false, &WorkCounter::default())
    }

    /// The root hash; stale subtrees hashed on the rayon pool only when
    /// `pool_allowed` and [`ShaMap::root_hash`]'s conditions hold.
    #[inline]
    fn root_hash_on(&mut self, pool_allowed: bool, work: &WorkCounter) -> Hash256 {
        let large = self.pending_writes >= PARALLEL_MIN_WRITES;
        let parallel =
            pool_allowed && self.parallel_hashing && large && rayon::current_num_threads() > 1;
        self.pending_writes = 0;
        if self.len == 0 {
            return Hash256::ZERO;
        }
        if large {
            rehash_split(
                (self.leaf_hashing(), self.hash_fn),
                &self.arena,
                &mut self.root,
                0,
                parallel,
                work,
            )
        } else {
            rehash(
                (self.leaf_hashing(), self.hash_fn),
                &self.arena,
                &mut self.root,
                work,
            )
        }
    }
}

/// Brings `node`'s stored hash (and every stale hash below it) up to date
/// and returns it: stale leaves first, then stale inner nodes level by level,
/// many messages per call to the multi-lane SHA-512.
fn rehash(
    (lh, f): (LeafHashing, HashFunction),
    arena: &Mutex<NodeArena>,
    node: &mut NodePtr,
    work: &WorkCounter,
) -> Hash256 {
    rehash_batch((lh, f), arena, node, work, false)
}

/// [`rehash`], leaving a stale inner `node` itself unhashed when
/// `skip_root` (its parent hashes it together with its siblings).
fn rehash_batch(
    (lh, f): (LeafHashing, HashFunction),
    arena: &Mutex<NodeArena>,
    node: &mut NodePtr,
    work: &WorkCounter,
    skip_root: bool,
) -> Hash256 {
    // A stale node is never shared (snapshots hash first), so the batch may
    // write every stale node it finds; checked in debug builds.
    debug_assert!(
        !node.hash().is_zero() || !lock(arena).is_shared(node),
        "stale shared node"
    );
    let mut w = BatchWork::default();
    let h = rehash_batched(lh, node, f.batch(), &mut w, skip_root);
    add_work(work, &w);
    h
}

fn add_work(work: &WorkCounter, w: &BatchWork) {
    work.leaves.fetch_add(w.leaves, Ordering::Relaxed);
    work.leaf_bytes.fetch_add(w.leaf_bytes, Ordering::Relaxed);
    work.inner.fetch_add(w.inner, Ordering::Relaxed);
}

/// Like [`rehash`], for many stale nodes: the stale subtrees below
/// `PARALLEL_DEPTH` are batched one at a time (as rayon tasks when
/// `parallel`), which keeps each batch's working set small enough for the
/// caches (measured: one batch over a whole 1M-entry tree is 2–3× slower
/// than 256 per-subtree batches, even on one thread). The subtrees' own
/// roots, and the nodes above them, are hashed a level at a time, all the
/// stale children of a node in one batch: alone, each would be a call with
/// one message (273 of them for a 10k-write block).
fn rehash_split(
    (lh, f): (LeafHashing, HashFunction),
    arena: &Mutex<NodeArena>,
    node: &mut NodePtr,
    depth: usize,
    parallel: bool,
    work: &WorkCounter,
) -> Hash256 {
    debug_assert!(!node.is_leaf(), "the split starts at the root");
    if depth >= PARALLEL_DEPTH || !node.hash().is_zero() {
        return rehash((lh, f), arena, node, work);
    }
    split_below((lh, f), arena, node, depth, parallel, work);
    let mut w = BatchWork::default();
    let buf = inner_message(node, lh, f.batch(), &mut w);
    add_work(work, &w);
    work.inner.fetch_add(1, Ordering::Relaxed);
    let h = node_hash::hash_inner_message(f, &buf);
    node.set_hash(h);
    h
}

/// Brings every stale hash strictly below the stale inner `node` (at
/// `depth < PARALLEL_DEPTH`) up to date, leaving `node`'s own.
fn split_below(
    (lh, f): (LeafHashing, HashFunction),
    arena: &Mutex<NodeArena>,
    node: &mut NodePtr,
    depth: usize,
    parallel: bool,
    work: &WorkCounter,
) {
    debug_assert!(!lock(arena).is_shared(node), "stale shared node");
    let children = node.inner_mut().expect("not a leaf").into_children();
    let one = |c: &mut NodePtr| {
        if c.is_leaf() {
            // A stale leaf is hashed on its own here (a hashless leaf
            // keeps no hash: its parent hashes it).
            if lh.stored && c.hash().is_zero() {
                let leaf = c.leaf().expect("a leaf");
                let h = node_hash::hash_leaf(f, lh.kind, leaf.key(), leaf.data());
                let bytes = node_hash::leaf_message_len(lh.kind, leaf.data().len());
                c.set_hash(h);
                work.leaves.fetch_add(1, Ordering::Relaxed);
                work.leaf_bytes.fetch_add(bytes as u64, Ordering::Relaxed);
            }
            return;
        }
        if !c.hash().is_zero() {
            return;
        }
        if depth + 1 >= PARALLEL_DEPTH {
            rehash_batch((lh, f), arena, c, work, true);
        } else {
            split_below((lh, f), arena, c, depth + 1, parallel, work);
        }
    };
    if parallel {
        children.par_iter_mut().for_each(one);
    } else {
        children.iter_mut().for_each(one);
    }
    let mut w = BatchWork::default();
    hash_stale_inner_children(node, lh, f.batch(), &mut w);
    add_work(work, &w);
}
