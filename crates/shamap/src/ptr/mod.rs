//! Node pointers and node memory: the tagged, stamped [`NodePtr`] word, the
//! byte layouts of inner and leaf chunks, typed views over them, and the
//! [`NodeArena`] that allocates them from slab pools.
//!
//! With [`crate::alloc`], the only module allowed `unsafe`. Everything it
//! exports is safe to call given two crate-internal rules: a `NodePtr` is
//! only ever handed back to the arena that made it (a map, its snapshots and
//! the maps made from them share one arena, which each keeps alive while it
//! holds words into it); and a chunk is written only through a word that no
//! other version can reach (writers call `NodeArena::make_mut` first, and
//! hashing writes only stale nodes, which are never shared); and a leaf's
//! hash is read or written only in a map that stores leaf hashes (in the
//! hashless-leaf mode the leaf chunk has no hash field: `node.rs`).

#![allow(unsafe_code)]

mod arena;
mod batch;
mod mask;
mod node;
mod tagged;

pub(crate) use arena::NodeArena;
pub(crate) use batch::{
    hash_leaf_children, hash_stale_inner_children, inner_message, rehash_batched, BatchWork,
    LeafHashing,
};
pub use mask::BranchMask;
pub use node::prefetch;
pub(crate) use node::NodePtr;
