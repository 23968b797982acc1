//! The audit's walk of one ledger: its header, then each map from its
//! root, every child looked up by key.
//!
//! After a full scan ([`super::scan`]) every record before the first damage
//! of its file has been decoded and hashed, so the walk does not hash
//! those again. Where the audit's key file check found the key file's
//! entries to be exactly the data file's records
//! ([`super::key_file::IndexDigest`]), a record the scan checked is one
//! rippled's lookup finds, so the walk finds each node in the scan's
//! record index ([`super::record_index`]): a leaf by its fingerprint, map
//! kind and key nibbles (not read at all), an inner node from the scan's
//! cache or by one read where the index places it. Everything else (a
//! record left out of the index, a deeper leaf, a tag that disagrees, a
//! record after damage) is looked up the slow way: its bucket (from a
//! bounded cache), its record read and put through the fetch's checks,
//! which also word any problem. Records the scan did not check in step,
//! and every record when no scan ran (one ledger walked alone), are
//! decoded and hashed here, [`HASH_BATCH`] at a time
//! ([`NodeObject::decode_many`]: the multi-lane SHA-512).
//!
//! Memory per walk: the stack (at most [`HASH_BATCH`] × 16 × 64 entries),
//! the bucket cache (at most the budget's entries) and the hashes of
//! the inner nodes visited (what the next ledger's walk may skip).

use hashbrown::{HashMap, HashSet};
use shamap::{Hash256, MapKind};

use super::budget::MemoryBudget;
use super::codec::decode_value;
use super::key_file::{Bucket, RawBucket};
use super::record_index::{on_path, place};
use super::scan::ScanReport;
use super::store::NudbStore;
use crate::error::StoreError;
use crate::node::NodeObject;
use crate::node_id::{check_node, MapNode, NodeId};

/// Slots of a walker's bucket cache.
const CACHE_SLOTS: usize = 1 << 15;
/// Nodes a walker hashes together (the multi-lane SHA-512).
pub const HASH_BATCH: usize = 64;
/// Records up to this size are read whole in one read.
const READ_WHOLE: u64 = 1024;

/// The inner nodes a walk went through, by the first 8 bytes of their
/// hashes (8 bytes a node, where the whole hash took 32: 2M nodes in about
/// 20 MiB). A subtree is skipped when its root's prefix is here, so a
/// different node sharing a 64-bit prefix with one visited would be
/// skipped: about 2^-64 × the nodes kept, per node looked up.
pub type Visited = HashSet<u64>;

/// The key a hash is kept under in [`Visited`].
pub fn visit_key(hash: &Hash256) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&hash.0[..8]);
    u64::from_le_bytes(b)
}

/// A node the walk found bad or missing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeProblem {
    /// The node's key.
    pub key: Hash256,
    /// The data file and byte offset of its record, when it has one.
    pub at: Option<(usize, u64)>,
    /// What is wrong, on one line.
    pub what: String,
}

/// What the scan tells the walk.
pub struct Scanned<'a> {
    /// The scan's report.
    pub report: &'a ScanReport,
    /// Damaged records by key.
    pub damaged: HashMap<Hash256, (usize, u64, String)>,
}

/// Counts of a walk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalkCounts {
    /// Inner nodes read.
    pub inner: u64,
    /// Leaves found.
    pub leaves: u64,
    /// Subtrees skipped as whole in the ledger walked before.
    pub skipped: u64,
    /// Nodes decoded and hashed by the walk itself.
    pub hashed: u64,
}

/// One walker (its bucket cache and counts).
pub struct Walker<'a> {
    store: &'a NudbStore,
    scanned: Option<&'a Scanned<'a>>,
    /// Buckets read, direct-mapped: bucket `n` of directory `part` in slot
    /// `(n + part) % CACHE_SLOTS`, with its place as the tag.
    cache: Vec<Option<(usize, u64, RawBucket)>>,
    cached_entries: usize,
    /// The last bucket read that did not fit in the cache.
    uncached: Option<(usize, u64, RawBucket)>,
    /// Bucket entries the cache holds at most.
    cache_limit: usize,
    /// Inner nodes a visited set keeps at most.
    visited_limit: usize,
    /// Per directory: a leaf the record index places (in 4096ths of the
    /// data file, [`place`]) below this was checked by the scan in step and
    /// is indexed by the key file (0 where the key file disagrees).
    leaf_bound: Vec<u64>,
    /// The buffer inner nodes' records are read into.
    record: Vec<u8>,
    /// Counts so far.
    pub counts: WalkCounts,
}

/// What a node turned out to be.
enum Found {
    /// An inner node (checked: its children).
    Inner(Box<[Hash256; 16]>),
    /// A leaf, checked.
    Leaf,
}

/// What reading a node gave: what it is, or its value still to be hashed
/// (batched: the multi-lane SHA-512).
enum Read {
    Known(Found),
    ToHash { value: Vec<u8>, at: (usize, u64) },
}

impl<'a> Walker<'a> {
    /// A walker over `store`, trusting `scanned` for records it checked.
    pub fn new(
        store: &'a NudbStore,
        scanned: Option<&'a Scanned<'a>>,
        memory: &MemoryBudget,
    ) -> Walker<'a> {
        Walker {
            store,
            scanned,
            cache: Vec::new(),
            cached_entries: 0,
            uncached: None,
            cache_limit: memory.walker_entries,
            visited_limit: memory.visited,
            leaf_bound: store
                .parts()
                .iter()
                .enumerate()
                .map(|(i, p)| match scanned {
                    Some(s) if s.report.index_agrees.get(i) == Some(&true) => {
                        place(s.report.verified_below[i], p.dat.len)
                    }
                    _ => 0,
                })
                .collect(),
            record: Vec::new(),
            counts: WalkCounts::default(),
        }
    }

    /// Walks the subtrees under `start` (hash and place each) of a map of
    /// kind `kind`: every node gets the checks of the verified fetch
    /// (`check_node`: its kind, an inner node's children, a leaf on its
    /// key's path); problems
    /// are pushed to `problems`; the inner nodes visited to `visited` (up
    /// to the budget's limit); a subtree whose root is in `skip` is not
    /// entered; a node at depth `stop_at` is not read but pushed to
    /// `deferred` (what [`walk_map`] hands to its threads). Nodes to hash
    /// are gathered [`HASH_BATCH`] at a time and hashed together.
    #[allow(clippy::too_many_arguments)]
    pub fn walk(
        &mut self,
        kind: MapKind,
        start: Vec<(Hash256, NodeId)>,
        stop_at: u8,
        deferred: &mut Vec<(Hash256, NodeId)>,
        skip: &Visited,
        visited: &mut Visited,
        problems: &mut Vec<NodeProblem>,
    ) {
        let mut stack = start;
        let mut to_hash: Vec<(Hash256, Vec<u8>)> = Vec::with_capacity(HASH_BATCH);
        let mut places: Vec<(NodeId, (usize, u64))> = Vec::with_capacity(HASH_BATCH);
        loop {
            let mut popped: Vec<(Hash256, NodeId)> = Vec::with_capacity(HASH_BATCH);
            while popped.len() + to_hash.len() < HASH_BATCH {
                let Some((hash, id)) = stack.pop() else {
                    break;
                };
                if skip.contains(&visit_key(&hash)) {
                    self.counts.skipped += 1;
                    continue;
                }
                if id.depth() == stop_at {
                    deferred.push((hash, id));
                    continue;
                }
                popped.push((hash, id));
            }
            let popped_any = !popped.is_empty();
            let known = self.known_from_scan(kind, &popped);
            for ((hash, id), known) in popped.into_iter().zip(known) {
                let read = match known {
                    Some(Found::Inner(children)) => {
                        let n = children.iter().filter(|c| !c.is_zero()).count();
                        id.check_inner(hash, n)
                            .map(|()| Read::Known(Found::Inner(children)))
                            .map_err(|e| node_problem(hash, None, &e))
                    }
                    Some(found) => Ok(Read::Known(found)),
                    None => self.read_node(&hash, kind, &id),
                };
                match read {
                    Err(p) => problems.push(p),
                    Ok(Read::Known(found)) => {
                        self.found(hash, id, found, &mut stack, visited, problems)
                    }
                    Ok(Read::ToHash { value, at }) => {
                        to_hash.push((hash, value));
                        places.push((id, at));
                    }
                }
            }
            if popped_any && !stack.is_empty() && to_hash.len() < HASH_BATCH {
                continue;
            }
            if to_hash.is_empty() {
                if stack.is_empty() {
                    return;
                }
                continue;
            }
            let hashes: Vec<Hash256> = to_hash.iter().map(|(h, _)| *h).collect();
            let decoded = NodeObject::decode_many(std::mem::take(&mut to_hash));
            for ((hash, r), (id, at)) in hashes.into_iter().zip(decoded).zip(places.drain(..)) {
                self.counts.hashed += 1;
                match self.checked(hash, kind, &id, at, r) {
                    Ok(found) => self.found(hash, id, found, &mut stack, visited, problems),
                    Err(p) => problems.push(p),
                }
            }
        }
    }

    /// Counts a node found (and checked) to be `found` at `id` and, for an
    /// inner node, stacks its children.
    fn found(
        &mut self,
        hash: Hash256,
        id: NodeId,
        found: Found,
        stack: &mut Vec<(Hash256, NodeId)>,
        visited: &mut Visited,
        _problems: &mut Vec<NodeProblem>,
    ) {
        match found {
            Found::Leaf => self.counts.leaves += 1,
            Found::Inner(children) => {
                self.counts.inner += 1;
                if visited.len() < self.visited_limit {
                    visited.insert(visit_key(&hash));
                }
                for (b, c) in (0u8..16).zip(children.iter()).rev() {
                    if let (false, Some(nibble)) = (c.is_zero(), shamap::Nibble::new(b)) {
                        stack.push((*c, id.child(nibble)));
                    }
                }
            }
        }
    }

    /// What a hashed node is: the outcome of [`NodeObject::decode_many`]
    /// for the record at `at`, checked for its place `id` in a map of kind
    /// `kind`.
    fn checked(
        &self,
        hash: Hash256,
        kind: MapKind,
        id: &NodeId,
        at: (usize, u64),
        r: Result<NodeObject, StoreError>,
    ) -> Result<Found, NodeProblem> {
        let path = &self.store.parts()[at.0].dat.path;
        let obj = r.map_err(|e| NodeProblem {
            key: hash,
            at: Some(at),
            what: format!("{e} ({} at byte {})", path.display(), at.1),
        })?;
        placed(&obj, kind, id).map_err(|e| node_problem(hash, Some(at), &e))
    }

    /// Bucket `n` of directory `part`, parsed: kept, cached, or read (and
    /// cached while the cache holds fewer entries than its budget).
    fn bucket(&mut self, part: usize, n: u64) -> Result<std::borrow::Cow<'a, Bucket>, String> {
        if let Some(b) = self.kept_bucket(part, n) {
            return Ok(std::borrow::Cow::Borrowed(b));
        }
        self.load_raw(part, n)?;
        let slot = ((n as usize).wrapping_add(part)) % CACHE_SLOTS;
        let held = |c: &Option<(usize, u64, RawBucket)>| match c {
            Some((p, m, b)) if *p == part && *m == n => Some(b.to_bucket()),
            _ => None,
        };
        match held(&self.cache[slot]).or_else(|| held(&self.uncached)) {
            Some(b) => Ok(std::borrow::Cow::Owned(b)),
            None => self.store.parts()[part]
                .read_bucket(n)
                .map(std::borrow::Cow::Owned),
        }
    }

    /// Makes sure bucket `n` of directory `part` is kept or cached, when
    /// the cache has room (a bucket that does not fit is not cached: the
    /// lookup then reads it again).
    fn load_raw(&mut self, part: usize, n: u64) -> Result<(), String> {
        if self.kept_bucket(part, n).is_some() {
            return Ok(());
        }
        if self.cache.is_empty() {
            self.cache.resize_with(CACHE_SLOTS, || None);
        }
        let slot = ((n as usize).wrapping_add(part)) % CACHE_SLOTS;
        if matches!(&self.cache[slot], Some((p, m, _)) if *p == part && *m == n) {
            return Ok(());
        }
        let b = self.store.parts()[part].read_raw_bucket(n)?;
        let old = self.cache[slot].as_ref().map_or(0, |(_, _, o)| o.len());
        if self.cached_entries - old + b.len() <= self.cache_limit {
            self.cached_entries = self.cached_entries - old + b.len();
            self.cache[slot] = Some((part, n, b));
        } else {
            self.uncached = Some((part, n, b));
        }
        Ok(())
    }

    /// What each of `nodes` (in a map of kind `kind`) is, where the scan's
    /// record index answers (`None`: look it up the slow way,
    /// [`Walker::read_node`]). In a directory whose key file's entries are
    /// its data records (the scan's index digest), before its first damage,
    /// and with no wrong bucket entry anywhere, every record the scan
    /// checked is one a lookup of its key finds: a leaf indexed under the
    /// node's fingerprint and map kind, whose key's nibbles are the node's
    /// path, is the node and passes the fetch's checks; an inner node is
    /// taken from the scan's cache, or read where the index says (its key
    /// compared in full). Done over a batch so that the memory loads of
    /// different nodes overlap.
    fn known_from_scan(
        &mut self,
        kind: MapKind,
        nodes: &[(Hash256, NodeId)],
    ) -> Vec<Option<Found>> {
        let mut out: Vec<Option<Found>> = Vec::new();
        out.resize_with(nodes.len(), || None);
        let Some(s) = self.scanned else {
            return out;
        };
        let r = s.report;
        if r.odd_inner_overflow || !r.bad_entries.is_empty() {
            return out;
        }
        let ix = &r.record_index;
        let asked = |h: &Hash256| {
            (r.odd_inner.is_empty() || !r.odd_inner.contains(h))
                && (s.damaged.is_empty() || !s.damaged.contains_key(h))
        };
        // In stages over the batch, so that the loads of different nodes
        // overlap: the fingerprints and directory runs, then the leaves'
        // entries, then the inner nodes'.
        let fps: Vec<u64> = nodes.iter().map(|(h, _)| ix.fingerprint().of(h)).collect();
        let probes: Vec<_> = fps.iter().map(|&f| ix.leaf_probe(f, kind)).collect();
        let leaf_bound = std::mem::take(&mut self.leaf_bound);
        let trusted_place =
            |part: usize, place: u64| leaf_bound.get(part).is_some_and(|&b| place < b);
        let mut rest = Vec::new();
        for (k, ((hash, id), probe)) in nodes.iter().zip(&probes).enumerate() {
            if !asked(hash) {
                continue;
            }
            if ix.leaf_passes(probe, trusted_place, |prefix| on_path(prefix, id)) {
                out[k] = Some(Found::Leaf);
            } else {
                rest.push((k, ix.inner_probe(fps[k])));
            }
        }
        let trusted = |(part, offset): (usize, u64)| {
            r.index_agrees.get(part) == Some(&true) && offset < r.verified_below[part]
        };
        for (k, probe) in rest {
            let hash = &nodes[k].0;
            if let Some((children, at)) = r.inner_cache.children(hash) {
                if trusted(at) {
                    out[k] = Some(Found::Inner(Box::new(children)));
                    continue;
                }
            }
            for (part, offset, size) in ix.inner_at(probe) {
                if !trusted((part, offset)) {
                    continue;
                }
                if let Some(children) = self.read_inner(hash, part, offset, size) {
                    out[k] = Some(Found::Inner(Box::new(children)));
                    break;
                }
            }
        }
        self.leaf_bound = leaf_bound;
        out
    }

    /// The children of the inner node `hash` read from its record at
    /// `offset` in directory `part` (a value of `size` bytes), when the
    /// record holds that key and an inner node's encoding; anything else is
    /// left to the slow way, which words the problem.
    fn read_inner(
        &mut self,
        hash: &Hash256,
        part: usize,
        offset: u64,
        size: u64,
    ) -> Option<[Hash256; 16]> {
        let dat = &self.store.parts().get(part)?.dat;
        dat.read_record_into(offset, size, &mut self.record).ok()?;
        let (key, raw) = self.record.split_at(usize::from(dat.header.key_size));
        if key != hash.0 {
            return None;
        }
        crate::inner_codec::decode_children(raw)
    }

    /// Bucket `n` of directory `part` when the audit's key file check kept
    /// it.
    fn kept_bucket(&self, part: usize, n: u64) -> Option<&'a Bucket> {
        let kept = self.scanned?.report.kept_buckets.get(part)?;
        kept.get(usize::try_from(n).ok()?)
    }

    /// Reads the node under `hash`: what it is when that is known without
    /// hashing (a record the scan checked), else its value to hash.
    fn read_node(
        &mut self,
        hash: &Hash256,
        kind: MapKind,
        id: &NodeId,
    ) -> Result<Read, NodeProblem> {
        let problem = |at: Option<(usize, u64)>, what: String| NodeProblem {
            key: *hash,
            at,
            what,
        };
        if let Some(s) = self.scanned {
            if !s.report.bad_entries.is_empty() {
                for (i, p) in self.store.parts().iter().enumerate() {
                    let (_, h) = p.key_header.locate(&hash.0);
                    if let Some(what) = s.report.bad_entries.get(&(i, h)) {
                        return Err(problem(
                            None,
                            format!(
                                "its bucket entry in {} is wrong: {what}",
                                p.key_path.display()
                            ),
                        ));
                    }
                }
            }
            if let Some((part, offset, what)) = s.damaged.get(hash) {
                return Err(problem(Some((*part, *offset)), what.clone()));
            }
        }
        let store = self.store;
        let scanned = self.scanned;
        for (i, p) in store.parts().iter().enumerate() {
            let (n, h) = p.key_header.locate(&hash.0);
            let verified_below = scanned.map_or(0, |s| s.report.verified_below[i]);
            let bucket = self.bucket(i, n).map_err(|e| problem(None, e))?;
            let located = p
                .locate_with(n, &bucket, h, hash, READ_WHOLE)
                .map_err(|e| problem(None, e))?;
            let Some(mut peeked) = located else {
                continue;
            };
            let offset = peeked.offset;
            let at = Some((i, offset));
            let trusted = offset < verified_below;
            if !peeked.is_whole() {
                let (_, v) = p
                    .dat
                    .read_record(offset, peeked.size)
                    .map_err(|e| problem(at, e))?;
                peeked.bytes = v;
            }
            let mut value = Vec::new();
            decode_value(&peeked.bytes, &mut value).map_err(|e| {
                problem(
                    at,
                    format!(
                        "node {hash} is corrupt: {} at byte {offset}: {e}",
                        p.dat.path.display()
                    ),
                )
            })?;
            if trusted {
                let obj =
                    NodeObject::scanned(*hash, value).map_err(|e| node_problem(*hash, at, &e))?;
                return placed(&obj, kind, id)
                    .map(Read::Known)
                    .map_err(|e| node_problem(*hash, at, &e));
            }
            return Ok(Read::ToHash {
                value,
                at: (i, offset),
            });
        }
        Err(problem(None, "missing from the store".to_owned()))
    }
}

/// The checks of the verified fetch ([`check_node`]) on `obj` at `id` in a
/// map of kind `kind`.
fn placed(obj: &NodeObject, kind: MapKind, id: &NodeId) -> Result<Found, StoreError> {
    Ok(match check_node(obj, kind, id)? {
        MapNode::Inner(children) => Found::Inner(children),
        MapNode::Leaf { .. } => Found::Leaf,
    })
}

/// A problem from a check's error: its message names the node's path.
fn node_problem(hash: Hash256, at: Option<(usize, u64)>, e: &StoreError) -> NodeProblem {
    NodeProblem {
        key: hash,
        at,
        what: e.to_string(),
    }
}

/// Depth at which [`walk_map`] splits a map between its threads (up to
/// 256 subtrees).
const SPLIT_DEPTH: u8 = 2;

/// Walks the map under `root` (zero: the empty map) with one thread per
/// walker: the top levels on the first, the subtrees below
/// `SPLIT_DEPTH` shared out between all. Returns the problems and the
/// inner nodes visited.
pub fn walk_map(
    walkers: &mut [Walker<'_>],
    kind: MapKind,
    root: Hash256,
    skip: &Visited,
    visited: &mut Visited,
    problems: &mut Vec<NodeProblem>,
) {
    if root.is_zero() || walkers.is_empty() {
        return;
    }
    let mut tasks = Vec::new();
    let stop = if walkers.len() > 1 {
        SPLIT_DEPTH
    } else {
        u8::MAX
    };
    walkers[0].walk(
        kind,
        vec![(root, NodeId::ROOT)],
        stop,
        &mut tasks,
        skip,
        visited,
        problems,
    );
    if tasks.is_empty() {
        return;
    }
    let visited_limit = walkers[0].visited_limit;
    let next = std::sync::atomic::AtomicUsize::new(0);
    let tasks = &tasks;
    let results: Vec<(Visited, Vec<NodeProblem>)> = std::thread::scope(|s| {
        let handles: Vec<_> = walkers
            .iter_mut()
            .map(|w| {
                let next = &next;
                s.spawn(move || {
                    let mut vis = Visited::new();
                    let mut probs = Vec::new();
                    let mut none = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(t) = tasks.get(i) else { break };
                        w.walk(
                            kind,
                            vec![*t],
                            u8::MAX,
                            &mut none,
                            skip,
                            &mut vis,
                            &mut probs,
                        );
                    }
                    (vis, probs)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    for (vis, probs) in results {
        for h in vis {
            if visited.len() >= visited_limit {
                break;
            }
            visited.insert(h);
        }
        problems.extend(probs);
    }
}
