//! `get_many` / `get_many_vec` (interleaved, prefetching lookups) against
//! `get` and a BTreeMap: present and absent keys, keys sharing long prefixes
//! with present ones, duplicates, empty maps, every batch length around the
//! number of lanes.

use std::collections::BTreeMap;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::Rng;
use shamap::tree::GET_MANY_LANES;
use shamap::{Key, MapKind, ShaMap};

use crate::common::{key_sharing_one_of, random_data, random_key, rng};

/// A map of `n` entries, a third of them sharing a long prefix with an
/// earlier key, and the model of its contents.
fn random_map(r: &mut SmallRng, n: usize) -> (ShaMap, BTreeMap<Key, Vec<u8>>) {
    let mut map = ShaMap::new(MapKind::AccountState);
    let mut model = BTreeMap::new();
    let mut keys: Vec<Key> = Vec::new();
    while model.len() < n {
        let k = if keys.is_empty() || r.gen_bool(0.6) {
            random_key(r)
        } else {
            key_sharing_one_of(r, &keys)
        };
        if model.contains_key(&k) {
            continue;
        }
        let d = random_data(r, 120);
        map.insert(k, &d).expect("new key");
        model.insert(k, d);
        keys.push(k);
    }
    (map, model)
}

/// Probe keys: present ones, random absent ones, absent ones sharing 1..=63
/// nibbles with a present key (the descent goes deep, then misses on a
/// branch or on a leaf with another key), and repeats.
fn probes(r: &mut SmallRng, model: &BTreeMap<Key, Vec<u8>>, n: usize) -> Vec<Key> {
    let present: Vec<Key> = model.keys().copied().collect();
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let roll = r.gen_range(0..10);
        let k = if present.is_empty() || roll < 2 {
            random_key(r)
        } else if roll < 6 {
            present[r.gen_range(0..present.len())]
        } else if roll < 9 {
            key_sharing_one_of(r, &present)
        } else if let Some(&prev) = out.last() {
            prev
        } else {
            random_key(r)
        };
        out.push(k);
    }
    out.shuffle(r);
    out
}

/// Checks `get_many` and `get_many_vec` on `map` for `keys` against `get`
/// and the model.
fn check(map: &ShaMap, model: &BTreeMap<Key, Vec<u8>>, keys: &[Key], what: &str) {
    let mut seen = vec![0u32; keys.len()];
    let mut got: Vec<Option<&[u8]>> = vec![None; keys.len()];
    map.get_many(keys, |i, d| {
        seen[i] += 1;
        got[i] = d;
    });
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(seen[i], 1, "{what}: index {i} reported {} times", seen[i]);
        let expected = model.get(k).map(Vec::as_slice);
        assert_eq!(
            got[i], expected,
            "{what}: get_many differs for key {i} {k:?}"
        );
        assert_eq!(
            map.get(k),
            expected,
            "{what}: get differs for key {i} {k:?}"
        );
    }
    assert_eq!(map.get_many_vec(keys), got, "{what}: get_many_vec");
}

#[test]
fn get_many_equals_get_on_random_maps() {
    let mut r = rng("get_many", 61);
    for n in [0usize, 1, 2, 3, 17, 300, 5000, 40_000] {
        let (map, model) = random_map(&mut r, n);
        map.check().expect("consistent");
        // Batch lengths around the lane count, and one long batch.
        let l = GET_MANY_LANES;
        for len in [0, 1, 2, l - 1, l, l + 1, 2 * l + 3, 1000, 3 * n + 7] {
            let keys = probes(&mut r, &model, len);
            check(&map, &model, &keys, &format!("{n} entries, batch of {len}"));
        }
    }
}

#[test]
fn get_many_after_removals_and_on_snapshots() {
    let mut r = rng("get_many_versions", 62);
    let (mut map, mut model) = random_map(&mut r, 3000);
    let snap = map.snapshot();
    let old = model.clone();
    // Remove half (inner nodes collapse into leaves), update a few.
    let keys: Vec<Key> = model.keys().copied().collect();
    for (i, k) in keys.iter().enumerate() {
        if i % 2 == 0 {
            map.remove(k).expect("present");
            model.remove(k);
        } else if i % 7 == 0 {
            let d = random_data(&mut r, 50);
            map.update(*k, &d).expect("present");
            model.insert(*k, d);
        }
    }
    let probe = probes(&mut r, &old, 5000);
    check(&map, &model, &probe, "after removals");
    // The snapshot still answers with the old contents.
    let mut got = vec![None; probe.len()];
    snap.get_many(&probe, |i, d| got[i] = d);
    for (i, k) in probe.iter().enumerate() {
        assert_eq!(got[i], old.get(k).map(Vec::as_slice), "snapshot, key {i}");
        assert_eq!(got[i], snap.get(k), "snapshot get, key {i}");
    }
    assert_eq!(snap.get_many_vec(&probe), got);
}

#[test]
fn get_many_on_empty_maps_and_empty_batches() {
    let map = ShaMap::new(MapKind::TransactionNoMeta);
    let mut calls = 0;
    map.get_many(&[], |_, _| calls += 1);
    assert_eq!(calls, 0);
    let keys = [Key([0; 32]), Key([0xFF; 32]), Key([0x5A; 32])];
    assert_eq!(map.get_many_vec(&keys), vec![None, None, None]);
    let mut m = ShaMap::new(MapKind::AccountState);
    m.insert(Key([0x5A; 32]), b"x").expect("new");
    // One entry: a leaf right below the root; neighbours differ at every depth.
    let mut near = Key([0x5A; 32]);
    near.0[31] ^= 1;
    let got = m.get_many_vec(&[keys[0], keys[2], near, keys[2]]);
    assert_eq!(got, vec![None, Some(&b"x"[..]), None, Some(&b"x"[..])]);
}
