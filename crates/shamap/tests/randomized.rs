//! Long random operation sequences checked against two oracles: a BTreeMap
//! for contents and the dense reference for root hashes.

use std::collections::BTreeMap;

use rand::rngs::SmallRng;
use rand::Rng;
use shamap::{HashFunction, HugePages, Key, MapError, MapKind, MapOptions, ShaMap, SizeClasses};

use crate::common::{check_against, key_sharing, oracle_root, random_data, random_key, rng};

/// Nibble counts a new key shares with an existing one: the edges of the tree.
const SHARED: [usize; 8] = [0, 1, 2, 15, 16, 31, 62, 63];

fn pick_new_key(r: &mut SmallRng, model: &BTreeMap<Key, Vec<u8>>) -> Key {
    if model.is_empty() || r.gen_bool(0.3) {
        return random_key(r);
    }
    let i = r.gen_range(0..model.len());
    let base = *model.keys().nth(i).expect("index in range");
    let shared = SHARED[r.gen_range(0..SHARED.len())];
    key_sharing(r, &base, shared)
}

fn pick_existing(r: &mut SmallRng, model: &BTreeMap<Key, Vec<u8>>) -> Option<Key> {
    if model.is_empty() {
        return None;
    }
    let i = r.gen_range(0..model.len());
    model.keys().nth(i).copied()
}

/// Runs `steps` random operations in batches, checking after each batch.
fn run(kind: MapKind, options: MapOptions, seed: u64, steps: usize, batch: usize, test: &str) {
    let mut r = rng(test, seed);
    let mut map = ShaMap::with_options(kind, options);
    let mut model: BTreeMap<Key, Vec<u8>> = BTreeMap::new();
    for step in 0..steps {
        let op = r.gen_range(0..100);
        if op < 45 {
            let k = pick_new_key(&mut r, &model);
            let d = random_data(&mut r, 300);
            let res = map.insert(k, &d);
            match model.entry(k) {
                std::collections::btree_map::Entry::Occupied(_) => {
                    assert_eq!(res, Err(MapError::KeyExists(k)), "step {step}");
                }
                std::collections::btree_map::Entry::Vacant(slot) => {
                    res.expect("insert of a new key");
                    slot.insert(d);
                }
            }
        } else if op < 60 {
            let Some(k) = pick_existing(&mut r, &model) else {
                continue;
            };
            let d = random_data(&mut r, 300);
            map.update(k, &d).expect("update of a present key");
            model.insert(k, d);
        } else if op < 65 {
            let k = random_key(&mut r);
            assert_eq!(map.update(k, b"x"), Err(MapError::KeyMissing(k)));
            assert_eq!(map.remove(&k), Err(MapError::KeyMissing(k)));
        } else if op < 70 {
            let k = if r.gen_bool(0.5) {
                pick_existing(&mut r, &model).unwrap_or_default()
            } else {
                random_key(&mut r)
            };
            let d = random_data(&mut r, 100);
            let was_new = map.upsert(k, &d).expect("upsert");
            assert_eq!(was_new, model.insert(k, d).is_none(), "step {step}");
        } else {
            let Some(k) = pick_existing(&mut r, &model) else {
                continue;
            };
            map.remove(&k).expect("remove of a present key");
            model.remove(&k);
        }
        if step % batch == batch - 1 {
            verify(&mut map, &model, kind, step);
        }
    }
    verify(&mut map, &model, kind, steps);
    // Remove everything: back to the empty root.
    let keys: Vec<Key> = model.keys().copied().collect();
    for k in keys {
        map.remove(&k).expect("present");
    }
    assert_eq!(map.root_hash(), shamap::Hash256::ZERO);
    map.check().expect("empty map is consistent");
    let stats = map.mem_stats();
    assert_eq!(
        (stats.entries, stats.leaf_nodes, stats.inner_nodes),
        (0, 0, 1)
    );
}

fn verify(map: &mut ShaMap, model: &BTreeMap<Key, Vec<u8>>, kind: MapKind, step: usize) {
    for (k, v) in model.iter().take(50) {
        assert_eq!(map.get(k), Some(&v[..]));
    }
    check_against(map, model, kind, &format!("after step {step}"));
}

#[test]
fn random_ops_on_state_maps_match_both_oracles() {
    run(
        MapKind::AccountState,
        MapOptions::default(),
        1,
        6000,
        500,
        "state",
    );
}

/// The same operations on maps hashed with BLAKE3: every path that hashes
/// (batched rehash, the parallel split, `check`) uses the map's function.
#[test]
fn random_ops_on_blake3_maps_match_both_oracles() {
    let opts = MapOptions::default().with_hash(HashFunction::Blake3);
    run(MapKind::AccountState, opts, 61, 4000, 400, "blake3_state");
    run(
        MapKind::TransactionNoMeta,
        opts,
        62,
        2000,
        300,
        "blake3_txset",
    );
}

/// The same operations on node memory from huge-page regions: blocks are
/// carved from shared 2 MiB regions, freed blocks return to them, and the
/// map (with clones and snapshots) behaves exactly the same.
#[test]
fn random_ops_with_huge_page_node_memory_match_both_oracles() {
    let opts = MapOptions::default().with_huge_pages(true);
    run(MapKind::AccountState, opts, 11, 6000, 500, "state-huge");
    let mut a = ShaMap::with_options(MapKind::AccountState, opts);
    for i in 0..50_000u32 {
        let mut k = [0u8; 32];
        k[..4].copy_from_slice(&i.to_be_bytes());
        k[4..8].copy_from_slice(&i.wrapping_mul(2654435761).to_be_bytes());
        a.insert(Key(k), &i.to_le_bytes()).expect("fresh");
    }
    assert_eq!(a.options().huge_pages, HugePages::Always);
    let b = a.clone();
    assert_eq!(
        b.options().huge_pages,
        HugePages::Always,
        "clones keep the block source"
    );
    let root = a.root_hash();
    drop(a);
    let mut b = b;
    assert_eq!(b.root_hash(), root);
    b.check().expect("a clone is well formed");
    let mut c = ShaMap::new(MapKind::AccountState);
    for (k, v) in b.iter() {
        c.insert(*k, v).expect("fresh");
    }
    assert_eq!(c.root_hash(), root, "same root without huge pages");
}

/// The default kind of policy with a small threshold: the first blocks come
/// from base pages, the later ones from huge-page regions, and a map whose
/// pools hold both kinds frees each block back where it came from (the
/// pool audit in `check()`, memcheck and ASan runs of this test).
#[test]
fn random_ops_with_huge_page_policy_beyond_a_threshold_mix_block_sources() {
    let opts = MapOptions::default().with_huge_pages_policy(HugePages::Beyond(1 << 20));
    run(MapKind::AccountState, opts, 12, 3000, 500, "state-beyond");
    let mut mixed = ShaMap::with_options(MapKind::AccountState, opts);
    let mut plain = ShaMap::with_options(
        MapKind::AccountState,
        MapOptions::default().with_huge_pages(false),
    );
    let key = |i: u32| {
        let mut k = [0u8; 32];
        k[..4].copy_from_slice(&i.wrapping_mul(2654435761).to_be_bytes());
        k[4..8].copy_from_slice(&i.to_be_bytes());
        Key(k)
    };
    for i in 0..40_000u32 {
        mixed.insert(key(i), &i.to_le_bytes()).expect("fresh");
        plain.insert(key(i), &i.to_le_bytes()).expect("fresh");
    }
    assert_eq!(mixed.root_hash(), plain.root_hash());
    let stats = mixed.mem_stats();
    let blocks: usize = stats.inner_classes.iter().map(|c| c.blocks).sum::<usize>()
        + stats.leaf_pools.iter().map(|p| p.blocks).sum::<usize>();
    assert!(
        blocks * (256 << 10) > 2 << 20,
        "well past the threshold: {blocks} blocks"
    );
    // Removing most keys empties blocks of both sources.
    for i in (0..40_000u32).filter(|i| i % 8 != 0) {
        mixed.remove(&key(i)).expect("present");
        plain.remove(&key(i)).expect("present");
    }
    assert_eq!(mixed.root_hash(), plain.root_hash());
    mixed
        .check()
        .expect("pools consistent with blocks of both sources");
    let snap = mixed.snapshot();
    drop(mixed);
    assert_eq!(snap.to_map().root_hash(), plain.root_hash());
}

#[test]
fn random_ops_on_tx_maps_match_both_oracles() {
    run(
        MapKind::TransactionWithMeta,
        MapOptions::default(),
        2,
        3000,
        300,
        "tx",
    );
}

#[test]
fn random_ops_on_txset_maps_with_other_size_classes_match_both_oracles() {
    let c = SizeClasses::new(&[2, 4, 10, 16]).expect("valid classes");
    run(
        MapKind::TransactionNoMeta,
        MapOptions::default().with_size_classes(c),
        3,
        3000,
        300,
        "txset-2-4-10-16",
    );
    let c = SizeClasses::new(&[16]).expect("valid classes");
    run(
        MapKind::AccountState,
        MapOptions::default().with_size_classes(c),
        4,
        2000,
        400,
        "dense-only",
    );
    let c = SizeClasses::new(&[1, 2, 3, 5, 8, 12, 16]).expect("valid classes");
    run(
        MapKind::AccountState,
        MapOptions::default().with_size_classes(c),
        5,
        2000,
        400,
        "seven-classes",
    );
}

/// The hashless-leaf mode (leaf hashes recomputed, never stored) on every kind
/// and on BLAKE3 maps: the same operations, the same oracles.
#[test]
fn random_ops_in_the_hashless_leaf_mode_match_both_oracles() {
    let opts = MapOptions::default().hashless_leaves();
    run(MapKind::AccountState, opts, 71, 4000, 400, "hashless_state");
    run(
        MapKind::TransactionWithMeta,
        opts,
        72,
        2000,
        300,
        "hashless_tx",
    );
    run(
        MapKind::TransactionNoMeta,
        opts.with_hash(HashFunction::Blake3)
            .with_size_classes(SizeClasses::RIPPLED),
        73,
        2000,
        300,
        "hashless_txset_blake3",
    );
}

#[test]
fn tens_of_thousands_of_random_entries_match_the_oracle() {
    large_random_map(MapOptions::default(), "large");
}

#[test]
fn tens_of_thousands_of_random_entries_match_the_oracle_in_the_hashless_leaf_mode() {
    large_random_map(MapOptions::default().hashless_leaves(), "large_hashless");
}

/// 30k random inserts, then a tenth changed and a tenth removed: large
/// enough for the split (and parallel) rehash.
fn large_random_map(options: MapOptions, test: &str) {
    let mut r = rng(test, 6);
    let mut map = ShaMap::with_options(MapKind::AccountState, options);
    let mut model = BTreeMap::new();
    for _ in 0..30_000 {
        let k = random_key(&mut r);
        let d = random_data(&mut r, 200);
        map.insert(k, &d).expect("random keys are distinct");
        model.insert(k, d);
    }
    assert_eq!(map.root_hash(), oracle_root(MapKind::AccountState, &model));
    map.check().expect("consistent");
    // Change a tenth, remove a tenth, rehash incrementally.
    let keys: Vec<Key> = model.keys().copied().collect();
    for (i, k) in keys.iter().enumerate() {
        match i % 10 {
            0 => {
                let d = random_data(&mut r, 200);
                map.update(*k, &d).expect("present");
                model.insert(*k, d);
            }
            1 => {
                map.remove(k).expect("present");
                model.remove(k);
            }
            _ => {}
        }
    }
    assert_eq!(map.root_hash(), oracle_root(MapKind::AccountState, &model));
    map.check().expect("consistent");
}
