//! The public map and its algorithms: shape rules, lookups, ordered
//! iteration, incremental hashing and the structural audit.

mod check;
mod hashing;
mod iter;
mod map;
mod shape;
mod snapshot;

pub use iter::{Iter, Range};
pub use map::{ShaMap, MAX_DATA_LEN};
pub use shape::ShapeStats;
pub use hashing::PARALLEL_MIN_WRITES;
pub use snapshot::Snapshot;

pub(crate) use map::lock as lock_arena;
