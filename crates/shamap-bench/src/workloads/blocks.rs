//! Blocks of random writes and the ways of applying them, shared by the
//! workloads and the `update_phases` example (which includes this file by
//! path).

use rand::rngs::SmallRng;
use rand::Rng;
use shamap::{Hash256, Key, ShaMap};

/// One block of random writes: 60% updates, 20% inserts, 20% removes, as
/// (key, true = set / false = remove). `keys` follows the block.
pub(crate) fn gen_block(rng: &mut SmallRng, keys: &mut Vec<Key>, n: usize) -> Vec<(Key, bool)> {
    let mut block = Vec::with_capacity(n);
    for _ in 0..n {
        let roll = rng.gen_range(0..10);
        if roll < 6 && !keys.is_empty() {
            block.push((keys[rng.gen_range(0..keys.len())], true));
        } else if roll < 8 || keys.is_empty() {
            let k = Key(rng.gen());
            block.push((k, true));
            keys.push(k);
        } else {
            let i = rng.gen_range(0..keys.len());
            block.push((keys.swap_remove(i), false));
        }
    }
    block
}

/// Applies a block one write at a time (`upsert` / `remove`).
pub(crate) fn write_block(map: &mut ShaMap, block: &[(Key, bool)], data: &[u8]) {
    for &(k, set) in block {
        if set {
            map.upsert(k, data).expect("upsert");
        } else {
            map.remove(&k).expect("present");
        }
    }
}

/// Applies a block with `ShaMap::apply` (which also hashes) on `pool`
/// (one thread: with more, `apply` hands large blocks to the parallel
/// `root_hash`).
pub(crate) fn apply_block(
    pool: &rayon::ThreadPool,
    map: &mut ShaMap,
    block: &[(Key, bool)],
    data: &[u8],
) -> Hash256 {
    pool.install(|| map.apply(block.iter().map(|&(k, set)| (k, set.then_some(data)))))
        .expect("apply")
        .root_hash
}

/// A rayon pool of one thread: hashing on the calling thread only.
pub(crate) fn one_thread() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool")
}
