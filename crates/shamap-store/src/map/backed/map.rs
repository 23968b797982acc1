//! The backed map itself: its options and counters, and [`BackedMap`], which
//! holds the loader (store and node cache), the working tree's root slot
//! and the memory accounting, and runs lookups, scans and mutations
//! (`tree`), spills and commits (`commit`).

use std::ops::ControlFlow;

use shamap::{Hash256, Key, MapKind};

use crate::error::StoreError;
use crate::node_id::NodeId;
use crate::store::{Batch, NodeStore};

use super::cache::{CleanNode, Keep, Loader};
use super::commit;
use super::tree::{
    self, materialize, remove_in, write_in, Child, Dirty, Effects, Inner, Removed, Replaced,
    DIRTY_INNER_BYTES, REPLACED_NODE_BYTES,
};

/// Options of a [`BackedMap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackedOptions {
    /// Bytes of memory for the map's nodes: the clean-node cache (its
    /// entries and tables), the dirty nodes, and the store's memory that
    /// grows with the state ([`NodeStore::memory`]: the node log's
    /// index). Default 64 MiB. Caches and buffers of a fixed size of the
    /// store's own (fjall's block cache and write buffers) are outside it.
    pub budget_bytes: usize,
    /// Delete, in the batch of each commit, the stored nodes the map's
    /// changes replaced, so that the store keeps one version of the map (its
    /// last commit) instead of every version: a store that follows a
    /// changing state stays the size of the state, and so does the node
    /// log's index in memory. Done only when nothing else can need them:
    /// the retained list holds no root but the one the commit names, and
    /// no other backed map of this process writes the store (for a store
    /// that other processes write, such as a shared Cassandra keyspace,
    /// leave it off). Otherwise, and when the list of replaced nodes
    /// outgrows an eighth of the budget, they stay for [`crate::gc()`]
    /// ([`BackedStats::prune_skipped`]). Default off: every committed
    /// version stays readable until `gc`.
    pub prune_replaced: bool,
    /// Dirty nodes are written out (spilled) once they hold more than
    /// `budget_bytes / dirty_share`. Default 4: large write-outs, for
    /// commits of many changes. A map whose commits are small and whose
    /// peak is a bulk build (`clio verify --state`'s first ledger) does
    /// better with more: at 16, that build's peak RSS was 84 MiB instead of
    /// 93 at a 64 MiB budget, in the same time (see docs/design.md).
    pub dirty_share: usize,
    /// What the process's heap holds, read after each write-out (spill or
    /// commit): with a probe, the budget covers the heap's growth since the
    /// map opened, not only what the map accounts for. Whatever the heap
    /// holds beyond the map's own accounting and beyond what it held at
    /// opening (the caller's buffers, rows read ahead, the allocator's
    /// metadata and partly used pages) is taken from what the clean cache
    /// may hold ([`BackedStats::heap_outside_bytes`]). Default none: the
    /// budget covers the map's accounted memory only.
    pub heap_probe: Option<HeapProbe>,
}

/// Reads the bytes the process's heap holds as its allocator counts them
/// (pages backing live allocations, and the allocator's metadata), or
/// `None` when it cannot say. For [`BackedOptions::heap_probe`]; the
/// `shamap` binary reads jemalloc's counters.
#[derive(Clone, Copy)]
pub struct HeapProbe(pub fn() -> Option<usize>);

impl std::fmt::Debug for HeapProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HeapProbe")
    }
}

impl PartialEq for HeapProbe {
    fn eq(&self, other: &HeapProbe) -> bool {
        std::ptr::fn_addr_eq(self.0, other.0)
    }
}

impl Eq for HeapProbe {}

impl Default for BackedOptions {
    fn default() -> Self {
        BackedOptions {
            budget_bytes: 64 << 20,
            prune_replaced: false,
            dirty_share: DEFAULT_DIRTY_SHARE,
            heap_probe: None,
        }
    }
}

impl BackedOptions {
    /// A budget of `mb` MiB.
    pub fn with_budget_mb(mb: u64) -> BackedOptions {
        BackedOptions {
            budget_bytes: usize::try_from(mb.saturating_mul(1 << 20)).unwrap_or(usize::MAX),
            ..BackedOptions::default()
        }
    }

    /// These options with [`BackedOptions::prune_replaced`] on.
    pub fn pruning(self) -> BackedOptions {
        BackedOptions {
            prune_replaced: true,
            ..self
        }
    }
}

/// The list of replaced nodes may hold an eighth of the budget, and at
/// least this many (66 KiB).
const MIN_REPLACED_LIST: usize = 1024;

/// [`BackedOptions::dirty_share`]'s default.
const DEFAULT_DIRTY_SHARE: usize = 4;

/// Counters of a [`BackedMap`], for reports and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackedStats {
    /// The memory budget.
    pub budget_bytes: usize,
    /// Memory the store holds that grows with the state and counts
    /// against the budget ([`NodeStore::memory`]: the node log's
    /// index; 0 for fjall and RocksDB, whose caches have sizes of their own).
    pub store_resident_bytes: u64,
    /// Memory the store will soon allocate, counted against the budget
    /// ahead ([`NodeStore::memory`]: the node log's next index
    /// growth or reclaim, once near).
    pub store_reserved_bytes: u64,
    /// Bytes the clean cache holds now (charged per entry: the decoded node,
    /// its table slot, its CLOCK entry and the `Arc` header).
    pub cache_bytes: usize,
    /// The most the clean cache ever held.
    pub cache_peak_bytes: usize,
    /// Nodes in the clean cache.
    pub cache_entries: usize,
    /// Bytes charged to dirty nodes since the last write-out.
    pub dirty_bytes: usize,
    /// The most dirty bytes ever held (before a spill or commit).
    pub dirty_peak_bytes: usize,
    /// Node lookups answered by the cache.
    pub hits: u64,
    /// Node lookups that loaded (and verified) a node from the store.
    pub loads: u64,
    /// Nodes evicted from the cache.
    pub evictions: u64,
    /// Write-outs of dirty nodes before a commit.
    pub spills: u64,
    /// Nodes written (spills and commits).
    pub nodes_written: u64,
    /// Replaced nodes deleted ([`BackedOptions::prune_replaced`]).
    pub nodes_pruned: u64,
    /// Commits (and spills before the first one) that left replaced nodes
    /// in the store for `gc`: other roots or writers, or too many to list.
    pub prune_skipped: u64,
    /// With a [`BackedOptions::heap_probe`]: the heap's growth since the
    /// map opened beyond the map's own accounting, the largest of the last
    /// few probe reads, taken from the clean cache's share of the budget.
    pub heap_outside_bytes: usize,
}

/// A SHAMap backed by a [`NodeStore`]; see the [module docs](crate::map::backed).
pub struct BackedMap<'s> {
    loader: Loader<'s>,
    /// The root this map's clean slots hang under, pinned against `gc`.
    pin: crate::map::writers::Pin,
    root: Child,
    committed: Hash256,
    dirty_bytes: usize,
    /// Dirty bytes past which the map spills.
    dirty_limit: usize,
    dirty_peak: usize,
    spills: u64,
    nodes_written: u64,
    /// Stored nodes replaced since the last write-out (when pruning).
    replaced: Replaced,
    nodes_pruned: u64,
    prune_skipped: u64,
    heap_probe: Option<HeapProbe>,
    /// What the heap held when the map opened, less the store's accounted
    /// memory then (its index is in the budget).
    heap_base: usize,
    /// [`BackedStats::heap_outside_bytes`]: the largest of the last
    /// [`HEAP_WINDOW`] probe reads.
    heap_outside: usize,
    /// The last probe reads of the outside heap, a ring.
    heap_recent: [usize; HEAP_WINDOW],
    heap_reads: usize,
}

/// Probe reads whose largest the cache leaves free (see
/// [`BackedMap::probe_heap`]).
const HEAP_WINDOW: usize = 8;

impl std::fmt::Debug for BackedMap<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackedMap")
            .field("store", &self.loader.store.location())
            .field("kind", &self.loader.kind)
            .field("committed", &self.committed)
            .finish_non_exhaustive()
    }
}

impl<'s> BackedMap<'s> {
    /// Opens the map of kind `kind` whose root is `root` (zero: the empty
    /// map), loading and verifying the root node.
    pub fn open(
        store: &'s dyn NodeStore,
        root: Hash256,
        kind: MapKind,
        opts: BackedOptions,
    ) -> Result<BackedMap<'s>, StoreError> {
        let map = BackedMap {
            pin: crate::map::writers::Pin::new(store, root),
            loader: Loader::new(store, kind, opts.budget_bytes),
            root: if root.is_zero() {
                Child::Empty
            } else {
                Child::Clean(root)
            },
            committed: root,
            dirty_bytes: 0,
            dirty_limit: opts.budget_bytes / opts.dirty_share.max(1),
            dirty_peak: 0,
            spills: 0,
            nodes_written: 0,
            replaced: Replaced {
                on: opts.prune_replaced,
                limit: (opts.budget_bytes / 8 / REPLACED_NODE_BYTES).max(MIN_REPLACED_LIST),
                ..Replaced::default()
            },
            nodes_pruned: 0,
            prune_skipped: 0,
            heap_probe: opts.heap_probe,
            heap_base: opts
                .heap_probe
                .and_then(|p| (p.0)())
                .unwrap_or(0)
                .saturating_sub(usize::try_from(store.memory().resident).unwrap_or(usize::MAX)),
            heap_outside: 0,
            heap_recent: [0; HEAP_WINDOW],
            heap_reads: 0,
        };
        if !root.is_zero() {
            let cap = map.cache_capacity();
            match map
                .loader
                .fetch(&root, &NodeId::ROOT, Keep::All { capacity: cap })?
            {
                CleanNode::Inner { .. } => {}
                CleanNode::Leaf { .. } => unreachable!("fetch refuses a leaf at depth 0"),
            }
        }
        Ok(map)
    }

    /// An empty map on `store`, nothing written yet.
    pub fn new(store: &'s dyn NodeStore, kind: MapKind, opts: BackedOptions) -> BackedMap<'s> {
        BackedMap::open(store, Hash256::ZERO, kind, opts).expect("an empty map loads nothing")
    }

    /// The map kind.
    pub fn kind(&self) -> MapKind {
        self.loader.kind
    }

    /// The root recorded by the last [`BackedMap::commit`] (or the one
    /// opened).
    pub fn committed_root(&self) -> Hash256 {
        self.committed
    }

    /// True when something changed since the last commit (or open).
    pub fn is_dirty(&self) -> bool {
        match &self.root {
            Child::Empty => !self.committed.is_zero(),
            Child::Clean(h) => *h != self.committed,
            Child::Dirty(d) => match d {
                Dirty::Inner(i) => !(i.stored && i.hash == Some(self.committed)),
                Dirty::Leaf(_) => true,
            },
        }
    }

    /// What the clean cache may hold: the budget less the dirty nodes and
    /// what writing them out takes ([`commit::write_out_bytes`]), the
    /// store's own memory that grows with the state
    /// ([`NodeStore::memory`]: the node log's index) and what it
    /// will soon allocate ([`NodeStore::memory`]), and the heap's
    /// growth outside the map ([`BackedOptions::heap_probe`]); but at least
    /// an eighth of the budget (a budget smaller than the index alone is
    /// then exceeded; [`BackedStats::store_resident_bytes`] shows by how
    /// much).
    fn cache_capacity(&self) -> usize {
        let store = self.store_bytes(true);
        self.loader
            .budget
            .saturating_sub(self.dirty_bytes)
            .saturating_sub(commit::write_out_bytes(self.loader.budget))
            .saturating_sub(self.replaced.heap_bytes())
            .saturating_sub(store)
            .saturating_sub(self.heap_outside)
            .max(self.loader.budget / 8)
    }

    /// The store's memory in the budget: what it holds, and with
    /// `reserved` what it will soon allocate ([`NodeStore::memory`]).
    fn store_bytes(&self, reserved: bool) -> usize {
        let m = self.loader.store.memory();
        let reserved = if reserved { m.reserved } else { 0 };
        let bytes = m.resident.saturating_add(reserved);
        usize::try_from(bytes).unwrap_or(usize::MAX)
    }

    /// Reads the heap probe, if any ([`BackedOptions::heap_probe`]): the
    /// heap's growth since opening beyond the map's own accounting, whose
    /// largest value over the last eight reads the clean cache
    /// then leaves free (from its next insert on): the rows and buffers of
    /// a caller come and go within its work on one block, and the cache
    /// must not fill their room between two reads. Done
    /// after every write-out; a caller whose own memory changes between
    /// write-outs (a batch of rows read) calls it then too.
    pub fn probe_heap(&mut self) {
        let Some(heap) = self.heap_probe.and_then(|p| (p.0)()) else {
            return;
        };
        // What the map holds now (not the store's reservations).
        let own = self.loader.cache().held_bytes()
            + self.dirty_bytes
            + self.replaced.heap_bytes()
            + self.store_bytes(false);
        let outside = heap.saturating_sub(self.heap_base).saturating_sub(own);
        self.heap_recent[self.heap_reads % HEAP_WINDOW] = outside;
        self.heap_reads += 1;
        self.heap_outside = self.heap_recent.iter().copied().max().unwrap_or(0);
    }

    /// Loads into the node cache, verified, the stored nodes on the paths
    /// of `keys` under the last committed root, on up to `threads` threads
    /// side by side. A block's keys are known before it is applied; loading
    /// their paths first, in parallel, turns the block's one-at-a-time
    /// point reads of the store into cache hits. Changes nothing but the
    /// cache (within the budget); the first error is returned.
    pub fn prefetch(&self, keys: &[Key], threads: usize) -> Result<(), StoreError> {
        let root = self.committed;
        if root.is_zero() || keys.is_empty() {
            return Ok(());
        }
        let cap = self.cache_capacity();
        let loader = &self.loader;
        let per_thread = keys.len().div_ceil(threads.max(1));
        std::thread::scope(|scope| {
            let workers: Vec<_> = keys
                .chunks(per_thread)
                .map(|part| scope.spawn(move || prefetch_paths(loader, root, part, cap)))
                .collect();
            workers
                .into_iter()
                .try_for_each(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
        })
    }

    /// Counters: cache size and hits, loads, evictions, spills.
    pub fn stats(&self) -> BackedStats {
        let c = self.loader.cache();
        let memory = self.loader.store.memory();
        BackedStats {
            budget_bytes: self.loader.budget,
            store_resident_bytes: memory.resident,
            store_reserved_bytes: memory.reserved,
            cache_bytes: c.held_bytes(),
            cache_peak_bytes: c.peak,
            cache_entries: c.entries(),
            dirty_bytes: self.dirty_bytes,
            dirty_peak_bytes: self.dirty_peak,
            hits: c.hits,
            loads: c.loads,
            evictions: c.evictions,
            spills: self.spills,
            nodes_written: self.nodes_written,
            nodes_pruned: self.nodes_pruned,
            prune_skipped: self.prune_skipped,
            heap_outside_bytes: self.heap_outside,
        }
    }

    /// The data under `key`.
    pub fn get(&self, key: &Key) -> Result<Option<Vec<u8>>, StoreError> {
        let keep = Keep::Reused {
            capacity: self.cache_capacity(),
        };
        tree::lookup(&self.loader, &self.root, key, keep)
    }

    /// True when `key` is present.
    pub fn contains(&self, key: &Key) -> Result<bool, StoreError> {
        Ok(self.get(key)?.is_some())
    }

    /// The first item whose key is greater than `key` (rippled's
    /// `upper_bound`), walking only the paths that can hold it.
    pub fn next_after(&self, key: &Key) -> Result<Option<(Key, Vec<u8>)>, StoreError> {
        self.neighbour(key, true)
    }

    /// The last item whose key is less than `key`.
    pub fn last_before(&self, key: &Key) -> Result<Option<(Key, Vec<u8>)>, StoreError> {
        self.neighbour(key, false)
    }

    /// The nearest item beyond `key`, above it (`up`) or below.
    fn neighbour(&self, key: &Key, up: bool) -> Result<Option<(Key, Vec<u8>)>, StoreError> {
        let keep = Keep::Reused {
            capacity: self.cache_capacity(),
        };
        tree::neighbour(&self.loader, &self.root, NodeId::ROOT, key, up, true, keep)
    }

    /// Calls `f` with every item in ascending key order until it breaks.
    /// Nodes read only for the scan do not enter the cache, so a scan of a
    /// state larger than the budget neither grows memory nor flushes the
    /// cache's working set.
    pub fn for_each(
        &self,
        f: &mut dyn FnMut(&Key, &[u8]) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        tree::visit(&self.loader, &self.root, NodeId::ROOT, f).map(|_| ())
    }

    fn charge_dirty(&mut self, bytes: usize) {
        self.dirty_bytes += bytes;
        self.dirty_peak = self.dirty_peak.max(self.dirty_bytes);
    }

    /// Makes the root a dirty inner node (loading it if clean).
    fn root_inner(&mut self) -> Result<(), StoreError> {
        let cap = self.cache_capacity();
        let added = materialize(&self.loader, &mut self.root, &NodeId::ROOT, cap)?;
        self.charge_dirty(added);
        if matches!(self.root, Child::Empty) {
            self.root = Child::Dirty(Dirty::Inner(Box::new(Inner::empty())));
            self.charge_dirty(DIRTY_INNER_BYTES);
        }
        Ok(())
    }

    /// Runs `change` on the root (made a dirty inner node first) with the
    /// loader and the cache capacity, then charges what it added and spills
    /// if needed.
    fn change_root<T>(
        &mut self,
        change: impl FnOnce(&Loader<'s>, &mut Inner, &mut Effects<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.root_inner()?;
        let cap = self.cache_capacity();
        let Child::Dirty(Dirty::Inner(root)) = &mut self.root else {
            unreachable!("root_inner made the root a dirty inner node")
        };
        let mut fx = Effects {
            cap,
            charged: 0,
            replaced: &mut self.replaced,
        };
        let out = change(&self.loader, root, &mut fx);
        let charged = fx.charged;
        self.charge_dirty(charged);
        let out = out?;
        self.maybe_spill()?;
        Ok(out)
    }

    /// Sets `key` to `data`; true when the key was new. On an error (a
    /// node on the path missing or bad) the map is unchanged.
    pub fn upsert(&mut self, key: Key, data: &[u8]) -> Result<bool, StoreError> {
        self.change_root(|loader, root, fx| write_in(loader, root, 0, &key, data, fx))
    }

    /// Removes `key`; true when it was present. On an error the map is
    /// unchanged.
    pub fn remove(&mut self, key: &Key) -> Result<bool, StoreError> {
        if !self.contains(key)? {
            return Ok(false);
        }
        let r = self.change_root(|loader, root, fx| remove_in(loader, root, 0, key, fx))?;
        Ok(matches!(r, Removed::Yes { .. }))
    }

    /// The root hash of the map as it is now (hashing dirty nodes; nothing
    /// is written).
    pub fn root_hash(&mut self) -> Hash256 {
        let kind = self.loader.kind;
        match &mut self.root {
            Child::Empty => Hash256::ZERO,
            Child::Clean(h) => *h,
            Child::Dirty(Dirty::Inner(i)) if i.count() == 0 => Hash256::ZERO,
            slot @ Child::Dirty(_) => commit::hash_batched(kind, slot),
        }
    }

    fn maybe_spill(&mut self) -> Result<(), StoreError> {
        if self.dirty_bytes > self.dirty_limit {
            self.spills += 1;
            self.write_out(None, Batch::new())?;
        }
        Ok(())
    }

    /// Writes every dirty node, plus (for a commit) the retained record
    /// naming the root, in one batch; then turns the dirty nodes into clean
    /// slots (into the cache). Returns the root.
    fn write_out(&mut self, record: Option<&str>, batch: Batch) -> Result<Hash256, StoreError> {
        let w = commit::write_dirty(
            &self.loader,
            &self.pin,
            &mut self.root,
            record,
            batch,
            &mut self.replaced,
            self.committed.is_zero(),
        )?;
        let root = w.root;
        self.nodes_written += w.nodes;
        self.nodes_pruned += w.pruned;
        self.prune_skipped += u64::from(w.prune_skipped);
        // Written: dirty nodes become clean slots, their content cached,
        // within what the cache had beside them (they are freed only as
        // they move).
        let cap = self.cache_capacity();
        commit::settle_tree(&self.loader, &mut self.root, root, cap);
        self.dirty_bytes = 0;
        // The dirty nodes, the batch and the evicted entries are free now.
        shamap::release_free_heap();
        self.probe_heap();
        Ok(root)
    }

    /// Writes all dirty nodes and records the root as retained root `name`
    /// (replacing the entry of that name, or appending one), in one atomic
    /// batch. Returns the root. On an error nothing is lost from memory and
    /// the store keeps its previous committed root.
    pub fn commit(&mut self, name: &str) -> Result<Hash256, StoreError> {
        self.commit_with(name, Batch::new())
    }

    /// [`BackedMap::commit`], with `extra` (the caller's own nodes and
    /// metadata) written in the same atomic, durable batch: a record that
    /// describes the committed root lands with it or not at all, for one
    /// sync instead of two.
    pub fn commit_with(&mut self, name: &str, extra: Batch) -> Result<Hash256, StoreError> {
        crate::meta::check_name(self.loader.store, name)?;
        let root = self.write_out(Some(name), extra)?;
        self.committed = root;
        Ok(root)
    }
}

/// Walks the path of each key from `root` through the cache, loading what
/// is missing (see [`BackedMap::prefetch`]): all the paths a level at a
/// time, so that each level's missing nodes are read and verified together
/// ([`Loader::fetch_many`]).
fn prefetch_paths(
    loader: &Loader<'_>,
    root: Hash256,
    keys: &[Key],
    cap: usize,
) -> Result<(), StoreError> {
    // The keys whose walk goes on, and the node each is at.
    let mut walking: Vec<(&Key, Hash256)> = keys.iter().map(|k| (k, root)).collect();
    let mut wanted: Vec<(Hash256, NodeId)> = Vec::with_capacity(walking.len());
    let mut depth = 0;
    while !walking.is_empty() {
        wanted.clear();
        wanted.extend(
            walking
                .iter()
                .map(|(key, hash)| (*hash, NodeId::on_path(key, depth))),
        );
        // Each walk's next node (none past a leaf, which may sit at depth
        // 64 where a key has no branch).
        let mut next: Vec<Option<Hash256>> = vec![None; walking.len()];
        loader.fetch_many(&wanted, cap, |i, node| {
            if matches!(node, CleanNode::Inner { .. }) {
                next[i] = node.child(walking[i].0.nibble(depth));
            }
        })?;
        let mut kept = 0;
        for i in 0..walking.len() {
            if let Some(child) = next[i] {
                walking[kept] = (walking[i].0, child);
                kept += 1;
            }
        }
        walking.truncate(kept);
        depth += 1;
    }
    Ok(())
}
