//! Integration tests of shamap-clio, compiled as one binary: Clio
//! verification against a real Cassandra node named by `SHAMAP_CASSANDRA`
//! (each test says it skips and passes without one).

#[path = "../../shamap-store/tests/cassandra_cluster.rs"]
mod cassandra_cluster;
mod clio_cassandra;
mod clio_cassandra_refusal;
mod clio_cassandra_schema;
mod clio_ledgers;
#[path = "../../shamap-store/tests/seeds.rs"]
mod seeds;

pub use seeds::seed;
