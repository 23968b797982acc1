//! Verification of untrusted proofs against a trusted root hash.
//!
//! A proof is a list of nodes in rippled's peer wire format (see
//! [`crate::xrpl::wire`]). The verifier trusts nothing but the root hash it
//! is given: every node must hash to the value its parent names, so the walk
//! follows exactly the tree that root commits to, and a forged or tampered
//! node shows up as a hash mismatch or a decoding error.
//!
//! | function | proof | answers |
//! |---|---|---|
//! | [`verify_path`] | rippled's `getProofPath`: one path, leaf (or last node) first, root last, at most [`MAX_PATH_NODES`] | is `key` in the map, and with what data |
//! | [`verify_multi`] | the union of several paths, each node once, any order | the same, for each of several keys |
//! | [`verify_tx_in_ledger`] | a ledger header plus a path in its transaction map | the transaction and its metadata, bound to a ledger hash |
//!
//! A path ends in one of three ways:
//!
//! | last node | outcome |
//! |---|---|
//! | the leaf holding `key` | [`ProofOutcome::Included`] |
//! | an inner node whose branch for `key` is empty | [`ProofOutcome::Absent`] |
//! | a leaf holding another key (it occupies the only slot `key` could take) | [`ProofOutcome::Absent`] |
//!
//! Unlike older rippled, the verifier checks the leaf's key, so a proof for
//! one key never passes as a proof of inclusion of another.
//!
//! Untrusted input: the verifiers never panic, check the node count before
//! doing any work (so work is bounded by 65 node decodes and hashes per
//! key), and allocate at most a constant times the size of their input.
//!
//! ```
//! use shamap::verify::{verify_path, ProofOutcome};
//! use shamap::{Key, MapKind, ShaMap};
//!
//! let mut map = ShaMap::new(MapKind::AccountState);
//! map.insert(Key([1; 32]), b"twelve bytes").unwrap();
//! let proof = map.proof_path(&Key([1; 32]));
//! let outcome = verify_path(&map.root_hash(), &Key([1; 32]), &proof.nodes).unwrap();
//! assert_eq!(
//!     outcome,
//!     ProofOutcome::Included { data: b"twelve bytes".to_vec(), kind: MapKind::AccountState }
//! );
//! ```

use std::collections::hash_map::{Entry, HashMap};

use crate::hash::{Hash256, Key};
use crate::hashfn::HashFunction;
use crate::kind::MapKind;
use crate::xrpl::ledger::LedgerHeader;
use crate::xrpl::tx::{split_tx_with_meta, transaction_id};
use crate::xrpl::vl::VlError;
use crate::xrpl::wire::{decode, WireError, WireNode};

/// The most nodes a single path can hold: 64 inner nodes (depths 0..=63)
/// and a leaf at depth 64. rippled's `verifyProofPath` has the same bound.
pub const MAX_PATH_NODES: usize = 65;

/// Inner nodes on a path sit at depths 0..=63; one at depth 64 would have
/// no nibble left to branch on.
const MAX_INNER_DEPTH: usize = 63;

/// What a valid proof shows about its key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProofOutcome {
    /// The map holds the key, with this data.
    Included {
        /// The item's data, as the leaf holds it.
        data: Vec<u8>,
        /// The map kind the leaf's type names (it decides the leaf hash).
        kind: MapKind,
    },
    /// The map does not hold the key.
    Absent,
}

impl ProofOutcome {
    /// True for [`ProofOutcome::Included`].
    pub fn is_included(&self) -> bool {
        matches!(self, ProofOutcome::Included { .. })
    }
}

/// Why a proof was rejected. Node indexes are positions in the slice as
/// given (for a path: 0 is the leaf end, the last is the root).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProofError {
    /// More nodes than the proof can legitimately hold (checked before any
    /// other work).
    #[error("proof has {count} nodes, more than the {max} allowed")]
    TooManyNodes {
        /// Nodes given.
        count: usize,
        /// The bound.
        max: usize,
    },
    /// No nodes, but the root is not that of the empty map.
    #[error("empty proof for a non-empty map (root {root})")]
    EmptyPath {
        /// The root the proof was checked against.
        root: Hash256,
    },
    /// A node that is not valid wire bytes.
    #[error("node {index}: {error}")]
    Malformed {
        /// Position of the node.
        index: usize,
        /// What is wrong with its bytes.
        error: WireError,
    },
    /// A node that does not hash to what its parent (or the root) names.
    #[error("node {index} hashes to {found}, expected {expected}")]
    HashMismatch {
        /// Position of the node.
        index: usize,
        /// The hash its parent names (the trusted root for the root).
        expected: Hash256,
        /// The node's own hash.
        found: Hash256,
    },
    /// The path ended (at a leaf, or at an inner node whose branch for the
    /// key is empty) but more nodes follow; covers a leaf in the middle.
    #[error("{count} node(s) follow the end of the path")]
    ExtraNodes {
        /// Nodes left over (positions `0..count`).
        count: usize,
    },
    /// The proof stops before the key's path ends: the node its parent
    /// names at this depth is not in the proof (e.g. a missing leaf).
    #[error("the proof lacks node {hash} at depth {depth}")]
    MissingNode {
        /// Depth of the missing node.
        depth: usize,
        /// The hash its parent names.
        hash: Hash256,
    },
    /// An inner node at depth 64, where no nibble is left to branch on.
    #[error("node {index} is an inner node at depth 64, below the deepest leaf")]
    TooDeep {
        /// Position of the node.
        index: usize,
    },
    /// The root hash names a leaf; a map's root is always an inner node.
    #[error("node {index} is a leaf where the root must be an inner node")]
    RootIsLeaf {
        /// Position of the node.
        index: usize,
    },
    /// A leaf at a position its key cannot reach.
    #[error("node {index} holds key {leaf_key}, which does not belong at depth {depth}")]
    LeafOutOfPlace {
        /// Position of the node.
        index: usize,
        /// The key the leaf holds.
        leaf_key: Key,
        /// Where it was found.
        depth: usize,
    },
    /// Leaves of different map kinds in one proof.
    #[error("node {index} is a {found} leaf but node {first} is a {expected} leaf")]
    MixedKinds {
        /// Position of the odd leaf.
        index: usize,
        /// Its kind.
        found: &'static str,
        /// Position of the first leaf.
        first: usize,
        /// The first leaf's kind.
        expected: &'static str,
    },
    /// A multi-key proof naming the same node twice.
    #[error("node {index} repeats node {first}")]
    DuplicateNode {
        /// Position of the repeat.
        index: usize,
        /// Position of the first occurrence.
        first: usize,
    },
    /// A multi-key proof carrying a node that no key's path uses.
    #[error("node {index} is not on the path of any key")]
    UnusedNode {
        /// Position of the first unused node.
        index: usize,
    },
    /// A ledger header that does not hash to the trusted ledger hash.
    #[error("ledger header hashes to {found}, expected {expected}")]
    HeaderMismatch {
        /// The trusted ledger hash.
        expected: Hash256,
        /// The header's hash.
        found: Hash256,
    },
    /// A valid proof that the key is not in the map, where inclusion was
    /// required.
    #[error("the proof shows that {key} is not in the map")]
    NotIncluded {
        /// The key.
        key: Key,
    },
    /// A transaction proof whose leaf is not a transaction+metadata leaf.
    #[error("the leaf is a {found} leaf, expected a tx leaf")]
    WrongKind {
        /// The leaf's kind name.
        found: &'static str,
    },
    /// Transaction leaf data that does not split into transaction and
    /// metadata.
    #[error("transaction leaf data: {0}")]
    BadTxData(VlError),
    /// A transaction whose blob does not hash to the requested ID.
    #[error("the transaction's ID is {found}, not the requested ID")]
    TxIdMismatch {
        /// The ID of the blob found.
        found: Hash256,
    },
}

/// Verifies a proof path (rippled's `getProofPath` order: the leaf or last
/// node first, the root last) for `key` against the trusted `root`.
///
/// An empty path proves absence from the empty map (zero root) and nothing
/// else. Rejects more than [`MAX_PATH_NODES`] nodes before doing any work,
/// nodes that do not decode or do not hash to what their parent names,
/// nodes after the end of the path, and paths that stop before their end.
pub fn verify_path(
    root: &Hash256,
    key: &Key,
    nodes: &[impl AsRef<[u8]>],
) -> Result<ProofOutcome, ProofError> {
    verify_path_with(HashFunction::Sha512Half, root, key, nodes)
}

/// [`verify_path`] for a map whose nodes are hashed with `f` (see
/// [`HashFunction`]).
pub fn verify_path_with(
    f: HashFunction,
    root: &Hash256,
    key: &Key,
    nodes: &[impl AsRef<[u8]>],
) -> Result<ProofOutcome, ProofError> {
    if nodes.len() > MAX_PATH_NODES {
        return Err(ProofError::TooManyNodes {
            count: nodes.len(),
            max: MAX_PATH_NODES,
        });
    }
    if nodes.is_empty() {
        return if root.is_zero() {
            Ok(ProofOutcome::Absent)
        } else {
            Err(ProofError::EmptyPath { root: *root })
        };
    }
    let mut expected = *root;
    // Root first: index n-1 at depth 0 down to index 0 at depth n-1.
    for (depth, index) in (0..nodes.len()).rev().enumerate() {
        let node = decode(nodes[index].as_ref())
            .map_err(|error| ProofError::Malformed { index, error })?;
        let found = node.hash_with(f);
        if found != expected {
            return Err(ProofError::HashMismatch {
                index,
                expected,
                found,
            });
        }
        match step(&node, index, depth, key)? {
            Step::Down(child) => expected = child,
            Step::End(outcome) => {
                return if index == 0 {
                    Ok(outcome)
                } else {
                    Err(ProofError::ExtraNodes { count: index })
                };
            }
        }
    }
    // The last node given was an inner node with a child on the key's path.
    Err(ProofError::MissingNode {
        depth: nodes.len(),
        hash: expected,
    })
}

/// Verifies a multi-key proof (the union of the keys' paths, each node
/// once, in any order; see `ShaMap::multi_proof`) against the trusted
/// `root`, and returns each key's outcome in the order of `keys`.
///
/// Every node must be on some key's path (a proof cannot carry extra
/// data), no node may appear twice, and all leaves must be of one map kind.
/// At most `65 × max(keys.len(), 1)` nodes are accepted, checked before any
/// other work.
pub fn verify_multi(
    root: &Hash256,
    keys: &[Key],
    nodes: &[impl AsRef<[u8]>],
) -> Result<Vec<(Key, ProofOutcome)>, ProofError> {
    verify_multi_with(HashFunction::Sha512Half, root, keys, nodes)
}

/// [`verify_multi`] for a map whose nodes are hashed with `f` (see
/// [`HashFunction`]).
pub fn verify_multi_with(
    f: HashFunction,
    root: &Hash256,
    keys: &[Key],
    nodes: &[impl AsRef<[u8]>],
) -> Result<Vec<(Key, ProofOutcome)>, ProofError> {
    let max = MAX_PATH_NODES.saturating_mul(keys.len().max(1));
    if nodes.len() > max {
        return Err(ProofError::TooManyNodes {
            count: nodes.len(),
            max,
        });
    }
    let mut decoded: Vec<WireNode> = Vec::with_capacity(nodes.len());
    let mut by_hash: HashMap<Hash256, usize> = HashMap::with_capacity(nodes.len());
    let mut first_leaf: Option<(usize, MapKind)> = None;
    for (index, blob) in nodes.iter().enumerate() {
        let node = decode(blob.as_ref()).map_err(|error| ProofError::Malformed { index, error })?;
        if let WireNode::Leaf { kind, .. } = &node {
            match first_leaf {
                None => first_leaf = Some((index, *kind)),
                Some((first, k)) if k != *kind => {
                    return Err(ProofError::MixedKinds {
                        index,
                        found: kind.name(),
                        first,
                        expected: k.name(),
                    })
                }
                Some(_) => {}
            }
        }
        match by_hash.entry(node.hash_with(f)) {
            Entry::Occupied(e) => {
                return Err(ProofError::DuplicateNode {
                    index,
                    first: *e.get(),
                })
            }
            Entry::Vacant(e) => {
                e.insert(index);
            }
        }
        decoded.push(node);
    }

    let mut used = vec![false; decoded.len()];
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        let outcome = if root.is_zero() {
            ProofOutcome::Absent
        } else {
            walk(root, key, &decoded, &by_hash, &mut used)?
        };
        out.push((*key, outcome));
    }
    if let Some(index) = used.iter().position(|u| !u) {
        return Err(ProofError::UnusedNode { index });
    }
    Ok(out)
}

/// One key's walk through the nodes of a multi-key proof.
fn walk(
    root: &Hash256,
    key: &Key,
    nodes: &[WireNode],
    by_hash: &HashMap<Hash256, usize>,
    used: &mut [bool],
) -> Result<ProofOutcome, ProofError> {
    let mut expected = *root;
    // Each step goes one level down and `step` ends the walk by depth 64
    // (a leaf, or an error for an inner node), so the bound below is never
    // reached; it keeps the loop visibly finite.
    for depth in 0..=MAX_PATH_NODES {
        let Some(&index) = by_hash.get(&expected) else {
            return Err(ProofError::MissingNode {
                depth,
                hash: expected,
            });
        };
        used[index] = true;
        match step(&nodes[index], index, depth, key)? {
            Step::Down(child) => expected = child,
            Step::End(outcome) => return Ok(outcome),
        }
    }
    Err(ProofError::TooDeep { index: 0 })
}

/// Where one verified node sends the walk.
enum Step {
    /// On to the child with this hash.
    Down(Hash256),
    /// The path ends here.
    End(ProofOutcome),
}

/// The walk's move at `node` (already checked against its hash), which sits
/// at `depth` on `key`'s path and is at position `index` in the proof.
fn step(node: &WireNode, index: usize, depth: usize, key: &Key) -> Result<Step, ProofError> {
    match node {
        WireNode::Inner(children) => {
            if depth > MAX_INNER_DEPTH {
                return Err(ProofError::TooDeep { index });
            }
            let child = children[usize::from(key.nibble(depth).get())];
            Ok(if child.is_zero() {
                Step::End(ProofOutcome::Absent)
            } else {
                Step::Down(child)
            })
        }
        WireNode::Leaf {
            kind,
            key: leaf_key,
            data,
        } => {
            if depth == 0 {
                return Err(ProofError::RootIsLeaf { index });
            }
            if leaf_key == key {
                return Ok(Step::End(ProofOutcome::Included {
                    data: data.clone(),
                    kind: *kind,
                }));
            }
            // The walk reached this leaf by following `key`'s nibbles, so in
            // a well-formed tree the leaf's key shares them.
            if leaf_key.common_prefix_nibbles(key) < depth {
                return Err(ProofError::LeafOutOfPlace {
                    index,
                    leaf_key: *leaf_key,
                    depth,
                });
            }
            Ok(Step::End(ProofOutcome::Absent))
        }
    }
}

/// A proof that a transaction is in a ledger: the ledger's header and the
/// transaction's path in the header's transaction+metadata map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxInLedgerProof {
    /// The ledger header; it must hash to the trusted ledger hash, and its
    /// `transaction_hash` is the root the path is checked against.
    pub header: LedgerHeader,
    /// Wire blobs of the transaction's path, leaf first, root last.
    pub tx_path: Vec<Vec<u8>>,
}

/// Verifies that the transaction `tx_id` is in the ledger with hash
/// `ledger_hash`, and returns its `(tx_blob, meta_blob)`.
///
/// The header must hash to `ledger_hash`; the path must prove inclusion of
/// `tx_id` in the transaction+metadata map whose root is the header's
/// `transaction_hash`; the leaf data must split into two VL blobs, the
/// first of which hashes to `tx_id`.
pub fn verify_tx_in_ledger(
    ledger_hash: &Hash256,
    tx_id: &Key,
    proof: &TxInLedgerProof,
) -> Result<(Vec<u8>, Vec<u8>), ProofError> {
    let found = proof.header.hash();
    if found != *ledger_hash {
        return Err(ProofError::HeaderMismatch {
            expected: *ledger_hash,
            found,
        });
    }
    match verify_path(&proof.header.transaction_hash, tx_id, &proof.tx_path)? {
        ProofOutcome::Absent => Err(ProofError::NotIncluded { key: *tx_id }),
        ProofOutcome::Included { kind, .. } if kind != MapKind::TransactionWithMeta => {
            Err(ProofError::WrongKind { found: kind.name() })
        }
        ProofOutcome::Included { data, .. } => {
            let (tx, meta) = split_tx_with_meta(&data).map_err(ProofError::BadTxData)?;
            let found = transaction_id(tx);
            if found != Hash256::from(*tx_id) {
                return Err(ProofError::TxIdMismatch { found });
            }
            Ok((tx.to_vec(), meta.to_vec()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xrpl::wire::{encode_inner, encode_leaf};

    fn leaf_blob(key: Key) -> Vec<u8> {
        encode_leaf(MapKind::AccountState, &key, &[7; 12])
    }

    #[test]
    fn a_hand_built_path_verifies_and_its_key_is_checked() {
        let key = Key([0x12; 32]);
        let leaf = leaf_blob(key);
        let mut children = [Hash256::ZERO; 16];
        children[1] = decode(&leaf).expect("valid").hash();
        let root_blob = encode_inner(&children);
        let root = decode(&root_blob).expect("valid").hash();
        let path = [leaf, root_blob];
        assert!(verify_path(&root, &key, &path)
            .expect("valid")
            .is_included());
        let mut other = key;
        other.0[5] = 0;
        assert_eq!(verify_path(&root, &other, &path), Ok(ProofOutcome::Absent));
        // A key whose branch at the root is empty: the root alone proves it.
        let far = Key([0x52; 32]);
        assert_eq!(
            verify_path(&root, &far, &path[1..]),
            Ok(ProofOutcome::Absent)
        );
        assert_eq!(
            verify_path(&root, &far, &path),
            Err(ProofError::ExtraNodes { count: 1 })
        );
    }

    #[test]
    fn a_leaf_as_root_and_a_misplaced_leaf_are_rejected() {
        let key = Key([0x12; 32]);
        let leaf = leaf_blob(key);
        let h = decode(&leaf).expect("valid").hash();
        assert_eq!(
            verify_path(&h, &key, &[&leaf]),
            Err(ProofError::RootIsLeaf { index: 0 })
        );
        // The leaf for 0x12.. placed under branch 5 of the root.
        let mut children = [Hash256::ZERO; 16];
        children[5] = h;
        let root_blob = encode_inner(&children);
        let root = decode(&root_blob).expect("valid").hash();
        let asked = Key([0x55; 32]);
        assert!(matches!(
            verify_path(&root, &asked, &[leaf, root_blob]),
            Err(ProofError::LeafOutOfPlace { index: 0, .. })
        ));
    }

    #[test]
    fn error_messages_are_one_line() {
        let e = ProofError::Malformed {
            index: 3,
            error: WireError::UnknownType(9),
        };
        assert_eq!(e.to_string(), "node 3: unknown wire node type 0x09");
        assert!(!ProofError::BadTxData(VlError::BadPrefix(255))
            .to_string()
            .contains('\n'));
    }
}
