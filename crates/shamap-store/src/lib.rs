//! Persistence for shamap: a node store holding SHAMap nodes under their
//! hashes in rippled's NodeStore value format, with reads, verification,
//! history with garbage collection, crash-safe import and state sync.
//!
//! - [`NodeStore`]: what a backend implements (read a value by hash,
//!   apply a batch, iterate, metadata, sync), with [`NodeStoreExt`]
//!   (verified reads) and [`BulkIngest`] (bulk import) written over it for
//!   every store; [`MemStore`] for tests,
//!   [`LogStore`] on disk (our node log: one append-only file and an index
//!   in memory), [`FjallStore`] on disk (fjall, pure Rust), `RocksStore` with the `rocksdb`
//!   feature, `CassandraStore` on an Apache Cassandra or ScyllaDB cluster
//!   with the `cassandra` feature.
//! - [`NodeObject`]: a stored value (`8 zero bytes ‖ type ‖ prefix format`),
//!   verified against its key on every [`NodeStoreExt::get`].
//! - [`BackedMap`]: a writable map opened by root hash, nodes loaded lazily
//!   and verified through a bounded cache, committed in one atomic batch.
//! - [`StoredMap`]: reads a map by root hash, one verified node per level;
//!   [`diff_stored`] compares two, skipping equal subtrees;
//!   [`verify_all`] rehashes everything reachable from a root.
//! - [`import_ledger`] / [`write_snapshot`] / [`write_changed`]: writes
//!   maps, then records the root in one atomic step ([`meta`]).
//! - [`map::ledger`]: what a `--root` hash or a ledger sequence names, for
//!   every command ([`map::ledger::resolve_root`], [`map::ledger::ledger_by_seq`]).
//! - [`gc()`]: mark from the kept roots, sweep the rest.
//! - [`FaultyStore`]: fails the k-th read, write or sync, for fault tests.
//! - [`SyncSession`]: `missing_nodes`, `add_root_node`, `add_known_node`
//!   from wire blobs, each checked against its parent.
//!
//! Every reader of a map loads its nodes through one verified fetch
//! (`fetch`): the value hashes to the requested hash, and the node fits the
//! map's kind and its position ([`NodeId`]: depth, a leaf's key on its
//! path, no leaf as a root).
//!
//! The crate by layer: [`backend`] (the stores), [`map`] (maps over any
//! store), and at the top what both share: the traits ([`store`]), the
//! stored value ([`node`], [`inner_codec`]), the metadata records
//! ([`meta`]), errors and the one opening of a location ([`mod@open`]).
//!
//! Layout of records and values: `crates/shamap-store/README.md`.

pub mod backend;
pub mod error;
pub mod findings;
pub mod inner_codec;
pub mod map;
pub mod meta;
pub mod node;
pub(crate) mod node_id;
pub mod open;
pub mod store;

// The types and functions most callers use, at the root; every module only
// by its path in its layer (`backend::log_store`, `map::reader`, ...).
#[cfg(feature = "cassandra")]
pub use backend::cassandra::{CassandraOptions, CassandraStore};
pub use backend::fault::{
    fail_acknowledgments, AckFault, AckStage, Fault, FaultError, FaultyStore, OpClass, OpCounts,
};
pub use backend::fjall::{FjallOptions, FjallStore};
pub use backend::log_store::{LogStore, LogUsage};
pub use backend::mem::MemStore;
#[cfg(feature = "nudb")]
pub use backend::nudb::NudbStore;
#[cfg(feature = "rocksdb")]
pub use backend::rocks::RocksStore;
pub use error::StoreError;
pub use map::backed::{BackedMap, BackedOptions, BackedStats, HeapProbe};
pub use map::diff::{diff_stored, StoredDifference};
pub use map::gc::{gc, gc_counting, GcReport};
pub use map::import::{
    import_ledger, record_root, write_changed, write_snapshot, ImportedLedger, WriteStats,
};
pub use map::reader::{root_kind, RootKind, StoredIter, StoredMap};
pub use map::sync::{
    add_known_node, add_root_node, copy_root, missing_nodes, wire_blob, AddOutcome, CopyReport,
    SyncSession,
};
pub use map::verify::{verify_all, VerifyReport};
pub use meta::RetainedRoot;
pub use node::{Node, NodeObject, NodeType, ValueKind};
pub use node_id::NodeId;
pub use open::{open, open_with, NewStore, OpenOptions, Opened};
pub use store::{
    Access, Batch, BatchedIngest, BulkIngest, NodeSink, NodeStore, NodeStoreExt, Op, StoreMemory,
};

/// Helpers of the unit tests.
#[cfg(test)]
pub(crate) mod test_support {
    /// The seed of a randomized test: `SHAMAP_SEED` when set, else a
    /// random one (each test prints it on failure).
    pub(crate) fn seed() -> u64 {
        std::env::var("SHAMAP_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(rand::random)
    }

    /// [`seed`] and a generator seeded with it.
    pub(crate) fn seeded_rng() -> (u64, rand::rngs::SmallRng) {
        let seed = seed();
        (seed, rand::SeedableRng::seed_from_u64(seed))
    }
}
