//! The seed of a randomized test, shared with shamap-clio's tests (which
//! include this file).

/// The RNG seed: `SHAMAP_STORE_SEED` or `default`, printed so a failure can
/// be replayed.
pub fn seed(default: u64) -> u64 {
    let s = std::env::var("SHAMAP_STORE_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    eprintln!("seed {s} (override with SHAMAP_STORE_SEED)");
    s
}
