//! A cached node ([`CleanNode`]) and its entry in a segment.

use shamap::{BranchMask, Hash256, Key, Nibble};

use crate::error::StoreError;
use crate::inner_codec;
use crate::node_id::NodeId;

/// A node as a walk gets it from the cache: decoded, verified, owned.
/// Returned by value and dropped soon after (never held in bulk), so an
/// inner node's sixteen hashes stay off the heap.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub(crate) enum CleanNode {
    /// An inner node: its branch mask and its children's hashes by branch
    /// (zero where the mask has no child).
    Inner {
        mask: BranchMask,
        hashes: [Hash256; 16],
    },
    /// A leaf.
    Leaf { key: Key, data: Vec<u8> },
}

impl CleanNode {
    pub(crate) fn child(&self, branch: Nibble) -> Option<Hash256> {
        match self {
            CleanNode::Inner { mask, hashes } if mask.has(branch) => {
                Some(hashes[usize::from(branch.get())])
            }
            _ => None,
        }
    }

    /// Checks that this node, cached where it was first loaded, may also
    /// sit at `id` (the place checks of the one fetch: a node's hash does
    /// not say where it sits, so a parent may name it anywhere).
    pub(super) fn check_place(&self, hash: &Hash256, id: &NodeId) -> Result<(), StoreError> {
        match self {
            CleanNode::Inner { mask, .. } => id.check_inner(*hash, mask.count()),
            CleanNode::Leaf { key, .. } => id.check_leaf(*hash, key),
        }
    }

    pub(crate) fn from_children(children: &[Hash256; 16]) -> CleanNode {
        let mask = Nibble::all()
            .zip(children)
            .filter(|(_, h)| !h.is_zero())
            .fold(BranchMask::default(), |m, (b, _)| m.with(b));
        CleanNode::Inner {
            mask,
            hashes: *children,
        }
    }

    /// Bytes of the node's encoding in a segment ([`encode_entry`]),
    /// after the entry's head.
    pub(super) fn body_len(&self) -> usize {
        match self {
            CleanNode::Inner { mask, .. } => 1 + inner_codec::encoded_len(mask.count()),
            CleanNode::Leaf { data, .. } => 1 + 32 + data.len(),
        }
    }
}

/// An entry in a segment: the node's hash, the length of its body (`u32`,
/// little-endian), then the body: `INNER` and the node's children in
/// rippled's NuDB inner-node codec, sparse form ([`inner_codec`]: the one
/// codec for them); or `LEAF`, the key, the data.
pub(super) const ENTRY_HEAD: usize = 32 + 4;
pub(super) const INNER: u8 = 1;
pub(super) const LEAF: u8 = 0;

/// Appends `node`'s entry under `hash` to `out`.
pub(super) fn encode_entry(hash: &Hash256, node: &CleanNode, out: &mut Vec<u8>) {
    out.extend_from_slice(&hash.0);
    let body_len = u32::try_from(node.body_len()).expect("an entry fits its segment");
    out.extend_from_slice(&body_len.to_le_bytes());
    match node {
        CleanNode::Inner { hashes, .. } => {
            out.push(INNER);
            inner_codec::encode_children_into(hashes.iter().map(|h| &h.0), out);
        }
        CleanNode::Leaf { key, data } => {
            out.push(LEAF);
            out.extend_from_slice(&key.0);
            out.extend_from_slice(data);
        }
    }
}

/// The node of an entry's body, as [`encode_entry`] wrote it.
pub(super) fn decode_body(body: &[u8]) -> CleanNode {
    if body[0] == INNER {
        let hashes = inner_codec::decode_children(&body[1..]).expect("an entry this cache wrote");
        let mask = Nibble::all()
            .filter(|b| !hashes[usize::from(b.get())].is_zero())
            .fold(BranchMask::default(), |m, b| m.with(b));
        CleanNode::Inner { mask, hashes }
    } else {
        CleanNode::Leaf {
            key: Key(body[1..33].try_into().expect("32 bytes")),
            data: body[33..].to_vec(),
        }
    }
}
