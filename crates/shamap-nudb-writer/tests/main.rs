//! Tests of the NuDB writer: what it writes, read back by the independent
//! Python reader (`nudb_read.py`) on every run.

mod faults;
mod ledgers;
mod support;
mod writer;
