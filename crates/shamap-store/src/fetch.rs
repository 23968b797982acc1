//! The one verified node fetch: every reader of a map in a store
//! ([`crate::StoredMap`] and its iterator, [`crate::BackedMap`],
//! [`crate::verify_all`], [`crate::SyncSession`]) loads a node through
//! [`fetch_node`], for the place the walk reached it at, and gets the node
//! only if it passes every check:
//!
//! 1. the stored value decodes and its prefix format hashes to the
//!    requested hash (rippled's format: 8 zero bytes, a type byte that
//!    fits the hash prefix; [`crate::NodeObject::decode`]);
//! 2. the prefix format parses (an inner node is 16 hashes, a leaf holds
//!    its key, a ledger header is 118 bytes; [`crate::NodeObject::parse`]);
//! 3. the node is of the map's kind: an inner node stored with the map's
//!    type byte, a leaf with the map kind's hash prefix, never a ledger
//!    header;
//! 4. an inner node sits above depth 64 and has at least one child;
//! 5. a leaf is not the root (rippled's root is always an inner node) and
//!    its key starts with the nibble path that leads to it.
//!
//! A failure is an error naming the node's hash and nibble path
//! ([`StoreError::BadNode`]; a backend failure passes through as is), never
//! data. Checks 3–5 ([`check_node`]) also apply to the wire blobs sync
//! receives, and 4–5 ([`Place::check_inner`], [`Place::check_leaf`]) to
//! the backed map's cache hits, since a node cached at one place may be
//! named again at another.

use shamap::{Hash256, Key, MapKind};

use crate::error::StoreError;
use crate::node::{Node, NodeObject, NodeType};
use crate::store::NodeStore;

/// The nibbles of `key` above `depth`, in hex: the path to a node.
pub fn nibble_path(key: &Key, depth: usize) -> String {
    (0..depth.min(64))
        .map(|d| char::from(b"0123456789ABCDEF"[usize::from(key.nibble(d).get())]))
        .collect()
}

/// Where a node sits: in a map of some kind, at a depth, under the nibble
/// path (a key prefix) leading to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Place {
    kind: MapKind,
    depth: usize,
    /// The path's nibbles, with every nibble from `depth` on zero.
    path: Key,
}

impl Place {
    /// The root of a map of kind `kind`.
    pub(crate) fn root(kind: MapKind) -> Place {
        Place {
            kind,
            depth: 0,
            path: Key::ZERO,
        }
    }

    /// The node at `depth` (≤ 64) on `key`'s path (only the nibbles above
    /// `depth` count).
    pub(crate) fn new(kind: MapKind, key: &Key, depth: usize) -> Place {
        Place {
            kind,
            depth,
            path: key.masked(depth.min(64)),
        }
    }

    /// The child on branch `branch` (< 16) of the inner node here.
    pub(crate) fn child(&self, branch: u8) -> Place {
        let mut path = self.path;
        let b = &mut path.0[self.depth / 2];
        if self.depth.is_multiple_of(2) {
            *b |= branch << 4;
        } else {
            *b |= branch & 0x0F;
        }
        Place {
            kind: self.kind,
            depth: self.depth + 1,
            path,
        }
    }

    /// The nibble path, in hex (empty for the root).
    pub(crate) fn nibbles(&self) -> String {
        nibble_path(&self.path, self.depth)
    }

    /// `reason` as an error about the node `hash` here.
    fn bad(&self, hash: Hash256, reason: String) -> StoreError {
        StoreError::BadNode {
            hash,
            path: self.nibbles(),
            reason,
        }
    }

    /// Checks that an inner node with `children` children may sit here:
    /// above depth 64, and not empty.
    pub(crate) fn check_inner(&self, hash: Hash256, children: usize) -> Result<(), StoreError> {
        if self.depth >= 64 {
            return Err(self.bad(
                hash,
                format!("an inner node at depth {}: none sit below 63", self.depth),
            ));
        }
        if children == 0 {
            return Err(self.bad(hash, "an inner node with no children".to_owned()));
        }
        Ok(())
    }

    /// Checks that a leaf with key `key` may sit here: not the root, and
    /// its key on the path.
    pub(crate) fn check_leaf(&self, hash: Hash256, key: &Key) -> Result<(), StoreError> {
        if self.depth == 0 {
            return Err(self.bad(
                hash,
                "a leaf as the map root: a map root must be an inner node".to_owned(),
            ));
        }
        if key.masked(self.depth.min(64)) != self.path {
            return Err(self.bad(hash, format!("leaf key {key} is not on its path")));
        }
        Ok(())
    }
}

/// A node of a map, as [`fetch_node`] returns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum MapNode {
    /// An inner node's sixteen child hashes (zero = empty branch).
    Inner(Box<[Hash256; 16]>),
    /// A leaf.
    Leaf {
        /// Its key (on its path).
        key: Key,
        /// Its data.
        data: Vec<u8>,
    },
}

/// A node [`fetch_node`] loaded and checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fetched {
    /// The node.
    pub(crate) node: MapNode,
    /// Bytes of its stored value.
    pub(crate) value_len: usize,
}

/// Checks that `obj` (verified against its hash: decoded from a store or
/// built from a wire blob) parses and may sit at `place`: checks 2–5 of
/// the [module docs](self).
pub(crate) fn check_node(obj: &NodeObject, place: &Place) -> Result<MapNode, StoreError> {
    let hash = obj.hash();
    let node = obj.parse().map_err(|e| e.at(hash, &place.nibbles()))?;
    let what = node.describe();
    match node {
        Node::Inner(children) => {
            let want = NodeType::for_map(place.kind);
            if obj.node_type() != Some(want) {
                return Err(place.bad(
                    hash,
                    format!(
                        "an inner node of another map kind (stored with type {}) in a {} map",
                        obj.node_type()
                            .map_or_else(|| "unknown".to_owned(), |t| format!("{t:?}")),
                        place.kind.name()
                    ),
                ));
            }
            place.check_inner(hash, children.iter().filter(|h| !h.is_zero()).count())?;
            Ok(MapNode::Inner(children))
        }
        Node::Leaf { kind, key, data } => {
            place.check_leaf(hash, &key)?;
            if kind != place.kind {
                return Err(place.bad(hash, format!("{what} in a {} map", place.kind.name())));
            }
            Ok(MapNode::Leaf { key, data })
        }
        Node::Ledger(_) => Err(place.bad(hash, "a ledger header inside a map".to_owned())),
    }
}

/// Loads the node stored under `hash` for `place` and applies every check
/// of the [module docs](self). `None` when the store does not have it.
pub(crate) fn fetch_node(
    store: &dyn NodeStore,
    hash: &Hash256,
    place: &Place,
) -> Result<Option<Fetched>, StoreError> {
    let Some(obj) = store.get(hash).map_err(|e| e.at(*hash, &place.nibbles()))? else {
        return Ok(None);
    };
    checked(obj, place).map(Some)
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
    place: &Place,
) -> Result<Fetched, StoreError> {
    let value =
        value.ok_or_else(|| StoreError::Missing { hash: *hash }.at(*hash, &place.nibbles()))?;
    let obj = NodeObject::decode(*hash, value).map_err(|e| e.at(*hash, &place.nibbles()))?;
    checked(obj, place)
}

/// [`fetched_value`] of many raw values at once (`values[i]` read under
/// `wanted[i].0`, for place `wanted[i].1`): the hashes are checked in one
/// multi-lane batch ([`NodeObject::decode_many`]); the same checks and
/// errors, one result per value.
pub(crate) fn fetched_values(
    wanted: &[(Hash256, Place)],
    values: Vec<Option<Vec<u8>>>,
) -> Vec<Result<Fetched, StoreError>> {
    let mut present = Vec::with_capacity(values.len());
    let mut results: Vec<Option<Result<Fetched, StoreError>>> = Vec::with_capacity(values.len());
    for ((hash, place), value) in wanted.iter().zip(values) {
        match value {
            Some(v) => {
                present.push((*hash, v));
                results.push(None);
            }
            None => results.push(Some(Err(
                StoreError::Missing { hash: *hash }.at(*hash, &place.nibbles())
            ))),
        }
    }
    let mut decoded = NodeObject::decode_many(present).into_iter();
    results
        .into_iter()
        .zip(wanted)
        .map(|(r, (hash, place))| {
            r.unwrap_or_else(|| {
                let obj = decoded
                    .next()
                    .expect("one decoded per present value")
                    .map_err(|e| e.at(*hash, &place.nibbles()))?;
                checked(obj, place)
            })
        })
        .collect()
}

/// Checks 2–5 of a verified node, and its value's length.
fn checked(obj: NodeObject, place: &Place) -> Result<Fetched, StoreError> {
    let node = check_node(&obj, place)?;
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
    place: &Place,
) -> Result<Fetched, StoreError> {
    fetch_node(store, hash, place)?
        .ok_or_else(|| StoreError::Missing { hash: *hash }.at(*hash, &place.nibbles()))
}
