//! `ShaMap::from_sorted` against inserts of the same items and the dense
//! oracle: same root, same shape, same node counts, a consistent map that
//! takes further writes; errors on unsorted, repeated or oversized input.

use std::collections::BTreeMap;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::Rng;
use shamap::{Key, MapError, MapKind, MapOptions, ShaMap, SizeClasses};

use crate::common::{
    key_sharing, key_sharing_one_of, oracle_root, random_data, random_key, rng, SHARED,
};

/// `n` distinct keys, many sharing long prefixes (deep chains), with data
/// of 0..200 bytes and now and then a leaf too large for a pool.
fn random_items(r: &mut SmallRng, n: usize) -> BTreeMap<Key, Vec<u8>> {
    let mut model = BTreeMap::new();
    let mut keys = Vec::new();
    while model.len() < n {
        let k = if keys.is_empty() || r.gen_bool(0.5) {
            random_key(r)
        } else {
            key_sharing_one_of(r, &keys)
        };
        let d = if r.gen_ratio(1, 500) {
            vec![0xA7; r.gen_range(1025..3000)]
        } else {
            random_data(r, 200)
        };
        if model.insert(k, d).is_none() {
            keys.push(k);
        }
    }
    model
}

/// Inserts the items in a random order.
fn by_inserts(
    r: &mut SmallRng,
    kind: MapKind,
    options: MapOptions,
    model: &BTreeMap<Key, Vec<u8>>,
) -> ShaMap {
    let mut items: Vec<(&Key, &Vec<u8>)> = model.iter().collect();
    items.shuffle(r);
    let mut m = ShaMap::with_options(kind, options);
    for (k, d) in items {
        m.insert(*k, d).expect("distinct keys");
    }
    m
}

fn assert_same(
    bulk: &mut ShaMap,
    inserted: &mut ShaMap,
    model: &BTreeMap<Key, Vec<u8>>,
    what: &str,
) {
    bulk.check()
        .unwrap_or_else(|e| panic!("{what}: bulk-built map fails check: {e}"));
    assert_eq!(bulk.len(), model.len(), "{what}: len");
    assert_eq!(bulk.shape_stats(), inserted.shape_stats(), "{what}: shape");
    let (a, b) = (bulk.mem_stats(), inserted.mem_stats());
    assert_eq!(
        (a.entries, a.inner_nodes, a.leaf_nodes, a.large_leaves),
        (b.entries, b.inner_nodes, b.leaf_nodes, b.large_leaves),
        "{what}: node counts"
    );
    assert_eq!(a.inner_classes, b.inner_classes, "{what}: inner classes");
    assert!(
        bulk.iter()
            .map(|(k, v)| (*k, v))
            .eq(model.iter().map(|(k, v)| (*k, &v[..]))),
        "{what}: contents"
    );
    let root = bulk.root_hash();
    assert_eq!(
        root,
        inserted.root_hash(),
        "{what}: root differs from inserts"
    );
    assert_eq!(
        root,
        oracle_root(bulk.kind(), model),
        "{what}: root differs from the oracle"
    );
    bulk.check()
        .unwrap_or_else(|e| panic!("{what}: check after hashing: {e}"));
}

#[test]
fn from_sorted_equals_inserts_and_the_oracle() {
    let mut r = rng("from_sorted", 71);
    for n in [0usize, 1, 2, 3, 16, 17, 300, 5000, 30_000] {
        let model = random_items(&mut r, n);
        let mut inserted = by_inserts(&mut r, MapKind::AccountState, MapOptions::default(), &model);
        let mut bulk =
            ShaMap::from_sorted(MapKind::AccountState, model.iter().map(|(k, d)| (*k, d)))
                .expect("sorted, distinct");
        assert_same(&mut bulk, &mut inserted, &model, &format!("{n} items"));
    }
}

#[test]
fn from_sorted_with_other_kinds_and_size_classes() {
    let mut r = rng("from_sorted_options", 72);
    let options = [
        SizeClasses::new(&[2, 4, 10, 16]),
        SizeClasses::new(&[16]),
        SizeClasses::new(&[1, 2, 3, 5, 8, 12, 16]),
    ];
    let kinds = [
        MapKind::TransactionWithMeta,
        MapKind::TransactionNoMeta,
        MapKind::AccountState,
    ];
    for (classes, kind) in options.into_iter().zip(kinds) {
        let o = MapOptions::default().with_size_classes(classes.expect("valid classes"));
        let model = random_items(&mut r, 2000);
        let mut inserted = by_inserts(&mut r, kind, o, &model);
        let mut bulk = ShaMap::from_sorted_with_options(
            kind,
            o,
            model.iter().map(|(k, d)| (*k, d.as_slice())),
        )
        .expect("sorted, distinct");
        assert_eq!(bulk.options(), o);
        assert_same(&mut bulk, &mut inserted, &model, &format!("{kind:?}"));
    }
}

#[test]
fn a_bulk_built_map_takes_further_writes() {
    let mut r = rng("from_sorted_writes", 73);
    let mut model = random_items(&mut r, 4000);
    let mut map = ShaMap::from_sorted(MapKind::AccountState, model.clone()).expect("sorted");
    let keys: Vec<Key> = model.keys().copied().collect();
    for (i, k) in keys.iter().enumerate() {
        match i % 4 {
            0 => {
                map.remove(k).expect("present");
                model.remove(k);
            }
            1 => {
                let d = random_data(&mut r, 100);
                map.update(*k, &d).expect("present");
                model.insert(*k, d);
            }
            _ => {}
        }
        if i % 3 == 0 {
            let nk = key_sharing(&mut r, k, SHARED[i % SHARED.len()]);
            if let std::collections::btree_map::Entry::Vacant(e) = model.entry(nk) {
                map.insert(nk, b"new").expect("absent");
                e.insert(b"new".to_vec());
            }
        }
    }
    assert_eq!(map.root_hash(), oracle_root(MapKind::AccountState, &model));
    map.check().expect("consistent after writes");
}

#[test]
fn from_sorted_rejects_repeated_and_unsorted_input() {
    let mut r = rng("from_sorted_errors", 74);
    let model = random_items(&mut r, 500);
    let mut items: Vec<(Key, Vec<u8>)> = model.into_iter().collect();
    // A large leaf early on, so that a leak of the nodes built before the
    // error trips the arena's leak assertion (debug builds) when it drops.
    items[3].1 = vec![1; 5000];
    let mut dup = items.clone();
    dup.insert(200, dup[199].clone());
    assert_eq!(
        ShaMap::from_sorted(MapKind::AccountState, dup.clone()).err(),
        Some(MapError::KeyExists(dup[199].0))
    );
    let mut unsorted = items.clone();
    unsorted.swap(300, 301);
    assert_eq!(
        ShaMap::from_sorted(MapKind::AccountState, unsorted.clone()).err(),
        Some(MapError::OutOfOrder(unsorted[301].0))
    );
    // Sorted, distinct input still builds.
    let ok = ShaMap::from_sorted(MapKind::AccountState, items.clone()).expect("sorted");
    ok.check().expect("consistent");
    assert_eq!(ok.len(), items.len());
}
