//! Writing maps and ledgers into a store, crash-safely.
//!
//! Order: every node of the maps first (in batches), then one last batch
//! with the ledger header node and the new retained list, written with
//! [`NodeStore::write_durably`]. A process killed anywhere reopens with
//! the retained list of before (plus, at worst, some unreferenced nodes
//! that [`crate::gc()`] removes) or of after, never with a recorded root
//! whose tree is incomplete. That rests on the trait's contract, which
//! every backend keeps its own way: a write that returned is visible
//! whole, a batch's records only after its nodes ([`NodeStore::write`]),
//! and a durable write returns once it and everything before it are on
//! stable storage. The node log appends batches in order and applies one
//! at opening only when its checksums match, so a batch that survives has
//! every earlier one before it; fjall replays its journal in order;
//! RocksDB writes and syncs its write-ahead log; Cassandra writes the
//! nodes first and the records once the nodes are acknowledged.

use std::ops::ControlFlow;

use shamap::xrpl::{LedgerHeader, LedgerRoot, LedgerRoots};
use shamap::{Hash256, HashFunction, Key, Snapshot};

use crate::error::StoreError;
use crate::meta::{self, RetainedRoot};
use crate::node::{NodeObject, NodeType, VALUE_HEADER_LEN};
use crate::store::{Batch, BatchedIngest, BulkIngest, NodeStore};

/// Nodes per write batch when importing (the store's default batch).
pub const IMPORT_BATCH_NODES: usize = crate::store::WRITE_BATCH_NODES;

/// What a write of nodes did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteStats {
    /// Nodes visited.
    pub visited: u64,
    /// Nodes written (the others were already stored, whole).
    pub written: u64,
    /// Of the nodes written, those stored before with other bytes (a
    /// damaged copy): a re-import repairs them.
    pub repaired: u64,
    /// Value bytes written.
    pub bytes: u64,
}

impl WriteStats {
    fn add(&mut self, o: WriteStats) {
        self.visited += o.visited;
        self.written += o.written;
        self.repaired += o.repaired;
        self.bytes += o.bytes;
    }
}

/// Collects nodes into batches and writes them, skipping nodes the store
/// already has whole (their stored values read for a whole batch at once,
/// [`NodeStore::read_values`], and compared with the node's: a damaged copy
/// is written again, so that a re-import repairs it).
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
        let stored = match read_stored(self.store, &hashes) {
            Ok(s) => s,
            Err(e) => {
                self.failure = Some(e);
                return;
            }
        };
        let mut batch = Batch::new();
        for (node, stored) in nodes.into_iter().zip(stored) {
            let whole = stored.as_deref() == Some(node.value());
            if !whole {
                self.stats.repaired += u64::from(stored.is_some());
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

/// The stored values of `hashes`, read for all at once; when that read
/// fails on a stored copy that cannot be read as a value (a sparse inner
/// record that no longer decodes: [`StoreError::Corrupt`]), read one by
/// one, such a copy given as empty bytes: a damaged copy, which no node's
/// value equals, so that the import writes the node over it.
fn read_stored(
    store: &dyn NodeStore,
    hashes: &[Hash256],
) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
    match store.read_values(hashes) {
        Err(StoreError::Corrupt { .. }) => hashes
            .iter()
            .map(|h| match store.read_value(h) {
                Err(StoreError::Corrupt { .. }) => Ok(Some(Vec::new())),
                other => other,
            })
            .collect(),
        other => other,
    }
}

/// Payload bytes of one hash range of a bulk write (see [`write_snapshot`]):
/// a bulk import holds up to three ranges beside the map.
pub const BULK_RUN_BYTES: usize = 256 << 20;

/// Writes every node of `snapshot` that the store lacks; `progress` is
/// called after each node with the number visited so far. Records no root:
/// see [`record_root`].
///
/// Into a store that has no nodes yet, the nodes are written in bulk, in
/// one stream sorted by hash, to [`BulkIngest::ingest_sorted`] (fjall writes
/// them as table files, with no journal and no write buffer, fsynced): the
/// hash space is cut into ranges of about [`BULK_RUN_BYTES`] of nodes, and
/// each range is taken from the tree in a pass of its own
/// ([`Snapshot::for_each_node_where`]: only that range's nodes are
/// serialized) and sorted. The stored nodes come out in hash order, one
/// non-overlapping run, so the store has nothing to merge afterwards.
/// Into an empty store that appends in any order
/// ([`BulkIngest::wants_hash_ordered_import`] false: the node log), the
/// nodes go in tree order to [`BulkIngest::ingest_unordered`], none looked
/// up. Into a store with nodes, each node is first looked up, and the
/// missing ones are written in batches of [`IMPORT_BATCH_NODES`].
pub fn write_snapshot(
    store: &dyn NodeStore,
    snapshot: &Snapshot,
    progress: &mut dyn FnMut(u64),
) -> Result<WriteStats, StoreError> {
    only_sha512_half(snapshot)?;
    let empty = has_no_nodes(store)?;
    let batched = BatchedIngest(store);
    let bulk = store.bulk_ingest().unwrap_or(&batched);
    if empty && bulk.wants_hash_ordered_import() {
        return bulk_write(bulk, snapshot, BULK_RUN_BYTES, progress);
    }
    let node_type = NodeType::for_map(snapshot.kind());
    if empty {
        // Every node of one tree is new (no two nodes of a tree are equal:
        // their leaves' keys differ), so none is looked up.
        let mut stats = WriteStats::default();
        let mut value = Vec::new();
        bulk.ingest_unordered(&mut |put| {
            snapshot.for_each_node(|n| {
                value.clear();
                node_type.append_value(&n.prefix_bytes, &mut value);
                put(&n.hash, &value);
                stats.visited += 1;
                stats.written += 1;
                stats.bytes += value.len() as u64;
                progress(stats.visited);
            })
        })?;
        return Ok(stats);
    }
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

/// The bulk path of [`write_snapshot`]: one ingestion of every node in
/// hash order, taken from the tree one hash range at a time.
fn bulk_write(
    bulk: &dyn BulkIngest,
    snapshot: &Snapshot,
    range_bytes: usize,
    progress: &mut dyn FnMut(u64),
) -> Result<WriteStats, StoreError> {
    let node_type = NodeType::for_map(snapshot.kind());
    // A first pass, serializing nothing, sizes the ranges.
    let mut total = 0usize;
    snapshot.for_each_node_where(
        |_, len| {
            total += 32 + VALUE_HEADER_LEN + len;
            false
        },
        |_| {},
    );
    let ranges = HashRanges::new(total.div_ceil(range_bytes.max(1)));
    // One thread takes the ranges from the tree (serialized and sorted)
    // while this one streams the previous range into the store: up to
    // three ranges in memory (one being taken, one waiting, one written).
    let (ready, taken) = std::sync::mpsc::sync_channel::<TakenRange>(1);
    let mut stats = WriteStats::default();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            for range in 0..ranges.count {
                let mut taken = TakenRange::default();
                snapshot.for_each_node_where(
                    |h, _| ranges.of(h) == range,
                    |n| {
                        let node = NodeObject::hashed_by_engine(node_type, n.hash, &n.prefix_bytes);
                        taken.stats.visited += 1;
                        taken.stats.written += 1;
                        taken.stats.bytes += node.value().len() as u64;
                        taken.run.push((node.hash(), node.into_value()));
                    },
                );
                taken.run.sort_unstable_by_key(|n| n.0);
                // The same node twice (equal subtrees) has one hash: keep one.
                taken.run.dedup_by_key(|n| n.0);
                if ready.send(taken).is_err() {
                    // The writer stopped on an error: nothing more to take.
                    return;
                }
            }
        });
        let stats = &mut stats;
        let mut streamed = 0;
        let mut nodes = taken
            .into_iter()
            .flat_map(|t| {
                stats.add(t.stats);
                t.run
            })
            .inspect(|_| {
                streamed += 1;
                progress(streamed);
            });
        // Dropping `nodes` (on an error too) ends the taking thread.
        bulk.ingest_sorted(&mut nodes)
    })?;
    // Duplicate nodes were counted but streamed once.
    progress(stats.visited);
    // One run, in order: fjall still puts it in its first level, and
    // moves it to its last (compressed) in one pass here.
    bulk.finish_bulk()?;
    Ok(stats)
}

/// One hash range of a bulk write, taken from the tree: its nodes sorted
/// by hash (one of each), and what taking them counted.
#[derive(Default)]
struct TakenRange {
    run: Vec<(Hash256, Vec<u8>)>,
    stats: WriteStats,
}

/// The hash space cut into `count` ranges of equal width, in order.
#[derive(Clone, Copy)]
struct HashRanges {
    count: usize,
}

impl HashRanges {
    fn new(count: usize) -> HashRanges {
        HashRanges {
            count: count.max(1),
        }
    }

    /// The range `hash` falls in: ranges of smaller hashes come first.
    fn of(self, hash: &Hash256) -> usize {
        let top = u64::from_be_bytes(hash.0[..8].try_into().expect("8 bytes"));
        ((u128::from(top) * self.count as u128) >> 64) as usize
    }
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
    /// The ledger hash, when the header was given and stored.
    pub ledger_hash: Option<Hash256>,
    /// True when a header was given and left out: a map it names is in
    /// neither the import nor the store ([`HeaderMaps::IfPresent`]).
    pub header_left_out: bool,
    /// The retained root recorded: the ledger hash, or else the state root,
    /// or else the transaction root.
    pub recorded: Hash256,
    /// Nodes written and skipped.
    pub stats: WriteStats,
}

/// What [`import_ledger_with`] does with a header one of whose maps is in
/// neither the import nor the store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HeaderMaps {
    /// Refuse the import ([`StoreError::Missing`] naming the map's root):
    /// a stored header names only maps the store holds.
    #[default]
    Required,
    /// Import the maps without the header
    /// ([`ImportedLedger::header_left_out`]): what `shamap import` does
    /// with a dump that holds one of a ledger's maps.
    IfPresent,
}

/// What [`import_ledger_with`] imports: a ledger's maps and its header,
/// each when given.
#[derive(Clone, Copy, Default)]
pub struct LedgerParts<'a> {
    /// The state map.
    pub state: Option<&'a Snapshot>,
    /// The transaction map.
    pub tx: Option<&'a Snapshot>,
    /// The header naming them.
    pub header: Option<&'a LedgerHeader>,
}

/// How [`import_ledger_with`] imports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImportOptions {
    /// A header whose maps are not all there.
    pub header_maps: HeaderMaps,
}

/// Imports a ledger's maps and header, crash-safely (see the module docs),
/// and records it as the newest retained root under `name`, with the
/// default [`ImportOptions`]: [`import_ledger_with`].
pub fn import_ledger(
    store: &dyn NodeStore,
    name: &str,
    state: Option<&Snapshot>,
    tx: Option<&Snapshot>,
    header: Option<&LedgerHeader>,
    progress: &mut dyn FnMut(u64),
) -> Result<ImportedLedger, StoreError> {
    let parts = LedgerParts { state, tx, header };
    import_ledger_with(store, name, parts, &ImportOptions::default(), progress)
}

/// Imports a ledger's maps and header, crash-safely (see the module docs),
/// and records it as the newest retained root under `name`. `header`, when
/// given, must name the maps' roots (checked); a map it names that is
/// neither imported nor stored is refused, or leaves the header out, as
/// `opts.header_maps` says. The ledger hash is recorded when the header is
/// stored; else the state root (or, with no state map, the transaction
/// root).
pub fn import_ledger_with(
    store: &dyn NodeStore,
    name: &str,
    parts: LedgerParts<'_>,
    opts: &ImportOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<ImportedLedger, StoreError> {
    let LedgerParts { state, tx, header } = parts;
    meta::check_name(store, name)?;
    for snap in [state, tx].into_iter().flatten() {
        only_sha512_half(snap)?;
    }
    let account_hash = state.map_or(Hash256::ZERO, Snapshot::root_hash);
    let transaction_hash = tx.map_or(Hash256::ZERO, Snapshot::root_hash);
    if let Some(h) = header {
        let roots = LedgerRoots {
            account_hash: state.map(Snapshot::root_hash),
            transaction_hash: tx.map(Snapshot::root_hash),
        };
        roots
            .check_against(&h.roots())
            .map_err(|m| StoreError::WrongType {
                hash: h.hash(),
                found: match m.root {
                    LedgerRoot::Account => "a header with another account_hash",
                    LedgerRoot::Transaction => "a header with another transaction_hash",
                },
                expected: "a header naming the imported maps' roots",
            })?;
    }
    let mut header_left_out = false;
    let mut header = header;
    if let Some(h) = header {
        for (given, root) in [(state, h.account_hash), (tx, h.transaction_hash)] {
            if given.is_none() && !root.is_zero() && !store.contains(&root)? {
                match opts.header_maps {
                    HeaderMaps::Required => return Err(StoreError::Missing { hash: root }),
                    HeaderMaps::IfPresent => {
                        header_left_out = true;
                        header = None;
                        break;
                    }
                }
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
        header_left_out,
        recorded,
        stats,
    })
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use shamap::{Key, MapKind, ShaMap};

    use super::*;
    use crate::{verify_all, FjallStore};

    #[test]
    fn a_header_whose_map_is_absent_is_refused_or_left_out_as_the_options_say() {
        let store = crate::MemStore::new();
        let mut state = ShaMap::new(MapKind::AccountState);
        state.insert(Key([3; 32]), &[1; 40]).expect("insert");
        let snap = state.snapshot();
        let absent_tx = Hash256([5; 32]);
        let header = LedgerHeader {
            seq: 7,
            total_coins: 100,
            parent_hash: Hash256([9; 32]),
            transaction_hash: absent_tx,
            account_hash: snap.root_hash(),
            parent_close_time: 1,
            close_time: 2,
            close_time_resolution: 10,
            close_flags: 0,
        };
        // By default a header naming a map that is nowhere is refused,
        // before anything is written.
        let e = import_ledger(&store, "l", Some(&snap), None, Some(&header), &mut |_| {})
            .expect_err("the tx map is nowhere");
        assert_eq!(e, StoreError::Missing { hash: absent_tx });
        assert!(meta::retained(&store).expect("retained").is_empty());
        assert!(!store.contains(&snap.root_hash()).expect("contains"));
        // With HeaderMaps::IfPresent the maps go in without the header.
        let opts = ImportOptions {
            header_maps: HeaderMaps::IfPresent,
        };
        let parts = LedgerParts {
            state: Some(&snap),
            tx: None,
            header: Some(&header),
        };
        let r = import_ledger_with(&store, "l", parts, &opts, &mut |_| {})
            .expect("imported without its header");
        assert!(r.header_left_out);
        assert_eq!((r.ledger_hash, r.recorded), (None, snap.root_hash()));
        assert!(!store.contains(&header.hash()).expect("contains"));
        verify_all(&store, &snap.root_hash()).expect("the state map is whole");
        // A header whose maps are all there is stored, whatever the option.
        let whole = LedgerHeader {
            transaction_hash: Hash256::ZERO,
            ..header
        };
        let parts = LedgerParts {
            header: Some(&whole),
            ..parts
        };
        let r = import_ledger_with(&store, "m", parts, &opts, &mut |_| {})
            .expect("imported with its header");
        assert!(!r.header_left_out);
        assert_eq!(r.ledger_hash, Some(whole.hash()));
        assert!(store.contains(&whole.hash()).expect("contains"));
    }

    #[test]
    fn hash_ranges_are_in_hash_order_and_cover_the_space() {
        let r = HashRanges::new(7);
        assert_eq!(r.of(&Hash256::ZERO), 0);
        assert_eq!(r.of(&Hash256([0xFF; 32])), 6);
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let mut hashes: Vec<Hash256> = (0..2000).map(|_| Hash256(rng.gen())).collect();
        hashes.sort_unstable();
        let of: Vec<usize> = hashes.iter().map(|h| r.of(h)).collect();
        assert!(of.windows(2).all(|w| w[0] <= w[1]), "not monotone");
        assert!((0..7).all(|i| of.contains(&i)), "a range is never used");
    }

    /// Many small ranges still give fjall's ingestion one stream in strict
    /// hash order (it refuses anything else), and every node lands.
    #[test]
    fn a_bulk_write_in_many_ranges_stores_every_node_in_order() {
        let seed = 77;
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut map = ShaMap::new(MapKind::AccountState);
        for _ in 0..3000 {
            let len = rng.gen_range(1..200);
            let data: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            map.insert(Key(rng.gen()), &data).expect("insert");
        }
        let snap = map.snapshot();
        let dir = tempfile::tempdir().expect("tempdir");
        let store = FjallStore::open(dir.path()).expect("open");
        let mut last = 0;
        let stats = bulk_write(&store, &snap, 40_000, &mut |n| last = n).expect("bulk write");
        let mut nodes = 0;
        snap.for_each_node(|_| nodes += 1);
        assert_eq!(
            (stats.visited, stats.written, last),
            (nodes, nodes, nodes),
            "seed {seed}"
        );
        verify_all(&store, &snap.root_hash()).expect("every node of the root is stored");
    }
}
