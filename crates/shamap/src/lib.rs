//! # shamap
//!
//! The XRP Ledger's SHAMap — a Merkle radix-16 tree over 256-bit keys hashed
//! with SHA512Half — rebuilt to give exactly rippled's root hashes while
//! holding far less memory per entry.
//!
//! ```
//! use shamap::{Key, MapKind, ShaMap};
//!
//! let mut map = ShaMap::new(MapKind::AccountState);
//! map.insert(Key([1; 32]), b"twelve bytes").unwrap();
//! assert_eq!(map.get(&Key([1; 32])), Some(&b"twelve bytes"[..]));
//! let root = map.root_hash();
//! assert!(!root.is_zero());
//! ```
//!
//! Layers, each depending only on those below it:
//!
//! | module    | role                                                            |
//! |-----------|-----------------------------------------------------------------|
//! | [`tree`]  | the public map: shape rules, iteration, hashing, `check()`      |
//! | `ptr`     | tagged, stamped node pointers and byte views of node chunks      |
//! | `alloc`   | slab pools per size class (the only other `unsafe` module)       |
//!
//! Beside them, used by all:
//!
//! | module        | role                                                        |
//! |---------------|-------------------------------------------------------------|
//! | [`node_hash`] | the node hash format, the only place that knows it: node prefixes, inner and leaf message layouts, node hashing, prefix recognition |
//! | [`hashfn`]    | the node hash function (SHA512Half or BLAKE3), single and batched |
//! | [`sha512half`] | SHA512Half of one message (the XRPL's node hash)           |
//! | [`xrpl`]      | VL, transaction IDs, ledger header and its prefix, wire format (SHA512Half re-exported) |
//!
//! See `docs/design.md` for byte layouts and invariants. Ledger dumps (the
//! JSON rippled and Clio emit) are read by the `shamap-ledger` crate.

pub mod advisor;
mod alloc;
pub mod error;
pub mod hash;
pub mod hashfn;
pub mod kind;
pub mod node_hash;
pub mod options;
mod ptr;
pub mod sha512half;
pub mod stats;
pub mod tree;
pub mod verify;
pub mod xrpl;

pub use alloc::release_free_heap;
pub use error::{CheckError, MapError, ParseHexError, SizeClassError};
pub use hash::{Depth, Hash256, Key, Nibble};
pub use hashfn::HashFunction;
pub use kind::MapKind;
pub use options::{HugePages, LeafHashes, MapOptions, SizeClasses};
pub use ptr::{prefetch, BranchMask};
pub use stats::MemStats;
pub use tree::{
    Applied, Difference, HashWork, ProofPath, ShaMap, ShapeStats, Snapshot, StoredNode,
    TooManyDifferences,
};
