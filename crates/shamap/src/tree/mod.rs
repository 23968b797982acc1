//! The public map and its algorithms: shape rules, lookups, ordered
//! iteration, incremental hashing and the structural audit.

mod check;
mod hashing;
mod iter;
mod map;

pub use iter::{Iter, Range};
pub use map::ShaMap;
