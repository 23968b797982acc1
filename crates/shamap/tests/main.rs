//! Integration tests for the shamap library, compiled as one binary.

mod batched_gets;
mod batched_writes;
mod blake3_maps;
mod bulk_build;
mod common;
mod diffs;
mod hashless_leaves;
mod iteration;
mod memory;
mod proofs;
mod randomized;
mod repack;
mod shape;
mod vectors;
mod versions;
