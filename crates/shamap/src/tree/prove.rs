//! Proof generation: the wire blobs of the nodes on a key's path, in
//! rippled's `getProofPath` order (leaf or last node first, root last).
//! Verification of untrusted proofs is in the `verify` module.

use crate::hash::{Hash256, Key};
use crate::hashfn::HashFunction;
use crate::kind::MapKind;
use crate::node_hash;
use crate::ptr::{hash_leaf_children, NodePtr};
use crate::xrpl::wire::{encode_inner, encode_leaf};

use super::map::ShaMap;
use super::snapshot::Snapshot;
use super::tree_ref::TreeRef;

/// The nodes on one key's path, as wire blobs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProofPath {
    /// The key the proof is about.
    pub key: Key,
    /// The map kind (decides leaf hashing).
    pub kind: MapKind,
    /// The root hash the proof leads to.
    pub root: Hash256,
    /// Wire blobs: the leaf holding `key` (inclusion) or the last node on
    /// the path (non-inclusion: an inner node with the key's branch empty,
    /// or a leaf with another key) first, the root last. Empty for an empty
    /// map.
    pub nodes: Vec<Vec<u8>>,
    /// True when the map holds `key`.
    pub included: bool,
}

impl Snapshot {
    /// The proof path for `key` (inclusion or non-inclusion).
    pub fn proof_path(&self, key: &Key) -> ProofPath {
        proof_path(self.tree(), self.hashing(), self.hash, key)
    }

    /// The union of the proof paths of `keys`, each node once, root first
    /// (depth-first, branch order). Smaller than the sum of single proofs
    /// whenever paths share nodes (verification: the `verify` module).
    pub fn multi_proof(&self, keys: &[Key]) -> Vec<Vec<u8>> {
        multi_proof(self.tree(), self.hashing(), keys)
    }

    fn hashing(&self) -> Hashing {
        Hashing {
            kind: self.kind,
            f: self.hash_fn,
        }
    }
}

impl ShaMap {
    /// The proof path for `key` (hashes the map first).
    pub fn proof_path(&mut self, key: &Key) -> ProofPath {
        let root = self.root_hash();
        proof_path(self.tree(), self.hashing(), root, key)
    }

    /// The union of the proof paths of `keys` (hashes the map first); see
    /// [`Snapshot::multi_proof`].
    pub fn multi_proof(&mut self, keys: &[Key]) -> Vec<Vec<u8>> {
        self.root_hash();
        multi_proof(self.tree(), self.hashing(), keys)
    }

    fn hashing(&self) -> Hashing {
        Hashing {
            kind: self.kind,
            f: self.hash_fn,
        }
    }
}

/// What hashing a leaf takes: the map's kind and hash function.
#[derive(Clone, Copy)]
struct Hashing {
    kind: MapKind,
    f: HashFunction,
}

/// A current node's hash: the stored one, or for a leaf of a tree whose
/// leaves keep none (hashless-leaf mode), computed.
fn node_hash_of(tree: TreeRef<'_>, h: Hashing, node: &NodePtr) -> Hash256 {
    match node.leaf() {
        Some(l) if !tree.leaf_hashes.stored() => {
            node_hash::hash_leaf(h.f, h.kind, l.key(), l.data())
        }
        _ => *node.hash(),
    }
}

fn child_hashes(tree: TreeRef<'_>, h: Hashing, node: &NodePtr) -> [Hash256; 16] {
    let inner = node.inner().expect("inner node");
    let mut out = [Hash256::ZERO; 16];
    if tree.leaf_hashes.stored() {
        for (c, b) in inner.children().iter().zip(inner.mask().branches()) {
            out[usize::from(b.get())] = *c.hash();
        }
        return out;
    }
    // Hashless-leaf mode: the leaf children are hashed together, in one call
    // to the multi-lane hasher.
    let mut leaves = [[0u8; 32]; 16];
    hash_leaf_children(node, h.kind, h.f.batch(), &mut leaves);
    let mut next = leaves.iter();
    for (c, b) in inner.children().iter().zip(inner.mask().branches()) {
        out[usize::from(b.get())] = if c.is_leaf() {
            Hash256(*next.next().expect("a hash for each leaf child"))
        } else {
            *c.hash()
        };
    }
    out
}

fn node_blob(tree: TreeRef<'_>, h: Hashing, node: &NodePtr) -> Vec<u8> {
    match node.leaf() {
        Some(l) => encode_leaf(h.kind, l.key(), l.data()),
        None => encode_inner(&child_hashes(tree, h, node)),
    }
}

fn proof_path(tree: TreeRef<'_>, h: Hashing, root: Hash256, key: &Key) -> ProofPath {
    let kind = h.kind;
    let mut nodes = Vec::new();
    let mut included = false;
    if tree.len > 0 {
        let mut node = tree.root;
        let mut depth = 0;
        loop {
            nodes.push(node_blob(tree, h, node));
            if let Some(leaf) = node.leaf() {
                included = leaf.key() == key;
                break;
            }
            match node.inner().expect("inner").child(key.nibble(depth)) {
                None => break,
                Some(child) => {
                    node = child;
                    depth += 1;
                }
            }
        }
        nodes.reverse();
    }
    ProofPath {
        key: *key,
        kind,
        root,
        nodes,
        included,
    }
}

fn multi_proof(tree: TreeRef<'_>, h: Hashing, keys: &[Key]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    if tree.len == 0 || keys.is_empty() {
        return out;
    }
    let mut sorted: Vec<Key> = keys.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    collect(tree, h, tree.root, 0, &sorted, &mut out);
    out
}

/// Emits `node` and, for each branch some of `keys` take, that child's
/// subtree; `keys` all share the path to `node`.
fn collect(
    tree: TreeRef<'_>,
    h: Hashing,
    node: &NodePtr,
    depth: usize,
    keys: &[Key],
    out: &mut Vec<Vec<u8>>,
) {
    out.push(node_blob(tree, h, node));
    let Some(inner) = node.inner() else { return };
    let mut rest = keys;
    while let Some(first) = rest.first() {
        let b = first.nibble(depth);
        let n = rest.iter().take_while(|k| k.nibble(depth) == b).count();
        if let Some(child) = inner.child(b) {
            collect(tree, h, child, depth + 1, &rest[..n], out);
        }
        rest = &rest[n..];
    }
}

/// One node of a tree as a node store keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredNode {
    /// The node's hash (its key in a node store).
    pub hash: Hash256,
    /// Depth of the node (0 for the root).
    pub depth: u8,
    /// True for a leaf.
    pub is_leaf: bool,
    /// The node's "prefix" serialization (its hash message, as
    /// [`crate::node_hash`] lays it out), whose SHA512Half is `hash`:
    /// `MIN\0 ‖ 16 child hashes` for an inner node, the kind's leaf prefix ‖
    /// data ‖ key (no key for tx-only leaves) for a leaf.
    pub prefix_bytes: Vec<u8>,
}

impl Snapshot {
    /// Calls `f` for every node of the tree, parents before children, in
    /// branch order. Each node's prefix serialization hashes to its hash, so
    /// a store can check everything it is given.
    pub fn for_each_node(&self, f: impl FnMut(StoredNode)) {
        self.for_each_node_where(|_, _| true, f);
    }

    /// [`Snapshot::for_each_node`] for the nodes `select` picks: it is
    /// called with every node's hash and the length of its prefix
    /// serialization, and only the nodes it accepts are serialized and
    /// given to `f` (same order). A bulk writer uses it to take a tree's
    /// nodes one hash range at a time without serializing the rest.
    pub fn for_each_node_where(
        &self,
        mut select: impl FnMut(&Hash256, usize) -> bool,
        mut f: impl FnMut(StoredNode),
    ) {
        if self.len > 0 {
            let h = self.hashing();
            visit(self.tree(), h, &self.root, 0, &mut select, &mut f);
        }
    }
}

fn visit(
    tree: TreeRef<'_>,
    h: Hashing,
    node: &NodePtr,
    depth: u8,
    select: &mut impl FnMut(&Hash256, usize) -> bool,
    f: &mut impl FnMut(StoredNode),
) {
    let kind = h.kind;
    let len = match node.leaf() {
        Some(l) => node_hash::leaf_message_len(kind, l.data().len()),
        None => node_hash::INNER_MESSAGE_LEN,
    };
    let hash = node_hash_of(tree, h, node);
    if select(&hash, len) {
        let bytes = match node.leaf() {
            Some(l) => node_hash::leaf_message(kind, l.key(), l.data()),
            None => node_hash::inner_message(&child_hashes(tree, h, node)).to_vec(),
        };
        f(StoredNode {
            hash,
            depth,
            is_leaf: node.is_leaf(),
            prefix_bytes: bytes,
        });
    }
    if let Some(inner) = node.inner() {
        for c in inner.children() {
            visit(tree, h, c, depth + 1, select, f);
        }
    }
}
