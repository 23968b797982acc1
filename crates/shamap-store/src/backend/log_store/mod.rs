//! The node log: a node store of our own, one append-only file of batches
//! and an index in memory. Its model is Bitcask (Riak's log-structured
//! store): values appended to a log, a hash table in RAM from key to
//! offset rebuilt by reading the log at opening, a hint file so that the
//! opening need not read all of it (here the index checkpoint), and a
//! merge that copies the live records to a new log. From NuDB, rippled's
//! own node store, it borrows the fit to content-addressed nodes (a key
//! is the value's hash, so a value never changes under its key and reads
//! are verified by the caller) and records written in batches that are
//! appended whole.
//!
//! - A write appends one batch (every change of a [`crate::Batch`], with a
//!   checksum over all of them) at the end of `nodes.log` with one
//!   `pwrite`, then publishes it to readers under one lock: a batch is
//!   seen whole or not at all. [`crate::NodeStore::write_durably`] (every
//!   commit point) adds `fdatasync` before publishing (`writer.rs`).
//! - A read looks the hash up in the index and reads the record with one
//!   `pread` through the thread's read window (`reads.rs`); the caller
//!   verifies the node against its hash as with every backend.
//! - Opening reads the log from the start, applying every batch whose
//!   checksums match and whose sequence number follows the last one's,
//!   and writes nothing; or, from the index checkpoint a writer left when
//!   it closed ([`checkpoint`]), only the batches written after it
//!   (`recovery.rs`). Whatever follows the last batch acknowledged as
//!   durable ([`crate::backend::ack`]) and is not whole and in sequence is a write
//!   a crash or a power loss cut short, dropped (the next write cuts it
//!   off); a log that lacks an acknowledged batch, or holds damage at or
//!   before it, is refused in one line naming the byte offset, and
//!   nothing is truncated. The whole contract, case by case:
//!   `docs/design.md`, "The node log's recovery contract".
//! - Deletes (gc) append delete records; when more than half the log is
//!   dead, the reclaim copies the live records to a new log, synced and
//!   renamed over the old one (`reclaim.rs`; readers keep the old file
//!   until they are done).
//! - One writing process at a time (a lock on the directory itself, which
//!   no one can delete while the log is in it; a writer stops if its log
//!   is removed or replaced); readers in other processes may open the
//!   store read-only (they see it as of their opening).
//!
//! Layout of the bytes: [`format`](mod@format). Why a store of our own, and the
//! measurements against fjall and RocksDB: `docs/design.md`, "Durable path".

mod append;
pub mod checkpoint;
mod files;
pub mod format;
mod index;
mod ingest;
mod reads;
mod reclaim;
mod recovery;
mod state;
mod store;
mod writer;

pub use recovery::Damage;
pub use store::{LogAudit, LogStore, LogUsage};

/// The log's file name in the store's directory.
pub const LOG_FILE: &str = "nodes.log";
/// The lock file earlier builds held (the writer's lock is now on the
/// directory itself); a directory holding one is still a store's.
const LOCK_FILE: &str = "LOCK";
/// Where a reclaim (or the creation of a store) writes a new log before
/// renaming it. The name is from before the rewrite was called a reclaim,
/// kept so that builds on either side of the rename know each other's
/// leftovers (an opening removes one; an unknown file is foreign).
const NEW_LOG_FILE: &str = "nodes.log.compact";
