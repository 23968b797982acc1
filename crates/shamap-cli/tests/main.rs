//! Integration tests of the `shamap` binary, compiled as one test binary.
//! Each module runs the built binary on real or deliberately broken input.

mod anchors;
mod apply_input;
mod bad_day;
#[path = "../../shamap-store/tests/cassandra_cluster.rs"]
mod cassandra_cluster;
#[path = "../../shamap-clio/tests/clio_ledgers.rs"]
mod clio_ledgers;
mod clio_load_anchor_store_cassandra;
mod clio_load_store_cassandra;
mod clio_repair_store_cassandra;
mod clio_store_cassandra;
#[path = "../../shamap-store/tests/data_files.rs"]
mod data_files;
mod diffs;
mod export_into_store;
mod export_ledger;
mod ledger_db_lies;
mod ledger_roots;
mod output_into_store;
mod proofs;
mod readme_layout;
mod stats_errors;
mod stats_ledger;
mod stats_plot;
mod stats_random;
mod store_cassandra;
mod store_cli;
mod store_faults;
mod store_nudb;
mod support;
#[path = "../../shamap-store/tests/tmpfs.rs"]
mod tmpfs;
mod verify_data;
mod verify_decoded;
mod verify_errors;
mod verify_pages;
mod xpop_cli;
