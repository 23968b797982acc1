//! rippled's peer "wire" node format, used in proofs and state sync.
//!
//! | node                  | wire bytes                                               |
//! |-----------------------|----------------------------------------------------------|
//! | inner, full           | 16 × 32-byte child hashes ‖ `0x02`                       |
//! | inner, compressed     | n × (32-byte hash ‖ branch byte) ‖ `0x03` (n < 12 children) |
//! | account-state leaf    | data ‖ key ‖ `0x01`                                      |
//! | tx+meta leaf          | data ‖ key ‖ `0x04`                                      |
//! | tx-only leaf          | data ‖ `0x00` (key = SHA512Half(`TXN\0` ‖ data))          |
//!
//! rippled writes the compressed form when an inner node has fewer than 12
//! children; readers accept both forms.

use crate::hash::{Hash256, Key};
use crate::hashfn::HashFunction;
use crate::kind::MapKind;
use crate::node_hash;
use crate::xrpl::tx::transaction_id;

/// Wire type byte of a tx-only leaf.
pub const WIRE_TX_NO_META: u8 = 0x00;
/// Wire type byte of an account-state leaf.
pub const WIRE_ACCOUNT_STATE: u8 = 0x01;
/// Wire type byte of a full inner node.
pub const WIRE_INNER_FULL: u8 = 0x02;
/// Wire type byte of a compressed inner node.
pub const WIRE_INNER_COMPRESSED: u8 = 0x03;
/// Wire type byte of a tx+meta leaf.
pub const WIRE_TX_WITH_META: u8 = 0x04;

/// The fewest data bytes rippled accepts in a leaf: shorter leaves do not
/// decode (`WireError::ShortLeaf`), so no proof can carry them.
pub const MIN_LEAF_DATA: usize = 12;

/// Children below which rippled sends an inner node compressed.
pub const COMPRESS_BELOW: usize = 12;

/// A node decoded from wire bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireNode {
    /// An inner node: its sixteen child hashes (zero = empty branch).
    Inner(Box<[Hash256; 16]>),
    /// A leaf of the given kind.
    Leaf {
        /// Map kind the type byte names.
        kind: MapKind,
        /// Item key (derived from the data for tx-only leaves).
        key: Key,
        /// Item data.
        data: Vec<u8>,
    },
}

/// Wire bytes that do not decode to a node.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// No bytes at all.
    #[error("empty node blob")]
    Empty,
    /// A type byte that names no node kind.
    #[error("unknown wire node type 0x{0:02X}")]
    UnknownType(u8),
    /// The length does not fit the type.
    #[error("wire node of type 0x{kind:02X} has bad length {len}")]
    BadLength {
        /// The type byte.
        kind: u8,
        /// Bytes before the type byte.
        len: usize,
    },
    /// A compressed inner node naming a branch above 15, or one twice, or
    /// an inner node with no child at all.
    #[error("malformed inner node: {0}")]
    BadInner(&'static str),
    /// A leaf whose data is shorter than rippled allows ([`MIN_LEAF_DATA`]).
    #[error("leaf data of {0} bytes is below rippled's minimum of {min}", min = MIN_LEAF_DATA)]
    ShortLeaf(usize),
}

/// The wire bytes of an inner node with these child hashes; compressed when
/// it has fewer than 12 children, as rippled sends it.
pub fn encode_inner(children: &[Hash256; 16]) -> Vec<u8> {
    let n = children.iter().filter(|h| !h.is_zero()).count();
    if n < COMPRESS_BELOW {
        let mut out = Vec::with_capacity(n * 33 + 1);
        for (b, h) in children.iter().enumerate() {
            if !h.is_zero() {
                out.extend_from_slice(&h.0);
                out.push(b as u8);
            }
        }
        out.push(WIRE_INNER_COMPRESSED);
        out
    } else {
        encode_inner_full(children)
    }
}

/// The full (uncompressed) wire bytes of an inner node.
pub fn encode_inner_full(children: &[Hash256; 16]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 * 32 + 1);
    for h in children {
        out.extend_from_slice(&h.0);
    }
    out.push(WIRE_INNER_FULL);
    out
}

/// The wire bytes of a leaf of map kind `kind`.
pub fn encode_leaf(kind: MapKind, key: &Key, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 33);
    out.extend_from_slice(data);
    match kind {
        MapKind::AccountState => {
            out.extend_from_slice(&key.0);
            out.push(WIRE_ACCOUNT_STATE);
        }
        MapKind::TransactionWithMeta => {
            out.extend_from_slice(&key.0);
            out.push(WIRE_TX_WITH_META);
        }
        MapKind::TransactionNoMeta => out.push(WIRE_TX_NO_META),
    }
    out
}

/// Decodes wire bytes. Checks lengths, branch numbers and duplicates; never
/// panics and allocates at most the size of the input.
pub fn decode(blob: &[u8]) -> Result<WireNode, WireError> {
    let (&kind, body) = blob.split_last().ok_or(WireError::Empty)?;
    let bad_len = || WireError::BadLength {
        kind,
        len: body.len(),
    };
    match kind {
        WIRE_INNER_FULL => {
            if body.len() != 16 * 32 {
                return Err(bad_len());
            }
            let mut children = Box::new([Hash256::ZERO; 16]);
            for (c, chunk) in children.iter_mut().zip(body.chunks_exact(32)) {
                c.0.copy_from_slice(chunk);
            }
            if children.iter().all(Hash256::is_zero) {
                return Err(WireError::BadInner("no children"));
            }
            Ok(WireNode::Inner(children))
        }
        WIRE_INNER_COMPRESSED => {
            if body.is_empty() || body.len() % 33 != 0 || body.len() > 16 * 33 {
                return Err(bad_len());
            }
            let mut children = Box::new([Hash256::ZERO; 16]);
            for entry in body.chunks_exact(33) {
                let b = usize::from(entry[32]);
                if b >= 16 {
                    return Err(WireError::BadInner("branch above 15"));
                }
                if !children[b].is_zero() {
                    return Err(WireError::BadInner("branch given twice"));
                }
                children[b].0.copy_from_slice(&entry[..32]);
                if children[b].is_zero() {
                    return Err(WireError::BadInner("zero child hash"));
                }
            }
            Ok(WireNode::Inner(children))
        }
        WIRE_ACCOUNT_STATE | WIRE_TX_WITH_META => {
            if body.len() < 32 {
                return Err(bad_len());
            }
            let (data, key) = body.split_at(body.len() - 32);
            if data.len() < MIN_LEAF_DATA {
                return Err(WireError::ShortLeaf(data.len()));
            }
            let key = Key::from_slice(key).ok_or_else(bad_len)?;
            let kind = if kind == WIRE_ACCOUNT_STATE {
                MapKind::AccountState
            } else {
                MapKind::TransactionWithMeta
            };
            Ok(WireNode::Leaf {
                kind,
                key,
                data: data.to_vec(),
            })
        }
        WIRE_TX_NO_META => {
            if body.len() < MIN_LEAF_DATA {
                return Err(WireError::ShortLeaf(body.len()));
            }
            let key = Key::from(transaction_id(body));
            Ok(WireNode::Leaf {
                kind: MapKind::TransactionNoMeta,
                key,
                data: body.to_vec(),
            })
        }
        other => Err(WireError::UnknownType(other)),
    }
}

impl WireNode {
    /// The node's hash (as its parent names it).
    pub fn hash(&self) -> Hash256 {
        self.hash_with(HashFunction::Sha512Half)
    }

    /// The node's hash under the node hash function `f` (the hash of its
    /// message, see [`crate::node_hash`]).
    pub fn hash_with(&self, f: HashFunction) -> Hash256 {
        match self {
            WireNode::Inner(children) => node_hash::hash_inner(f, children),
            WireNode::Leaf { kind, key, data } => node_hash::hash_leaf(f, *kind, key, data),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inner_nodes_round_trip_in_both_forms() {
        let mut children = [Hash256::ZERO; 16];
        children[3] = Hash256([3; 32]);
        children[15] = Hash256([15; 32]);
        let small = encode_inner(&children);
        assert_eq!(small.len(), 2 * 33 + 1);
        assert_eq!(*small.last().expect("non-empty"), WIRE_INNER_COMPRESSED);
        assert_eq!(decode(&small), Ok(WireNode::Inner(Box::new(children))));
        let full = encode_inner_full(&children);
        assert_eq!(decode(&full), Ok(WireNode::Inner(Box::new(children))));
        assert_eq!(
            decode(&small).expect("ok").hash(),
            decode(&full).expect("ok").hash()
        );
        let dense = [Hash256([1; 32]); 16];
        assert_eq!(
            *encode_inner(&dense).last().expect("non-empty"),
            WIRE_INNER_FULL
        );
    }

    #[test]
    fn leaves_round_trip_and_hash_like_the_map() {
        let key = Key([9; 32]);
        let data = vec![5u8; 40];
        for kind in [MapKind::AccountState, MapKind::TransactionWithMeta] {
            let w = encode_leaf(kind, &key, &data);
            let node = decode(&w).expect("valid leaf");
            assert_eq!(node.hash(), kind.leaf_hash(&key, &data));
            assert_eq!(
                node,
                WireNode::Leaf {
                    kind,
                    key,
                    data: data.clone()
                }
            );
        }
        let w = encode_leaf(MapKind::TransactionNoMeta, &key, &data);
        match decode(&w).expect("valid") {
            WireNode::Leaf { key: k, .. } => {
                assert_eq!(Hash256::from(k), crate::xrpl::transaction_id(&data))
            }
            other => panic!("decoded {other:?}"),
        }
    }

    #[test]
    fn malformed_blobs_are_errors() {
        assert_eq!(decode(&[]), Err(WireError::Empty));
        assert_eq!(decode(&[7]), Err(WireError::UnknownType(7)));
        assert!(matches!(decode(&[0; 10]), Err(WireError::ShortLeaf(9))));
        assert!(matches!(
            decode(&[2; 100]),
            Err(WireError::BadLength { .. })
        ));
        let mut dup = vec![1u8; 33];
        dup[32] = 4;
        dup.extend_from_slice(&dup.clone());
        dup.push(WIRE_INNER_COMPRESSED);
        assert_eq!(decode(&dup), Err(WireError::BadInner("branch given twice")));
        let mut high = vec![1u8; 33];
        high[32] = 16;
        high.push(WIRE_INNER_COMPRESSED);
        assert_eq!(decode(&high), Err(WireError::BadInner("branch above 15")));
        let mut full = vec![0u8; 512];
        full.push(WIRE_INNER_FULL);
        assert_eq!(decode(&full), Err(WireError::BadInner("no children")));
    }
}
