//! Memory for nodes: slab pools per chunk size, carved from aligned blocks.
//!
//! This module and [`crate::ptr`] are the only ones allowed `unsafe`. The
//! raw pool hands out uninitialised chunks; the pointer module gives them
//! types.

#![allow(unsafe_code)]

mod block;
mod pool;
mod trim;

pub(crate) use block::{alloc_large, free_large, large_footprint, BlockSource, BLOCK_SIZE};
pub(crate) use pool::{PoolStats, SlabPool};
pub use trim::release_free_heap;
