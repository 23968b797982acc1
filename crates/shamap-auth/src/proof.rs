//! The transaction map's proof in an XPOP, in XLS-41's two forms: its
//! root computed with the transaction's leaf checked on its key's path
//! (`list_root`, `tree_root`), and a map built from a ledger's
//! transactions written in either form (`build`, `tree_json`,
//! `list_json`). [`crate::xpop`] checks and makes the rest.

use serde_json::{json, Map, Value};
use shamap::node_hash::HashPrefix;
use shamap::xrpl::sha512_half;
use shamap::{Hash256, Key};

use crate::error::AuthError;

/// The two proof forms of XLS-41.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProofForm {
    /// The path only: nested lists of 16 entries.
    List,
    /// The whole transaction map: nested `{children, hash, key}` objects.
    Tree,
}

impl ProofForm {
    /// `"list"` or `"tree"`.
    pub fn name(self) -> &'static str {
        match self {
            ProofForm::List => "list",
            ProofForm::Tree => "tree",
        }
    }
}

fn inner_hash(children: &[Hash256; 16]) -> Hash256 {
    let mut parts: Vec<&[u8]> = Vec::with_capacity(17);
    parts.push(HashPrefix::INNER_NODE.bytes());
    for c in children {
        parts.push(&c.0);
    }
    sha512_half(&parts)
}

fn path_text(key: &Key, depth: usize) -> String {
    if depth == 0 {
        return "the root".to_string();
    }
    let hex = key.to_hex();
    format!("branch {}", &hex[..depth])
}

/// The root of a list-form proof, checking that the entry the key's
/// nibbles lead to ends in the leaf hash `leaf`.
pub(crate) fn list_root(
    node: &Value,
    depth: usize,
    key: &Key,
    leaf: &Hash256,
    found: &mut bool,
) -> Result<Hash256, AuthError> {
    let entries = node.as_array().expect("called on arrays");
    if entries.len() > 16 {
        return Err(AuthError::malformed(
            "the proof",
            &format!("{} has {} entries", path_text(key, depth), entries.len()),
        ));
    }
    if depth >= 64 {
        return Err(AuthError::malformed(
            "the proof",
            "nests deeper than a key has nibbles",
        ));
    }
    let on_path = key.nibble(depth).get() as usize;
    let mut children = [Hash256([0; 32]); 16];
    for (i, e) in entries.iter().enumerate() {
        children[i] = match e {
            Value::String(s) if s.is_empty() => Hash256([0; 32]),
            Value::String(s) => Hash256::from_hex(s).map_err(|_| {
                AuthError::malformed(
                    "the proof",
                    &format!(
                        "entry {:X} of {} is not 64 hex digits",
                        i,
                        path_text(key, depth)
                    ),
                )
            })?,
            Value::Null => Hash256([0; 32]),
            Value::Array(_) if i == on_path => list_root(e, depth + 1, key, leaf, found)?,
            Value::Array(_) => {
                // A branch off the path, given in full: its hash counts, its
                // leaves are not the transaction's.
                list_root(e, depth + 1, key, &Hash256([0xFF; 32]), &mut false)?
            }
            _ => {
                return Err(AuthError::malformed(
                    "the proof",
                    &format!(
                        "entry {:X} of {} is neither a hash nor a list",
                        i,
                        path_text(key, depth)
                    ),
                ))
            }
        };
        if i == on_path && e.is_string() && children[i] == *leaf {
            *found = true;
        }
    }
    if depth == 0 && !*found {
        return Err(AuthError::invalid(
            "the transaction's leaf is not on its key's path in the proof (the entry its ID's nibbles lead to is another hash)",
        ));
    }
    Ok(inner_hash(&children))
}

/// The root of a tree-form proof, checking every stated hash and key and
/// that the key's path ends in a leaf with the transaction's ID and hash.
pub(crate) fn tree_root(
    node: &Value,
    depth: usize,
    key: &Key,
    leaf: &Hash256,
) -> Result<Hash256, AuthError> {
    let mut reached = false;
    let root = tree_node(node, depth, &Key([0; 32]), Some(key), leaf, &mut reached)?;
    if !reached {
        return Err(AuthError::invalid(
            "the transaction's leaf is not on its key's path in the proof (no leaf with its ID and hash where its nibbles lead)",
        ));
    }
    Ok(root)
}

fn tree_node(
    node: &Value,
    depth: usize,
    path: &Key,
    target: Option<&Key>,
    leaf: &Hash256,
    reached: &mut bool,
) -> Result<Hash256, AuthError> {
    let at = || path_text(path, depth);
    let obj = node
        .as_object()
        .ok_or_else(|| AuthError::malformed("the proof", &format!("{} is not an object", at())))?;
    let stated_hash = match obj.get("hash") {
        None => None,
        Some(v) => Some(
            v.as_str()
                .and_then(|s| Hash256::from_hex(s).ok())
                .ok_or_else(|| {
                    AuthError::malformed(
                        "the proof",
                        &format!("{}'s hash is not 64 hex digits", at()),
                    )
                })?,
        ),
    };
    let stated_key = match obj.get("key") {
        None => None,
        Some(v) => Some(
            v.as_str()
                .and_then(|s| Key::from_hex(s).ok())
                .ok_or_else(|| {
                    AuthError::malformed(
                        "the proof",
                        &format!("{}'s key is not 64 hex digits", at()),
                    )
                })?,
        ),
    };
    let children = match obj.get("children") {
        None => None,
        Some(Value::Object(c)) if c.is_empty() => None,
        Some(Value::Object(c)) => Some(c),
        Some(_) => {
            return Err(AuthError::malformed(
                "the proof",
                &format!("{}'s children is not an object", at()),
            ))
        }
    };
    let on_path = target.filter(|t| t.masked(depth) == *path);
    match children {
        None => {
            // A leaf: its hash as stated; its key must lie under its branch.
            let hash = stated_hash.ok_or_else(|| {
                AuthError::malformed("the proof", &format!("leaf at {} has no hash", at()))
            })?;
            if depth == 0 {
                return Err(AuthError::malformed("the proof", "the root is a leaf"));
            }
            if let Some(k) = stated_key {
                if k.masked(depth) != *path {
                    return Err(AuthError::invalid(format!(
                        "the leaf at {} has key {}, which is not under its branch",
                        at(),
                        k.to_hex()
                    )));
                }
            }
            if let Some(t) = on_path {
                if stated_key != Some(*t) || hash != *leaf {
                    return Err(AuthError::invalid(format!(
                        "the leaf at {} on the transaction's path is not the transaction (key or hash differ)",
                        at()
                    )));
                }
                *reached = true;
            }
            Ok(hash)
        }
        Some(c) => {
            if depth >= 64 {
                return Err(AuthError::malformed(
                    "the proof",
                    "nests deeper than a key has nibbles",
                ));
            }
            if let Some(k) = stated_key {
                if k != *path {
                    return Err(AuthError::invalid(format!(
                        "the inner node at {} has key {}, not its path",
                        at(),
                        k.to_hex()
                    )));
                }
            }
            let mut hashes = [Hash256([0; 32]); 16];
            let mut seen = [false; 16];
            for (name, child) in c {
                let nibble = match name.as_bytes() {
                    [b] => (*b as char).to_digit(16),
                    _ => None,
                }
                .ok_or_else(|| {
                    AuthError::malformed(
                        "the proof",
                        &format!("{} has a child named {name:?}", at()),
                    )
                })? as usize;
                if seen[nibble] {
                    return Err(AuthError::malformed(
                        "the proof",
                        &format!("{} names child {nibble:X} twice", at()),
                    ));
                }
                seen[nibble] = true;
                let mut child_path = *path;
                child_path.set_nibble(depth, shamap::Nibble::new(nibble as u8).expect("below 16"));
                hashes[nibble] = tree_node(child, depth + 1, &child_path, target, leaf, reached)?;
            }
            if let Some(t) = on_path {
                if !seen[t.nibble(depth).get() as usize] {
                    return Err(AuthError::invalid(format!(
                        "the transaction's path ends at {}: it has no child {:X}",
                        at(),
                        t.nibble(depth).get()
                    )));
                }
            }
            let hash = inner_hash(&hashes);
            if let Some(s) = stated_hash {
                if s != hash {
                    return Err(AuthError::invalid(format!(
                        "the inner node at {} states hash {} but its children hash to {}",
                        at(),
                        s.to_hex(),
                        hash.to_hex()
                    )));
                }
            }
            Ok(hash)
        }
    }
}

/// A transaction map built from `(ID, leaf hash)` pairs, as SHAMap shapes
/// it: a leaf sits at the first depth where no other key shares its path.
pub(crate) enum Node {
    Leaf(Key, Hash256),
    Inner(Key, Box<[Option<Node>; 16]>, Hash256),
}

impl Node {
    pub(crate) fn hash(&self) -> Hash256 {
        match self {
            Node::Leaf(_, h) | Node::Inner(_, _, h) => *h,
        }
    }
}

pub(crate) fn build(items: &[(Key, Hash256)], depth: usize, path: Key) -> Node {
    if items.len() == 1 && depth > 0 {
        return Node::Leaf(items[0].0, items[0].1);
    }
    let mut children: [Option<Node>; 16] = Default::default();
    let mut start = 0;
    while start < items.len() {
        let n = items[start].0.nibble(depth).get();
        let mut end = start;
        while end < items.len() && items[end].0.nibble(depth).get() == n {
            end += 1;
        }
        let mut p = path;
        p.set_nibble(depth, shamap::Nibble::new(n).expect("below 16"));
        children[n as usize] = Some(build(&items[start..end], depth + 1, p));
        start = end;
    }
    let hashes: [Hash256; 16] =
        std::array::from_fn(|i| children[i].as_ref().map_or(Hash256([0; 32]), Node::hash));
    let hash = inner_hash(&hashes);
    Node::Inner(path, Box::new(children), hash)
}

pub(crate) fn tree_json(node: &Node) -> Value {
    match node {
        Node::Leaf(k, h) => json!({"children": {}, "hash": h.to_hex(), "key": k.to_hex()}),
        Node::Inner(k, children, h) => {
            let mut c = Map::new();
            for (i, child) in children.iter().enumerate() {
                if let Some(child) = child {
                    c.insert(format!("{i:X}"), tree_json(child));
                }
            }
            json!({"children": c, "hash": h.to_hex(), "key": k.to_hex()})
        }
    }
}

pub(crate) fn list_json(node: &Node, key: &Key, depth: usize) -> Value {
    let Node::Inner(_, children, _) = node else {
        unreachable!("lists are made of inner nodes")
    };
    let on_path = key.nibble(depth).get() as usize;
    let entries: Vec<Value> = children
        .iter()
        .enumerate()
        .map(|(i, c)| match c {
            Some(n @ Node::Inner(..)) if i == on_path => list_json(n, key, depth + 1),
            Some(n) => Value::String(n.hash().to_hex()),
            None => Value::String(Hash256([0; 32]).to_hex()),
        })
        .collect();
    Value::Array(entries)
}
