//! Writing maps and ledgers into a store, crash-safely.
//!
//! Order: every node of the maps first (in batches), then one last batch
//! with the ledger header node and the new retained list. A process killed
//! anywhere reopens with the retained list of before (plus, at worst, some
//! unreferenced nodes that [`crate::gc()`] removes) or of after, never with a
//! recorded root whose tree is incomplete: fjall applies batches in journal
//! order, so when the last batch survives, all earlier ones did.

use std::ops::ControlFlow;

use shamap::xrpl::LedgerHeader;
use shamap::{Hash256, HashFunction, Key, Snapshot};

use crate::error::StoreError;
use crate::meta::{self, RetainedRoot};
use crate::node::{NodeObject, NodeType};
use crate::store::{Batch, NodeStore};

/// Nodes per write batch when importing.
pub const IMPORT_BATCH_NODES: usize = 4096;

/// What a write of nodes did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteStats {
    /// Nodes visited.
    pub visited: u64,
    /// Nodes written (the others were already stored).
    pub written: u64,
    /// Value bytes written.
    pub bytes: u64,
}

impl WriteStats {
    fn add(&mut self, o: WriteStats) {
        self.visited += o.visited;
        self.written += o.written;
        self.bytes += o.bytes;
    }
}

/// Collects nodes into batches and writes them, skipping nodes the store
/// already has (asked for a whole batch at once: [`NodeStore::contains_many`]).
struct Writer<'a> {
    store: &'a dyn NodeStore,
    pending: Vec<NodeObject>,
    stats: WriteStats,
    failure: Option<StoreError>,
    /// Nodes per batch.
    limit: usize,
}

impl<'a> Writer<'a> {
    fn new(store: &'a dyn NodeStore, limit: usize) -> Writer<'a> {
        Writer {
            store,
            limit,
            pending: Vec::new(),
            stats: WriteStats::default(),
            failure: None,
        }
    }

    fn add(&mut self, node: NodeObject) {
        if self.failure.is_some() {
            return;
        }
        self.stats.visited += 1;
        self.pending.push(node);
        if self.pending.len() >= self.limit {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.failure.is_some() || self.pending.is_empty() {
            return;
        }
        let nodes = std::mem::take(&mut self.pending);
        let hashes: Vec<_> = nodes.iter().map(NodeObject::hash).collect();
        let stored = match self.store.contains_many(&hashes) {
            Ok(s) => s,
            Err(e) => {
                self.failure = Some(e);
                return;
            }
        };
        let mut batch = Batch::new();
        for (node, stored) in nodes.into_iter().zip(stored) {
            if !stored {
                self.stats.written += 1;
                self.stats.bytes += node.value().len() as u64;
                batch.put_node(node);
            }
        }
        if batch.is_empty() {
            return;
        }
        if let Err(e) = self.store.write(batch) {
            self.failure = Some(e);
        }
    }

    fn finish(mut self) -> Result<WriteStats, StoreError> {
        self.flush();
        match self.failure {
            Some(e) => Err(e),
            None => Ok(self.stats),
        }
    }
}

/// Payload bytes of one sorted run of a bulk write (see [`write_snapshot`]):
/// the memory a bulk import holds beside the map.
pub const BULK_RUN_BYTES: usize = 256 << 20;

/// Writes every node of `snapshot` that the store lacks; `progress` is
/// called after each node with the number visited so far. Records no root:
/// see [`record_root`].
///
/// Into a store that has no nodes yet, the nodes are written in bulk: cut
/// into runs of [`BULK_RUN_BYTES`], each sorted by hash and handed to
/// [`NodeStore::ingest_sorted`] (fjall writes them as table files, with
/// no journal and no write buffer, fsynced), then
/// [`NodeStore::finish_bulk`] (fjall: one merge into its last level).
/// Otherwise each node is first
/// looked up, and the missing ones are written in batches of
/// [`IMPORT_BATCH_NODES`].
pub fn write_snapshot(
    store: &dyn NodeStore,
    snapshot: &Snapshot,
    progress: &mut dyn FnMut(u64),
) -> Result<WriteStats, StoreError> {
    only_sha512_half(snapshot)?;
    if has_no_nodes(store)? {
        return bulk_write(store, snapshot, progress);
    }
    let node_type = NodeType::for_map(snapshot.kind());
    let mut w = Writer::new(store, IMPORT_BATCH_NODES);
    snapshot.for_each_node(|n| {
        w.add(NodeObject::hashed_by_engine(
            node_type,
            n.hash,
            &n.prefix_bytes,
        ));
        progress(w.stats.visited);
    });
    w.finish()
}

/// True when the store holds no node at all.
fn has_no_nodes(store: &dyn NodeStore) -> Result<bool, StoreError> {
    let mut any = false;
    store.for_each_value(&mut |_, _| {
        any = true;
        ControlFlow::Break(())
    })?;
    Ok(!any)
}

/// The bulk path of [`write_snapshot`].
fn bulk_write(
    store: &dyn NodeStore,
    snapshot: &Snapshot,
    progress: &mut dyn FnMut(u64),
) -> Result<WriteStats, StoreError> {
    let node_type = NodeType::for_map(snapshot.kind());
    let mut stats = WriteStats::default();
    let mut run: Vec<(Hash256, Vec<u8>)> = Vec::new();
    let mut run_bytes = 0;
    let mut failure = None;
    let ingest = |run: &mut Vec<(Hash256, Vec<u8>)>| {
        if run.is_empty() {
            return Ok(());
        }
        run.sort_unstable_by_key(|n| n.0);
        // Distinct subtrees have distinct hashes; equal ones (impossible in
        // one map) would only be written once.
        run.dedup_by_key(|n| n.0);
        let r = store.ingest_sorted(&mut run.drain(..));
        run.clear();
        r
    };
    snapshot.for_each_node(|n| {
        if failure.is_some() {
            return;
        }
        let node = NodeObject::hashed_by_engine(node_type, n.hash, &n.prefix_bytes);
        stats.visited += 1;
        stats.written += 1;
        stats.bytes += node.value().len() as u64;
        run_bytes += 32 + node.value().len();
        run.push((node.hash(), node.into_value()));
        if run_bytes >= BULK_RUN_BYTES {
            run_bytes = 0;
            if let Err(e) = ingest(&mut run) {
                failure = Some(e);
            }
        }
        progress(stats.visited);
    });
    if let Some(e) = failure {
        return Err(e);
    }
    ingest(&mut run)?;
    store.finish_bulk()?;
    Ok(stats)
}

/// Writes the nodes of `snapshot` on the paths of `changed` keys (the
/// dirty nodes after inserting, updating or removing exactly those keys
/// since a version already in the store) that the store lacks, in one
/// batch. Cost is proportional to the changes, not the map.
pub fn write_changed(
    store: &dyn NodeStore,
    snapshot: &Snapshot,
    changed: &[Key],
) -> Result<WriteStats, StoreError> {
    only_sha512_half(snapshot)?;
    let kind = snapshot.kind();
    // One atomic batch for the whole change set.
    let mut w = Writer::new(store, usize::MAX);
    for blob in snapshot.multi_proof(changed) {
        let node = NodeObject::from_wire(kind, &blob).map_err(|e| StoreError::Corrupt {
            hash: snapshot.root_hash(),
            reason: format!("the engine produced an undecodable node: {e}"),
        })?;
        w.add(node);
    }
    w.finish()
}

/// Refuses a map whose nodes a store could not name (see
/// [`StoreError::NotSha512Half`]).
fn only_sha512_half(snapshot: &Snapshot) -> Result<(), StoreError> {
    match snapshot.hash_function() {
        HashFunction::Sha512Half => Ok(()),
        found => Err(StoreError::NotSha512Half {
            found,
            root: snapshot.root_hash(),
        }),
    }
}

/// Adds `hash` as the newest retained root named `name` (moving it to the
/// end if already listed), in one atomic write together with `extra`
/// (e.g. the ledger header node). Returns once the record and every node
/// written before it are on stable storage.
pub fn record_root(
    store: &dyn NodeStore,
    name: &str,
    hash: Hash256,
    mut extra: Batch,
) -> Result<(), StoreError> {
    meta::check_name(store, name)?;
    let mut roots = meta::retained(store)?;
    roots.retain(|r| r.hash != hash);
    roots.push(RetainedRoot {
        name: name.to_owned(),
        hash,
    });
    meta::put_retained(&mut extra, &roots);
    store.write_durably(extra)
}

/// The roots one import stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImportedLedger {
    /// Root of the state map (zero when empty or absent).
    pub account_hash: Hash256,
    /// Root of the transaction map (zero when empty or absent).
    pub transaction_hash: Hash256,
    /// The ledger hash, when the header was given.
    pub ledger_hash: Option<Hash256>,
    /// The retained root recorded: the ledger hash, or else the state root,
    /// or else the transaction root.
    pub recorded: Hash256,
    /// Nodes written and skipped.
    pub stats: WriteStats,
}

/// Imports a ledger's maps and header, crash-safely (see the module docs),
/// and records it as the newest retained root under `name`. `header`, when
/// given, must name the maps' roots (checked). Without a header, the state
/// root (or, with no state map, the transaction root) is recorded.
pub fn import_ledger(
    store: &dyn NodeStore,
    name: &str,
    state: Option<&Snapshot>,
    tx: Option<&Snapshot>,
    header: Option<&LedgerHeader>,
    progress: &mut dyn FnMut(u64),
) -> Result<ImportedLedger, StoreError> {
    meta::check_name(store, name)?;
    for snap in [state, tx].into_iter().flatten() {
        only_sha512_half(snap)?;
    }
    let account_hash = state.map_or(Hash256::ZERO, Snapshot::root_hash);
    let transaction_hash = tx.map_or(Hash256::ZERO, Snapshot::root_hash);
    if let Some(h) = header {
        let mismatch = |what: &'static str| StoreError::WrongType {
            hash: h.hash(),
            found: what,
            expected: "a header naming the imported maps' roots",
        };
        if state.is_some() && h.account_hash != account_hash {
            return Err(mismatch("a header with another account_hash"));
        }
        if tx.is_some() && h.transaction_hash != transaction_hash {
            return Err(mismatch("a header with another transaction_hash"));
        }
        for (given, root) in [(state, h.account_hash), (tx, h.transaction_hash)] {
            if given.is_none() && !root.is_zero() && !store.contains(&root)? {
                return Err(StoreError::Missing { hash: root });
            }
        }
    }
    let mut stats = WriteStats::default();
    let mut done = 0;
    for snap in [state, tx].into_iter().flatten() {
        let base = done;
        let s = write_snapshot(store, snap, &mut |n| progress(base + n))?;
        done += s.visited;
        stats.add(s);
    }
    let mut last = Batch::new();
    let ledger_hash = header.map(|h| {
        let node = NodeObject::ledger(h);
        let hash = node.hash();
        last.put_node(node);
        hash
    });
    let recorded = ledger_hash.unwrap_or(if state.is_some() {
        account_hash
    } else {
        transaction_hash
    });
    record_root(store, name, recorded, last)?;
    Ok(ImportedLedger {
        account_hash,
        transaction_hash,
        ledger_hash,
        recorded,
        stats,
    })
}
