//! The backed map's commit: hashing dirty nodes, writing those the store
//! lacks in one batch (with, for a commit, the atomic `retained` record
//! naming the new root; without, a spill), and turning them into clean
//! slots once the write is acknowledged.

use shamap::node_hash::{self, InnerMessage};
use shamap::{Hash256, HashFunction, MapKind};

use crate::error::StoreError;
use crate::map::writers::Pin;
use crate::meta::{self, RetainedRoot};
use crate::node::{NodeObject, NodeType};
use crate::store::Batch;

use super::cache::{CleanNode, Loader, NodeCache};
use super::tree::{holds, Child, Dirty, Inner, Leaf, Replaced};

/// What [`write_dirty`] wrote.
pub(super) struct Written {
    /// The root.
    pub(super) root: Hash256,
    /// Nodes written.
    pub(super) nodes: u64,
    /// Replaced nodes deleted.
    pub(super) pruned: u64,
    /// True when replaced nodes were left in the store (the list
    /// overflowed, or the store holds other roots or writers).
    pub(super) prune_skipped: bool,
}

/// Writes every dirty node at and below `slot` (the root's) that the store
/// lacks, plus, when `record` names one, the retained record naming the
/// root under that name (replacing that name's entry), in one batch that
/// starts as `batch` (the caller's own changes, written with them); then
/// pins the root. The nodes stay dirty, now hashed: [`settle_tree`] them
/// once this returns `Ok`, so a failed write loses nothing.
///
/// With `replaced` on, the same batch deletes the replaced nodes that the
/// new tree does not hold, when nothing else can need them: at a commit,
/// when the retained list holds no root but `record`'s and this map is
/// the store's only writer in the process (the nodes of the previous
/// version are then garbage by [`crate::gc()`]'s rule, deleted in the
/// batch that makes them so); at a spill, only while nothing is committed
/// and nothing retained (before the first commit, what a spill replaces
/// is its own garbage). Otherwise a spill keeps the list for the commit,
/// and a commit leaves them for `gc`.
pub(super) fn write_dirty(
    loader: &Loader<'_>,
    pin: &Pin,
    slot: &mut Child,
    record: Option<&str>,
    mut batch: Batch,
    replaced: &mut Replaced,
    nothing_committed: bool,
) -> Result<Written, StoreError> {
    let kind = loader.kind;
    let node_type = loader.node_type;
    let mut written = 0;
    // Collections wait for this write-out (its pieces and its final batch)
    // and see the new pin after it.
    let _writing = pin.write_lock();
    let root = match slot {
        Child::Empty => Hash256::ZERO,
        Child::Clean(h) => *h,
        Child::Dirty(d) => match d {
            Dirty::Inner(i) if i.count() == 0 => Hash256::ZERO,
            _ => {
                hash_batched(kind, slot);
                // Written in pieces ahead of the final batch: nothing
                // names them until it lands.
                let mut pieces = Pieces {
                    store: loader.store,
                    bytes: piece_bytes(loader.budget),
                    batch: Batch::new(),
                };
                let root = collect(kind, node_type, slot, &mut pieces, &mut written)?;
                batch.append(std::mem::take(&mut pieces.batch));
                root
            }
        },
    };
    let tracking = replaced.on && (!replaced.nodes.is_empty() || replaced.overflowed);
    let roots = if record.is_some() || tracking {
        meta::retained(loader.store)?
    } else {
        Vec::new()
    };
    let mut pruned = 0;
    let mut prune_skipped = false;
    let mut done_with_list = record.is_some();
    if tracking {
        let alone = pin.is_only_writer();
        let prune = match record {
            Some(name) => alone && roots.iter().all(|r| r.name == name),
            None => alone && nothing_committed && roots.is_empty(),
        };
        done_with_list |= prune;
        if prune && !replaced.overflowed {
            replaced.nodes.sort_unstable_by_key(|n| n.hash());
            replaced.nodes.dedup_by_key(|n| n.hash());
            let tree: &Child = slot;
            for node in &replaced.nodes {
                if !holds(loader, tree, node)? {
                    batch.delete_node(node.hash());
                    pruned += 1;
                }
            }
        } else if prune || record.is_some() {
            prune_skipped = true;
        }
    }
    if let Some(name) = record {
        let mut roots = roots;
        let entry = RetainedRoot {
            name: name.to_owned(),
            hash: root,
        };
        match roots.iter_mut().find(|r| r.name == name) {
            Some(r) => *r = entry,
            None => roots.push(entry),
        }
        meta::put_retained(&mut batch, &roots);
    }
    if !batch.is_empty() {
        if record.is_some() {
            // A commit: on stable storage before it reports success.
            loader.store.write_durably(batch)?;
        } else {
            loader.store.write(batch)?;
        }
    }
    // Every piece is written too (a spill's last piece may have emptied
    // the final batch): the pin moves to the new root.
    pin.set(root);
    // Written: the list is done with when its nodes were dealt with, or at
    // a commit (what it left is for gc); a spill that could not delete
    // keeps it for the commit.
    if done_with_list {
        replaced.nodes.clear();
        replaced.overflowed = false;
    }
    Ok(Written {
        root,
        nodes: written,
        pruned,
        prune_skipped,
    })
}

/// After [`write_dirty`] wrote the tree under `slot` as `root`: every
/// dirty node becomes a clean slot, its content moved into the cache
/// (within `cap`); a zero root empties the slot.
pub(super) fn settle_tree(loader: &Loader<'_>, slot: &mut Child, root: Hash256, cap: usize) {
    if root.is_zero() {
        *slot = Child::Empty;
    } else {
        let mut cache = loader.cache();
        settle(slot, &mut cache, cap);
    }
}

/// Computes every unknown hash of the dirty nodes at and below `slot`,
/// many messages per call of the multi-lane SHA-512 kernel, and returns the
/// slot's hash. One pass over the tree numbers the unhashed nodes (in
/// post-order) and notes where each inner node's child hashes come from;
/// the leaves are hashed in batches, then the inner nodes by height (every
/// child of a node of height h has a smaller height), [`HASH_CHUNK`]
/// messages at a time in one reused buffer; a second pass stores the
/// hashes, in the same order. (Messages for a whole 10k-write block at once
/// took ~14 MB of fresh memory per commit, and its page faults ~8% of a
/// commit's time.)
pub(super) fn hash_batched(kind: MapKind, slot: &mut Child) -> Hash256 {
    let (leaf_hashes, inner_hashes) = {
        let mut plan = HashPlan::default();
        plan.number(slot);
        let mut buf = Vec::new();
        let mut leaf_hashes = Vec::with_capacity(plan.leaves.len());
        for chunk in plan.leaves.chunks(HASH_CHUNK) {
            buf.clear();
            let mut ends = Vec::with_capacity(chunk.len());
            for l in chunk {
                node_hash::append_leaf_message(&mut buf, kind, &l.key, &l.data);
                ends.push(buf.len());
            }
            let mut start = 0;
            let messages = ends.iter().map(|&end| {
                let m = &buf[start..end];
                start = end;
                m
            });
            leaf_hashes.extend(hash_many(messages));
        }
        let mut inner_hashes = vec![Hash256::ZERO; plan.inners.len()];
        let mut order: Vec<u32> = (0..plan.inners.len() as u32).collect();
        order.sort_by_key(|&i| plan.inners[i as usize].height);
        let mut messages: Vec<InnerMessage> = Vec::with_capacity(HASH_CHUNK.min(order.len()));
        for level in order
            .chunk_by(|&a, &b| plan.inners[a as usize].height == plan.inners[b as usize].height)
        {
            for at in level.chunks(HASH_CHUNK) {
                messages.clear();
                messages.extend(at.iter().map(|&i| {
                    let p = &plan.inners[i as usize];
                    let children: [Hash256; 16] = std::array::from_fn(|b| {
                        let c = p.children[b];
                        if c == KNOWN {
                            known_hash(&p.node.children[b]).expect("numbered as known")
                        } else if c & LEAF != 0 {
                            leaf_hashes[(c & !LEAF) as usize]
                        } else {
                            inner_hashes[c as usize]
                        }
                    });
                    node_hash::inner_message(&children)
                }));
                let hashes = hash_many(messages.iter().map(|m| m.as_slice()));
                for (&i, h) in at.iter().zip(hashes) {
                    inner_hashes[i as usize] = h;
                }
            }
        }
        (leaf_hashes, inner_hashes)
    };
    let mut next = (0, 0);
    store_hashes(slot, &leaf_hashes, &inner_hashes, &mut next);
    known_hash(slot).expect("every hash is known now")
}

/// Messages hashed per batch by [`hash_batched`]: 1024 inner messages are
/// 516 KiB, reused from batch to batch.
const HASH_CHUNK: usize = 1024;

/// In [`PendingInner::children`]: a child whose hash is known (read from
/// the node when its message is built).
const KNOWN: u32 = u32::MAX;
/// In [`PendingInner::children`]: set on the number of an unhashed leaf
/// (clear: of an unhashed inner node).
const LEAF: u32 = 1 << 31;

/// An unhashed inner node, numbered by [`HashPlan::number`].
struct PendingInner<'a> {
    node: &'a Inner,
    /// Per branch: [`KNOWN`], or the number of the unhashed leaf (with
    /// [`LEAF`]) or inner node whose hash it takes.
    children: [u32; 16],
    /// 1 + the greatest height of an unhashed child (unhashed leaves: 0).
    height: u32,
}

#[derive(Default)]
struct HashPlan<'a> {
    leaves: Vec<&'a Leaf>,
    inners: Vec<PendingInner<'a>>,
}

impl<'a> HashPlan<'a> {
    /// Numbers the unhashed nodes at and below `slot`, in post-order;
    /// returns the slot's source (as in [`PendingInner::children`]) and
    /// height.
    fn number(&mut self, slot: &'a Child) -> (u32, u32) {
        if known_hash(slot).is_some() {
            return (KNOWN, 0);
        }
        match slot {
            Child::Dirty(Dirty::Leaf(l)) => {
                self.leaves.push(l);
                (numbered(self.leaves.len()) | LEAF, 0)
            }
            Child::Dirty(Dirty::Inner(i)) => {
                let mut children = [KNOWN; 16];
                let mut height = 0;
                for (s, c) in children.iter_mut().zip(i.children.iter()) {
                    let (source, h) = self.number(c);
                    *s = source;
                    height = height.max(h);
                }
                self.inners.push(PendingInner {
                    node: i,
                    children,
                    height: height + 1,
                });
                (numbered(self.inners.len()), height + 1)
            }
            Child::Empty | Child::Clean(_) => unreachable!("known_hash answers these"),
        }
    }
}

/// The number of the last of `len` numbered nodes (fewer than 2^31 of a
/// kind: the dirty nodes fit a memory budget).
fn numbered(len: usize) -> u32 {
    u32::try_from(len - 1)
        .ok()
        .filter(|&n| n < LEAF)
        .expect("fewer than 2^31 dirty nodes")
}

/// The second pass of [`hash_batched`]: the same post-order as
/// [`HashPlan::number`], storing the n-th leaf's and inner node's hash.
fn store_hashes(
    slot: &mut Child,
    leaves: &[Hash256],
    inners: &[Hash256],
    next: &mut (usize, usize),
) {
    if known_hash(slot).is_some() {
        return;
    }
    match slot {
        Child::Dirty(Dirty::Leaf(l)) => {
            l.hash = Some(leaves[next.0]);
            next.0 += 1;
        }
        Child::Dirty(Dirty::Inner(i)) => {
            for c in i.children.iter_mut() {
                store_hashes(c, leaves, inners, next);
            }
            i.hash = Some(inners[next.1]);
            next.1 += 1;
        }
        Child::Empty | Child::Clean(_) => unreachable!("their hashes are known"),
    }
}

/// SHA-512Half of each message, through the multi-lane kernel.
fn hash_many<'m>(messages: impl Iterator<Item = &'m [u8]>) -> Vec<Hash256> {
    let messages: Vec<&[u8]> = messages.collect();
    let mut out = vec![[0u8; 32]; messages.len()];
    HashFunction::Sha512Half.hash_batch(&messages, &mut out);
    out.into_iter().map(Hash256).collect()
}

/// The hash of a slot when it is known without hashing anything.
fn known_hash(c: &Child) -> Option<Hash256> {
    match c {
        Child::Empty => Some(Hash256::ZERO),
        Child::Clean(h) => Some(*h),
        Child::Dirty(Dirty::Leaf(l)) => l.hash,
        Child::Dirty(Dirty::Inner(i)) => i.hash,
    }
}

/// Node bytes a write-out gathers before writing them, for a budget of
/// `budget` bytes: a spill or commit of many dirty nodes writes them in
/// pieces of this size, so its batch (and the backend's encoding of it,
/// whose buffer the node log keeps) stays small beside the dirty nodes. A
/// 128th of the budget, from 64 KiB to 512 KiB (2 MiB pieces put 3–4 MiB
/// over a 64 MiB budget for the length of a write-out).
fn piece_bytes(budget: usize) -> usize {
    (budget / 128).clamp(64 << 10, 512 << 10)
}

/// What a write-out holds beside the dirty nodes while it runs: a piece's
/// batch and the backend's encoding of it. The cache leaves it free.
pub(super) fn write_out_bytes(budget: usize) -> usize {
    2 * piece_bytes(budget)
}

/// The nodes of a write-out being gathered, written ahead (without a sync)
/// a piece at a time; the last piece goes into the final batch.
struct Pieces<'s> {
    store: &'s dyn crate::store::NodeStore,
    /// [`piece_bytes`].
    bytes: usize,
    batch: Batch,
}

impl Pieces<'_> {
    /// True when the store already has `hash`: a node a write-out made
    /// again (the same changes applied twice, a subtree back to an earlier
    /// form) is not written again. Only the node itself is skipped, never
    /// its subtree: a store may hold an inner node without all of its
    /// subtree (a sync stores parents first).
    fn has(&self, hash: &Hash256) -> Result<bool, StoreError> {
        self.store.contains(hash)
    }

    fn put(&mut self, node: NodeObject) -> Result<(), StoreError> {
        self.batch.put_node(node);
        if self.batch.payload_bytes() >= self.bytes {
            self.store.write(std::mem::take(&mut self.batch))?;
        }
        Ok(())
    }
}

/// Adds every dirty node below and at `slot` that the store lacks (not
/// loaded from it, and not in it: [`Pieces::has`]) to `pieces`; returns the slot's hash. Every hash is known
/// ([`hash_batched`] ran). Nodes stay dirty (see [`settle`]).
fn collect(
    kind: MapKind,
    node_type: NodeType,
    slot: &mut Child,
    pieces: &mut Pieces<'_>,
    written: &mut u64,
) -> Result<Hash256, StoreError> {
    let d = match slot {
        Child::Empty => return Ok(Hash256::ZERO),
        Child::Clean(h) => return Ok(*h),
        Child::Dirty(d) => d,
    };
    Ok(match d {
        Dirty::Leaf(l) => {
            let h = l.hash.expect("hashed by hash_batched");
            if !l.stored && !pieces.has(&h)? {
                let message = node_hash::leaf_message(kind, &l.key, &l.data);
                pieces.put(NodeObject::hashed_by_engine(node_type, h, &message))?;
                *written += 1;
            }
            h
        }
        Dirty::Inner(i) => {
            let h = i.hash.expect("hashed by hash_batched");
            if !i.stored {
                let mut hashes = [Hash256::ZERO; 16];
                for (ch, c) in hashes.iter_mut().zip(i.children.iter_mut()) {
                    *ch = collect(kind, node_type, c, pieces, written)?;
                }
                if !pieces.has(&h)? {
                    let message = node_hash::inner_message(&hashes);
                    pieces.put(NodeObject::hashed_by_engine(node_type, h, &message))?;
                    *written += 1;
                }
            }
            h
        }
    })
}

/// After a write: every dirty node becomes a clean slot, its content moved
/// into the cache (within `cap`).
fn settle(slot: &mut Child, cache: &mut NodeCache, cap: usize) {
    let Child::Dirty(d) = slot else {
        return;
    };
    let (h, clean) = match d {
        Dirty::Leaf(l) => (
            l.hash.expect("hashed by collect"),
            CleanNode::Leaf {
                key: l.key,
                data: std::mem::take(&mut l.data),
            },
        ),
        Dirty::Inner(i) => {
            let mut hashes = [Hash256::ZERO; 16];
            for (h, c) in hashes.iter_mut().zip(i.children.iter_mut()) {
                settle(c, cache, cap);
                *h = match c {
                    Child::Empty => Hash256::ZERO,
                    Child::Clean(h) => *h,
                    Child::Dirty(_) => unreachable!("settled"),
                };
            }
            (
                i.hash.expect("hashed by collect"),
                CleanNode::from_children(&hashes),
            )
        }
    };
    cache.insert(h, &clean, cap);
    *slot = Child::Clean(h);
}
