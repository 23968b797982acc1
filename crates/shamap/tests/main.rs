//! Integration tests for the shamap library, compiled as one binary.

mod common;
mod iteration;
mod ledgers;
mod memory;
mod randomized;
mod shape;
mod vectors;
mod versions;
