//! rippled's NuDB inner-node codec, sparse form: the sparse inner encoding
//! (a mask and only the present child hashes; all sixteen present, NuDB's
//! full form). The node log stores inner nodes in it (its record kind 5,
//! see `log_store::format`) and restores the plain NodeStore value on
//! read, which is what the caller verifies; fjall, RocksDB and Cassandra
//! keep the plain format. `shamap info` uses [`inner_len`] to report what
//! the sparse encoding saves.
//!
//! | NuDB type (varint) | body |
//! |---|---|
//! | 2, compressed inner | u16 big-endian mask (0x8000 = branch 0) ‖ n × 32-byte hashes |
//! | 3, full inner | 16 × 32-byte hashes |
//!
//! The 9-byte value header and the `MIN\0` prefix are implied. This is the
//! one home of the codec: the node log's inner records, the backed map's
//! cache entries and rippled's NuDB values all encode and decode inner
//! nodes here. (Values other than inner nodes go through LZ4, type 1, in
//! rippled's NuDB store: read by its backend.)

use shamap::node_hash::{self, INNER_MESSAGE_LEN};
use shamap::Hash256;

use crate::node::{NodeType, VALUE_HEADER_LEN};

/// Length of an inner node's value in the NodeStore format.
pub const INNER_VALUE_LEN: usize = VALUE_HEADER_LEN + INNER_MESSAGE_LEN;

/// The sixteen child hashes of a stored value, if it is an inner node.
fn inner_children(value: &[u8]) -> Option<&[[u8; 32]; 16]> {
    value
        .get(VALUE_HEADER_LEN..)
        .and_then(node_hash::inner_children)
}

/// The sparse encoding of a stored value, if it is an inner node.
pub fn encode_inner(value: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(1 + 512);
    encode_inner_into(value, &mut out)?;
    Some(out)
}

/// Appends [`encode_inner`]'s output to `out`, if `value` is an inner
/// node; returns its length.
pub fn encode_inner_into(value: &[u8], out: &mut Vec<u8>) -> Option<usize> {
    let hashes = inner_children(value)?;
    Some(encode_children_into(hashes.iter(), out))
}

/// Appends the sparse encoding of an inner node with these sixteen child
/// hashes (all zero = empty branch) to `out`; returns its length. The one
/// writer of the codec: the node log's inner records and the backed map's
/// cache entries both go through it.
pub fn encode_children_into<'a>(
    children: impl ExactSizeIterator<Item = &'a [u8; 32]> + Clone,
    out: &mut Vec<u8>,
) -> usize {
    debug_assert_eq!(children.len(), 16);
    let mut mask: u16 = 0;
    for (b, h) in children.clone().enumerate() {
        if *h != [0u8; 32] {
            mask |= 0x8000 >> b;
        }
    }
    let start = out.len();
    if mask == 0xFFFF {
        out.reserve(1 + 512);
        out.push(3);
        for h in children {
            out.extend_from_slice(h);
        }
        return out.len() - start;
    }
    out.reserve(3 + 32 * mask.count_ones() as usize);
    out.push(2);
    out.extend_from_slice(&mask.to_be_bytes());
    for (b, h) in children.enumerate() {
        if mask & (0x8000 >> b) != 0 {
            out.extend_from_slice(h);
        }
    }
    out.len() - start
}

/// Length of the sparse encoding of an inner node with `present`
/// non-empty branches.
pub fn encoded_len(present: usize) -> usize {
    if present == 16 {
        1 + 512
    } else {
        3 + 32 * present
    }
}

/// Length of [`encode_inner`]'s output without building it.
pub fn inner_len(value: &[u8]) -> Option<usize> {
    let n = inner_children(value)?
        .iter()
        .filter(|h| h.iter().any(|&x| x != 0))
        .count();
    Some(encoded_len(n))
}

/// The sixteen child hashes of a sparse encoding (type 2 with its mask,
/// or type 3), or `None` when it is neither or its length does not fit:
/// the one reader of the codec (the node log, the backed map's cache and
/// rippled's NuDB values).
pub fn decode_children(encoded: &[u8]) -> Option<[Hash256; 16]> {
    let mut children = [Hash256::ZERO; 16];
    match encoded.split_first()? {
        (3, body) if body.len() == 512 => {
            for (c, h) in children.iter_mut().zip(body.chunks_exact(32)) {
                c.0.copy_from_slice(h);
            }
        }
        (2, body) if body.len() >= 2 => {
            let mask = u16::from_be_bytes([body[0], body[1]]);
            let hashes = &body[2..];
            if hashes.len() != 32 * mask.count_ones() as usize {
                return None;
            }
            let mut it = hashes.chunks_exact(32);
            for (b, c) in children.iter_mut().enumerate() {
                if mask & (0x8000 >> b) != 0 {
                    c.0.copy_from_slice(it.next()?);
                }
            }
        }
        _ => return None,
    }
    Some(children)
}

/// Restores the NodeStore value of an inner node of type `node_type` from
/// its sparse encoding.
pub fn decode_inner(encoded: &[u8], node_type: NodeType) -> Option<Vec<u8>> {
    let children = decode_children(encoded)?;
    let mut out = Vec::with_capacity(INNER_VALUE_LEN);
    node_type.append_value(&node_hash::inner_message(&children), &mut out);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::NodeObject;

    #[test]
    fn sparse_inner_round_trips() {
        for present in [vec![0usize], vec![1, 7, 15], (0..16).collect::<Vec<_>>()] {
            let mut children = [Hash256::ZERO; 16];
            for (b, c) in children.iter_mut().enumerate() {
                if present.contains(&b) {
                    *c = Hash256([b as u8 + 1; 32]);
                }
            }
            let prefix = node_hash::inner_message(&children);
            let obj = NodeObject::from_prefix(NodeType::TransactionNode, &prefix);
            let c = encode_inner(obj.value()).expect("inner");
            assert_eq!(Some(c.len()), inner_len(obj.value()));
            let expect_len = if present.len() == 16 {
                513
            } else {
                3 + 32 * present.len()
            };
            assert_eq!(c.len(), expect_len);
            let back = decode_inner(&c, NodeType::TransactionNode).expect("decodes");
            assert_eq!(back, obj.value());
        }
        assert_eq!(encode_inner(&[0; 20]), None);
    }
}
