//! Error types. Every error names what was wrong and, where it applies, where.

use crate::hash::{Hash256, Key};

// Hex decoding's error lives beside the hex decoder, in `crate::hash`; it is
// re-exported here with the other error types.
pub use crate::hash::ParseHexError;

/// Errors from map operations.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MapError {
    /// `insert` of a key that is already present.
    #[error("key {0} is already present")]
    KeyExists(Key),
    /// `update` or `remove` of a key that is not present.
    #[error("key {0} is not present")]
    KeyMissing(Key),
    /// `undo` or `squash` with no open session.
    #[error("no open undo session")]
    NoSession,
    /// [`ShaMap::from_sorted`](crate::ShaMap::from_sorted) given a key that
    /// is below the one before it (an equal key is
    /// [`MapError::KeyExists`]).
    #[error("key {0} is out of order (below the key before it)")]
    OutOfOrder(Key),
    /// Item data longer than the engine stores (u32::MAX bytes).
    #[error("item data of {len} bytes is too long")]
    DataTooLong {
        /// Length offered.
        len: usize,
    },
}

/// A size-class set that the node layout cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SizeClassError {
    /// No classes, or more than the pointer tag can name.
    #[error("between 1 and 7 size classes are allowed, got {0}")]
    Count(usize),
    /// Classes must strictly increase.
    #[error("size classes must be strictly increasing: {0:?}")]
    NotIncreasing(Vec<u8>),
    /// A class of 0 or above 16, or a largest class other than 16.
    #[error("size classes must lie in 1..=16 and end with 16: {0:?}")]
    Range(Vec<u8>),
}

/// A structural defect found by [`crate::ShaMap::check`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
    /// A node's stored hash differs from its recomputation.
    #[error("node at {path} stores hash {stored} but recomputes to {computed}")]
    HashMismatch {
        /// Nibble path from the root, as hex digits.
        path: String,
        /// The hash held in memory.
        stored: Hash256,
        /// The hash recomputed from the node's contents.
        computed: Hash256,
    },
    /// Any other violated invariant.
    #[error("node at {path}: {reason}")]
    Structure {
        /// Nibble path from the root, as hex digits.
        path: String,
        /// What is wrong.
        reason: String,
    },
}
