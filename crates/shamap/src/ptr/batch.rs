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

use std::ptr::NonNull;

use super::node::NodePtr;
use crate::hash::Hash256;
use crate::kind::MapKind;
use crate::node_hash::{self, InnerMessage, INNER_MESSAGE_LEN};

/// Hashes `msgs[i]` into `out[i]` (SHA512Half), any number at once.
pub(crate) type BatchHasher = fn(&[&[u8]], &mut [[u8; 32]]);

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
    kind: MapKind,
    root: &mut NodePtr,
    hasher: BatchHasher,
    work: &mut BatchWork,
    skip_root: bool,
) -> Hash256 {
    if !root.hash().is_zero() {
        return *root.hash();
    }
    let mut sc = SCRATCH.with(std::cell::Cell::take).unwrap_or_default();
    collect_by_level(root, &mut sc.leaves, &mut sc.inner);
    hash_leaves(kind, hasher, work, &mut sc);
    let Scratch {
        inner, inputs, out, ..
    } = &mut sc;
    let need = CHUNK.min(inner.iter().map(Vec::len).max().unwrap_or(0));
    if inputs.len() < need {
        inputs.resize(need, node_hash::EMPTY_INNER_MESSAGE);
    }
    if out.len() < need {
        out.resize(need, [0; 32]);
    }
    let skip = usize::from(skip_root);
    for level in inner.iter().skip(skip).rev() {
        for chunk in level.chunks(CHUNK) {
            for (i, (p, input)) in chunk.iter().zip(inputs.iter_mut()).enumerate() {
                if let Some(ahead) = chunk.get(i + FILL_AHEAD) {
                    // SAFETY: as below; only read.
                    let ahead = unsafe { ahead.as_ref() };
                    for c in ahead.inner().expect("collected as inner").children() {
                        c.prefetch_hash();
                    }
                }
                // SAFETY: `p` points at a node word inside the tree under
                // `root`, which we hold `&mut` and whose structure does not
                // change during this function; no other reference to that
                // word or its children is live here (see the module docs).
                let node = unsafe { p.as_ref() };
                fill_inner_input(node, input);
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
pub(crate) fn hash_stale_inner_children(node: &mut NodePtr, hasher: BatchHasher) -> u64 {
    let children = node.inner_mut().expect("an inner node").into_children();
    let mut inputs = [node_hash::EMPTY_INNER_MESSAGE; 16];
    let mut which = [0usize; 16];
    let mut n = 0;
    for (i, c) in children.iter().enumerate() {
        if c.hash().is_zero() {
            debug_assert!(!c.is_leaf(), "stale leaf children are hashed first");
            fill_inner_input(c, &mut inputs[n]);
            which[n] = i;
            n += 1;
        }
    }
    if n == 0 {
        return 0;
    }
    let msgs: Vec<&[u8]> = inputs[..n].iter().map(|m| &m[..]).collect();
    let mut out = [[0u8; 32]; 16];
    hasher(&msgs, &mut out[..n]);
    for (&i, h) in which[..n].iter().zip(&out) {
        children[i].set_hash(Hash256(*h));
    }
    n as u64
}

/// Buffers of one batched rehash, kept per thread between calls: a 10k-write
/// `root_hash` makes one call per depth-2 subtree (256), and fresh buffers
/// cost an allocation, a fill and page faults each time.
#[derive(Default)]
struct Scratch {
    leaves: Vec<NonNull<NodePtr>>,
    inner: Vec<Vec<NonNull<NodePtr>>>,
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
fn collect_by_level(
    root: &mut NodePtr,
    leaves: &mut Vec<NonNull<NodePtr>>,
    inner: &mut Vec<Vec<NonNull<NodePtr>>>,
) {
    if root.is_leaf() {
        leaves.push(NonNull::from(&mut *root));
        return;
    }
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
                c.prefetch_hash();
            }
        }
        if inner.len() <= d + 1 {
            inner.push(Vec::new());
        }
        let (upper, lower) = inner.split_at_mut(d + 1);
        let next = &mut lower[0];
        for p in &upper[d] {
            // SAFETY: see `rehash_batched`: the word is in the tree under
            // `root`, whose structure does not change; no other reference
            // to it or its children is live while this one is.
            let n = unsafe { &mut *p.as_ptr() };
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
        }
        d += 1;
    }
}

fn hash_leaves(kind: MapKind, hasher: BatchHasher, work: &mut BatchWork, sc: &mut Scratch) {
    let Scratch {
        leaves,
        leaf_bytes: buf,
        leaf_ends: ends,
        out,
        ..
    } = sc;
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
        for (p, h) in chunk.iter().zip(out.iter()) {
            // SAFETY: as above; no reference to the leaf is live.
            unsafe { (*p.as_ptr()).set_hash(Hash256(*h)) };
        }
        work.leaves += chunk.len() as u64;
    }
}

/// The hash message of an inner node whose children are current (for a
/// node hashed on its own, e.g. the map's root).
pub(crate) fn inner_message(node: &NodePtr) -> InnerMessage {
    let mut buf = node_hash::EMPTY_INNER_MESSAGE;
    fill_inner_input(node, &mut buf);
    buf
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
