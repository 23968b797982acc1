//! The node-store traits. [`NodeStore`] is what a backend implements: a
//! key-value store of nodes under their hashes plus a few metadata
//! records, raw (bytes in, bytes out), seven operations and a few
//! overridable fast paths. What is written with those operations lives
//! outside it: [`NodeStoreExt`] (verified reads, one-line writes, for every
//! store, so a backend cannot forget verification) and [`BulkIngest`] (a
//! bulk import; [`BatchedIngest`] for any store, a backend's own through
//! [`NodeStore::bulk_ingest`]).
//!
//! The trait is at the level of rippled's NodeStore `Backend` (fetch by
//! key, store a batch, visit every object, sync), not of redb's
//! `StorageBackend`, which is a file of bytes (read and write at offsets,
//! set the length, sync) under redb's own B-tree: each backend here is a
//! whole key-value store (fjall, RocksDB, Cassandra, the node log).
//!
//! Writes go through a [`Batch`] that the backend applies atomically
//! (fjall, RocksDB, memory: after a crash either all of a batch is there
//! or none of it) or, where the store has no transactions over many keys
//! (Cassandra), in an order that is just as safe for readers: nodes first,
//! metadata last (see [`NodeStore::write`]).

use std::ops::ControlFlow;

use shamap::Hash256;

use crate::error::StoreError;
use crate::node::NodeObject;

/// One change in a [`Batch`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Store `value` under node hash `hash`.
    PutNode {
        /// The key.
        hash: Hash256,
        /// The value (header ‖ prefix format).
        value: Vec<u8>,
    },
    /// Remove the node stored under `hash` (no-op when absent).
    DeleteNode(Hash256),
    /// Set metadata record `name`.
    PutMeta {
        /// The record's name.
        name: String,
        /// Its bytes.
        value: Vec<u8>,
    },
    /// Remove metadata record `name`.
    DeleteMeta(String),
}

/// Changes applied together by [`NodeStore::write`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Batch {
    ops: Vec<Op>,
    bytes: usize,
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Batch {
        Batch::default()
    }

    /// Adds a node (verified by construction: a [`NodeObject`]'s hash
    /// always matches its bytes).
    pub fn put_node(&mut self, node: NodeObject) {
        let hash = node.hash();
        let value = node.into_value();
        self.bytes += 32 + value.len();
        self.ops.push(Op::PutNode { hash, value });
    }

    /// Removes a node.
    pub fn delete_node(&mut self, hash: Hash256) {
        self.bytes += 32;
        self.ops.push(Op::DeleteNode(hash));
    }

    /// Sets a metadata record.
    pub fn put_meta(&mut self, name: &str, value: Vec<u8>) {
        self.bytes += name.len() + value.len();
        self.ops.push(Op::PutMeta {
            name: name.to_owned(),
            value,
        });
    }

    /// Removes a metadata record.
    pub fn delete_meta(&mut self, name: &str) {
        self.bytes += name.len();
        self.ops.push(Op::DeleteMeta(name.to_owned()));
    }

    /// Adds `other`'s changes after these.
    pub fn append(&mut self, other: Batch) {
        self.bytes += other.bytes;
        self.ops.extend(other.ops);
    }

    /// Number of changes.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// True when the batch changes nothing.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Approximate payload bytes (keys and values).
    pub fn payload_bytes(&self) -> usize {
        self.bytes
    }

    /// The changes, in order.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// The changes, by move.
    pub fn into_ops(self) -> Vec<Op> {
        self.ops
    }
}

/// What an opening of a store is for (every backend's `open` takes
/// one; [`crate::open::open`] picks the backend).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Write to the store, creating it where there is none (a directory
    /// that does not exist or is empty; a keyspace that does not exist).
    Create,
    /// Write to an existing store.
    Write,
    /// Read an existing store. A node log opens read-only (no lock: a
    /// writer may go on beside it; nothing in the directory is written). A
    /// fjall database opens for writing (fjall needs its lock to read),
    /// and read-only where its directory cannot be written.
    Read,
}

/// Nodes per write batch of the default bulk writes ([`BatchedIngest`])
/// and of an import into a store that has nodes already.
pub const WRITE_BATCH_NODES: usize = 4096;

/// A key-value store of nodes (hash → value) plus a few named metadata
/// records: what every backend implements. Implementations:
/// [`crate::MemStore`], [`crate::LogStore`], [`crate::FjallStore`], with
/// the `rocksdb` feature `RocksStore`, with the `cassandra` feature
/// `CassandraStore`.
///
/// A backend implements the seven raw operations (read a value, apply a
/// batch, apply a batch durably, iterate the values, read a metadata
/// record, disk bytes, location). The six provided methods have correct
/// defaults (written with those seven; none for [`NodeStore::memory`],
/// [`NodeStore::bulk_ingest`] and [`NodeStore::ledger_hashes`], nothing
/// to do for [`NodeStore::reclaim_space`]), and a backend overrides one
/// only where it has a faster way to the same answer, memory to report,
/// its own bulk import, its own ledger list or space to give back. Callers use [`NodeStoreExt`] (implemented for
/// every store), whose [`NodeStoreExt::get`] verifies every value against
/// its key, and [`NodeStore::bulk_ingest`] with [`BatchedIngest`] for a
/// bulk import.
pub trait NodeStore: Send + Sync {
    /// Where the store lives, for messages (a directory, or `<memory N>`).
    fn location(&self) -> String;

    /// The raw value under `hash`, unverified. Prefer [`NodeStoreExt::get`].
    fn read_value(&self, hash: &Hash256) -> Result<Option<Vec<u8>>, StoreError>;

    /// Applies every change of `batch`. What every backend guarantees, and
    /// what callers rely on: when `write` returns `Ok`, all of the batch is
    /// visible; and the batch's metadata changes become visible only after
    /// all of its node puts are. So a record (a `retained` root) written in
    /// the same batch as the nodes it reaches never names a missing node,
    /// whatever fails when.
    ///
    /// Transactional backends (fjall, RocksDB, memory) give more: the batch
    /// is atomic, after a crash either all of it is visible or none. A
    /// backend without transactions over many keys (Cassandra) writes the
    /// node puts first, then the node deletes, then the metadata changes in
    /// order, each step only once the one before is acknowledged; a failure
    /// or crash part way leaves some nodes of the batch written and no
    /// record naming them, which [`crate::gc()`] removes. Node deletes come
    /// only from gc, in batches of their own.
    fn write(&self, batch: Batch) -> Result<(), StoreError>;

    /// Calls `f` with every stored node (hash and raw value) until it
    /// breaks, in an order of the backend's (fjall and RocksDB: hash order;
    /// the node log: log order; Cassandra: token order). Sees a consistent
    /// view of the store as of the call.
    fn for_each_value(
        &self,
        f: &mut dyn FnMut(Hash256, &[u8]) -> ControlFlow<()>,
    ) -> Result<(), StoreError>;

    /// A metadata record.
    fn get_meta(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// Bytes the store takes on disk (0 for memory).
    fn disk_bytes(&self) -> Result<u64, StoreError>;

    /// Applies `batch` like [`NodeStore::write`] and returns only once it,
    /// and everything written before it, is on stable storage (fsync):
    /// the write of every commit point (a root record). An empty batch
    /// only makes everything written so far durable against power loss
    /// ([`NodeStoreExt::sync`]; writes are already durable against a
    /// process crash when `write` returns). fjall persists the batch with
    /// `SyncAll`, the node log appends and fsyncs in one step, RocksDB
    /// writes and flushes its write-ahead log; memory and Cassandra (whose
    /// writes are acknowledged by the replicas) write.
    fn write_durably(&self, batch: Batch) -> Result<(), StoreError>;

    /// True when a value is stored under `hash` (not verified). The
    /// default reads the value; fjall, the node log, memory and Cassandra
    /// override it to look at the key alone (the node log answers from its
    /// index in memory, without a disk read).
    fn contains(&self, hash: &Hash256) -> Result<bool, StoreError> {
        Ok(self.read_value(hash)?.is_some())
    }

    /// The raw values under `hashes`, in order, unverified: what a walk
    /// that knows its next nodes reads in one go. The default reads one
    /// after another; Cassandra, where a read is a network round trip,
    /// overrides it to issue them concurrently, which is what makes a walk
    /// over a remote store fast.
    fn read_values(&self, hashes: &[Hash256]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        hashes.iter().map(|h| self.read_value(h)).collect()
    }

    /// The memory the store holds that grows with what it stores, and what
    /// it will allocate beside it soon ([`StoreMemory`]), which a
    /// [`crate::BackedMap`]'s budget covers. None by default: fjall's and
    /// RocksDB's caches have sizes set by their options.
    fn memory(&self) -> StoreMemory {
        StoreMemory::default()
    }

    /// The store's own bulk-import paths, if it has any (fjall: table
    /// files built directly; the node log: encoding on one thread while
    /// another writes). `None` by default: an import then writes batches
    /// through [`NodeStore::write`] ([`BatchedIngest`]).
    fn bulk_ingest(&self) -> Option<&dyn BulkIngest> {
        None
    }

    /// The ledgers the backend itself lists, as `(sequence, ledger hash)`
    /// pairs in any order, when it keeps such a list beside its nodes
    /// (rippled's node store: the `Ledgers` table of its `ledger.db`).
    /// `None` by default: [`crate::map::ledger::ledgers`] then lists the
    /// retained roots whose header objects are stored. A hash listed here
    /// is only a hint: whoever reads the ledger loads and verifies its
    /// header object like any node.
    fn ledger_hashes(&self) -> Result<Option<Vec<(u32, Hash256)>>, StoreError> {
        Ok(None)
    }

    /// Gives back the space that dead records hold, when enough of it is
    /// dead: what [`crate::gc()`] calls after its sweep. The node log
    /// reclaims then: it rewrites its live records to a new log (dead bytes
    /// are those of records deleted or written again, whether or not this
    /// gc deleted anything); the default does nothing (fjall's and
    /// RocksDB's compactions run on their own).
    fn reclaim_space(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

/// Memory a store holds beside its caches ([`NodeStore::memory`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreMemory {
    /// Bytes held that grow with what the store stores (the node log's
    /// index, ~10 bytes per node, and its metadata records).
    pub resident: u64,
    /// Bytes the store will allocate beside them soon (the node log's
    /// next index growth or reclaim, once near), counted ahead by a
    /// backed map's budget so that its cache makes room before the peak
    /// instead of passing it.
    pub reserved: u64,
}

/// What callers use a [`NodeStore`] through: verified reads and one-line
/// writes, written with the trait's methods, for every store (a boxed or
/// borrowed `dyn NodeStore` too).
pub trait NodeStoreExt: NodeStore {
    /// The node under `hash`, verified: a value that does not decode or
    /// does not hash to `hash` is [`StoreError::Corrupt`], never data.
    fn get(&self, hash: &Hash256) -> Result<Option<NodeObject>, StoreError> {
        match self.read_value(hash)? {
            None => Ok(None),
            Some(value) => NodeObject::decode(*hash, value).map(Some),
        }
    }

    /// The node under `hash`, verified; [`StoreError::Missing`] if absent.
    fn load(&self, hash: &Hash256) -> Result<NodeObject, StoreError> {
        self.get(hash)?.ok_or(StoreError::Missing { hash: *hash })
    }

    /// Makes everything written so far durable against power loss: a
    /// durable write of nothing ([`NodeStore::write_durably`]).
    fn sync(&self) -> Result<(), StoreError> {
        self.write_durably(Batch::new())
    }

    /// Sets one metadata record (a batch of one).
    fn put_meta(&self, name: &str, value: Vec<u8>) -> Result<(), StoreError> {
        let mut b = Batch::new();
        b.put_meta(name, value);
        self.write(b)
    }

    /// Deletes nodes, atomically.
    fn delete(&self, hashes: &[Hash256]) -> Result<(), StoreError> {
        let mut b = Batch::new();
        for h in hashes {
            b.delete_node(*h);
        }
        self.write(b)
    }
}

impl<S: NodeStore + ?Sized> NodeStoreExt for S {}

/// Where the nodes of a bulk write go
/// ([`BulkIngest::ingest_unordered`]): called once per node, with its hash
/// and its value.
pub type NodeSink<'a> = dyn FnMut(&Hash256, &[u8]) + 'a;

/// A bulk import into a store that has no nodes yet: the paths a backend
/// with a faster way than batches of writes provides (through
/// [`NodeStore::bulk_ingest`]), and [`BatchedIngest`], the one every
/// store takes. The import ([`crate::write_snapshot`]) asks
/// [`BulkIngest::wants_hash_ordered_import`], hands every node to
/// [`BulkIngest::ingest_sorted`] or [`BulkIngest::ingest_unordered`], then
/// calls [`BulkIngest::finish_bulk`] before it records the root.
pub trait BulkIngest {
    /// True when the import should hand the store every node in hash order
    /// ([`BulkIngest::ingest_sorted`], which costs the import a pass per
    /// hash range and a sort): stores that keep keys in order (fjall,
    /// RocksDB) then build their files directly. A store that appends in
    /// any order (the node log) says `false` and is written in tree order
    /// ([`BulkIngest::ingest_unordered`]), the commit's fsync covering it.
    fn wants_hash_ordered_import(&self) -> bool {
        true
    }

    /// Stores `nodes`, given in strictly increasing hash order, and returns
    /// once they are on stable storage. Not atomic (a crash may keep some
    /// of them), which is safe because nothing names the nodes until a root
    /// record is written after this returns. fjall builds table files
    /// directly (its ingestion), skipping the journal and the write buffer.
    fn ingest_sorted(
        &self,
        nodes: &mut dyn Iterator<Item = (Hash256, Vec<u8>)>,
    ) -> Result<(), StoreError>;

    /// Stores the nodes `feed` gives (it calls its argument once per node,
    /// with the node's hash and value, in any order). Not atomic and not
    /// synced, which is safe: nothing names the nodes until a root record
    /// is written after this returns, with [`NodeStore::write_durably`],
    /// which makes them durable too. After a failure `feed` still runs to
    /// its end, its nodes ignored. The node log encodes on the calling
    /// thread while another writes.
    fn ingest_unordered(&self, feed: &mut dyn FnMut(&mut NodeSink<'_>)) -> Result<(), StoreError>;

    /// Called once after [`BulkIngest::ingest_sorted`] and before a root
    /// naming its nodes is recorded: lays the nodes out for the reads and
    /// writes that follow, durably. The default does nothing; fjall moves
    /// the ingested run into its last level here (see
    /// [`crate::FjallStore`]).
    fn finish_bulk(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

/// The bulk import every store takes: batches of [`WRITE_BATCH_NODES`]
/// nodes through [`NodeStore::write`]. What an import uses for a store
/// whose [`NodeStore::bulk_ingest`] is `None`, and a backend's
/// [`BulkIngest`] for the path it does not speed up.
pub struct BatchedIngest<'a, S: ?Sized>(pub &'a S);

impl<S: NodeStore + ?Sized> BatchedIngest<'_, S> {
    /// Appends a node to `batch`, writing the batch once it is full.
    fn push(&self, batch: &mut Batch, hash: Hash256, value: Vec<u8>) -> Result<(), StoreError> {
        batch.bytes += 32 + value.len();
        batch.ops.push(Op::PutNode { hash, value });
        if batch.ops.len() >= WRITE_BATCH_NODES {
            self.0.write(std::mem::take(batch))?;
        }
        Ok(())
    }
}

impl<S: NodeStore + ?Sized> BulkIngest for BatchedIngest<'_, S> {
    /// Writes batches, then syncs.
    fn ingest_sorted(
        &self,
        nodes: &mut dyn Iterator<Item = (Hash256, Vec<u8>)>,
    ) -> Result<(), StoreError> {
        let mut batch = Batch::new();
        for (hash, value) in nodes {
            self.push(&mut batch, hash, value)?;
        }
        self.0.write(batch)?;
        self.0.sync()
    }

    fn ingest_unordered(&self, feed: &mut dyn FnMut(&mut NodeSink<'_>)) -> Result<(), StoreError> {
        let mut batch = Batch::new();
        let mut failure = None;
        feed(&mut |hash, value| {
            if failure.is_none() {
                failure = self.push(&mut batch, *hash, value.to_vec()).err();
            }
        });
        match failure {
            Some(e) => Err(e),
            None => self.0.write(batch),
        }
    }
}

/// A boxed store is a store: what opens "whichever backend a URL or
/// directory names" returns (`Box<dyn NodeStore>`) is used like any other,
/// with the backend's own fast paths.
impl<S: NodeStore + ?Sized> NodeStore for Box<S> {
    fn location(&self) -> String {
        (**self).location()
    }

    fn read_value(&self, hash: &Hash256) -> Result<Option<Vec<u8>>, StoreError> {
        (**self).read_value(hash)
    }

    fn write(&self, batch: Batch) -> Result<(), StoreError> {
        (**self).write(batch)
    }

    fn for_each_value(
        &self,
        f: &mut dyn FnMut(Hash256, &[u8]) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        (**self).for_each_value(f)
    }

    fn get_meta(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        (**self).get_meta(name)
    }

    fn disk_bytes(&self) -> Result<u64, StoreError> {
        (**self).disk_bytes()
    }

    fn contains(&self, hash: &Hash256) -> Result<bool, StoreError> {
        (**self).contains(hash)
    }

    fn read_values(&self, hashes: &[Hash256]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        (**self).read_values(hashes)
    }

    fn write_durably(&self, batch: Batch) -> Result<(), StoreError> {
        (**self).write_durably(batch)
    }

    fn memory(&self) -> StoreMemory {
        (**self).memory()
    }

    fn bulk_ingest(&self) -> Option<&dyn BulkIngest> {
        (**self).bulk_ingest()
    }

    fn ledger_hashes(&self) -> Result<Option<Vec<(u32, Hash256)>>, StoreError> {
        (**self).ledger_hashes()
    }

    fn reclaim_space(&self) -> Result<(), StoreError> {
        (**self).reclaim_space()
    }
}
