//! Full verification of everything reachable from a root.

use shamap::{Hash256, MapKind, Nibble};

use crate::error::StoreError;
use crate::map::fetch::{fetched_value, ReadAhead};
use crate::node::{Node, NodeType};
use crate::node_id::MapNode;
use crate::node_id::NodeId;
use crate::store::{NodeStore, NodeStoreExt};

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
/// stored with its map's type, leaves on their key's path, no leaf as a
/// root, no empty inner node, nothing below depth 64 (every map node goes
/// through the store's one verified fetch, `crate::map::fetch`). Stops at the
/// first bad node and names it by hash and nibble path
/// ([`StoreError::BadNode`]).
pub fn verify_all(store: &dyn NodeStore, root: &Hash256) -> Result<VerifyReport, StoreError> {
    let mut report = VerifyReport::default();
    if root.is_zero() {
        // The empty map: no node to load, nothing to check.
        return Ok(report);
    }
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
                _ => match crate::map::reader::root_kind(store, root) {
                    Ok(crate::map::reader::RootKind::Map(k)) => k,
                    Ok(_) | Err(_) => MapKind::TransactionWithMeta,
                },
            };
            verify_map(store, root, kind, &mut report)?;
        }
        // Refused by the fetch at the root, as a leaf of its own kind.
        Node::Leaf { kind, .. } => verify_map(store, root, kind, &mut report)?,
    }
    Ok(report)
}

/// Verifies one map (a zero root is the empty map): every node through
/// the store's one verified fetch (hash, type, place; see `crate::map::fetch`).
pub fn verify_map(
    store: &dyn NodeStore,
    root: &Hash256,
    kind: MapKind,
    report: &mut VerifyReport,
) -> Result<(), StoreError> {
    if root.is_zero() {
        return Ok(());
    }
    let mut stack: Vec<(Hash256, NodeId)> = vec![(*root, NodeId::ROOT)];
    let mut ahead = ReadAhead::default();
    while let Some((hash, id)) = stack.pop() {
        let value = ahead
            .take(store, &hash, stack.iter().rev().map(|(h, _)| *h))
            .map_err(|e| e.at(hash, &id.nibbles()))?;
        let fetched = fetched_value(&hash, value, kind, &id)?;
        report.bytes += fetched.value_len as u64;
        match fetched.node {
            MapNode::Inner(children) => {
                report.inner += 1;
                for b in Nibble::all().rev() {
                    let c = children[usize::from(b.get())];
                    if !c.is_zero() {
                        stack.push((c, id.child(b)));
                    }
                }
            }
            MapNode::Leaf { .. } => report.leaves += 1,
        }
    }
    Ok(())
}
