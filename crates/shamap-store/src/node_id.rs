//! A node's position in a map: [`NodeId`], the depth and the key prefix
//! leading to the node (rippled's `SHAMapNodeID`), and [`check_node`],
//! whether a node may sit there. Every walk over stored nodes names
//! positions with it: the verified fetch (`crate::map::fetch`), the
//! reader, verify, the backed map, sync (whose wire format it is), and the
//! audit of a NuDB store (`crate::backend::nudb`), which runs the same
//! node checks on its own walk; so it sits beside the traits, below both
//! `backend/` and `map/`.

use shamap::{Hash256, Key, MapKind, Nibble};

use crate::error::StoreError;
use crate::node::{Node, NodeObject, NodeType};

/// Where a node sits in a map: its depth (0 for the root, at most 64) and
/// the nibble path leading to it, a key whose nibbles from the depth on are
/// zero. On the wire (rippled's 33-byte `SHAMapNodeID`): the masked key,
/// then the depth.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId {
    key: Key,
    depth: u8,
}

impl NodeId {
    /// The root's ID.
    pub const ROOT: NodeId = NodeId {
        key: Key::ZERO,
        depth: 0,
    };

    /// The ID of the node at `depth` (≤ 64) on `key`'s path; `None` for a
    /// deeper one.
    pub fn new(key: &Key, depth: u8) -> Option<NodeId> {
        (depth <= 64).then(|| NodeId {
            key: key.masked(usize::from(depth)),
            depth,
        })
    }

    /// The ID of the node at `depth` on `key`'s path, for a walk: its
    /// depths never pass 64 (a node there is a leaf, with no children), and
    /// a deeper one is taken as 64.
    pub(crate) fn on_path(key: &Key, depth: usize) -> NodeId {
        let depth = depth.min(64);
        NodeId {
            key: key.masked(depth),
            depth: depth as u8,
        }
    }

    /// The masked key: the nibble path, zero from the depth on.
    pub fn key(&self) -> &Key {
        &self.key
    }

    /// The depth.
    pub fn depth(&self) -> u8 {
        self.depth
    }

    /// The ID of the child on branch `branch` of the inner node here
    /// (which sits above depth 64).
    pub fn child(&self, branch: Nibble) -> NodeId {
        let mut key = self.key;
        key.set_nibble(usize::from(self.depth), branch);
        NodeId {
            key,
            depth: self.depth + 1,
        }
    }

    /// The nibble path, in hex (empty for the root): how errors name a
    /// node's place.
    pub fn nibbles(&self) -> String {
        (0..usize::from(self.depth))
            .map(|d| char::from(b"0123456789ABCDEF"[usize::from(self.key.nibble(d).get())]))
            .collect()
    }

    /// The 33 wire bytes: masked key ‖ depth.
    pub fn to_bytes(&self) -> [u8; 33] {
        let mut out = [0u8; 33];
        out[..32].copy_from_slice(&self.key.0);
        out[32] = self.depth;
        out
    }

    /// Parses 33 wire bytes; `None` unless the depth is ≤ 64 and the key
    /// has no bits below it.
    pub fn from_bytes(b: &[u8]) -> Option<NodeId> {
        if b.len() != 33 {
            return None;
        }
        let key = Key::from_slice(&b[..32])?;
        let id = NodeId::new(&key, b[32])?;
        (id.key == key).then_some(id)
    }

    /// `reason` as an error about the node `hash` here.
    pub(crate) fn bad(&self, hash: Hash256, reason: String) -> StoreError {
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
        if key.masked(usize::from(self.depth)) != self.key {
            return Err(self.bad(hash, format!("leaf key {key} is not on its path")));
        }
        Ok(())
    }
}

/// A node of a map, as [`check_node`] (and so the verified fetch,
/// `crate::map::fetch`) returns it.
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

/// Checks that `obj` (verified against its hash: decoded from a store or
/// built from a wire blob) parses and may sit at `id` in a map of kind
/// `kind`: checks 2–5 of the verified fetch
/// (`crate::map::fetch`).
pub(crate) fn check_node(
    obj: &NodeObject,
    kind: MapKind,
    id: &NodeId,
) -> Result<MapNode, StoreError> {
    let hash = obj.hash();
    let node = obj.parse().map_err(|e| e.at(hash, &id.nibbles()))?;
    let what = node.describe();
    match node {
        Node::Inner(children) => {
            let want = NodeType::for_map(kind);
            // Type 0: an inner node read from rippled's NuDB store, which
            // does not record the map kind of inner nodes.
            if obj.node_type().is_some_and(|t| t != want) {
                return Err(id.bad(
                    hash,
                    format!(
                        "an inner node of another map kind (stored with type {}) in a {} map",
                        obj.node_type()
                            .map_or_else(|| "unknown".to_owned(), |t| format!("{t:?}")),
                        kind.name()
                    ),
                ));
            }
            id.check_inner(hash, children.iter().filter(|h| !h.is_zero()).count())?;
            Ok(MapNode::Inner(children))
        }
        Node::Leaf {
            kind: leaf_kind,
            key,
            data,
        } => {
            id.check_leaf(hash, &key)?;
            if leaf_kind != kind {
                return Err(id.bad(hash, format!("{what} in a {} map", kind.name())));
            }
            Ok(MapNode::Leaf { key, data })
        }
        Node::Ledger(_) => Err(id.bad(hash, "a ledger header inside a map".to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Children set the nibble at their parent's depth; the path in hex,
    /// the wire bytes and the masking agree with `NodeId::new`.
    #[test]
    fn children_extend_the_path_by_one_nibble() {
        let key = Key::from_hex(&"3A".repeat(32)).expect("hex");
        let mut id = NodeId::ROOT;
        for d in 0..64 {
            assert_eq!(Some(id), NodeId::new(&key, d as u8));
            assert_eq!(id, NodeId::on_path(&key, d));
            assert_eq!(id.nibbles(), "3A".repeat(32)[..d]);
            assert_eq!(NodeId::from_bytes(&id.to_bytes()), Some(id));
            id = id.child(key.nibble(d));
        }
        assert_eq!(id.key(), &key);
        assert_eq!(id.depth(), 64);
        assert_eq!(NodeId::new(&key, 65), None);
    }
}
