//! Seeded random maps and the shipped ledgers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shamap::{Key, MapKind, ShaMap};

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

/// `n` random entries (keys random, data 12..60 bytes) as a map and its
/// `BTreeMap` model.
pub fn random_map(kind: MapKind, n: usize, seed: u64) -> (ShaMap, BTreeMap<Key, Vec<u8>>) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut map = ShaMap::new(kind);
    let mut model = BTreeMap::new();
    while model.len() < n {
        let mut k = [0u8; 32];
        rng.fill(&mut k[..]);
        // Keys that share long prefixes now and then: deep chains.
        if rng.gen_ratio(1, 50) {
            if let Some((prev, _)) = model.iter().next() {
                let prev: &Key = prev;
                let share = rng.gen_range(1..32);
                k[..share].copy_from_slice(&prev.0[..share]);
            }
        }
        let len = rng.gen_range(12..60);
        let data: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        // A tx-only leaf does not store its key: it is the leaf's hash.
        let key = if kind == MapKind::TransactionNoMeta {
            Key::from(shamap::xrpl::transaction_id(&data))
        } else {
            Key(k)
        };
        if model.insert(key, data.clone()).is_none() {
            map.insert(key, &data).expect("fresh key");
        }
    }
    (map, model)
}

/// A file of the project's `data/` directory.
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data")
        .join(name)
}
