//! The backed map's commit: hashing dirty nodes, writing those the store
//! lacks in one batch (with, for a commit, the atomic `retained` record
//! naming the new root; without, a spill), and turning them into clean
//! slots once the write is acknowledged.

use std::sync::Arc;

use shamap::node_hash;
use shamap::xrpl::sha512_half;
use shamap::{Hash256, MapKind};

use crate::error::StoreError;
use crate::meta::{self, RetainedRoot};
use crate::node::{NodeObject, NodeType};
use crate::store::Batch;
use crate::writers::Pin;

use super::cache::{CleanNode, Loader, NodeCache};
use super::tree::{Child, Dirty, Leaf};

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
            _ => collect(kind, node_type, slot, &mut batch, &mut written),
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

fn leaf_prefix_bytes(kind: MapKind, l: &Leaf) -> Vec<u8> {
    node_hash::leaf_message(kind, &l.key, &l.data)
}

fn child_hash(kind: MapKind, c: &mut Child) -> Hash256 {
    match c {
        Child::Empty => Hash256::ZERO,
        Child::Clean(h) => *h,
        Child::Dirty(d) => hash_dirty(kind, d),
    }
}

fn inner_prefix_bytes(children: &[Hash256; 16]) -> node_hash::InnerMessage {
    node_hash::inner_message(children)
}

/// The hash of a dirty node, computing (and keeping) what is unknown.
pub(super) fn hash_dirty(kind: MapKind, d: &mut Dirty) -> Hash256 {
    match d {
        Dirty::Leaf(l) => *l
            .hash
            .get_or_insert_with(|| kind.leaf_hash(&l.key, &l.data)),
        Dirty::Inner(i) => {
            if let Some(h) = i.hash {
                return h;
            }
            let mut hashes = [Hash256::ZERO; 16];
            for (h, c) in hashes.iter_mut().zip(i.children.iter_mut()) {
                *h = child_hash(kind, c);
            }
            let h = sha512_half(&[&inner_prefix_bytes(&hashes)]);
            i.hash = Some(h);
            h
        }
    }
}

/// Adds every dirty node below and at `slot` that the store lacks to
/// `batch`; returns the slot's hash. Nodes stay dirty (see [`settle`]).
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
            if let (true, Some(h)) = (l.stored, l.hash) {
                return h;
            }
            let obj = NodeObject::from_prefix(node_type, &leaf_prefix_bytes(kind, l));
            let h = obj.hash();
            l.hash = Some(h);
            batch.put_node(obj);
            *written += 1;
            h
        }
        Dirty::Inner(i) => {
            if let (true, Some(h)) = (i.stored, i.hash) {
                return h;
            }
            let mut hashes = [Hash256::ZERO; 16];
            for (h, c) in hashes.iter_mut().zip(i.children.iter_mut()) {
                *h = collect(kind, node_type, c, batch, written);
            }
            let obj = NodeObject::from_prefix(node_type, &inner_prefix_bytes(&hashes));
            let h = obj.hash();
            i.hash = Some(h);
            batch.put_node(obj);
            *written += 1;
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
