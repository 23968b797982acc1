//! The node-store trait: the few operations every backend provides.
//!
//! Like redb's `StorageBackend`, the trait is small and raw (bytes in,
//! bytes out); verification lives in the provided methods, so a backend
//! cannot forget it. Writes go through a [`Batch`] that the backend applies
//! atomically (fjall, RocksDB, memory: after a crash either all of a batch
//! is there or none of it) or, where the store has no transactions over
//! many keys (Cassandra), in an order that is just as safe for readers:
//! nodes first, metadata last (see [`NodeStore::write`]).

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

/// Where the nodes of a bulk write go
/// ([`NodeStore::ingest_unordered`]): called once per node, with its hash
/// and its value.
pub type NodeSink<'a> = dyn FnMut(&Hash256, &[u8]) + 'a;

/// Nodes per write batch of the default bulk writes (and of an import
/// into a store that has nodes already).
pub const WRITE_BATCH_NODES: usize = 4096;

/// A key-value store of nodes (hash → value) plus a few named metadata
/// records. Implementations: [`crate::MemStore`], [`crate::FjallStore`],
/// with the `rocksdb` feature `RocksStore`, with the `cassandra` feature
/// `CassandraStore`.
///
/// Backends implement the raw methods; callers use the provided ones
/// ([`NodeStore::get`] verifies every value against its key).
pub trait NodeStore: Send + Sync {
    /// Where the store lives, for messages (a directory, or `<memory>`).
    fn location(&self) -> String;

    /// The raw value under `hash`, unverified. Prefer [`NodeStore::get`].
    fn read_value(&self, hash: &Hash256) -> Result<Option<Vec<u8>>, StoreError>;

    /// The raw values under `hashes`, in order, unverified: what a walk
    /// that knows its next nodes reads in one go. Backends where a read is
    /// a network round trip (Cassandra) issue them concurrently; the
    /// default reads one after another.
    fn read_values(&self, hashes: &[Hash256]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        hashes.iter().map(|h| self.read_value(h)).collect()
    }

    /// True when a value is stored under `hash` (not verified).
    fn contains(&self, hash: &Hash256) -> Result<bool, StoreError> {
        Ok(self.read_value(hash)?.is_some())
    }

    /// [`NodeStore::contains`] of each of `hashes`, in order: what a writer
    /// skipping stored nodes asks for a whole batch. Concurrent where a
    /// read is a network round trip (Cassandra); one after another by
    /// default.
    fn contains_many(&self, hashes: &[Hash256]) -> Result<Vec<bool>, StoreError> {
        hashes.iter().map(|h| self.contains(h)).collect()
    }

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

    /// Makes everything written so far durable against power loss (writes
    /// are already durable against a process crash when `write` returns).
    fn sync(&self) -> Result<(), StoreError>;

    /// Applies `batch` like [`NodeStore::write`] and returns only once it,
    /// and everything written before it, is on stable storage (fsync):
    /// the write of every commit point (a root record). Backends with a
    /// cheaper way to say the same (fjall: one batch persisted with
    /// `SyncAll`) override it.
    fn write_durably(&self, batch: Batch) -> Result<(), StoreError> {
        self.write(batch)?;
        self.sync()
    }

    /// Stores `nodes`, given in strictly increasing hash order, and returns
    /// once they are on stable storage: the bulk path of an import into a
    /// store that has no nodes yet. Not atomic (a crash may keep some of
    /// them), which is safe because nothing names the nodes until a root
    /// record is written after this returns. The default writes them in
    /// batches and syncs; fjall builds table files directly (its
    /// ingestion), skipping the journal and the write buffer.
    fn ingest_sorted(
        &self,
        nodes: &mut dyn Iterator<Item = (Hash256, Vec<u8>)>,
    ) -> Result<(), StoreError> {
        let mut batch = Batch::new();
        for (hash, value) in nodes {
            batch.bytes += 32 + value.len();
            batch.ops.push(Op::PutNode { hash, value });
            if batch.ops.len() >= WRITE_BATCH_NODES {
                self.write(std::mem::take(&mut batch))?;
            }
        }
        self.write(batch)?;
        self.sync()
    }

    /// Stores the nodes `feed` gives (it calls its argument once per node,
    /// with the node's hash and value, in any order): the bulk path of an
    /// import into a store that has no nodes yet and takes them in any
    /// order ([`NodeStore::wants_hash_ordered_import`] false). Not atomic
    /// and not synced, which is safe: nothing names the nodes until a root
    /// record is written after this returns, with
    /// [`NodeStore::write_durably`], which makes them durable too. After a
    /// failure `feed` still runs to its end, its nodes ignored. The default
    /// writes batches of [`WRITE_BATCH_NODES`] nodes; the
    /// node log encodes on the calling thread while another writes.
    fn ingest_unordered(&self, feed: &mut dyn FnMut(&mut NodeSink<'_>)) -> Result<(), StoreError> {
        let mut batch = Batch::new();
        let mut failure = None;
        feed(&mut |hash, value| {
            if failure.is_some() {
                return;
            }
            batch.bytes += 32 + value.len();
            batch.ops.push(Op::PutNode {
                hash: *hash,
                value: value.to_vec(),
            });
            if batch.ops.len() >= WRITE_BATCH_NODES {
                if let Err(e) = self.write(std::mem::take(&mut batch)) {
                    failure = Some(e);
                }
            }
        });
        match failure {
            Some(e) => Err(e),
            None => self.write(batch),
        }
    }

    /// Bytes of memory the store holds that grow with what it stores (the
    /// node log's index: ~10 bytes per node), which a [`crate::BackedMap`]'s
    /// budget covers. 0 by default: fjall's and RocksDB's caches have sizes
    /// set by their options.
    fn resident_bytes(&self) -> u64 {
        0
    }

    /// True when a bulk import into this store, empty, should hand it every
    /// node in hash order ([`NodeStore::ingest_sorted`], which costs the
    /// import a pass per hash range and a sort): stores that keep keys in
    /// order (fjall, RocksDB) then build their files directly. A store that
    /// appends in any order (the node log) says `false` and is written in
    /// tree order, in batches, the commit's fsync covering them.
    fn wants_hash_ordered_import(&self) -> bool {
        true
    }

    /// Called once after a bulk write ([`NodeStore::ingest_sorted`]) and
    /// before a root naming its nodes is recorded: lays the nodes out for
    /// the reads and writes that follow, durably. The default does nothing;
    /// fjall moves the ingested run into its last level here (see
    /// [`crate::FjallStore`]).
    fn finish_bulk(&self) -> Result<(), StoreError> {
        Ok(())
    }

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

/// A boxed store is a store: what opens "whichever backend a URL or
/// directory names" returns (`Box<dyn NodeStore>`) is used like any other.
impl<S: NodeStore + ?Sized> NodeStore for Box<S> {
    fn location(&self) -> String {
        (**self).location()
    }

    fn read_value(&self, hash: &Hash256) -> Result<Option<Vec<u8>>, StoreError> {
        (**self).read_value(hash)
    }

    fn contains(&self, hash: &Hash256) -> Result<bool, StoreError> {
        (**self).contains(hash)
    }

    fn read_values(&self, hashes: &[Hash256]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        (**self).read_values(hashes)
    }

    fn contains_many(&self, hashes: &[Hash256]) -> Result<Vec<bool>, StoreError> {
        (**self).contains_many(hashes)
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

    fn sync(&self) -> Result<(), StoreError> {
        (**self).sync()
    }

    fn write_durably(&self, batch: Batch) -> Result<(), StoreError> {
        (**self).write_durably(batch)
    }

    fn ingest_sorted(
        &self,
        nodes: &mut dyn Iterator<Item = (Hash256, Vec<u8>)>,
    ) -> Result<(), StoreError> {
        (**self).ingest_sorted(nodes)
    }

    fn wants_hash_ordered_import(&self) -> bool {
        (**self).wants_hash_ordered_import()
    }

    fn resident_bytes(&self) -> u64 {
        (**self).resident_bytes()
    }

    fn ingest_unordered(&self, feed: &mut dyn FnMut(&mut NodeSink<'_>)) -> Result<(), StoreError> {
        (**self).ingest_unordered(feed)
    }

    fn finish_bulk(&self) -> Result<(), StoreError> {
        (**self).finish_bulk()
    }

    fn get(&self, hash: &Hash256) -> Result<Option<NodeObject>, StoreError> {
        (**self).get(hash)
    }

    fn load(&self, hash: &Hash256) -> Result<NodeObject, StoreError> {
        (**self).load(hash)
    }

    fn put_meta(&self, name: &str, value: Vec<u8>) -> Result<(), StoreError> {
        (**self).put_meta(name, value)
    }

    fn delete(&self, hashes: &[Hash256]) -> Result<(), StoreError> {
        (**self).delete(hashes)
    }
}
