//! Integration tests of shamap-store, compiled as one binary.

mod backed;
mod crash;
mod gc;
mod ledgers;
mod reader;
mod support;
mod sync;
