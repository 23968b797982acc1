//! Garbage collection: delete the nodes that no retained root reaches.
//!
//! Mark, then sweep. Marking walks every kept root and fails, changing
//! nothing, if any node on the way is missing or corrupt. Then the retained
//! list is rewritten to the kept roots, and the sweep deletes, in batches,
//! every stored node the mark did not reach. A reader of a kept root only
//! ever loads marked nodes, so it runs safely beside the sweep. Backed-map
//! writers in the same process are safe too: each pins the root its clean
//! slots hang under (opened, spilled or committed), the mark also walks
//! the pins (without retaining them), and writers' spills and commits wait
//! while a collection runs (see `writers`). Another process cannot write
//! meanwhile: fjall locks the store directory. Last, the store gives back
//! the space dead records hold ([`NodeStore::reclaim_space`]: the node log
//! reclaims when a quarter of it is dead, deleted now or written over
//! before).

use std::ops::ControlFlow;

use hashbrown::HashSet;
use shamap::Hash256;

use crate::error::StoreError;
use crate::map::fetch::ReadAhead;
use crate::meta::{self, RetainedRoot};
use crate::node::{Node, NodeObject};
use crate::store::Batch;
use crate::store::{NodeStore, NodeStoreExt};

/// Nodes deleted per batch by the sweep.
const SWEEP_BATCH: usize = 10_000;

/// What [`gc`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcReport {
    /// Roots kept.
    pub roots: usize,
    /// Nodes reachable from them.
    pub reachable: u64,
    /// Nodes in the store before the sweep.
    pub scanned: u64,
    /// Nodes deleted.
    pub deleted: u64,
}

/// Every node hash reachable from `root` (a ledger hash or a map root),
/// added to `marked`. Each node is loaded and verified once; subtrees
/// already marked are skipped (roots share most of their nodes).
pub fn mark(
    store: &dyn NodeStore,
    root: &Hash256,
    marked: &mut HashSet<Hash256>,
) -> Result<(), StoreError> {
    mark_from(store, root, marked, false)
}

/// [`mark`]; with `present_only`, for a writer's pin, absent nodes are
/// passed over instead of failing (a pin of another store at the same
/// location, see `writers`). Corrupt nodes fail either way.
fn mark_from(
    store: &dyn NodeStore,
    root: &Hash256,
    marked: &mut HashSet<Hash256>,
    present_only: bool,
) -> Result<(), StoreError> {
    let mut stack = vec![*root];
    let mut ahead = ReadAhead::default();
    while let Some(h) = stack.pop() {
        if h.is_zero() || marked.contains(&h) {
            continue;
        }
        let upcoming = stack.iter().rev().filter(|c| !marked.contains(*c)).copied();
        let value = ahead.take(store, &h, upcoming)?;
        let node = match value.map(|v| NodeObject::decode(h, v)).transpose()? {
            Some(obj) => obj.parse()?,
            None if present_only => continue,
            None => return Err(StoreError::Missing { hash: h }),
        };
        marked.insert(h);
        match node {
            Node::Inner(children) => stack.extend(children.iter().filter(|c| !c.is_zero())),
            Node::Leaf { .. } => {}
            Node::Ledger(hdr) => {
                stack.push(hdr.account_hash);
                stack.push(hdr.transaction_hash);
            }
        }
    }
    Ok(())
}

/// Keeps exactly the roots in `keep` (ledger hashes or map roots): they
/// become the retained list (names kept for roots already listed, `kept`
/// for others), and every node none of them reaches is deleted. Fails
/// before deleting anything if a kept root is not one the store knows as a
/// root ([`meta::known_root`]: a wrong hash must not pass for a map and
/// take the rest of the store with it), or is incomplete or corrupt.
pub fn gc(store: &dyn NodeStore, keep: &[Hash256]) -> Result<GcReport, StoreError> {
    let mut report = GcReport::default();
    gc_counting(store, keep, &mut report)?;
    Ok(report)
}

/// [`gc`], counting into `report` as it goes: when it fails part way (a
/// full disk, an I/O error), `report.deleted` says how many nodes were
/// deleted before the failure (none of them reachable from a kept root).
pub fn gc_counting(
    store: &dyn NodeStore,
    keep: &[Hash256],
    report: &mut GcReport,
) -> Result<(), StoreError> {
    for root in keep {
        meta::known_root(store, root)?;
    }
    let writers = crate::map::writers::for_store(store);
    let exclusive = writers.exclusive();
    let mut marked = HashSet::new();
    for root in keep {
        mark(store, root, &mut marked)?;
    }
    for pin in &exclusive.pins {
        mark_from(store, pin, &mut marked, true)?;
    }
    let listed = meta::retained(store)?;
    let mut roots: Vec<RetainedRoot> = Vec::new();
    for r in &listed {
        if keep.contains(&r.hash) && !roots.iter().any(|x| x.hash == r.hash) {
            roots.push(r.clone());
        }
    }
    for h in keep {
        if !roots.iter().any(|x| x.hash == *h) {
            roots.push(RetainedRoot {
                name: "kept".to_owned(),
                hash: *h,
            });
        }
    }
    let mut b = Batch::new();
    meta::put_retained(&mut b, &roots);
    store.write_durably(b)?;

    *report = GcReport {
        roots: roots.len(),
        reachable: marked.len() as u64,
        ..GcReport::default()
    };
    let mut doomed: Vec<Hash256> = Vec::new();
    let mut failure = None;
    store.for_each_value(&mut |h, _| {
        report.scanned += 1;
        if !marked.contains(&h) {
            doomed.push(h);
            if doomed.len() >= SWEEP_BATCH {
                if let Err(e) = store.delete(&doomed) {
                    failure = Some(e);
                    return ControlFlow::Break(());
                }
                report.deleted += doomed.len() as u64;
                doomed.clear();
            }
        }
        ControlFlow::Continue(())
    })?;
    if let Some(e) = failure {
        return Err(e);
    }
    store.delete(&doomed)?;
    report.deleted += doomed.len() as u64;
    store.reclaim_space()?;
    store.sync()
}
