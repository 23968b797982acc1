//! Reading a map straight from a store: each lookup walks from the root by
//! hash, loading one node per level through the one verified fetch
//! (`crate::map::fetch`: hash, type, place). Nothing is cached and no whole map
//! is loaded (the backed map, with a node cache, is [`crate::BackedMap`]).

use shamap::xrpl::wire;
use shamap::xrpl::LedgerHeader;
use shamap::{Hash256, Key, MapKind, Nibble, ProofPath};

use crate::error::StoreError;
use crate::map::fetch::fetch_required;
use crate::node::{Node, NodeType};
use crate::node_id::MapNode;
use crate::node_id::NodeId;
use crate::store::{NodeStore, NodeStoreExt};

/// What a retained or given hash names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RootKind {
    /// A ledger header.
    Ledger(LedgerHeader),
    /// The root of a map of this kind.
    Map(MapKind),
}

/// Finds out what `hash` names: a ledger header, or the root of a state or
/// transaction map (for transaction maps, the first leaf tells whether they
/// carry metadata). The nodes read are verified.
pub fn root_kind(store: &dyn NodeStore, hash: &Hash256) -> Result<RootKind, StoreError> {
    let root = store.load(hash)?;
    let mut node = root.parse()?;
    if let Node::Ledger(h) = node {
        return Ok(RootKind::Ledger(h));
    }
    if root.node_type() == Some(NodeType::AccountNode) {
        return Ok(RootKind::Map(MapKind::AccountState));
    }
    let mut at = *hash;
    for _ in 0..=64 {
        match node {
            Node::Leaf { kind, .. } => return Ok(RootKind::Map(kind)),
            Node::Inner(children) => {
                at = children
                    .iter()
                    .copied()
                    .find(|h| !h.is_zero())
                    .ok_or_else(|| StoreError::Corrupt {
                        hash: at,
                        reason: "inner node with no children".to_owned(),
                    })?;
                node = store.load(&at)?.parse()?;
            }
            Node::Ledger(_) => break,
        }
    }
    Err(StoreError::WrongType {
        hash: *hash,
        found: "a tree without a leaf",
        expected: "a map root",
    })
}

/// A map read from a store by root hash.
pub struct StoredMap<'s> {
    store: &'s dyn NodeStore,
    root: Hash256,
    kind: MapKind,
    root_children: Option<Box<[Hash256; 16]>>,
}

impl<'s> StoredMap<'s> {
    /// Opens the map whose root is `root`, loading and verifying the root
    /// node. A zero root is the empty map. Fails when the root is absent,
    /// corrupt, not an inner node, or stored as another map kind's node.
    pub fn open(
        store: &'s dyn NodeStore,
        root: Hash256,
        kind: MapKind,
    ) -> Result<StoredMap<'s>, StoreError> {
        let root_children = if root.is_zero() {
            None
        } else {
            match fetch_required(store, &root, kind, &NodeId::ROOT)?.node {
                MapNode::Inner(c) => Some(c),
                MapNode::Leaf { .. } => unreachable!("the fetch refuses a leaf as the root"),
            }
        };
        Ok(StoredMap {
            store,
            root,
            kind,
            root_children,
        })
    }

    /// The root hash.
    pub fn root_hash(&self) -> Hash256 {
        self.root
    }

    /// The map kind.
    pub fn kind(&self) -> MapKind {
        self.kind
    }

    /// The store the map is read from.
    pub fn store(&self) -> &'s dyn NodeStore {
        self.store
    }

    /// Loads and checks the node under `hash` at `id`.
    fn node_at(&self, hash: &Hash256, id: &NodeId) -> Result<MapNode, StoreError> {
        Ok(fetch_required(self.store, hash, self.kind, id)?.node)
    }

    /// The data under `key`, walking from the root (one verified load per
    /// level; a node that does not fit its place is an error).
    pub fn get(&self, key: &Key) -> Result<Option<Vec<u8>>, StoreError> {
        let Some(root) = &self.root_children else {
            return Ok(None);
        };
        let mut children = root.clone();
        for depth in 0..64 {
            let h = children[usize::from(key.nibble(depth).get())];
            if h.is_zero() {
                return Ok(None);
            }
            match self.node_at(&h, &NodeId::on_path(key, depth + 1))? {
                MapNode::Inner(c) => children = c,
                MapNode::Leaf { key: k, data } => return Ok((k == *key).then_some(data)),
            }
        }
        Ok(None)
    }

    /// The proof path of `key` (rippled's `getProofPath`: wire blobs, the
    /// leaf holding `key` or the last node on its path first, the root
    /// last), each node verified as it is loaded; the same proof the
    /// in-memory map gives ([`shamap::Snapshot::proof_path`]).
    pub fn proof_path(&self, key: &Key) -> Result<ProofPath, StoreError> {
        let mut nodes = Vec::new();
        let mut included = false;
        if let Some(root) = &self.root_children {
            nodes.push(wire::encode_inner(root));
            let mut children = root.clone();
            for depth in 0..64 {
                let h = children[usize::from(key.nibble(depth).get())];
                if h.is_zero() {
                    break;
                }
                match self.node_at(&h, &NodeId::on_path(key, depth + 1))? {
                    MapNode::Inner(c) => {
                        nodes.push(wire::encode_inner(&c));
                        children = c;
                    }
                    MapNode::Leaf { key: k, data } => {
                        nodes.push(wire::encode_leaf(self.kind, &k, &data));
                        included = k == *key;
                        break;
                    }
                }
            }
            nodes.reverse();
        }
        Ok(ProofPath {
            key: *key,
            kind: self.kind,
            root: self.root,
            nodes,
            included,
        })
    }

    /// All items in ascending key order. Yields an error (and then stops) at
    /// the first node that is missing or bad.
    pub fn iter(&self) -> StoredIter<'_, 's> {
        StoredIter {
            map: self,
            stack: self
                .root_children
                .as_ref()
                .map(|c| Frame {
                    id: NodeId::ROOT,
                    children: c.clone(),
                    next: 0,
                })
                .into_iter()
                .collect(),
            done: false,
        }
    }
}

/// An inner node on the iterator's path: where it sits, its children,
/// and the first branch not yet visited.
struct Frame {
    id: NodeId,
    children: Box<[Hash256; 16]>,
    next: usize,
}

/// Iterator over a [`StoredMap`] in key order.
pub struct StoredIter<'m, 's> {
    map: &'m StoredMap<'s>,
    stack: Vec<Frame>,
    done: bool,
}

impl Iterator for StoredIter<'_, '_> {
    type Item = Result<(Key, Vec<u8>), StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        loop {
            if self.stack.is_empty() {
                self.done = true;
                return None;
            }
            let top = self.stack.last_mut()?;
            let Some(b) = Nibble::all()
                .skip(top.next)
                .find(|b| !top.children[usize::from(b.get())].is_zero())
            else {
                self.stack.pop();
                continue;
            };
            top.next = usize::from(b.get()) + 1;
            let h = top.children[usize::from(b.get())];
            let id = top.id.child(b);
            match self.map.node_at(&h, &id) {
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
                Ok(MapNode::Inner(children)) => self.stack.push(Frame {
                    id,
                    children,
                    next: 0,
                }),
                Ok(MapNode::Leaf { key, data }) => return Some(Ok((key, data))),
            }
        }
    }
}
