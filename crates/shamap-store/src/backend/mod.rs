//! Backends that read other programs' stores. [`nudb`]: rippled's own
//! node store (NuDB), read-only.

pub mod nudb;
