//! The audit's walk of one ledger: its header, then each map from its
//! root, every child looked up by key.
//!
//! After a full scan ([`super::scan`]) every record before the first damage
//! of its file has been decoded and hashed, so the walk does not hash
//! those again: a node's presence is checked against the key file (the
//! bucket, from a bounded cache of buckets, and the key in the record), an
//! inner node's children are read from its record, and a leaf is known by
//! its codec type without being decompressed. Records the scan did not
//! check in step (after damage), and every record when no scan ran (one
//! ledger walked alone), are decoded and hashed here
//! ([`NodeObject::decode`]).
//!
//! Memory per walk: the stack (at most 16 × 64 entries), the bucket cache
//! (at most [`CACHE_BUCKETS`] buckets) and the hashes of the inner nodes
//! visited (what the next ledger's walk may skip).

use hashbrown::{HashMap, HashSet};
use shamap::Hash256;

use super::codec::{codec_type, decode_value};
use super::key_file::Bucket;
use super::scan::ScanReport;
use super::store::NudbStore;
use crate::node::{Node, NodeObject};

/// Buckets a walk keeps in memory (of 4 KiB blocks: ~16 MiB of entries).
pub const CACHE_BUCKETS: usize = 8192;
/// Inner nodes a walk remembers for the next one to skip.
pub const MAX_VISITED: usize = 2_000_000;
/// Records up to this size are read whole in one read.
const READ_WHOLE: u64 = 1024;

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
    cache: HashMap<(usize, u64), Bucket>,
    /// Counts so far.
    pub counts: WalkCounts,
}

/// What a node turned out to be.
enum Found {
    Inner(Box<[Hash256; 16]>),
    Leaf,
}

impl<'a> Walker<'a> {
    /// A walker over `store`, trusting `scanned` for records it checked.
    pub fn new(store: &'a NudbStore, scanned: Option<&'a Scanned<'a>>) -> Walker<'a> {
        Walker {
            store,
            scanned,
            cache: HashMap::new(),
            counts: WalkCounts::default(),
        }
    }

    /// Walks the subtrees under `start` (hash and depth each): problems
    /// are pushed to `problems`; the inner nodes visited to `visited` (up
    /// to [`MAX_VISITED`]); a subtree whose root is in `skip` is not
    /// entered; a node at depth `stop_at` is not read but pushed to
    /// `deferred` (what [`walk_map`] hands to its threads).
    pub fn walk(
        &mut self,
        start: Vec<(Hash256, u8)>,
        stop_at: u8,
        deferred: &mut Vec<(Hash256, u8)>,
        skip: &HashSet<Hash256>,
        visited: &mut HashSet<Hash256>,
        problems: &mut Vec<NodeProblem>,
    ) {
        let mut stack = start;
        while let Some((hash, depth)) = stack.pop() {
            if skip.contains(&hash) {
                self.counts.skipped += 1;
                continue;
            }
            if depth == stop_at {
                deferred.push((hash, depth));
                continue;
            }
            match self.node(&hash) {
                Err(p) => problems.push(p),
                Ok(Found::Leaf) => {
                    self.counts.leaves += 1;
                    if depth == 0 {
                        problems.push(NodeProblem {
                            key: hash,
                            at: None,
                            what: "a map root that is a leaf".to_owned(),
                        });
                    }
                }
                Ok(Found::Inner(children)) => {
                    self.counts.inner += 1;
                    if depth >= 64 {
                        problems.push(NodeProblem {
                            key: hash,
                            at: None,
                            what: "an inner node at depth 64".to_owned(),
                        });
                        continue;
                    }
                    if visited.len() < MAX_VISITED {
                        visited.insert(hash);
                    }
                    for c in children.iter().rev().filter(|c| !c.is_zero()) {
                        stack.push((*c, depth + 1));
                    }
                }
            }
        }
    }

    /// Reads the node under `hash`: an inner node's children, or that it
    /// is a leaf, checked.
    fn node(&mut self, hash: &Hash256) -> Result<Found, NodeProblem> {
        let problem = |at: Option<(usize, u64)>, what: String| NodeProblem {
            key: *hash,
            at,
            what,
        };
        if let Some(s) = self.scanned {
            if let Some((part, offset, what)) = s.damaged.get(hash) {
                return Err(problem(Some((*part, *offset)), what.clone()));
            }
        }
        let store = self.store;
        for (i, p) in store.parts().iter().enumerate() {
            let (n, h) = p.key_header.locate(&hash.0);
            if !self.cache.contains_key(&(i, n)) {
                let b = p.read_bucket(n).map_err(|e| problem(None, e))?;
                if self.cache.len() >= CACHE_BUCKETS {
                    self.cache.clear();
                }
                self.cache.insert((i, n), b);
            }
            let bucket = &self.cache[&(i, n)];
            let located = p
                .locate_with(n, bucket, h, hash, READ_WHOLE)
                .map_err(|e| problem(None, e))?;
            let Some(mut peeked) = located else {
                continue;
            };
            let offset = peeked.offset;
            let at = Some((i, offset));
            let trusted = self
                .scanned
                .is_some_and(|s| offset < s.report.verified_below[i]);
            let ty = codec_type(&peeked.bytes)
                .ok_or_else(|| problem(at, "the value has no codec type".to_owned()))?;
            let odd = self
                .scanned
                .is_some_and(|s| s.report.odd_inner_overflow || s.report.odd_inner.contains(hash));
            if trusted && ty == 1 && !odd {
                return Ok(Found::Leaf);
            }
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
                return Ok(match inner_children(&value) {
                    Some(c) => Found::Inner(c),
                    None => Found::Leaf,
                });
            }
            self.counts.hashed += 1;
            let obj = NodeObject::decode(*hash, value).map_err(|e| {
                problem(
                    at,
                    format!("{e} ({} at byte {offset})", p.dat.path.display()),
                )
            })?;
            return match obj.parse() {
                Ok(Node::Inner(c)) => Ok(Found::Inner(c)),
                Ok(Node::Leaf { .. }) => Ok(Found::Leaf),
                Ok(Node::Ledger(_)) => Err(problem(at, "a ledger header inside a map".to_owned())),
                Err(e) => Err(problem(at, e.to_string())),
            };
        }
        Err(problem(None, "missing from the store".to_owned()))
    }
}

/// An inner node's children from a decoded value.
fn inner_children(value: &[u8]) -> Option<Box<[Hash256; 16]>> {
    let p = value.get(crate::node::VALUE_HEADER_LEN..)?;
    let hashes = shamap::node_hash::inner_children(p)?;
    Some(Box::new(hashes.map(Hash256)))
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
    root: Hash256,
    skip: &HashSet<Hash256>,
    visited: &mut HashSet<Hash256>,
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
    walkers[0].walk(vec![(root, 0)], stop, &mut tasks, skip, visited, problems);
    if tasks.is_empty() {
        return;
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let tasks = &tasks;
    let results: Vec<(HashSet<Hash256>, Vec<NodeProblem>)> = std::thread::scope(|s| {
        let handles: Vec<_> = walkers
            .iter_mut()
            .map(|w| {
                let next = &next;
                s.spawn(move || {
                    let mut vis = HashSet::new();
                    let mut probs = Vec::new();
                    let mut none = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(t) = tasks.get(i) else { break };
                        w.walk(vec![*t], u8::MAX, &mut none, skip, &mut vis, &mut probs);
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
            if visited.len() >= MAX_VISITED {
                break;
            }
            visited.insert(h);
        }
        problems.extend(probs);
    }
}
