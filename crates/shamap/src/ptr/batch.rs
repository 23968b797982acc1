//! Batched rehashing: all stale nodes of a tree hashed level by level, many
//! messages per call, so that a multi-lane SHA-512 (8 messages at once with
//! AVX-512) can work on independent nodes.
//!
//! One pass, a level at a time from the root, records the stale node words
//! (raw pointers into their parents' child arrays); then stale leaves are
//! hashed, then stale inner nodes from the deepest level up, each level's
//! inputs built from children that are all current by then. The tree's
//! structure is not touched while the pointers are held (the caller holds
//! `&mut` on the root, and only hash fields are written), which is what
//! makes the stored pointers valid.
//!
//! In the hashless-leaf mode (leaves keep no hash) the pass records every
//! leaf child of each stale inner node, changed or not, with where each
//! node's leaf children start in the list; the leaves are hashed into a side
//! buffer, and each inner node's message takes its leaf children's hashes
//! from there, in branch order.

use std::ptr::NonNull;

use super::node::NodePtr;
use crate::hash::Hash256;
use crate::hashfn::BatchHasher;
use crate::kind::MapKind;
use crate::node_hash::{self, InnerMessage, INNER_MESSAGE_LEN};

/// Nodes hashed per batch call (bounds the temporary input buffers).
const CHUNK: usize = 512;

/// Nodes ahead of the one whose message is being built whose lines are
/// prefetched: an inner node's children's hashes, a leaf's key and data.
/// `collect` hinted them once, but on a large batch (a root from scratch)
/// many have left the caches by the time they are read. Measured on a
/// 1M-entry root from scratch, alternating in one process: inner nodes
/// 0.83–0.98× the time (median about 0.94×), then leaves 0.88–0.95×
/// (median 0.93×); no change on 10k-write blocks.
const FILL_AHEAD: usize = 8;

/// How a tree's leaves are hashed: their kind, and whether they keep their
/// hash (else it is computed whenever a parent needs it).
#[derive(Clone, Copy)]
pub(crate) struct LeafHashing {
    pub kind: MapKind,
    pub stored: bool,
}

/// What one batched rehash did.
#[derive(Default, Clone, Copy)]
pub(crate) struct BatchWork {
    pub leaves: u64,
    pub leaf_bytes: u64,
    pub inner: u64,
}

/// Brings every stale hash under `root` up to date, and `root`'s too
/// unless `skip_root` (then a stale inner `root` is left for its caller to
/// hash together with its siblings: see [`hash_stale_inner_children`]).
pub(crate) fn rehash_batched(
    lh: LeafHashing,
    root: &mut NodePtr,
    hasher: BatchHasher,
    work: &mut BatchWork,
    skip_root: bool,
) -> Hash256 {
    debug_assert!(!root.is_leaf(), "a batch starts at an inner node");
    if !root.hash().is_zero() {
        return *root.hash();
    }
    let mut sc = SCRATCH.with(std::cell::Cell::take).unwrap_or_default();
    collect_by_level(root, lh.stored, skip_root, &mut sc);
    hash_leaves(lh, hasher, work, &mut sc);
    let Scratch {
        inner,
        leaf_starts,
        leaf_out,
        inputs,
        out,
        ..
    } = &mut sc;
    let need = CHUNK.min(inner.iter().map(Vec::len).max().unwrap_or(0));
    if inputs.len() < need {
        inputs.resize(need, node_hash::EMPTY_INNER_MESSAGE);
    }
    if out.len() < need {
        out.resize(need, [0; 32]);
    }
    let skip = usize::from(skip_root);
    for (d, level) in inner.iter().enumerate().skip(skip).rev() {
        for (k, chunk) in level.chunks(CHUNK).enumerate() {
            for (i, (p, input)) in chunk.iter().zip(inputs.iter_mut()).enumerate() {
                if let Some(ahead) = chunk.get(i + FILL_AHEAD) {
                    // SAFETY: as below; only read.
                    let ahead = unsafe { ahead.as_ref() };
                    for c in ahead.inner().expect("collected as inner").children() {
                        if lh.stored || !c.is_leaf() {
                            c.prefetch_hash();
                        }
                    }
                }
                // SAFETY: `p` points at a node word inside the tree under
                // `root`, which we hold `&mut` and whose structure does not
                // change during this function; no other reference to that
                // word or its children is live here (see the module docs).
                let node = unsafe { p.as_ref() };
                if lh.stored {
                    fill_inner_input(node, input);
                } else {
                    let first = leaf_starts[d][k * CHUNK + i] as usize;
                    fill_inner_input_with(node, input, &leaf_out[first..]);
                }
            }
            let msgs: Vec<&[u8]> = inputs[..chunk.len()].iter().map(|i| &i[..]).collect();
            hasher(&msgs, &mut out[..chunk.len()]);
            for (p, h) in chunk.iter().zip(out.iter()) {
                // SAFETY: as above; the shared borrow taken to build the
                // input has ended, so this is the only reference.
                unsafe { (*p.as_ptr()).set_hash(Hash256(*h)) };
            }
            work.inner += chunk.len() as u64;
        }
    }
    sc.clear();
    if sc.capacity_bytes() <= SCRATCH_KEEP_BYTES {
        SCRATCH.with(|s| s.set(Some(sc)));
    }
    *root.hash()
}

/// Hashes, in one batch, the stale inner children of `node` whose own
/// children are all current (as [`rehash_batched`] with `skip_root` leaves
/// them); returns how many it hashed. Stale leaf children must already be
/// hashed. This gathers the subtree roots that separate batches would each
/// hash alone (one message per call, the slowest way to use the lanes).
pub(crate) fn hash_stale_inner_children(
    node: &mut NodePtr,
    lh: LeafHashing,
    hasher: BatchHasher,
    work: &mut BatchWork,
) {
    let children = node.inner_mut().expect("an inner node").into_children();
    let mut inputs = [node_hash::EMPTY_INNER_MESSAGE; 16];
    let mut which = [0usize; 16];
    let mut n = 0;
    for (i, c) in children.iter().enumerate() {
        if c.is_leaf() {
            debug_assert!(
                !lh.stored || !c.hash().is_zero(),
                "stale leaf children are hashed first"
            );
            continue;
        }
        if c.hash().is_zero() {
            fill_inner_input_hashing_leaves(c, &mut inputs[n], lh, hasher, work);
            which[n] = i;
            n += 1;
        }
    }
    if n == 0 {
        return;
    }
    let msgs: Vec<&[u8]> = inputs[..n].iter().map(|m| &m[..]).collect();
    let mut out = [[0u8; 32]; 16];
    hasher(&msgs, &mut out[..n]);
    for (&i, h) in which[..n].iter().zip(&out) {
        children[i].set_hash(Hash256(*h));
    }
    work.inner += n as u64;
}

/// Buffers of one batched rehash, kept per thread between calls: a 10k-write
/// `root_hash` makes one call per depth-2 subtree (256), and fresh buffers
/// cost an allocation, a fill and page faults each time.
#[derive(Default)]
struct Scratch {
    leaves: Vec<NonNull<NodePtr>>,
    inner: Vec<Vec<NonNull<NodePtr>>>,
    /// Hashless-leaf mode: where each node of `inner` has its first leaf
    /// child in `leaves` (and its hash in `leaf_out`); its leaf children
    /// follow in branch order.
    leaf_starts: Vec<Vec<u32>>,
    /// Hashless-leaf mode: the hashes of `leaves`, in order.
    leaf_out: Vec<[u8; 32]>,
    /// Inner-node inputs, rewritten whole on each use.
    inputs: Vec<InnerMessage>,
    out: Vec<[u8; 32]>,
    leaf_bytes: Vec<u8>,
    leaf_ends: Vec<usize>,
}

impl Scratch {
    /// Empties the node lists (the pointers are dead once the call ends).
    fn clear(&mut self) {
        self.leaves.clear();
        for level in &mut self.inner {
            level.clear();
        }
        for level in &mut self.leaf_starts {
            level.clear();
        }
        self.leaf_out.clear();
        self.leaf_bytes.clear();
        self.leaf_ends.clear();
    }

    fn capacity_bytes(&self) -> usize {
        let word = std::mem::size_of::<NonNull<NodePtr>>();
        self.leaves.capacity() * word
            + self
                .inner
                .iter()
                .map(|l| l.capacity() * word)
                .sum::<usize>()
            + self
                .leaf_starts
                .iter()
                .map(|l| l.capacity() * 4)
                .sum::<usize>()
            + self.leaf_out.capacity() * 32
            + self.inputs.capacity() * INNER_MESSAGE_LEN
            + self.out.capacity() * 32
            + self.leaf_bytes.capacity()
            + self.leaf_ends.capacity() * std::mem::size_of::<usize>()
    }
}

/// Most bytes of scratch a thread keeps between calls (a root from scratch
/// of a large map grows the node lists far beyond what updates need).
const SCRATCH_KEEP_BYTES: usize = 4 << 20;

thread_local! {
    static SCRATCH: std::cell::Cell<Option<Scratch>> = const { std::cell::Cell::new(None) };
}

/// Records the stale nodes under (and including) the stale `root`, one
/// level at a time: first every child hash line of the level's nodes is
/// hinted, then each is read, so the level's misses overlap instead of
/// each waiting behind the one before, as they did in a depth-first walk
/// (measured in one process, depth-first over by-level: 10k-write blocks
/// 1.112 and 1.081, a root from scratch of 1M entries 1.051 and 1.047).
///
/// With `stored` false (hashless-leaf mode) every leaf child of a stale inner
/// node is recorded, stale or not (none has a stored hash), and
/// `sc.leaf_starts` says where each node's leaf children start; a
/// `skip_root` root's leaf children are left out, as its caller hashes it.
fn collect_by_level(root: &mut NodePtr, stored: bool, skip_root: bool, sc: &mut Scratch) {
    let Scratch {
        leaves,
        inner,
        leaf_starts,
        ..
    } = sc;
    if inner.is_empty() {
        inner.push(Vec::new());
    }
    inner[0].push(NonNull::from(&mut *root));
    let mut d = 0;
    while d < inner.len() && !inner[d].is_empty() {
        for p in &inner[d] {
            // SAFETY: see `rehash_batched`; only read.
            let n = unsafe { p.as_ref() };
            for c in n.inner().expect("collected as inner").children() {
                if stored || !c.is_leaf() {
                    c.prefetch_hash();
                } else {
                    c.prefetch_key();
                }
            }
        }
        if inner.len() <= d + 1 {
            inner.push(Vec::new());
        }
        if !stored && leaf_starts.len() < inner.len() {
            leaf_starts.resize_with(inner.len(), Vec::new);
        }
        let (upper, lower) = inner.split_at_mut(d + 1);
        let next = &mut lower[0];
        for p in &upper[d] {
            // SAFETY: see `rehash_batched`: the word is in the tree under
            // `root`, whose structure does not change; no other reference
            // to it or its children is live while this one is.
            let n = unsafe { &mut *p.as_ptr() };
            if stored {
                for c in n.inner_mut().expect("collected as inner").into_children() {
                    if !c.hash().is_zero() {
                        continue;
                    }
                    if c.is_leaf() {
                        leaves.push(NonNull::from(&mut *c));
                    } else {
                        next.push(NonNull::from(&mut *c));
                    }
                }
                continue;
            }
            leaf_starts[d].push(u32::try_from(leaves.len()).expect("batches are far below 2^32"));
            let take_leaves = d > 0 || !skip_root;
            for c in n.inner_mut().expect("collected as inner").into_children() {
                if c.is_leaf() {
                    if take_leaves {
                        leaves.push(NonNull::from(&mut *c));
                    }
                } else if c.hash().is_zero() {
                    next.push(NonNull::from(&mut *c));
                }
            }
        }
        d += 1;
    }
}

/// Hashes the collected leaves: into the leaves themselves when they keep
/// their hash, else into `sc.leaf_out`.
fn hash_leaves(lh: LeafHashing, hasher: BatchHasher, work: &mut BatchWork, sc: &mut Scratch) {
    let Scratch {
        leaves,
        leaf_bytes: buf,
        leaf_ends: ends,
        out,
        leaf_out,
        ..
    } = sc;
    let kind = lh.kind;
    let need = CHUNK.min(leaves.len());
    if out.len() < need {
        out.resize(need, [0; 32]);
    }
    for chunk in leaves.chunks(CHUNK) {
        buf.clear();
        ends.clear();
        for (i, p) in chunk.iter().enumerate() {
            if let Some(ahead) = chunk.get(i + FILL_AHEAD) {
                // SAFETY: as below; only read.
                unsafe { ahead.as_ref() }.prefetch_chunk();
            }
            // SAFETY: see `rehash_batched`; leaves are distinct words and
            // only read here.
            let node = unsafe { p.as_ref() };
            let leaf = node.leaf().expect("collected as a leaf");
            node_hash::append_leaf_message(buf, kind, leaf.key(), leaf.data());
            ends.push(buf.len());
        }
        let mut msgs: Vec<&[u8]> = Vec::with_capacity(chunk.len());
        let mut start = 0;
        for &e in ends.iter() {
            msgs.push(&buf[start..e]);
            start = e;
        }
        work.leaf_bytes += buf.len() as u64;
        hasher(&msgs, &mut out[..chunk.len()]);
        if lh.stored {
            for (p, h) in chunk.iter().zip(out.iter()) {
                // SAFETY: as above; no reference to the leaf is live.
                unsafe { (*p.as_ptr()).set_hash(Hash256(*h)) };
            }
        } else {
            leaf_out.extend_from_slice(&out[..chunk.len()]);
        }
        work.leaves += chunk.len() as u64;
    }
}

/// The hash message of an inner node whose inner children are current (for a
/// node hashed on its own, e.g. the map's root); in the hashless-leaf mode
/// its leaf children are hashed here, in one batch.
pub(crate) fn inner_message(
    node: &NodePtr,
    lh: LeafHashing,
    hasher: BatchHasher,
    work: &mut BatchWork,
) -> InnerMessage {
    let mut buf = node_hash::EMPTY_INNER_MESSAGE;
    fill_inner_input_hashing_leaves(node, &mut buf, lh, hasher, work);
    buf
}

/// [`fill_inner_input`], hashing the leaf children first in the
/// hashless-leaf mode (one batch of at most 16).
fn fill_inner_input_hashing_leaves(
    node: &NodePtr,
    buf: &mut InnerMessage,
    lh: LeafHashing,
    hasher: BatchHasher,
    work: &mut BatchWork,
) {
    if lh.stored {
        fill_inner_input(node, buf);
        return;
    }
    let mut out = [[0u8; 32]; 16];
    let (n, bytes) = hash_leaf_children(node, lh.kind, hasher, &mut out);
    work.leaves += n as u64;
    work.leaf_bytes += bytes as u64;
    fill_inner_input_with(node, buf, &out[..n]);
}

/// Hashes the leaf children of the inner node `node`, in one call to
/// `hasher`, into `out` in branch order; returns how many there are and the
/// bytes of their messages (for a hashless-leaf node, whose leaves keep no
/// hash).
pub(crate) fn hash_leaf_children(
    node: &NodePtr,
    kind: MapKind,
    hasher: BatchHasher,
    out: &mut [[u8; 32]; 16],
) -> (usize, usize) {
    let mut bytes = Vec::new();
    let mut ends = [0usize; 16];
    let mut n = 0;
    for c in node.inner().expect("an inner node").children() {
        if let Some(l) = c.leaf() {
            node_hash::append_leaf_message(&mut bytes, kind, l.key(), l.data());
            ends[n] = bytes.len();
            n += 1;
        }
    }
    if n > 0 {
        let mut msgs: Vec<&[u8]> = Vec::with_capacity(n);
        let mut start = 0;
        for &e in &ends[..n] {
            msgs.push(&bytes[start..e]);
            start = e;
        }
        hasher(&msgs, &mut out[..n]);
    }
    (n, bytes.len())
}

/// Writes the hash message of an inner node whose inner children are
/// current, taking its leaf children's hashes, in branch order, from
/// `leaf_hashes` (the hashless-leaf mode, where leaves keep none).
fn fill_inner_input_with(node: &NodePtr, buf: &mut InnerMessage, leaf_hashes: &[[u8; 32]]) {
    let inner = node.inner().expect("collected as inner");
    node_hash::write_inner_branches(buf, std::iter::empty());
    let mut next = leaf_hashes.iter();
    for (b, c) in inner.mask().branches().zip(inner.children()) {
        let h = if c.is_leaf() {
            next.next().expect("a hash for each leaf child")
        } else {
            &c.hash().0
        };
        node_hash::set_child(buf, b, h);
    }
}

/// Writes the hash message of an inner node whose children are current
/// into `buf` (the layout is [`node_hash`]'s).
fn fill_inner_input(node: &NodePtr, buf: &mut InnerMessage) {
    let inner = node.inner().expect("collected as inner");
    let mask = inner.mask();
    node_hash::write_inner_branches(
        buf,
        mask.branches()
            .zip(inner.children())
            .map(|(b, c)| (b, c.hash())),
    );
}
