//! Integration tests of shamap-clio, compiled as one binary: Clio
//! verification against a real Cassandra node named by `SHAMAP_CASSANDRA`
//! (each test says it skips and passes without one).

#[path = "../../shamap-store/tests/cassandra_cluster.rs"]
mod cassandra_cluster;
mod clio_cassandra;
mod clio_ledgers;

/// The seed of a randomized test: `SHAMAP_STORE_SEED` when set, else
/// `default`; printed, so a failure can be replayed.
pub fn seed(default: u64) -> u64 {
    let s = std::env::var("SHAMAP_STORE_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    eprintln!("seed {s} (override with SHAMAP_STORE_SEED)");
    s
}
