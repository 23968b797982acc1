//! The public map and its algorithms: shape rules, lookups, ordered
//! iteration, incremental hashing and the structural audit.
//!
//! The files import one another in layers, never in a cycle:
//!
//! - `shared_arena` (the arena a map shares with its snapshots, its lock,
//!   dropping a tree), `tree_ref` (the read-only view of one tree) and
//!   `undo_log` (the undo records) import no other file here;
//! - `map` (`ShaMap` and its writes) imports only those three;
//! - `snapshot` imports `map` and the first layer;
//! - every other file adds methods to `ShaMap` or `Snapshot`, or reads
//!   through `TreeRef`, and is imported by none of the others except
//!   `hashing` (by `apply` and `check`: the inner-node message size, and
//!   for `apply` the parallel-hashing threshold).

mod apply;
mod build;
mod check;
mod diff;
mod hashing;
mod iter;
mod map;
mod prove;
mod shape;
mod shared_arena;
mod snapshot;
mod tree_ref;
mod undo;
mod undo_log;

pub use apply::{Applied, APPLY_RUN};
pub use diff::{Difference, TooManyDifferences};
pub use hashing::{HashWork, PARALLEL_MIN_WRITES};
pub use iter::{Iter, Range, GET_MANY_LANES};
pub use map::{ShaMap, MAX_DATA_LEN};
pub use prove::{ProofPath, StoredNode};
pub use shape::ShapeStats;
pub use snapshot::Snapshot;

pub(crate) use shared_arena::lock as lock_arena;
