//! Integration tests of shamap-store, compiled as one binary.

mod ack_faults;
mod backed;
mod backed_common;
mod backed_differential;
mod backed_faults;
mod bad_day;
mod bulk;
#[cfg(feature = "cassandra")]
mod cassandra;
#[cfg(feature = "cassandra")]
mod cassandra_cluster;
mod crash;
#[cfg(feature = "nudb")]
mod data_files;
mod disk_faults;
mod faults;
mod fjall_damage;
mod gc;
mod ledgers;
mod node_log;
mod node_log_checkpoint;
mod node_log_faults;
mod node_log_integrity;
#[cfg(feature = "nudb")]
mod nudb;
#[cfg(feature = "nudb")]
mod nudb_layout;
#[cfg(feature = "nudb")]
mod nudb_live;
mod placement;
mod power_loss;
mod prune;
mod reader;
mod readers;
mod readme;
#[cfg(feature = "rocksdb")]
mod rocks;
mod seeds;
mod support;
mod sync;
mod tmpfs;
mod torture;
