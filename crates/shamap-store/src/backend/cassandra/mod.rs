//! The Apache Cassandra (or ScyllaDB) backend (feature `cassandra`): nodes
//! under their hash in table `nodes`, the metadata records in table `meta`,
//! of one keyspace, through the scylla CQL driver.
//!
//! ```text
//! CREATE TABLE <ks>.nodes (hash blob PRIMARY KEY, value blob)  -- rippled's value format
//! CREATE TABLE <ks>.meta  (name text PRIMARY KEY, value blob)  -- crate::meta's records
//! ```
//!
//! Cassandra has no transaction over several partitions, so a [`crate::Batch`]
//! is not applied atomically. It is applied in an order that keeps every
//! reader safe instead (see [`crate::NodeStore::write`] and docs/design.md):
//! every node put of the batch, at most `inflight` in flight, each
//! acknowledged at the configured consistency; then its node deletes
//! (only garbage collection issues them, in batches of their own); then,
//! only once all of those are acknowledged, its metadata changes, one
//! after another, in order. A commit's `retained` record is therefore
//! written only after every node it reaches is on a quorum of replicas: a
//! crash or a lost node leaves at worst nodes that no root reaches, which
//! [`crate::gc()`] removes, never a retained root whose nodes are missing.
//!
//! The [`crate::NodeStore`] trait is synchronous: the store owns a small tokio
//! runtime and blocks on it. Every request has a client-side timeout and
//! connecting has one too, so no call waits without bound; every failure is
//! a one-line [`crate::StoreError::Backend`] naming the store
//! (`cassandra://HOST:PORT/KEYSPACE`) and what was being done.

mod options;
mod store;

pub use options::{
    CassandraOptions, Consistency, DEFAULT_INFLIGHT, DEFAULT_PORT, DEFAULT_REPLICATION,
    MAX_INFLIGHT,
};
pub use store::CassandraStore;
