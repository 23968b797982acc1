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
//! - [`ledger`]: what a `--root` hash or a ledger sequence names, for
//!   every command ([`ledger::resolve_root`], [`ledger::ledger_by_seq`]).
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
//! stored value ([`node`], [`compact`]), the metadata records ([`meta`]),
//! errors and the one opening of a location ([`mod@open`]).
//!
//! Layout of records and values: `crates/shamap-store/README.md`.

pub mod backend;
pub mod compact;
pub mod error;
pub mod findings;
pub mod map;
pub mod meta;
pub mod node;
pub(crate) mod node_id;
pub mod open;
pub mod store;

// The modules by their short names, as before the split into `backend/`
// and `map/`: `shamap_store::log_store`, `shamap_store::reader`, ...
#[cfg(feature = "cassandra")]
pub use backend::cassandra;
pub(crate) use backend::directory;
#[cfg(feature = "rocksdb")]
pub(crate) use backend::rocks;
pub use backend::{ack, fault, log_store, mem};
pub use map::{backed, gc, import, ledger, reader, sync, verify};
pub(crate) use map::{fetch, writers};

pub use backed::{BackedMap, BackedOptions, BackedStats, HeapProbe};
pub use backend::fjall::{FjallOptions, FjallStore};
#[cfg(feature = "nudb")]
pub use backend::nudb::NudbStore;
#[cfg(feature = "cassandra")]
pub use cassandra::{CassandraOptions, CassandraStore};
pub use error::StoreError;
pub use fault::{
    fail_acknowledgments, AckFault, AckStage, Fault, FaultError, FaultyStore, OpClass, OpCounts,
};
pub use gc::{gc, gc_counting, GcReport};
pub use import::{
    import_ledger, record_root, write_changed, write_snapshot, ImportedLedger, WriteStats,
};
pub use log_store::{LogStore, LogUsage};
pub use map::diff::{diff_stored, StoredDifference};
pub use mem::MemStore;
pub use meta::RetainedRoot;
pub use node::{Node, NodeObject, NodeType, ValueKind};
pub use node_id::NodeId;
pub use open::{open, open_with, NewStore, OpenOptions, Opened};
pub use reader::{root_kind, RootKind, StoredIter, StoredMap};
#[cfg(feature = "rocksdb")]
pub use rocks::RocksStore;
pub use store::{
    Access, Batch, BatchedIngest, BulkIngest, NodeSink, NodeStore, NodeStoreExt, Op, StoreMemory,
};
pub use sync::{
    add_known_node, add_root_node, copy_root, missing_nodes, wire_blob, AddOutcome, CopyReport,
    SyncSession,
};
pub use verify::{verify_all, VerifyReport};

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
