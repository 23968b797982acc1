//! The one verified node fetch: every reader of a map in a store
//! ([`crate::StoredMap`] and its iterator, [`crate::BackedMap`],
//! [`crate::verify_all`], [`crate::SyncSession`]) loads a node through
//! [`fetch_node`], for the position the walk reached it at ([`NodeId`]) in
//! a map of a kind, and gets the node
//! only if it passes every check:
//!
//! 1. the stored value decodes and its prefix format hashes to the
//!    requested hash (rippled's format: 8 zero bytes, a type byte that
//!    fits the hash prefix; [`crate::NodeObject::decode`]);
//! 2. the prefix format parses (an inner node is 16 hashes, a leaf holds
//!    its key, a ledger header is 118 bytes; [`crate::NodeObject::parse`]);
//! 3. the node is of the map's kind: an inner node stored with the map's
//!    type byte (or with none: rippled's NuDB store records none for inner
//!    nodes), a leaf with the map kind's hash prefix, never a ledger
//!    header;
//! 4. an inner node sits above depth 64 and has at least one child;
//! 5. a leaf is not the root (rippled's root is always an inner node) and
//!    its key starts with the nibble path that leads to it.
//!
//! A failure is an error naming the node's hash and nibble path
//! ([`StoreError::BadNode`]; a backend failure passes through as is), never
//! data. Checks 2–5 ([`check_node`], in `node_id.rs` beside the position
//! it checks against) also apply to the wire blobs sync
//! receives, and 4–5 ([`NodeId::check_inner`], [`NodeId::check_leaf`]) to
//! the backed map's cache hits, since a node cached at one place may be
//! named again at another.

use shamap::{Hash256, MapKind};

use crate::error::StoreError;
use crate::node::NodeObject;
use crate::node_id::{check_node, MapNode, NodeId};
use crate::store::{NodeStore, NodeStoreExt};

/// A node [`fetch_node`] loaded and checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fetched {
    /// The node.
    pub(crate) node: MapNode,
    /// Bytes of its stored value.
    pub(crate) value_len: usize,
}

/// Loads the node stored under `hash` for position `id` in a map of kind
/// `kind` and applies every check of the [module docs](self). `None` when
/// the store does not have it.
pub(crate) fn fetch_node(
    store: &dyn NodeStore,
    hash: &Hash256,
    kind: MapKind,
    id: &NodeId,
) -> Result<Option<Fetched>, StoreError> {
    let Some(obj) = store.get(hash).map_err(|e| e.at(*hash, &id.nibbles()))? else {
        return Ok(None);
    };
    checked(obj, kind, id).map(Some)
}

/// Nodes a walk reads in one go ([`NodeStore::read_values`]).
const READ_AHEAD: usize = 256;

/// Raw values read ahead of a walk over a stack of nodes: when the next
/// node is not among them, it and the next [`READ_AHEAD`] - 1 nodes the
/// stack will give are read in one go (concurrently where the backend
/// can). The caller checks each value when the walk reaches it, so the
/// order of checks, and the first bad node, stay the walk's.
#[derive(Default)]
pub(crate) struct ReadAhead {
    values: hashbrown::HashMap<Hash256, Option<Vec<u8>>>,
}

impl ReadAhead {
    /// The raw value under `hash` (the node the walk is at), reading it
    /// and `upcoming` (the walk's next nodes, nearest first) first if need be.
    pub(crate) fn take(
        &mut self,
        store: &dyn NodeStore,
        hash: &Hash256,
        upcoming: impl Iterator<Item = Hash256>,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        if let Some(v) = self.values.remove(hash) {
            return Ok(v);
        }
        let next: Vec<Hash256> = std::iter::once(*hash)
            .chain(upcoming.filter(|h| !h.is_zero() && !self.values.contains_key(h)))
            .take(READ_AHEAD)
            .collect();
        let mut values = store.read_values(&next)?.into_iter();
        let value = values.next().flatten();
        self.values.extend(next.into_iter().skip(1).zip(values));
        Ok(value)
    }
}

/// [`fetch_required`] of a raw value already read (by
/// [`NodeStore::read_values`]) under `hash`: the same checks, the same
/// errors.
pub(crate) fn fetched_value(
    hash: &Hash256,
    value: Option<Vec<u8>>,
    kind: MapKind,
    id: &NodeId,
) -> Result<Fetched, StoreError> {
    let value =
        value.ok_or_else(|| StoreError::Missing { hash: *hash }.at(*hash, &id.nibbles()))?;
    let obj = NodeObject::decode(*hash, value).map_err(|e| e.at(*hash, &id.nibbles()))?;
    checked(obj, kind, id)
}

/// [`fetched_value`] of many raw values at once (`values[i]` read under
/// `wanted[i].0`, for position `wanted[i].1` in a map of kind `kind`): the
/// hashes are checked in one multi-lane batch
/// ([`NodeObject::decode_many`]); the same checks and errors, one result
/// per value.
pub(crate) fn fetched_values(
    kind: MapKind,
    wanted: &[(Hash256, NodeId)],
    values: Vec<Option<Vec<u8>>>,
) -> Vec<Result<Fetched, StoreError>> {
    let mut present = Vec::with_capacity(values.len());
    let mut results: Vec<Option<Result<Fetched, StoreError>>> = Vec::with_capacity(values.len());
    for ((hash, id), value) in wanted.iter().zip(values) {
        match value {
            Some(v) => {
                present.push((*hash, v));
                results.push(None);
            }
            None => results.push(Some(Err(
                StoreError::Missing { hash: *hash }.at(*hash, &id.nibbles())
            ))),
        }
    }
    let mut decoded = NodeObject::decode_many(present).into_iter();
    results
        .into_iter()
        .zip(wanted)
        .map(|(r, (hash, id))| {
            r.unwrap_or_else(|| {
                let obj = decoded
                    .next()
                    .expect("one decoded per present value")
                    .map_err(|e| e.at(*hash, &id.nibbles()))?;
                checked(obj, kind, id)
            })
        })
        .collect()
}

/// Checks 2–5 of a verified node, and its value's length.
fn checked(obj: NodeObject, kind: MapKind, id: &NodeId) -> Result<Fetched, StoreError> {
    let node = check_node(&obj, kind, id)?;
    Ok(Fetched {
        node,
        value_len: obj.value().len(),
    })
}

/// [`fetch_node`] for a node the walk needs: absent is an error too
/// ("missing from the store", with the hash and nibble path).
pub(crate) fn fetch_required(
    store: &dyn NodeStore,
    hash: &Hash256,
    kind: MapKind,
    id: &NodeId,
) -> Result<Fetched, StoreError> {
    fetch_node(store, hash, kind, id)?
        .ok_or_else(|| StoreError::Missing { hash: *hash }.at(*hash, &id.nibbles()))
}
