//! Batched writes: [`ShaMap::apply`] sorts a block of writes by key, applies
//! them in one pass over the tree and hashes what changed, without a second
//! walk over stale nodes to find what to hash.
//!
//! The one-write-at-a-time path (`upsert` then `root_hash`) walks the tree
//! twice per block: every write descends from the root, then `root_hash`
//! walks the stale paths again and reads all sixteen children of every
//! stale inner node to form its 516-byte message. At 1M entries most of
//! those reads are cache misses, and they cost more than the hashing.
//!
//! `apply` instead:
//!
//! 1. sorts the writes (the last write of a key wins) and cuts them into
//!    runs of [`APPLY_RUN`] consecutive keys, so each run works on one
//!    region of the tree and its buffers stay in cache;
//! 2. for each run, descends once, depth first, in key order. On entering
//!    an inner node it prefetches all its children; on leaving it, when
//!    every change below is done, it copies the hashes of its unchanged
//!    children (arrived by then) into the node's hash message and notes
//!    which branches are stale. A changed leaf's message is built on the
//!    spot, while the leaf is in cache;
//! 3. hashes the run's messages level by level, deepest first, many per
//!    call to the multi-lane SHA-512, each result written into its parent's
//!    message (no tree access at all);
//! 4. walks only the changed paths (the stale masks say where) to store the
//!    new hashes in the nodes, newest to oldest.
//!
//! Everything is safe code: records are matched to nodes by their order,
//! not by pointers. A node's records at a given depth appear in post-order,
//! which restricted to one depth (or to leaves) is left-to-right order; the
//! store walk visits nodes in reverse post-order, so it consumes each
//! list from its end.

use crate::error::MapError;
use crate::hash::{Hash256, Key, Nibble};
use crate::hashfn::HashFunction;
use crate::kind::MapKind;
use crate::node_hash::{self, InnerMessage, INNER_MESSAGE_LEN};
use crate::ptr::{NodeArena, NodePtr};

use super::hashing::PARALLEL_MIN_WRITES;
use super::map::{ShaMap, MAX_DATA_LEN};
use super::shared_arena::lock;
use super::undo_log::UndoLog;

/// Writes applied (and hashed) together: a run of this many consecutive
/// keys of the sorted batch. Small enough for the run's nodes and messages
/// to stay in the L2 cache between the pass that changes them and the walk
/// that stores their hashes; large enough that the nodes near the root,
/// which every run changes again, are a small share of the hashing (a run
/// of 256 writes into 1M entries changes about 700 nodes, of which the 3–5
/// on the path to the root are shared with the run before). Measured on
/// 10k-write blocks into 1M entries: 128 to 512 are alike, 2048 is
/// 10–15% slower.
pub const APPLY_RUN: usize = 256;

/// Messages per call to the multi-lane hasher.
const CHUNK: usize = 512;

/// What [`ShaMap::apply`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// The root hash after the batch.
    pub root_hash: Hash256,
    /// Keys that were absent and are now set.
    pub added: usize,
    /// Keys that were present and got new data.
    pub replaced: usize,
    /// Keys that were present and are now removed.
    pub removed: usize,
    /// Removals of keys that were absent (no change).
    pub absent: usize,
}

/// One write of a batch: `Some(data)` sets the key, `None` removes it.
type Op<'a> = (Key, Option<&'a [u8]>);

impl ShaMap {
    /// Applies a block of writes and returns the new root hash with counts
    /// of what changed.
    ///
    /// Each item sets `key` to `data` (`Some`) or removes it (`None`;
    /// removing an absent key is counted in [`Applied::absent`] and changes
    /// nothing). When a key appears more than once, its last write wins, as
    /// if the writes were applied in order. The result is the same as
    /// calling [`ShaMap::upsert`] / [`ShaMap::remove`] for each write and
    /// then [`ShaMap::root_hash`], but faster for blocks of many writes:
    /// see the module documentation of `tree/apply.rs` and `docs/design.md`.
    ///
    /// Fails, before changing anything, with [`MapError::DataTooLong`] when
    /// some data is longer than [`MAX_DATA_LEN`]. Open undo sessions record
    /// every change. Hashing runs on the calling thread, except for blocks
    /// of at least [`PARALLEL_MIN_WRITES`](crate::tree::PARALLEL_MIN_WRITES)
    /// writes when [`crate::MapOptions::parallel_hashing`] is on and the
    /// current rayon pool has several threads: then the writes are applied
    /// one by one in key order and [`ShaMap::root_hash`] hashes in parallel.
    ///
    /// ```
    /// use shamap::{Key, MapKind, ShaMap};
    /// let mut map = ShaMap::new(MapKind::AccountState);
    /// let a = Key([1; 32]);
    /// let b = Key([2; 32]);
    /// let done = map.apply([(a, Some(&b"x"[..])), (b, Some(&b"y"[..])), (a, None)]).unwrap();
    /// // `a` was absent before the block and its last write removes it.
    /// assert_eq!((done.added, done.removed, done.absent), (1, 0, 1));
    /// assert_eq!(map.get(&a), None);
    /// let mut one = ShaMap::new(MapKind::AccountState);
    /// one.insert(b, b"y").unwrap();
    /// assert_eq!(done.root_hash, one.root_hash());
    /// ```
    pub fn apply<'a, I>(&mut self, writes: I) -> Result<Applied, MapError>
    where
        I: IntoIterator<Item = (Key, Option<&'a [u8]>)>,
    {
        let ops: Vec<Op<'a>> = writes.into_iter().collect();
        if let Some(len) = ops
            .iter()
            .filter_map(|(_, d)| d.map(<[u8]>::len))
            .find(|&l| l > MAX_DATA_LEN)
        {
            return Err(MapError::DataTooLong { len });
        }
        // Stable: equal keys keep their order, and the last one wins.
        let ops = last_of_each_key(sort_writes(ops));
        if self.parallel_hashing
            && ops.len() >= PARALLEL_MIN_WRITES
            && rayon::current_num_threads() > 1
        {
            return Ok(self.apply_then_hash_in_parallel(&ops));
        }
        // Nodes left stale by earlier single writes are hashed first, so
        // that every node this pass does not change has a current hash.
        self.root_hash_serial();
        let mut done = Applied::default();
        // The records' buffers are reused from call to call on this thread
        // (a fresh set per call costs page faults and regrowth); they hold
        // one run, a few hundred KiB at most.
        let mut rec = SCRATCH
            .with(std::cell::Cell::take)
            .unwrap_or_else(|| Records::new(self.kind, self.hash_fn, self.leaf_hashes.stored()));
        rec.kind = self.kind;
        rec.hash_fn = self.hash_fn;
        rec.leaf_hashes_stored = self.leaf_hashes.stored();
        let log = self.undo.active();
        for run in ops.chunks(APPLY_RUN) {
            let mut arena = lock(&self.arena);
            arena.make_mut(&mut self.root);
            let mut pass = Pass {
                arena: &mut arena,
                rec: &mut rec,
                undo: if log { Some(&mut self.undo) } else { None },
                done: &mut done,
            };
            let after = pass.inner(&mut self.root, 0, run, true);
            drop(arena);
            if let After::Changed(_) = after {
                rec.hash_and_store(&mut self.root);
            }
            rec.clear();
        }
        // Kept for the next call unless a run of adversarial keys (long
        // shared prefixes make chains of inner nodes) grew it unusually.
        if rec.capacity_bytes() <= SCRATCH_KEEP_BYTES {
            SCRATCH.with(|s| s.set(Some(rec)));
        }
        self.len = self.len + done.added - done.removed;
        self.pending_writes = 0;
        done.root_hash = if self.len == 0 {
            Hash256::ZERO
        } else {
            *self.root.hash()
        };
        Ok(done)
    }
}

impl ShaMap {
    /// `apply` when several threads can hash: the writes one at a time in
    /// key order (neighbouring descents share their upper nodes), then
    /// `root_hash`, which hashes stale subtrees in parallel. The fused
    /// single-thread path would leave the other threads idle.
    fn apply_then_hash_in_parallel(&mut self, ops: &[Op<'_>]) -> Applied {
        let mut done = Applied::default();
        for (k, d) in ops {
            match d {
                Some(data) => match self.upsert(*k, data) {
                    Ok(true) => done.added += 1,
                    Ok(false) => done.replaced += 1,
                    Err(e) => unreachable!("lengths were checked: {e}"),
                },
                None => match self.remove(k) {
                    Ok(()) => done.removed += 1,
                    Err(_) => done.absent += 1,
                },
            }
        }
        done.root_hash = self.root_hash();
        done
    }
}

/// Blocks from this many writes are sorted by a radix pass first.
const RADIX_MIN: usize = 256;

/// Sorts writes by key, stably (equal keys keep their order). Blocks of
/// [`RADIX_MIN`] writes or more are first scattered, stably, into buckets
/// by the leading bits of their keys (about one bucket per write, from 2^8
/// up to 2^16 buckets), and each bucket with more than one write is then
/// sorted on its own: for random keys (the XRPL's are hashes) a bucket
/// holds a write or two, so almost no comparisons remain, and a comparison
/// of random keys is a branch that mispredicts half the time. Measured:
/// 1M writes in 138–142 ms against 167–254 ms for `sort_by_key` (the
/// output vector's page faults included); on 10k-write blocks the radix
/// pass takes callgrind's count of an `apply` block down by 4.7% (481
/// instructions per write), though the time did not change measurably
/// (in-process A/B: 1.009, 0.993, 1.015).
fn sort_writes(mut ops: Vec<Op<'_>>) -> Vec<Op<'_>> {
    if ops.len() < RADIX_MIN {
        ops.sort_by_key(|o| o.0);
        return ops;
    }
    let bits = ops.len().ilog2().clamp(8, 16);
    let bucket = |k: &Key| usize::from(u16::from_be_bytes([k.0[0], k.0[1]]) >> (16 - bits));
    // starts[b]: where bucket b begins in the output; then its next slot.
    let mut starts = vec![0usize; (1 << bits) + 1];
    for o in &ops {
        starts[bucket(&o.0) + 1] += 1;
    }
    for b in 1..starts.len() {
        starts[b] += starts[b - 1];
    }
    let bounds = starts.clone();
    let mut out: Vec<Op<'_>> = vec![(Key::default(), None); ops.len()];
    for o in &ops {
        let slot = &mut starts[bucket(&o.0)];
        out[*slot] = *o;
        *slot += 1;
    }
    for b in bounds.windows(2) {
        if b[1] - b[0] > 1 {
            out[b[0]..b[1]].sort_by_key(|o| o.0);
        }
    }
    out
}

/// Keeps the last write of each key of a sorted batch.
fn last_of_each_key(mut ops: Vec<Op<'_>>) -> Vec<Op<'_>> {
    let mut w = 0;
    for r in 0..ops.len() {
        if r + 1 < ops.len() && ops[r + 1].0 == ops[r].0 {
            continue;
        }
        ops[w] = ops[r];
        w += 1;
    }
    ops.truncate(w);
    ops
}

/// A changed node's record: where its hash will be found after hashing.
#[derive(Clone, Copy)]
enum Rec {
    Leaf(u32),
    Inner { depth: u8, idx: u32 },
}

/// Where a record's hash goes once computed: a branch of an inner record.
#[derive(Clone, Copy)]
struct Parent {
    depth: u8,
    idx: u32,
    branch: Nibble,
}

const NO_PARENT: Parent = Parent {
    depth: u8::MAX,
    idx: u32::MAX,
    branch: Nibble::ZERO,
};

/// The changed inner nodes of one depth, in post-order.
#[derive(Default)]
struct Level {
    /// Hash messages: prefix, unchanged children's hashes, zeros where a
    /// changed child's hash goes.
    msgs: Vec<InnerMessage>,
    /// Messages of this run: `msgs[..used]`. The rest are kept from earlier
    /// runs (their prefix is set) so that a message is written once, never
    /// zeroed first.
    used: usize,
    parents: Vec<Parent>,
    /// Branches whose child changed (and so has a record).
    stale: Vec<u16>,
    hashes: Vec<[u8; 32]>,
}

/// Most bytes of records a thread keeps between `apply` calls (a run of
/// random keys into 1M entries needs about 400 KiB).
const SCRATCH_KEEP_BYTES: usize = 2 << 20;

thread_local! {
    /// Records kept between `apply` calls on this thread.
    static SCRATCH: std::cell::Cell<Option<Records>> = const { std::cell::Cell::new(None) };
}

/// The records of one run: every changed node, its message, its parent.
struct Records {
    kind: MapKind,
    hash_fn: HashFunction,
    /// Leaves keep their hash; else (hashless-leaf mode) every leaf child of
    /// a changed inner node gets a record, changed or not, and no leaf's hash
    /// is stored.
    leaf_hashes_stored: bool,
    leaf_bytes: Vec<u8>,
    leaf_ends: Vec<usize>,
    leaf_parents: Vec<Parent>,
    leaf_hashes: Vec<[u8; 32]>,
    levels: Vec<Level>,
}

impl Records {
    fn new(kind: MapKind, hash_fn: HashFunction, leaf_hashes_stored: bool) -> Records {
        Records {
            kind,
            hash_fn,
            leaf_hashes_stored,
            leaf_bytes: Vec::new(),
            leaf_ends: Vec::new(),
            leaf_parents: Vec::new(),
            leaf_hashes: Vec::new(),
            levels: Vec::new(),
        }
    }

    /// Bytes the buffers hold.
    fn capacity_bytes(&self) -> usize {
        self.leaf_bytes.capacity()
            + self.leaf_ends.capacity() * std::mem::size_of::<usize>()
            + self.leaf_parents.capacity() * std::mem::size_of::<Parent>()
            + self.leaf_hashes.capacity() * 32
            + self
                .levels
                .iter()
                .map(|l| {
                    l.msgs.capacity() * INNER_MESSAGE_LEN
                        + l.parents.capacity() * std::mem::size_of::<Parent>()
                        + l.stale.capacity() * 2
                        + l.hashes.capacity() * 32
                })
                .sum::<usize>()
    }

    fn clear(&mut self) {
        self.leaf_bytes.clear();
        self.leaf_ends.clear();
        self.leaf_parents.clear();
        self.leaf_hashes.clear();
        for l in &mut self.levels {
            l.used = 0;
            l.parents.clear();
            l.stale.clear();
            l.hashes.clear();
        }
    }

    /// Records a changed leaf, building its hash message now.
    fn leaf(&mut self, node: &NodePtr) -> Rec {
        let leaf = node.leaf().expect("recording a leaf");
        node_hash::append_leaf_message(&mut self.leaf_bytes, self.kind, leaf.key(), leaf.data());
        self.leaf_ends.push(self.leaf_bytes.len());
        self.leaf_parents.push(NO_PARENT);
        Rec::Leaf(u32::try_from(self.leaf_ends.len() - 1).expect("runs are small"))
    }

    /// Records a changed inner node at `depth` whose changed children are
    /// `stale` (branch, record); the others' hashes are current.
    fn inner(&mut self, node: &mut NodePtr, depth: usize, stale: &[(Nibble, Rec)]) -> Rec {
        node.clear_hash();
        if self.levels.len() <= depth {
            self.levels.resize_with(depth + 1, Level::default);
        }
        let mut stale_mask = 0u16;
        for (b, _) in stale {
            stale_mask |= 1 << b.get();
        }
        let level = &mut self.levels[depth];
        let idx = u32::try_from(level.used).expect("runs are small");
        if level.used == level.msgs.len() {
            level.msgs.push(node_hash::EMPTY_INNER_MESSAGE);
        }
        let msg = &mut level.msgs[level.used];
        level.used += 1;
        let inner = node.inner().expect("recording an inner node");
        let mask = inner.mask();
        // Every child's hash, the stale ones' (zero) too: their slots are
        // overwritten once they are hashed, and copying all of them takes no
        // branch on which is which (measured: 0.95x an `apply` block). Empty
        // branches get zeros (the buffer holds an earlier run's message).
        let me = |branch: Nibble| Parent {
            depth: u8::try_from(depth).expect("depth < 64"),
            idx,
            branch,
        };
        if self.leaf_hashes_stored {
            for (child, b) in inner.children().iter().zip(mask.branches()) {
                debug_assert!(
                    stale_mask & (1 << b.get()) != 0 || !child.hash().is_zero(),
                    "unchanged child is hashed"
                );
                node_hash::set_child(msg, b, &child.hash().0);
            }
        } else {
            // Hashless-leaf mode: unchanged leaves have no stored hash; each
            // gets a record now (its slot is written once it is hashed).
            for (child, b) in inner.children().iter().zip(mask.branches()) {
                if let Some(leaf) = child.leaf() {
                    if stale_mask & (1 << b.get()) == 0 {
                        node_hash::append_leaf_message(
                            &mut self.leaf_bytes,
                            self.kind,
                            leaf.key(),
                            leaf.data(),
                        );
                        self.leaf_ends.push(self.leaf_bytes.len());
                        self.leaf_parents.push(me(b));
                    }
                } else {
                    node_hash::set_child(msg, b, &child.hash().0);
                }
            }
        }
        for b in crate::ptr::BranchMask(!mask.0).branches() {
            node_hash::clear_child(msg, b);
        }
        level.parents.push(NO_PARENT);
        level.stale.push(stale_mask);
        for &(b, r) in stale {
            match r {
                Rec::Leaf(i) => self.leaf_parents[i as usize] = me(b),
                Rec::Inner { depth: d, idx: i } => {
                    self.levels[usize::from(d)].parents[i as usize] = me(b);
                }
            }
        }
        Rec::Inner {
            depth: u8::try_from(depth).expect("depth < 64"),
            idx,
        }
    }

    /// Hashes every record, children before parents, then stores the hashes
    /// in the changed nodes under `root` (the map's root, recorded last).
    fn hash_and_store(&mut self, root: &mut NodePtr) {
        let mut out = vec![[0u8; 32]; CHUNK];
        // Leaves: messages of any length, all independent.
        self.leaf_hashes.resize(self.leaf_ends.len(), [0; 32]);
        let mut start = 0;
        for (c, ends) in self.leaf_ends.chunks(CHUNK).enumerate() {
            let mut msgs: Vec<&[u8]> = Vec::with_capacity(ends.len());
            for &e in ends {
                msgs.push(&self.leaf_bytes[start..e]);
                start = e;
            }
            (self.hash_fn.batch())(&msgs, &mut out[..ends.len()]);
            let first = c * CHUNK;
            for (i, h) in out[..ends.len()].iter().enumerate() {
                self.leaf_hashes[first + i] = *h;
                put(&mut self.levels, self.leaf_parents[first + i], h);
            }
        }
        // Inner nodes, deepest level first: a level's messages are complete
        // once the level below is hashed.
        for d in (0..self.levels.len()).rev() {
            let (upper, rest) = self.levels.split_at_mut(d);
            let level = &mut rest[0];
            level.hashes.resize(level.used, [0; 32]);
            for (c, msgs) in level.msgs[..level.used].chunks(CHUNK).enumerate() {
                let refs: Vec<&[u8]> = msgs.iter().map(|m| &m[..]).collect();
                (self.hash_fn.batch())(&refs, &mut out[..msgs.len()]);
                let first = c * CHUNK;
                for (i, h) in out[..msgs.len()].iter().enumerate() {
                    level.hashes[first + i] = *h;
                    put(upper, level.parents[first + i], h);
                }
            }
        }
        let mut next_leaf = self.leaf_hashes.len();
        let mut next: Vec<usize> = self.levels.iter().map(|l| l.hashes.len()).collect();
        self.store(root, 0, &mut next_leaf, &mut next);
        assert!(
            (next_leaf == 0 || !self.leaf_hashes_stored) && next.iter().all(|&n| n == 0),
            "every record matched a changed node"
        );
    }

    /// Stores hashes into the changed nodes under `node` (at `depth`), in
    /// reverse post-order: the node, then its changed children from the
    /// highest branch down.
    fn store(&self, node: &mut NodePtr, depth: usize, next_leaf: &mut usize, next: &mut [usize]) {
        if node.is_leaf() {
            if !self.leaf_hashes_stored {
                return;
            }
            *next_leaf -= 1;
            node.set_hash(Hash256(self.leaf_hashes[*next_leaf]));
            return;
        }
        next[depth] -= 1;
        let i = next[depth];
        let level = &self.levels[depth];
        node.set_hash(Hash256(level.hashes[i]));
        let stale = level.stale[i];
        let inner = node.inner_mut().expect("not a leaf");
        let mask = inner.mask();
        let children = inner.into_children();
        debug_assert_eq!(stale & !mask.0, 0, "stale branches are occupied");
        for b in crate::ptr::BranchMask(stale).branches().rev() {
            self.store(&mut children[mask.slot(b)], depth + 1, next_leaf, next);
        }
    }
}

/// Writes a computed hash into its parent's message (a no-op for the root).
fn put(levels: &mut [Level], p: Parent, h: &[u8; 32]) {
    if p.depth == u8::MAX {
        return;
    }
    node_hash::set_child(
        &mut levels[usize::from(p.depth)].msgs[p.idx as usize],
        p.branch,
        h,
    );
}

/// One run's structural pass.
struct Pass<'p> {
    arena: &'p mut NodeArena,
    rec: &'p mut Records,
    undo: Option<&'p mut UndoLog>,
    done: &'p mut Applied,
}

/// What became of a node after its writes.
enum After {
    /// The node is gone (its branch must be removed).
    Gone,
    /// Nothing changed.
    Same,
    /// The node changed, with this record.
    Changed(Rec),
    /// An inner node collapsed onto its one leaf, which is unchanged: the
    /// branch changed, but the leaf's stored hash is current.
    Moved,
}

impl Pass<'_> {
    fn record_undo(&mut self, key: &Key, old: Option<&[u8]>) {
        if let Some(u) = self.undo.as_deref_mut() {
            u.record(key, old);
        }
    }

    /// Applies `ops` (sorted, distinct keys, all under this node's prefix)
    /// to the unshared inner node `node` at `depth`, and records it if it
    /// changed. Unless `is_root`, a node left with no children is `Gone`
    /// (for the caller to remove), and one left with a single leaf is
    /// replaced by that leaf here.
    fn inner(&mut self, node: &mut NodePtr, depth: usize, ops: &[Op<'_>], is_root: bool) -> After {
        // Children that writes go to first (their loads start together),
        // then the others, whose hashes the node's message needs at the end.
        let inner = node.inner().expect("an inner node");
        let mask = inner.mask();
        let children = inner.children();
        let mut wanted = 0u16;
        for o in ops {
            let b = o.0.nibble(depth);
            let bit = 1u16 << b.get();
            if wanted & bit == 0 && mask.has(b) {
                wanted |= bit;
                children[mask.slot(b)].prefetch_chunk();
            }
        }
        let stored = self.rec.leaf_hashes_stored;
        for (c, b) in children.iter().zip(mask.branches()) {
            if wanted & (1 << b.get()) == 0 {
                if stored || !c.is_leaf() {
                    c.prefetch_hash();
                } else {
                    c.prefetch_chunk();
                }
            }
        }
        let mut stale = [(Nibble::ZERO, Rec::Leaf(0)); 16];
        let mut n_stale = 0;
        let mut changed = false;
        let mut i = 0;
        while i < ops.len() {
            let b = ops[i].0.nibble(depth);
            let j = i + ops[i..]
                .iter()
                .take_while(|o| o.0.nibble(depth) == b)
                .count();
            match self.branch(node, depth, b, &ops[i..j]) {
                After::Same => {}
                After::Gone | After::Moved => changed = true,
                After::Changed(r) => {
                    changed = true;
                    stale[n_stale] = (b, r);
                    n_stale += 1;
                }
            }
            i = j;
        }
        let inner = node.inner().expect("an inner node");
        let mask = inner.mask();
        if !is_root {
            match mask.count() {
                0 => return After::Gone,
                // Also when nothing changed: a leaf moved down under a new
                // node for writes that all missed comes back up.
                1 if inner.children()[0].is_leaf() => {
                    let only = mask.branches().next().expect("one branch");
                    let leaf = self.arena.remove_child(node, only);
                    let emptied = std::mem::replace(node, leaf);
                    self.arena.free_node(emptied);
                    // The leaf is the node's only child: its record, if it
                    // changed, is the only stale entry.
                    return match (changed, n_stale) {
                        (false, _) => After::Same,
                        (true, 0) => After::Moved,
                        (true, _) => After::Changed(stale[0].1),
                    };
                }
                _ => {}
            }
        }
        if !changed {
            return After::Same;
        }
        if mask.count() == 0 {
            node.clear_hash();
            return After::Gone;
        }
        After::Changed(self.rec.inner(node, depth, &stale[..n_stale]))
    }

    /// Applies `ops` (all on branch `b` at `depth`) below `node`.
    fn branch(&mut self, node: &mut NodePtr, depth: usize, b: Nibble, ops: &[Op<'_>]) -> After {
        let inner = node.inner_mut().expect("an inner node");
        let Some(child) = inner.into_child(b) else {
            return self.empty_branch(node, depth, b, ops);
        };
        if let Some(leaf) = child.leaf() {
            let lkey = *leaf.key();
            if let [(k, d)] = ops {
                match (*k == lkey, d) {
                    (false, None) => {
                        self.done.absent += 1;
                        return After::Same;
                    }
                    (false, Some(_)) => {}
                    (true, Some(data)) => {
                        self.record_undo(k, Some(leaf.data()));
                        self.arena.set_leaf_data(child, data);
                        self.done.replaced += 1;
                        return After::Changed(self.rec.leaf(child));
                    }
                    (true, None) => {
                        self.record_undo(k, Some(leaf.data()));
                        let old = self.arena.remove_child(node, b);
                        self.arena.release(old);
                        self.done.removed += 1;
                        return After::Gone;
                    }
                }
            }
            // Several writes, or a new key beside the leaf: the leaf goes
            // one level down, under a new inner node that takes the writes
            // (and that collapses again if it ends with one leaf).
            let leaf = std::mem::replace(child, self.arena.new_inner());
            self.arena.insert_child(child, lkey.nibble(depth + 1), leaf);
        } else {
            self.arena.make_mut(child);
        }
        self.inner_child(node, depth, b, ops)
    }

    /// Writes on an empty branch: only the sets matter.
    fn empty_branch(
        &mut self,
        node: &mut NodePtr,
        depth: usize,
        b: Nibble,
        ops: &[Op<'_>],
    ) -> After {
        let sets = ops.iter().filter(|o| o.1.is_some()).count();
        if sets >= 2 {
            // A new inner node takes them (its removals count as absent).
            let fresh = self.arena.new_inner();
            self.arena.insert_child(node, b, fresh);
            return self.inner_child(node, depth, b, ops);
        }
        self.done.absent += ops.len() - sets;
        let Some((k, Some(data))) = ops.iter().find(|o| o.1.is_some()) else {
            return After::Same;
        };
        self.record_undo(k, None);
        let leaf = self.arena.new_leaf(k, data);
        self.arena.insert_child(node, b, leaf);
        self.done.added += 1;
        let child = node
            .inner()
            .expect("an inner node")
            .child(b)
            .expect("just inserted");
        After::Changed(self.rec.leaf(child))
    }

    /// Recurses into the unshared inner child on branch `b`, and removes it
    /// if it ends empty.
    fn inner_child(
        &mut self,
        node: &mut NodePtr,
        depth: usize,
        b: Nibble,
        ops: &[Op<'_>],
    ) -> After {
        let child = node
            .inner_mut()
            .expect("an inner node")
            .into_child(b)
            .expect("an inner child");
        let after = self.inner(child, depth + 1, ops, false);
        if let After::Gone = after {
            let emptied = self.arena.remove_child(node, b);
            self.arena.free_node(emptied);
        }
        after
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::SmallRng, Rng, SeedableRng};

    /// The radix path sorts exactly like the stable comparison sort: equal
    /// keys keep their input order (told apart by their data), on random
    /// keys, on keys crowded into one bucket, and around the threshold.
    #[test]
    fn radix_sort_of_writes_is_the_stable_sort() {
        let seed = 0x5047_0001;
        let mut r = SmallRng::seed_from_u64(seed);
        let tags: Vec<[u8; 4]> = (0..200_000u32).map(u32::to_be_bytes).collect();
        for (n, crowded) in [
            (RADIX_MIN - 1, false),
            (RADIX_MIN, false),
            (RADIX_MIN + 1, true),
            (511, false),
            (10_000, false),
            (10_000, true),
            (100_000, false),
            (50_000, true),
        ] {
            let mut keys: Vec<Key> = Vec::with_capacity(n);
            let ops: Vec<Op<'_>> = (0..n)
                .map(|i| {
                    let k = if i > 0 && r.gen_range(0..10) == 0 {
                        keys[r.gen_range(0..keys.len())]
                    } else {
                        let mut k = Key(r.gen());
                        if crowded {
                            k.0[..3].copy_from_slice(&[7, 7, 7]);
                        }
                        k
                    };
                    keys.push(k);
                    (k, (i % 7 != 0).then_some(&tags[i][..]))
                })
                .collect();
            let mut want = ops.clone();
            want.sort_by_key(|o| o.0);
            assert!(
                sort_writes(ops) == want,
                "seed {seed:#x}, n {n}, crowded {crowded}"
            );
        }
    }
}
