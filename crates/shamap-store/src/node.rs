//! Stored node values: rippled's NodeStore value format, verified on decode.
//!
//! | bytes | field |
//! |---|---|
//! | 0..8 | zero (rippled's unused ledger index, always 0) |
//! | 8 | type: 1 ledger header, 3 account-state node, 4 transaction node (0: an inner node of a map kind not recorded, as read from rippled's NuDB store) |
//! | 9.. | the prefix format, whose SHA512Half is the key |
//!
//! Prefix formats (see `docs/xrpl-shamap.md`; written, recognised and taken
//! apart by [`shamap::node_hash`], the ledger header by this module):
//!
//! | node | prefix format |
//! |---|---|
//! | inner | `MIN\0` ‖ 16 × 32-byte child hashes (zero = empty branch) |
//! | state leaf | `MLN\0` ‖ data ‖ key |
//! | tx+meta leaf | `SND\0` ‖ data ‖ key |
//! | tx-only leaf | `TXN\0` ‖ data (the key is the node's hash) |
//! | ledger header | `LWR\0` ‖ 118-byte header |

use shamap::node_hash::{self, NodeTag};
use shamap::xrpl::ledger::LEDGER_HEADER_LEN;
use shamap::xrpl::wire::{self, WireNode};
use shamap::xrpl::{sha512_half, HashPrefix, LedgerHeader};
use shamap::{Hash256, Key, MapKind};

use crate::error::StoreError;

/// Bytes before the prefix format in a stored value.
pub const VALUE_HEADER_LEN: usize = 9;

/// The type byte of an inner node whose map kind the store does not
/// record (rippled's `hotUNKNOWN`): rippled's NuDB codec stores inner
/// nodes without their type (`codec.h`, types 2 and 3), so an inner node
/// read from a rippled NuDB store carries 0, accepted for an inner node
/// only, and in a map of either kind ([`NodeObject::node_type`] is `None`).
pub const UNRECORDED_INNER_TYPE: u8 = 0;

/// The type byte of a stored value (rippled's `NodeObjectType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeType {
    /// A ledger header (`hotLEDGER`).
    Ledger = 1,
    /// A node of an account-state map (`hotACCOUNT_NODE`).
    AccountNode = 3,
    /// A node of a transaction map (`hotTRANSACTION_NODE`).
    TransactionNode = 4,
}

impl NodeType {
    /// The 9-byte header of a stored value of this type: 8 zero bytes
    /// (rippled's unused ledger index) and the type byte. The one writer
    /// of the header: every value is built as `value_header() ‖ prefix
    /// format`.
    pub fn value_header(self) -> [u8; VALUE_HEADER_LEN] {
        let mut h = [0; VALUE_HEADER_LEN];
        h[8] = self as u8;
        h
    }

    /// The value `value_header() ‖ prefix_bytes`, appended to `out`.
    pub fn append_value(self, prefix_bytes: &[u8], out: &mut Vec<u8>) {
        out.reserve(VALUE_HEADER_LEN + prefix_bytes.len());
        out.extend_from_slice(&self.value_header());
        out.extend_from_slice(prefix_bytes);
    }

    /// The type byte's meaning, or `None` for a byte rippled does not use
    /// for these objects.
    pub fn from_byte(b: u8) -> Option<NodeType> {
        match b {
            1 => Some(NodeType::Ledger),
            3 => Some(NodeType::AccountNode),
            4 => Some(NodeType::TransactionNode),
            _ => None,
        }
    }

    /// The type of the nodes of a map of kind `kind`.
    pub fn for_map(kind: MapKind) -> NodeType {
        match kind {
            MapKind::AccountState => NodeType::AccountNode,
            MapKind::TransactionWithMeta | MapKind::TransactionNoMeta => NodeType::TransactionNode,
        }
    }
}

/// A stored node: its hash and its value bytes (header ‖ prefix format).
/// Built either from prefix bytes (hash computed) or decoded from a store
/// (hash checked), so the hash always matches the bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeObject {
    hash: Hash256,
    value: Vec<u8>,
}

/// A node's content, parsed from its prefix format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    /// An inner node's sixteen child hashes (zero = empty branch).
    Inner(Box<[Hash256; 16]>),
    /// A leaf.
    Leaf {
        /// Which map kind its hash prefix names.
        kind: MapKind,
        /// Its key (for a tx-only leaf, the node's hash).
        key: Key,
        /// Its data.
        data: Vec<u8>,
    },
    /// A ledger header.
    Ledger(LedgerHeader),
}

/// What a stored value holds, told from its hash prefix alone (no hash
/// computed, nothing else parsed): for counting a store's values
/// (`shamap info`) without verifying each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueKind {
    /// An inner node (`MIN\0`).
    Inner,
    /// A leaf of a map of this kind.
    Leaf(MapKind),
    /// A ledger header (`LWR\0`).
    Ledger,
    /// Too short for a header and prefix, or a prefix no node has.
    Unknown,
}

impl ValueKind {
    /// The kind of the stored value `value` (header ‖ prefix format).
    pub fn of_value(value: &[u8]) -> ValueKind {
        let message = value.get(VALUE_HEADER_LEN..).unwrap_or_default();
        match NodeTag::of(message) {
            Some(NodeTag::Inner) => ValueKind::Inner,
            Some(NodeTag::Leaf(kind)) => ValueKind::Leaf(kind),
            None if message.starts_with(HashPrefix::LEDGER_MASTER.bytes()) => ValueKind::Ledger,
            None => ValueKind::Unknown,
        }
    }
}

impl Node {
    /// A short name for messages: `an inner node`, `a state leaf`, ...
    pub fn describe(&self) -> &'static str {
        match self {
            Node::Inner(_) => "an inner node",
            Node::Leaf {
                kind: MapKind::AccountState,
                ..
            } => "a state leaf",
            Node::Leaf {
                kind: MapKind::TransactionWithMeta,
                ..
            } => "a tx+meta leaf",
            Node::Leaf {
                kind: MapKind::TransactionNoMeta,
                ..
            } => "a tx-only leaf",
            Node::Ledger(_) => "a ledger header",
        }
    }
}

impl NodeObject {
    /// A node from its type and prefix-format bytes; computes the hash.
    pub fn from_prefix(node_type: NodeType, prefix_bytes: &[u8]) -> NodeObject {
        let mut value = Vec::new();
        node_type.append_value(prefix_bytes, &mut value);
        NodeObject {
            hash: sha512_half(&[prefix_bytes]),
            value,
        }
    }

    /// A node of an in-memory map, whose engine already hashed it: the
    /// hash is taken, not recomputed (checked in debug builds).
    pub(crate) fn hashed_by_engine(
        node_type: NodeType,
        hash: Hash256,
        prefix_bytes: &[u8],
    ) -> NodeObject {
        let mut value = Vec::new();
        node_type.append_value(prefix_bytes, &mut value);
        debug_assert_eq!(hash, sha512_half(&[prefix_bytes]));
        NodeObject { hash, value }
    }

    /// A ledger header node, keyed by the ledger hash.
    pub fn ledger(header: &LedgerHeader) -> NodeObject {
        let mut prefix = Vec::with_capacity(4 + LEDGER_HEADER_LEN);
        prefix.extend_from_slice(HashPrefix::LEDGER_MASTER.bytes());
        prefix.extend_from_slice(&header.serialize());
        NodeObject::from_prefix(NodeType::Ledger, &prefix)
    }

    /// The node of a map of kind `kind` that wire bytes describe (as a
    /// peer or a proof sends them). The hash is computed; the caller checks
    /// it against the hash it expects.
    pub fn from_wire(kind: MapKind, blob: &[u8]) -> Result<NodeObject, wire::WireError> {
        let node_type = NodeType::for_map(kind);
        Ok(match wire::decode(blob)? {
            WireNode::Inner(children) => {
                NodeObject::from_prefix(node_type, &node_hash::inner_message(&children))
            }
            WireNode::Leaf {
                kind: leaf_kind,
                key,
                data,
            } => {
                NodeObject::from_prefix(node_type, &node_hash::leaf_message(leaf_kind, &key, &data))
            }
        })
    }

    /// Decodes a value read from a store under `hash`, checking the header,
    /// the type byte against the prefix, and the hash. Any failure is
    /// [`StoreError::Corrupt`] naming `hash`.
    pub fn decode(hash: Hash256, value: Vec<u8>) -> Result<NodeObject, StoreError> {
        let obj = NodeObject::framed(hash, value)?;
        let actual = sha512_half(&[obj.prefix_bytes()]);
        obj.hashed_to(actual)
    }

    /// A value whose hash was checked already (by the NuDB audit's scan, in
    /// step with the file it read): the header and type checks of
    /// [`NodeObject::decode`], the hash taken as given.
    #[cfg(feature = "nudb")]
    pub(crate) fn scanned(hash: Hash256, value: Vec<u8>) -> Result<NodeObject, StoreError> {
        NodeObject::framed(hash, value)?.hashed_to(hash)
    }

    /// [`NodeObject::decode`] of many values read from a store, the hashes
    /// computed together (the multi-lane SHA-512 kernel: several messages
    /// per pass): the same checks and errors, one result per value.
    pub fn decode_many(values: Vec<(Hash256, Vec<u8>)>) -> Vec<Result<NodeObject, StoreError>> {
        let framed: Vec<Result<NodeObject, StoreError>> = values
            .into_iter()
            .map(|(hash, value)| NodeObject::framed(hash, value))
            .collect();
        let messages: Vec<&[u8]> = framed
            .iter()
            .filter_map(|f| f.as_ref().ok().map(NodeObject::prefix_bytes))
            .collect();
        let mut hashes = vec![[0u8; 32]; messages.len()];
        shamap::HashFunction::Sha512Half.hash_batch(&messages, &mut hashes);
        drop(messages);
        let mut hashes = hashes.into_iter();
        framed
            .into_iter()
            .map(|f| {
                let obj = f?;
                let actual = Hash256(hashes.next().expect("one hash per framed value"));
                obj.hashed_to(actual)
            })
            .collect()
    }

    /// The first checks of [`NodeObject::decode`]: a value long enough for
    /// a header and a hash prefix, and a zero header.
    fn framed(hash: Hash256, value: Vec<u8>) -> Result<NodeObject, StoreError> {
        let corrupt = |reason: String| StoreError::Corrupt { hash, reason };
        if value.len() < VALUE_HEADER_LEN + node_hash::PREFIX_LEN {
            return Err(corrupt(format!(
                "value of {} bytes is too short",
                value.len()
            )));
        }
        if value[..8] != [0; 8] {
            return Err(corrupt("the 8-byte value header is not zero".to_owned()));
        }
        Ok(NodeObject { hash, value })
    }

    /// The rest of [`NodeObject::decode`], given what the framed value's
    /// prefix format hashes to: that hash, then the type byte against the
    /// prefix.
    fn hashed_to(self, actual: Hash256) -> Result<NodeObject, StoreError> {
        let hash = self.hash;
        let corrupt = |reason: String| StoreError::Corrupt { hash, reason };
        if actual != hash {
            return Err(corrupt(format!("its bytes hash to {actual}")));
        }
        let prefix = self.prefix_bytes();
        let ty = self.value[8];
        let tag = &prefix[..node_hash::PREFIX_LEN];
        if ty == UNRECORDED_INNER_TYPE && NodeTag::of(prefix) == Some(NodeTag::Inner) {
            return Ok(self);
        }
        let node_type =
            NodeType::from_byte(ty).ok_or_else(|| corrupt(format!("unknown type byte {ty}")))?;
        let fits = match (node_type, NodeTag::of(prefix)) {
            (NodeType::Ledger, _) => tag == HashPrefix::LEDGER_MASTER.bytes(),
            (_, None) => false,
            (_, Some(NodeTag::Inner)) => true,
            (_, Some(NodeTag::Leaf(leaf_kind))) => NodeType::for_map(leaf_kind) == node_type,
        };
        if !fits {
            return Err(corrupt(format!(
                "type byte {ty} does not fit hash prefix {}",
                shamap::hash::encode_hex_upper(tag)
            )));
        }
        Ok(self)
    }

    /// The node's hash (its key in the store).
    pub fn hash(&self) -> Hash256 {
        self.hash
    }

    /// The stored value: 8 zero bytes ‖ type ‖ prefix format.
    pub fn value(&self) -> &[u8] {
        &self.value
    }

    /// The value, by move.
    pub fn into_value(self) -> Vec<u8> {
        self.value
    }

    /// The prefix format (the bytes whose SHA512Half is the hash).
    pub fn prefix_bytes(&self) -> &[u8] {
        &self.value[VALUE_HEADER_LEN..]
    }

    /// The type byte's meaning (`None` only for a value not built by this
    /// module nor checked by [`NodeObject::decode`]).
    pub fn node_type(&self) -> Option<NodeType> {
        NodeType::from_byte(self.value[8])
    }

    /// A leaf's map kind and key, read from its prefix format without
    /// copying its data (what [`NodeObject::parse`] gives for a leaf);
    /// `None` for anything that does not parse as a leaf.
    #[cfg(feature = "nudb")]
    pub(crate) fn leaf_kind_key(&self) -> Option<(MapKind, Key)> {
        let p = self.prefix_bytes();
        let Some(NodeTag::Leaf(kind)) = NodeTag::of(p) else {
            return None;
        };
        let (_, key) = node_hash::split_leaf_message(kind, p)?;
        Some((kind, key.unwrap_or_else(|| Key::from(self.hash))))
    }

    /// Parses the prefix format. Fails (as `Corrupt`) on a prefix that names
    /// no node or a length that does not fit it.
    pub fn parse(&self) -> Result<Node, StoreError> {
        let corrupt = |reason: &str| StoreError::Corrupt {
            hash: self.hash,
            reason: reason.to_owned(),
        };
        let p = self.prefix_bytes();
        if p.len() < node_hash::PREFIX_LEN {
            return Err(corrupt("shorter than a hash prefix"));
        }
        match NodeTag::of(p) {
            Some(NodeTag::Inner) => {
                let hashes = node_hash::inner_children(p)
                    .ok_or_else(|| corrupt("inner node is not 16 hashes long"))?;
                Ok(Node::Inner(Box::new(hashes.map(Hash256))))
            }
            Some(NodeTag::Leaf(kind)) => {
                let (data, key) = node_hash::split_leaf_message(kind, p)
                    .ok_or_else(|| corrupt("leaf shorter than its key"))?;
                Ok(Node::Leaf {
                    kind,
                    // A tx-only leaf's message holds no key: its key is the
                    // node's hash.
                    key: key.unwrap_or_else(|| Key::from(self.hash)),
                    data: data.to_vec(),
                })
            }
            None => match p.split_at(node_hash::PREFIX_LEN) {
                (tag, body) if tag == HashPrefix::LEDGER_MASTER.bytes() => {
                    LedgerHeader::deserialize(body)
                        .map(Node::Ledger)
                        .ok_or_else(|| corrupt("ledger header is not 118 bytes"))
                }
                _ => Err(corrupt("unknown hash prefix")),
            },
        }
    }

    /// The node in rippled's wire format (inner nodes compressed below 12
    /// children, as rippled sends them). `None` for a ledger header, which
    /// has no wire node form.
    pub fn to_wire(&self) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(match self.parse()? {
            Node::Inner(children) => Some(wire::encode_inner(&children)),
            Node::Leaf { kind, key, data } => Some(wire::encode_leaf(kind, &key, &data)),
            Node::Ledger(_) => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `decode_many` gives `decode`'s answer for each value, good or bad,
    /// whatever the mix around it (the batch hashes only the framed ones).
    #[test]
    fn decode_many_agrees_with_decode_value_by_value() {
        let mut values = Vec::new();
        for i in 0..40u8 {
            let prefix = if i % 3 == 0 {
                let mut children = [Hash256::ZERO; 16];
                children[usize::from(i % 16)] = Hash256([i; 32]);
                node_hash::inner_message(&children).to_vec()
            } else {
                node_hash::leaf_message(
                    MapKind::AccountState,
                    &Key([i; 32]),
                    &vec![i; usize::from(i)],
                )
            };
            let obj = NodeObject::from_prefix(NodeType::AccountNode, &prefix);
            let (mut hash, mut value) = (obj.hash(), obj.value().to_vec());
            match i % 7 {
                1 => value[20] ^= 1,                    // hashes to something else
                2 => value.truncate(10),                // too short
                3 => value[0] = 1,                      // header not zero
                4 => value[8] = NodeType::Ledger as u8, // type does not fit
                5 => hash.0[0] ^= 1,                    // asked under another hash
                _ => {}
            }
            values.push((hash, value));
        }
        let one: Vec<String> = values
            .iter()
            .map(|(h, v)| format!("{:?}", NodeObject::decode(*h, v.clone()).map(|o| o.hash())))
            .collect();
        let many: Vec<String> = NodeObject::decode_many(values)
            .into_iter()
            .map(|r| format!("{:?}", r.map(|o| o.hash())))
            .collect();
        assert_eq!(one, many);
        assert!(one.iter().filter(|r| r.starts_with("Ok")).count() >= 10);
        assert!(one.iter().filter(|r| r.starts_with("Err")).count() >= 20);
    }

    #[test]
    fn values_round_trip_and_verify() {
        let prefix = node_hash::leaf_message(MapKind::AccountState, &Key([1; 32]), &[7; 20]);
        let obj = NodeObject::from_prefix(NodeType::AccountNode, &prefix);
        assert_eq!(
            obj.hash(),
            MapKind::AccountState.leaf_hash(&Key([1; 32]), &[7; 20])
        );
        let back = NodeObject::decode(obj.hash(), obj.value().to_vec()).expect("valid");
        assert_eq!(back, obj);
        match back.parse().expect("parses") {
            Node::Leaf { kind, key, data } => {
                assert_eq!(kind, MapKind::AccountState);
                assert_eq!(key, Key([1; 32]));
                assert_eq!(data, vec![7; 20]);
            }
            other => panic!("parsed {other:?}"),
        }
    }

    #[test]
    fn flipped_bytes_and_bad_headers_are_corrupt() {
        let prefix = node_hash::inner_message(&[Hash256([3; 32]); 16]);
        let obj = NodeObject::from_prefix(NodeType::AccountNode, &prefix);
        for at in [0, 8, 9, 100, obj.value().len() - 1] {
            let mut v = obj.value().to_vec();
            v[at] ^= 0x10;
            let err = NodeObject::decode(obj.hash(), v).expect_err("must not decode");
            assert!(matches!(err, StoreError::Corrupt { hash, .. } if hash == obj.hash()));
        }
        let mut v = obj.value().to_vec();
        v[8] = 1;
        let err = NodeObject::decode(obj.hash(), v).expect_err("ledger type on inner");
        assert!(err.to_string().contains("does not fit"), "{err}");
        assert!(NodeObject::decode(obj.hash(), vec![0; 5]).is_err());
    }

    #[test]
    fn ledger_headers_are_stored_under_the_ledger_hash() {
        let bytes: Vec<u8> = (0..118u8).map(|b| b.wrapping_mul(3)).collect();
        let h = LedgerHeader::deserialize(&bytes).expect("a header");
        let obj = NodeObject::ledger(&h);
        assert_eq!(obj.hash(), h.hash());
        assert_eq!(obj.value().len(), 9 + 4 + 118);
        assert_eq!(obj.parse().expect("parses"), Node::Ledger(h));
        assert_eq!(obj.to_wire().expect("parses"), None);
    }

    #[test]
    fn wire_round_trip_preserves_the_hash() {
        let mut children = [Hash256::ZERO; 16];
        children[2] = Hash256([9; 32]);
        let compressed = wire::encode_inner(&children);
        let full = wire::encode_inner_full(&children);
        let a = NodeObject::from_wire(MapKind::AccountState, &compressed).expect("valid");
        let b = NodeObject::from_wire(MapKind::AccountState, &full).expect("valid");
        assert_eq!(a, b);
        assert_eq!(a.to_wire().expect("parses"), Some(compressed));
        let leaf = wire::encode_leaf(MapKind::TransactionNoMeta, &Key::ZERO, &[4; 30]);
        let t = NodeObject::from_wire(MapKind::TransactionNoMeta, &leaf).expect("valid");
        assert_eq!(t.node_type(), Some(NodeType::TransactionNode));
        assert_eq!(t.to_wire().expect("parses"), Some(leaf));
    }
}
