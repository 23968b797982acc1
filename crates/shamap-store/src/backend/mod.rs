//! The backends: each a key-value store of nodes under their hashes plus a
//! few metadata records ([`crate::NodeStore`]), and what they share.
//!
//! - [`log_store`]: the node log, our own (one append-only file and an
//!   index in memory), the default for new stores.
//! - [`fjall`]: fjall (pure-Rust LSM), for stores an earlier version
//!   made and for comparisons.
//! - `rocks` (feature `rocksdb`), [`cassandra`] (feature `cassandra`).
//! - `nudb` (feature `nudb`, on by default): rippled's own node store
//!   (NuDB), read-only.
//! - [`mem`]: in memory, for tests.
//! - [`fault`]: a wrapper that fails a chosen operation, for fault tests.
//! - [`ack`] and `directory`: the acknowledgment record and the rules for
//!   creating and locking a store directory, shared by the disk backends.

pub mod ack;
#[cfg(feature = "cassandra")]
pub mod cassandra;
pub(crate) mod directory;
pub mod fault;
pub mod fjall;
pub mod log_store;
pub mod mem;
#[cfg(feature = "nudb")]
pub mod nudb;
#[cfg(feature = "rocksdb")]
pub(crate) mod rocks;
