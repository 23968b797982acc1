//! A map backed by a node store: opened by root hash, read and written
//! through a bounded cache of verified nodes, committed in one atomic batch.
//!
//! # Model
//!
//! The map is a tree of `Child` slots. A slot is empty, *clean* (just the
//! 32-byte hash of a node that is in the store) or *dirty* (a node held in
//! memory: created or changed since the last write, or loaded on the path of
//! a change). Reads walk dirty nodes in memory and clean ones through the
//! node cache (`cache/`): verified nodes held encoded, back to back, in
//! segments of one size, a table from hash prefix to place, the oldest
//! segment evicted whole (a node used since it was written there copied
//! forward instead: a second chance), leaves admitted on their second use.
//! Its misses load the node from the store and verify it (a value that does
//! not hash to its key, or that does not fit its place in the tree, is an
//! error naming the hash and nibble path, never data).
//!
//! Writes turn the clean nodes on the key's path into dirty ones (keeping
//! their known hash and a `stored` mark until something below changes) and
//! then change the leaf, as the in-memory engine does, including rippled's
//! collapse of an inner node left with one leaf.
//!
//! # Memory
//!
//! One budget ([`BackedOptions::budget_bytes`]) covers the clean cache and
//! the dirty nodes together. Once the dirty nodes take more than a quarter
//! of it, they are *spilled*: hashed and written to the store in one batch
//! (without recording a root, so they are unreferenced until a commit), then
//! replaced by clean slots. The clean cache gets whatever the dirty nodes
//! leave. Scans do not fill the cache. So the nodes held in RAM stay within
//! the budget whatever the size of the stored state.
//!
//! # Commit and crash safety
//!
//! [`BackedMap::commit`] hashes the dirty nodes and writes them, together
//! with the retained-roots record naming the new root, in one atomic batch.
//! A process killed at any point reopens at the previous committed root or
//! at the new one, with every node reachable from it present: spilled nodes
//! were written before, in their own batches, and nothing names them until
//! the commit's batch lands. Only after the batch is written do the dirty
//! nodes become clean slots, so a failed write loses nothing in memory.
//!
//! # Pruning
//!
//! With [`BackedOptions::prune_replaced`], each commit's batch also deletes
//! the stored nodes the changes since the last write-out replaced, once a
//! walk of the one path where each could stand shows the new tree does not
//! hold it again, when the commit's root is the only one retained and the
//! map the store's only writer in the process: the store keeps one version
//! of the map, and the node log's index the size of one version.
//!
//! Garbage collection ([`crate::gc()`]) in the same process is safe beside a
//! backed map: the map pins the root its clean slots hang under (the one
//! opened, or its last spill or commit), `gc` keeps what the pins reach,
//! and spills and commits wait while a collection runs.
//!
//! # Files
//!
//! - `cache`: the node cache (clean nodes by hash, in segments evicted
//!   oldest first with a second chance; admission) and the loader that
//!   fills it through the store's one verified fetch;
//! - `tree`: the working tree of slots and the walks over it (lookups, the
//!   scan, inserts, updates and removals, noting the stored nodes they
//!   replace);
//! - `commit`: hashing dirty nodes, writing them (in 2 MiB pieces, the
//!   last ones in one batch with the `retained` record and the deletion of
//!   replaced nodes), and settling them into clean slots;
//! - `map`: [`BackedMap`] and its options and counters, tying them together.

mod cache;
mod commit;
mod map;
mod tree;

pub use map::{BackedMap, BackedOptions, BackedStats, HeapProbe};
