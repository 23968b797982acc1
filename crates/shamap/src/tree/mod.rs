//! The public map and its algorithms: shape rules, lookups, ordered
//! iteration, incremental hashing and the structural audit.

mod apply;
mod build;
mod check;
mod diff;
mod hashing;
mod iter;
mod map;
mod prove;
mod shape;
mod snapshot;
mod undo;

pub use apply::{Applied, APPLY_RUN};
pub use diff::{Difference, TooManyDifferences};
pub use hashing::{HashWork, PARALLEL_MIN_WRITES};
pub use iter::{Iter, Range, GET_MANY_LANES};
pub use map::{ShaMap, MAX_DATA_LEN};
pub use prove::{ProofPath, StoredNode};
pub use shape::ShapeStats;
pub use snapshot::Snapshot;

pub(crate) use map::lock as lock_arena;
