//! Full verification of everything reachable from a root.

use shamap::{Hash256, Key, MapKind};

use crate::error::StoreError;
use crate::node::{Node, NodeType};
use crate::reader::nibble_path;
use crate::store::NodeStore;

/// What [`verify_all`] checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Ledger headers checked (0 or 1).
    pub headers: u64,
    /// Inner nodes checked.
    pub inner: u64,
    /// Leaves checked.
    pub leaves: u64,
    /// Bytes of stored values read.
    pub bytes: u64,
}

impl VerifyReport {
    /// All nodes checked.
    pub fn nodes(&self) -> u64 {
        self.headers + self.inner + self.leaves
    }
}

/// Rehashes every node reachable from `root` (a ledger hash: its header,
/// then its state and transaction maps; or a map root) and checks the tree's
/// structure: each node present, hashing to the hash its parent names,
/// stored with its map's type, leaves on their key's path, no empty inner
/// node below the root, nothing below depth 64. Stops at the first bad node
/// and names it by hash and nibble path ([`StoreError::BadNode`]).
pub fn verify_all(store: &dyn NodeStore, root: &Hash256) -> Result<VerifyReport, StoreError> {
    let mut report = VerifyReport::default();
    let obj = store.load(root).map_err(|e| e.at(*root, ""))?;
    match obj.parse().map_err(|e| e.at(*root, ""))? {
        Node::Ledger(h) => {
            report.headers = 1;
            report.bytes += obj.value().len() as u64;
            verify_map(store, &h.account_hash, MapKind::AccountState, &mut report)?;
            verify_map(
                store,
                &h.transaction_hash,
                MapKind::TransactionWithMeta,
                &mut report,
            )?;
        }
        Node::Inner(_) => {
            let kind = match obj.node_type() {
                Some(NodeType::AccountNode) => MapKind::AccountState,
                _ => match crate::reader::root_kind(store, root) {
                    Ok(crate::reader::RootKind::Map(k)) => k,
                    Ok(_) | Err(_) => MapKind::TransactionWithMeta,
                },
            };
            verify_map(store, root, kind, &mut report)?;
        }
        other => {
            return Err(StoreError::BadNode {
                hash: *root,
                path: String::new(),
                reason: format!("is {}, not a ledger or map root", other.describe()),
            })
        }
    }
    Ok(report)
}

/// Verifies one map (a zero root is the empty map).
pub fn verify_map(
    store: &dyn NodeStore,
    root: &Hash256,
    kind: MapKind,
    report: &mut VerifyReport,
) -> Result<(), StoreError> {
    if root.is_zero() {
        return Ok(());
    }
    let node_type = NodeType::for_map(kind);
    // (hash, path so far as a key with the nibbles above depth set, depth)
    let mut stack: Vec<(Hash256, Key, usize)> = vec![(*root, Key::ZERO, 0)];
    while let Some((hash, path, depth)) = stack.pop() {
        let bad = |reason: String| StoreError::BadNode {
            hash,
            path: nibble_path(&path, depth),
            reason,
        };
        let obj = store
            .load(&hash)
            .map_err(|e| e.at(hash, &nibble_path(&path, depth)))?;
        report.bytes += obj.value().len() as u64;
        let node = obj
            .parse()
            .map_err(|e| e.at(hash, &nibble_path(&path, depth)))?;
        match node {
            Node::Inner(children) => {
                if obj.node_type() != Some(node_type) {
                    return Err(bad(format!(
                        "inner node stored with type {:?}",
                        obj.node_type()
                    )));
                }
                if depth >= 64 {
                    return Err(bad("inner node below depth 63".to_owned()));
                }
                let n = children.iter().filter(|h| !h.is_zero()).count();
                if n == 0 {
                    return Err(bad("inner node with no children".to_owned()));
                }
                report.inner += 1;
                for b in (0..16u8).rev() {
                    let c = children[usize::from(b)];
                    if !c.is_zero() {
                        let mut p = path;
                        let byte = &mut p.0[depth / 2];
                        if depth.is_multiple_of(2) {
                            *byte |= b << 4;
                        } else {
                            *byte |= b;
                        }
                        stack.push((c, p, depth + 1));
                    }
                }
            }
            Node::Leaf { kind: k, key, .. } => {
                if depth == 0 {
                    return Err(bad("a map root must be an inner node".to_owned()));
                }
                if k != kind {
                    return Err(bad(format!("{} in a {} map", node.describe(), kind.name())));
                }
                if key.masked(depth) != path {
                    return Err(bad(format!("leaf key {key} is not on its path")));
                }
                report.leaves += 1;
            }
            Node::Ledger(_) => return Err(bad("a ledger header inside a map".to_owned())),
        }
    }
    Ok(())
}
