//! The map layer over any backend: maps read, verified, written, synced
//! and collected through the [`crate::NodeStore`] traits, never through a
//! backend's own API.
//!
//! - `fetch`: the one verified load of a node (hash, kind, position).
//! - [`reader`]: reading a stored map by root ([`crate::StoredMap`]).
//! - [`verify`]: rehashing everything reachable from a root.
//! - [`audit`]: auditing a whole store, every backend, one report.
//! - [`backed`]: a writable map over a store within a memory budget.
//! - [`import`]: writing maps and ledgers, then their root record.
//! - [`sync`]: copying maps between stores through wire blobs.
//! - [`ledger`]: what a `--root` hash or a ledger sequence names.
//! - [`diff`]: two stored maps compared in key order.
//! - [`gc`]: keeping some roots and deleting what they do not reach;
//!   `writers` pins what backed-map writers hold against it.
//!
//! A node's position in a map and the checks of place ([`crate::NodeId`])
//! are `crate::node_id`, beside the traits: the NuDB audit runs them too.

pub mod audit;
pub mod authenticate;
pub mod backed;
pub mod diff;
pub(crate) mod fetch;
pub mod gc;
pub mod import;
pub mod ledger;
pub mod reader;
pub mod sync;
pub mod verify;
pub(crate) mod writers;
