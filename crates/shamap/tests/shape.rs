//! The shape and hash depend only on the key set.

use rand::seq::SliceRandom;
use rand::Rng;
use shamap::{Hash256, Key, MapKind, ShaMap};

use crate::common::{build, key_near, random_data, random_entries, random_key, rng};

#[test]
fn empty_map_hashes_to_zero_and_checks() {
    let mut m = ShaMap::new(MapKind::AccountState);
    assert_eq!(m.root_hash(), Hash256::ZERO);
    assert!(m.is_empty());
    m.check().expect("empty map is consistent");
    assert_eq!(m.iter().count(), 0);
    assert_eq!(m.first(), None);
    assert_eq!(m.last(), None);
}

#[test]
fn insertion_order_does_not_change_the_root() {
    let mut r = rng("order", 11);
    let mut items: Vec<(Key, Vec<u8>)> = Vec::new();
    for i in 0..2000 {
        let k = if i > 0 && i % 3 == 0 {
            let base = items[r.gen_range(0..items.len())].0;
            key_near(&mut r, &base)
        } else {
            random_key(&mut r)
        };
        if items.iter().all(|(x, _)| *x != k) {
            items.push((k, random_data(&mut r, 64)));
        }
    }
    let mut first = build(MapKind::AccountState, &items);
    let want = first.root_hash();
    for _ in 0..3 {
        items.shuffle(&mut r);
        let mut m = build(MapKind::AccountState, &items);
        assert_eq!(m.root_hash(), want);
        m.check().expect("canonical");
    }
    // Building by inserting extra keys and removing them again ends in the
    // same shape too.
    let mut m = build(MapKind::AccountState, &items);
    let mut extra: Vec<Key> = (0..500).map(|_| key_near(&mut r, &items[0].0)).collect();
    extra.sort_unstable();
    extra.dedup();
    for k in &extra {
        let _ = m.insert(*k, b"temporary");
    }
    for k in &extra {
        if items.iter().all(|(x, _)| x != k) {
            m.remove(k).expect("inserted above");
        }
    }
    assert_eq!(m.root_hash(), want);
    m.check().expect("canonical");
}

/// The state map of `n` random entries (data up to `max` bytes) drawn from
/// `rng(test, seed)`: the entries and the map.
fn random_state_map(test: &str, seed: u64, n: usize, max: usize) -> (Vec<(Key, Vec<u8>)>, ShaMap) {
    let items = random_entries(&mut rng(test, seed), n, max);
    let m = build(MapKind::AccountState, &items);
    (items, m)
}

#[test]
fn root_is_rehashed_only_along_dirty_paths() {
    let (items, mut m) = random_state_map("dirty", 12, 1000, 50);
    let h1 = m.root_hash();
    assert_eq!(m.cached_root_hash(), Some(h1));
    m.update(items[3].0, b"changed").expect("present");
    assert_eq!(m.cached_root_hash(), None, "a write marks the root stale");
    // check() insists that every stale node has only stale ancestors and
    // that every current hash is right, which is what incremental rehash
    // relies on.
    m.check().expect("consistent while stale");
    let h2 = m.root_hash();
    assert_ne!(h1, h2);
    m.update(items[3].0, &items[3].1).expect("present");
    assert_eq!(m.root_hash(), h1, "restoring the data restores the root");
    m.check().expect("consistent");
}

#[test]
fn keys_sharing_63_nibbles_make_a_64_deep_tree_and_collapse_back() {
    let a = Key([0x5A; 32]);
    let mut b = a;
    b.0[31] = 0x5B;
    let mut m = ShaMap::new(MapKind::AccountState);
    m.insert(a, b"a").expect("new");
    let one = m.root_hash();
    m.insert(b, b"b").expect("new");
    m.check().expect("deep chain is canonical");
    let stats = m.mem_stats();
    assert_eq!(
        stats.inner_nodes, 64,
        "root plus 63 chain nodes down to depth 63"
    );
    m.remove(&b).expect("present");
    m.check().expect("chain collapsed");
    assert_eq!(m.mem_stats().inner_nodes, 1);
    assert_eq!(m.root_hash(), one);
}

#[test]
fn clear_and_reuse() {
    let (items, mut m) = random_state_map("clear", 13, 300, 50);
    let want = m.root_hash();
    m.clear();
    assert_eq!(m.root_hash(), Hash256::ZERO);
    m.check().expect("consistent");
    for (k, v) in &items {
        m.insert(*k, v).expect("new");
    }
    assert_eq!(m.root_hash(), want);
}

#[test]
fn shape_histograms_equal_the_oracles() {
    let mut r = rng("histograms", 14);
    let mut keys: Vec<Key> = (0..5000).map(|_| random_key(&mut r)).collect();
    for i in 0..500 {
        let base = keys[i];
        keys.push(key_near(&mut r, &base));
    }
    keys.sort_unstable();
    keys.dedup();
    let items: Vec<(Key, Vec<u8>)> = keys.iter().map(|k| (*k, vec![1; 12])).collect();
    let mut m = build(MapKind::AccountState, &items);
    let s = m.shape_stats();
    let raw: Vec<[u8; 32]> = keys.iter().map(|k| k.0).collect();
    assert_eq!(
        s.child_histogram,
        shamap_oracle::child_count_histogram(&raw)
    );
    let mut depths = [0u64; 65];
    for (_, d) in shamap_oracle::leaf_depths(&raw) {
        depths[d] += 1;
    }
    assert_eq!(s.depth_histogram, depths);
    assert_eq!(s.inner_nodes() as usize, m.mem_stats().inner_nodes);
    let root = m.root_hash();
    m.invalidate_hashes();
    assert_eq!(m.cached_root_hash(), None);
    assert_eq!(m.root_hash(), root);
    m.check().expect("consistent");
}

#[test]
fn parallel_hashing_gives_the_serial_root() {
    let (items, mut serial) = random_state_map("parallel", 15, 20_000, 100);
    let want = serial.root_hash_serial();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("thread pool");
    let mut par = build(MapKind::AccountState, &items);
    assert_eq!(pool.install(|| par.root_hash()), want);
    par.check().expect("consistent after parallel hashing");
    // Incremental: a big batch of updates, hashed in parallel again.
    for (k, _) in items.iter().step_by(7) {
        serial.update(*k, b"updated").expect("present");
        par.update(*k, b"updated").expect("present");
    }
    assert_eq!(pool.install(|| par.root_hash()), serial.root_hash_serial());
    par.check().expect("consistent");
}
