//! Slow, obviously-correct reference for XRP Ledger SHAMap root hashes.
//!
//! This crate is a **test oracle**. It shares no code with the `shamap`
//! engine: it never builds a tree of nodes. Instead it recomputes every hash
//! from scratch from the flat, sorted key list with a dense recursion:
//!
//! ```text
//! hash(items, depth):
//!     if depth > 0 and items has exactly one entry -> that entry's leaf hash
//!     else -> SHA512Half("MIN\0" || h0 || ... || h15), where hN is the hash of
//!             the items whose nibble at `depth` is N (32 zero bytes if none)
//! root = 32 zero bytes for an empty map, else hash(all items, 0)
//! ```
//!
//! This matches rippled exactly: the root is always an inner node, an inner
//! node exists below the root at nibble prefix `p` exactly when two or more
//! keys start with `p`, chains of single-child inner nodes are real (hashed)
//! nodes, and a leaf sits at the first depth where it is alone. Keys may share
//! up to 63 nibbles (leaves at depth 64).
//!
//! Every function is O(n · depth) or worse and allocates freely; use it on
//! small maps in tests only.
//!
//! **Duplicate keys are a caller error**: every function taking keys panics
//! with a message naming the duplicate key.

use sha2::{Digest, Sha512};

/// Hash prefix of an inner node: `"MIN\0"`.
const PREFIX_INNER: [u8; 4] = *b"MIN\0";
/// Hash prefix of an account-state leaf: `"MLN\0"`.
const PREFIX_STATE: [u8; 4] = *b"MLN\0";
/// Hash prefix of a transaction-with-metadata leaf: `"SND\0"`.
const PREFIX_TX_MD: [u8; 4] = *b"SND\0";
/// Hash prefix of a transaction-without-metadata leaf: `"TXN\0"`.
const PREFIX_TX_NM: [u8; 4] = *b"TXN\0";

/// Hash of an empty branch, and the root hash of an empty map.
const ZERO: [u8; 32] = [0; 32];

/// The kind of leaf, which decides how the leaf is hashed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OracleKind {
    /// State-tree leaf: `SHA512Half("MLN\0" || data || key)`.
    AccountState,
    /// Transaction-tree leaf with metadata: `SHA512Half("SND\0" || data || key)`.
    TransactionWithMeta,
    /// Transaction-tree leaf without metadata: `SHA512Half("TXN\0" || data)`;
    /// the key is not hashed.
    TransactionNoMeta,
}

/// SHA512Half of the concatenation of `parts`: the first 32 bytes of SHA-512.
pub fn sha512_half(parts: &[&[u8]]) -> [u8; 32] {
    let mut hasher = Sha512::new();
    for part in parts {
        hasher.update(part);
    }
    let full = hasher.finalize();
    let mut out = [0u8; 32];
    out.copy_from_slice(&full[..32]);
    out
}

/// BLAKE3 of the concatenation of `parts` (the `blake3` crate's reference
/// incremental hasher).
pub fn blake3(parts: &[&[u8]]) -> [u8; 32] {
    let mut hasher = ::blake3::Hasher::new();
    for part in parts {
        hasher.update(part);
    }
    *hasher.finalize().as_bytes()
}

/// A node hash function: SHA512Half (the XRPL's) or BLAKE3.
pub type HashFn = fn(&[&[u8]]) -> [u8; 32];

/// Hash of a single leaf of the given kind.
pub fn leaf_hash(kind: OracleKind, key: &[u8; 32], data: &[u8]) -> [u8; 32] {
    leaf_hash_with(sha512_half, kind, key, data)
}

/// [`leaf_hash`] with the hash function `h`.
pub fn leaf_hash_with(h: HashFn, kind: OracleKind, key: &[u8; 32], data: &[u8]) -> [u8; 32] {
    match kind {
        OracleKind::AccountState => h(&[&PREFIX_STATE, data, key]),
        OracleKind::TransactionWithMeta => h(&[&PREFIX_TX_MD, data, key]),
        OracleKind::TransactionNoMeta => h(&[&PREFIX_TX_NM, data]),
    }
}

/// Root hash of a map holding `items` (`(key, data)` pairs, any order).
///
/// Panics if a key appears twice.
pub fn root_hash(kind: OracleKind, items: &[([u8; 32], Vec<u8>)]) -> [u8; 32] {
    root_hash_with(sha512_half, kind, items)
}

/// [`root_hash`] with the node hash function `h` (e.g. [`blake3()`]).
pub fn root_hash_with(h: HashFn, kind: OracleKind, items: &[([u8; 32], Vec<u8>)]) -> [u8; 32] {
    let pairs: Vec<([u8; 32], [u8; 32])> = items
        .iter()
        .map(|(key, data)| (*key, leaf_hash_with(h, kind, key, data)))
        .collect();
    let mut sorted = pairs;
    sorted.sort_by_key(|p| p.0);
    check_unique(sorted.iter().map(|p| &p.0));
    if sorted.is_empty() {
        return ZERO;
    }
    subtree_hash(h, &sorted, 0)
}

/// Root hash from precomputed `(key, leaf_hash)` pairs, any order.
///
/// Panics if a key appears twice.
pub fn root_from_leaf_hashes(pairs: &[([u8; 32], [u8; 32])]) -> [u8; 32] {
    let mut sorted = pairs.to_vec();
    sorted.sort_by_key(|p| p.0);
    check_unique(sorted.iter().map(|p| &p.0));
    if sorted.is_empty() {
        return ZERO;
    }
    subtree_hash(sha512_half, &sorted, 0)
}

/// Depth (1..=64) at which each key's leaf sits, in ascending key order.
///
/// Panics if a key appears twice.
pub fn leaf_depths(keys: &[[u8; 32]]) -> Vec<([u8; 32], usize)> {
    let mut out = Vec::new();
    walk_shape(&sorted_unique(keys), 0, &mut |node| {
        if let Node::Leaf { key, depth } = node {
            out.push((key, depth));
        }
    });
    out
}

/// Counts of inner nodes by number of non-empty children (index 0..=16),
/// including the root.
///
/// An empty map still has its (childless) root inner node, so it yields
/// `hist[0] == 1`; every other inner node has at least one child.
///
/// Panics if a key appears twice.
pub fn child_count_histogram(keys: &[[u8; 32]]) -> [u64; 17] {
    let mut hist = [0u64; 17];
    walk_shape(&sorted_unique(keys), 0, &mut |node| {
        if let Node::Inner { children } = node {
            hist[children] += 1;
        }
    });
    hist
}

/// Upper-case hex encoding of `b` (test helper).
pub fn to_hex_upper(b: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    let mut s = String::with_capacity(b.len() * 2);
    for &byte in b {
        s.push(char::from(DIGITS[usize::from(byte >> 4)]));
        s.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    s
}

/// Decodes hex in either case (test helper). Panics on odd length or a
/// non-hex character.
pub fn from_hex(s: &str) -> Vec<u8> {
    fn digit(c: u8) -> u8 {
        match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => panic!("from_hex: invalid hex character {:?}", char::from(c)),
        }
    }
    let bytes = s.as_bytes();
    assert!(
        bytes.len().is_multiple_of(2),
        "from_hex: odd-length input {s:?}"
    );
    bytes
        .chunks(2)
        .map(|pair| (digit(pair[0]) << 4) | digit(pair[1]))
        .collect()
}

/// Nibble `depth` of `key` (0..64): high nibble of byte `depth / 2` when
/// `depth` is even, low nibble when odd.
fn nibble(key: &[u8; 32], depth: usize) -> usize {
    let byte = key[depth / 2];
    usize::from(if depth.is_multiple_of(2) {
        byte >> 4
    } else {
        byte & 0x0f
    })
}

/// Panics if two consecutive keys of a sorted sequence are equal.
fn check_unique<'a>(sorted_keys: impl Iterator<Item = &'a [u8; 32]>) {
    let mut prev: Option<&[u8; 32]> = None;
    for key in sorted_keys {
        if prev == Some(key) {
            panic!("shamap-oracle: duplicate key {}", to_hex_upper(key));
        }
        prev = Some(key);
    }
}

/// Sorted copy of `keys`; panics on duplicates.
fn sorted_unique(keys: &[[u8; 32]]) -> Vec<[u8; 32]> {
    let mut sorted = keys.to_vec();
    sorted.sort();
    check_unique(sorted.iter());
    sorted
}

/// Items (of any type with a key) whose nibble at `depth` equals `branch`.
fn branch_of<T: Clone>(
    items: &[T],
    key: impl Fn(&T) -> &[u8; 32],
    depth: usize,
    branch: usize,
) -> Vec<T> {
    items
        .iter()
        .filter(|item| nibble(key(item), depth) == branch)
        .cloned()
        .collect()
}

/// Hash of the subtree holding `items` (sorted, unique, non-empty) at `depth`.
fn subtree_hash(h: HashFn, items: &[([u8; 32], [u8; 32])], depth: usize) -> [u8; 32] {
    if depth > 0 && items.len() == 1 {
        return items[0].1;
    }
    assert!(depth < 64, "shamap-oracle: two items share all 64 nibbles");
    let mut children = [ZERO; 16];
    for (branch, child) in children.iter_mut().enumerate() {
        let group = branch_of(items, |p| &p.0, depth, branch);
        if !group.is_empty() {
            *child = subtree_hash(h, &group, depth + 1);
        }
    }
    let mut parts: Vec<&[u8]> = vec![&PREFIX_INNER];
    parts.extend(children.iter().map(|c| c.as_slice()));
    h(&parts)
}

/// A node reported by [`walk_shape`].
enum Node {
    /// An inner node with this many non-empty children.
    Inner { children: usize },
    /// A leaf holding `key` at `depth`.
    Leaf { key: [u8; 32], depth: usize },
}

/// Visits every node of the map shape for `keys` (sorted, unique) at
/// `depth`, using the same rule as [`subtree_hash`].
fn walk_shape(keys: &[[u8; 32]], depth: usize, visit: &mut dyn FnMut(Node)) {
    if depth > 0 && keys.len() == 1 {
        visit(Node::Leaf {
            key: keys[0],
            depth,
        });
        return;
    }
    assert!(depth < 64, "shamap-oracle: two keys share all 64 nibbles");
    let groups: Vec<Vec<[u8; 32]>> = (0..16)
        .map(|branch| branch_of(keys, |k| k, depth, branch))
        .filter(|group| !group.is_empty())
        .collect();
    visit(Node::Inner {
        children: groups.len(),
    });
    for group in &groups {
        walk_shape(group, depth + 1, visit);
    }
}

#[cfg(test)]
mod tests;
