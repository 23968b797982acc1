//! The backed map's commit: hashing dirty nodes, writing those the store
//! lacks in one batch (with, for a commit, the atomic `retained` record
//! naming the new root; without, a spill), and turning them into clean
//! slots once the write is acknowledged.

use std::sync::Arc;

use shamap::node_hash::{self, InnerMessage};
use shamap::{Hash256, HashFunction, MapKind};

use crate::error::StoreError;
use crate::meta::{self, RetainedRoot};
use crate::node::{NodeObject, NodeType};
use crate::store::Batch;
use crate::writers::Pin;

use super::cache::{CleanNode, Loader, NodeCache};
use super::tree::{Child, Dirty};

/// Writes every dirty node at and below `slot` (the root's) that the store
/// lacks, plus, when `record` names one, the retained record naming the
/// root under that name (replacing that name's entry), in one batch; then
/// pins the root. Returns the root and the number of nodes written. The
/// nodes stay dirty, now hashed: [`settle_tree`] them once this returns
/// `Ok`, so a failed write loses nothing.
pub(super) fn write_dirty(
    loader: &Loader<'_>,
    pin: &Pin,
    slot: &mut Child,
    record: Option<&str>,
) -> Result<(Hash256, u64), StoreError> {
    let kind = loader.kind;
    let node_type = loader.node_type;
    let mut batch = Batch::new();
    let mut written = 0;
    let root = match slot {
        Child::Empty => Hash256::ZERO,
        Child::Clean(h) => *h,
        Child::Dirty(d) => match d {
            Dirty::Inner(i) if i.count() == 0 => Hash256::ZERO,
            _ => {
                hash_batched(kind, slot);
                collect(kind, node_type, slot, &mut batch, &mut written)
            }
        },
    };
    if let Some(name) = record {
        let mut roots = meta::retained(loader.store)?;
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
        // Collections wait for this write and see the new pin after it.
        let _writing = pin.write_lock();
        if record.is_some() {
            // A commit: on stable storage before it reports success.
            loader.store.write_durably(batch)?;
        } else {
            loader.store.write(batch)?;
        }
        pin.set(root);
    }
    Ok((root, written))
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
/// the leaves are hashed in one batch, the inner nodes in batches by height
/// (every child of a node of height h has a smaller height); a second pass
/// stores the hashes, in the same order.
pub(super) fn hash_batched(kind: MapKind, slot: &mut Child) -> Hash256 {
    let mut plan = HashPlan::default();
    plan.number(kind, slot);
    let leaf_hashes = hash_many(plan.leaf_messages.iter().map(Vec::as_slice));
    let mut inner_hashes = vec![Hash256::ZERO; plan.inners.len()];
    let mut order: Vec<usize> = (0..plan.inners.len()).collect();
    order.sort_by_key(|&i| plan.inners[i].height);
    for at in order.chunk_by(|&a, &b| plan.inners[a].height == plan.inners[b].height) {
        let messages: Vec<InnerMessage> = at
            .iter()
            .map(|&i| {
                let children = plan.inners[i].children.map(|c| match c {
                    Source::Known(h) => h,
                    Source::Leaf(n) => leaf_hashes[n],
                    Source::Inner(n) => inner_hashes[n],
                });
                node_hash::inner_message(&children)
            })
            .collect();
        let hashes = hash_many(messages.iter().map(|m| m.as_slice()));
        for (&i, h) in at.iter().zip(hashes) {
            inner_hashes[i] = h;
        }
    }
    let mut next = (0, 0);
    store_hashes(slot, &leaf_hashes, &inner_hashes, &mut next);
    known_hash(slot).expect("every hash is known now")
}

/// Where a child's hash comes from while [`hash_batched`] runs.
#[derive(Clone, Copy)]
enum Source {
    Known(Hash256),
    /// The n-th unhashed leaf.
    Leaf(usize),
    /// The n-th unhashed inner node.
    Inner(usize),
}

struct PendingInner {
    children: [Source; 16],
    /// 1 + the greatest height of an unhashed child (unhashed leaves: 0).
    height: u32,
}

#[derive(Default)]
struct HashPlan {
    leaf_messages: Vec<Vec<u8>>,
    inners: Vec<PendingInner>,
}

impl HashPlan {
    /// Numbers the unhashed nodes at and below `slot`, in post-order;
    /// returns the slot's source and height.
    fn number(&mut self, kind: MapKind, slot: &Child) -> (Source, u32) {
        if let Some(h) = known_hash(slot) {
            return (Source::Known(h), 0);
        }
        match slot {
            Child::Dirty(Dirty::Leaf(l)) => {
                self.leaf_messages
                    .push(node_hash::leaf_message(kind, &l.key, &l.data));
                (Source::Leaf(self.leaf_messages.len() - 1), 0)
            }
            Child::Dirty(Dirty::Inner(i)) => {
                let mut children = [Source::Known(Hash256::ZERO); 16];
                let mut height = 0;
                for (s, c) in children.iter_mut().zip(i.children.iter()) {
                    let (source, h) = self.number(kind, c);
                    *s = source;
                    height = height.max(h);
                }
                self.inners.push(PendingInner {
                    children,
                    height: height + 1,
                });
                (Source::Inner(self.inners.len() - 1), height + 1)
            }
            Child::Empty | Child::Clean(_) => unreachable!("known_hash answers these"),
        }
    }
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

/// Adds every dirty node below and at `slot` that the store lacks to
/// `batch`; returns the slot's hash. Every hash is known
/// ([`hash_batched`] ran). Nodes stay dirty (see [`settle`]).
fn collect(
    kind: MapKind,
    node_type: NodeType,
    slot: &mut Child,
    batch: &mut Batch,
    written: &mut u64,
) -> Hash256 {
    let d = match slot {
        Child::Empty => return Hash256::ZERO,
        Child::Clean(h) => return *h,
        Child::Dirty(d) => d,
    };
    match d {
        Dirty::Leaf(l) => {
            let h = l.hash.expect("hashed by hash_batched");
            if !l.stored {
                let message = node_hash::leaf_message(kind, &l.key, &l.data);
                batch.put_node(NodeObject::hashed_by_engine(node_type, h, &message));
                *written += 1;
            }
            h
        }
        Dirty::Inner(i) => {
            let h = i.hash.expect("hashed by hash_batched");
            if !i.stored {
                let mut hashes = [Hash256::ZERO; 16];
                for (ch, c) in hashes.iter_mut().zip(i.children.iter_mut()) {
                    *ch = collect(kind, node_type, c, batch, written);
                }
                let message = node_hash::inner_message(&hashes);
                batch.put_node(NodeObject::hashed_by_engine(node_type, h, &message));
                *written += 1;
            }
            h
        }
    }
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
                data: std::mem::take(&mut l.data).into_boxed_slice(),
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
    cache.insert(h, Arc::new(clean), cap);
    *slot = Child::Clean(h);
}
