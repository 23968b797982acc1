//! Node pointers and node memory: the tagged, stamped [`NodeBox`] word, the
//! byte layouts of inner and leaf chunks, typed views over them, and the
//! [`NodeArena`] that allocates them from slab pools.
//!
//! With [`crate::alloc`], the only module allowed `unsafe`. Everything it
//! exports is safe to call given the crate-internal rule that a `NodeBox` is
//! only ever handed back to the arena that made it (the map owns both, and
//! frees its nodes before its arena).

#![allow(unsafe_code)]

mod arena;
mod batch;
mod mask;
mod node;
mod tagged;

pub(crate) use arena::NodeArena;
pub(crate) use batch::{
    hash_stale_inner_children, inner_message, rehash_batched, BatchHasher, BatchWork,
};
pub(crate) use mask::BranchMask;
pub use node::prefetch;
pub(crate) use node::NodeBox;
