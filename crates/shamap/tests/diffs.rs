//! Deltas between versions: rippled's delta script with real snapshots, and
//! random maps against a diff computed on `BTreeMap` models, with leaves
//! facing subtrees (keys sharing 62 and 63 nibbles) and the maximum count.

use std::collections::{BTreeMap, BTreeSet};

use rand::rngs::SmallRng;
use rand::Rng;
use shamap::{Difference, Key, MapKind, ShaMap, Snapshot, TooManyDifferences};

use crate::common::{delta_script, key_sharing, random_data, random_key, rng};

type Model = BTreeMap<Key, Vec<u8>>;

/// (key, left data, right data) for every key whose data differ.
type Delta = Vec<(Key, Option<Vec<u8>>, Option<Vec<u8>>)>;

fn model_delta(left: &Model, right: &Model) -> Delta {
    let keys: BTreeSet<&Key> = left.keys().chain(right.keys()).collect();
    keys.into_iter()
        .filter_map(|k| {
            let (l, r) = (left.get(k), right.get(k));
            (l != r).then(|| (*k, l.cloned(), r.cloned()))
        })
        .collect()
}

fn owned(diff: &[Difference<'_>]) -> Delta {
    diff.iter()
        .map(|d| {
            (
                d.key,
                d.left.map(<[u8]>::to_vec),
                d.right.map(<[u8]>::to_vec),
            )
        })
        .collect()
}

#[test]
fn delta_script_with_real_snapshots_behaves_like_rippled() {
    let (mut map, h) = delta_script();

    // Snapshot: same hash, empty delta.
    let snap = map.snapshot();
    assert_eq!(snap.root_hash(), map.root_hash());
    assert_eq!(map.snapshot().diff(&snap, 10), Ok(vec![]));
    let mut copy = snap.to_map();
    assert_eq!(map.diff(&mut copy, 10), Ok(vec![]));

    // Delete h1 from the original only: only the original's hash changes.
    let before = snap.root_hash();
    map.remove(&h("h1")).expect("present");
    assert_ne!(map.root_hash(), before);
    assert_eq!(snap.root_hash(), before);
    let now = map.snapshot();
    let d1 = [1u8; 32];
    let want = vec![Difference {
        key: h("h1"),
        left: None,
        right: Some(&d1[..]),
    }];
    assert_eq!(now.diff(&snap, 10), Ok(want));
    assert_eq!(
        map.diff(&mut copy, 10).map(|d| owned(&d)),
        Ok(vec![(h("h1"), None, Some(d1.to_vec()))])
    );
    // And the other way round.
    assert_eq!(
        snap.diff(&now, 10).map(|d| owned(&d)),
        Ok(vec![(h("h1"), Some(d1.to_vec()), None)])
    );
}

/// Data that differs from `old`.
fn other_data(r: &mut SmallRng, old: &[u8]) -> Vec<u8> {
    loop {
        let d = random_data(r, 40);
        if d != old {
            return d;
        }
    }
}

/// A random map with deep pairs (keys sharing 62 or 63 nibbles), its model.
fn base(r: &mut SmallRng, n: usize) -> (ShaMap, Model) {
    let mut m = ShaMap::new(MapKind::AccountState);
    let mut model = Model::new();
    let mut put = |k: Key, d: Vec<u8>| {
        if let std::collections::btree_map::Entry::Vacant(e) = model.entry(k) {
            m.insert(k, &d).expect("new key");
            e.insert(d);
        }
    };
    for i in 0..n {
        let k = random_key(r);
        put(k, random_data(r, 40));
        if i.is_multiple_of(20) {
            let shared = if i.is_multiple_of(40) { 62 } else { 63 };
            let k2 = key_sharing(r, &k, shared);
            put(k2, random_data(r, 40));
        }
    }
    (m, model)
}

/// Changes `m` (and `model` alike) in every way that makes diff cases:
/// additions into empty slots and as whole new subtrees, additions beside a
/// lone leaf (a leaf faces a subtree), removals that collapse a deep pair
/// (a subtree faces a leaf), modifications, including of a leaf that now
/// faces a subtree.
fn mutate(r: &mut SmallRng, m: &mut ShaMap, model: &mut Model, steps: usize) {
    let existing: Vec<Key> = model.keys().copied().collect();
    for _ in 0..steps {
        let pick = existing[r.gen_range(0..existing.len())];
        match r.gen_range(0..7) {
            0 => {
                let k = random_key(r);
                let d = random_data(r, 40);
                m.upsert(k, &d).expect("small data");
                model.insert(k, d);
            }
            1 => {
                // A new pair deep under a (probably) empty slot.
                let x = random_key(r);
                let shared = r.gen_range(4..64);
                let y = key_sharing(r, &x, shared);
                for k in [x, y] {
                    let d = random_data(r, 40);
                    m.upsert(k, &d).expect("small data");
                    model.insert(k, d);
                }
            }
            2 | 3 => {
                // Beside an existing key at depth 62/63; sometimes also
                // change that key, so it differs inside the subtree.
                let shared = if r.gen_bool(0.5) { 62 } else { 63 };
                let k = key_sharing(r, &pick, shared);
                let d = random_data(r, 40);
                m.upsert(k, &d).expect("small data");
                model.insert(k, d);
                if r.gen_bool(0.5) {
                    if let Some(old) = model.get(&pick).cloned() {
                        let d = other_data(r, &old);
                        m.update(pick, &d).expect("present");
                        model.insert(pick, d);
                    }
                }
            }
            4 | 5 => {
                if model.remove(&pick).is_some() {
                    m.remove(&pick).expect("present");
                }
            }
            _ => {
                if let Some(old) = model.get(&pick).cloned() {
                    let d = other_data(r, &old);
                    m.update(pick, &d).expect("present");
                    model.insert(pick, d);
                }
            }
        }
    }
}

fn check_both_ways(a: &Snapshot, b: &Snapshot, ma: &Model, mb: &Model) {
    let want = model_delta(ma, mb);
    let got = a.diff(b, usize::MAX).expect("no limit");
    assert_eq!(owned(&got), want);
    let back = b.diff(a, usize::MAX).expect("no limit");
    assert_eq!(owned(&back), model_delta(mb, ma));
}

#[test]
fn random_diffs_match_a_model_including_leaves_facing_subtrees() {
    for round in 0..6u64 {
        let mut r = rng("random-diffs", 100 + round);
        let (mut m, model_a) = base(&mut r, 1500);
        let a = m.snapshot();
        let mut model_b = model_a.clone();
        let steps = [1, 5, 30, 100, 300, 600][round as usize];
        mutate(&mut r, &mut m, &mut model_b, steps);
        let b = m.snapshot();
        assert_eq!(b.len(), model_b.len());
        check_both_ways(&a, &b, &model_a, &model_b);
        // Two live maps (from the snapshots) give the same.
        let (mut la, mut lb) = (a.to_map(), b.to_map());
        let got = la.diff(&mut lb, usize::MAX).expect("no limit");
        assert_eq!(owned(&got), model_delta(&model_a, &model_b));
        // A version against itself, and against an independently built
        // equal map (no shared nodes), is empty even with max 0.
        assert_eq!(b.diff(&b, 0), Ok(vec![]));
        let mut rebuilt = ShaMap::new(MapKind::AccountState);
        for (k, v) in model_b.iter().rev() {
            rebuilt.insert(*k, v).expect("distinct");
        }
        let rebuilt = rebuilt.snapshot();
        assert_eq!(rebuilt.root_hash(), b.root_hash());
        assert_eq!(b.diff(&rebuilt, 0), Ok(vec![]));
    }
}

#[test]
fn a_leaf_facing_a_subtree_is_merged_in_key_order() {
    let mut r = rng("leaf-vs-subtree", 5);
    let lone = random_key(&mut r);
    let anchor = key_sharing(&mut r, &lone, 0);
    let mut a = Model::new();
    a.insert(lone, vec![1; 12]);
    a.insert(anchor, vec![2; 12]);
    // The other side: `lone` with keys sharing 62 and 63 nibbles below and
    // above it, `lone` itself changed, or removed.
    for variant in 0..3 {
        let mut b = a.clone();
        for shared in [62, 63, 62, 63] {
            b.insert(key_sharing(&mut r, &lone, shared), vec![3; 12]);
        }
        match variant {
            0 => {}
            1 => {
                b.insert(lone, vec![9; 12]);
            }
            _ => {
                b.remove(&lone);
            }
        }
        let (sa, sb) = (snapshot_of(&a), snapshot_of(&b));
        check_both_ways(&sa, &sb, &a, &b);
    }
}

fn snapshot_of(model: &Model) -> Snapshot {
    let mut m = ShaMap::new(MapKind::AccountState);
    for (k, v) in model {
        m.insert(*k, v).expect("distinct");
    }
    m.snapshot()
}

#[test]
fn the_maximum_count_is_enforced() {
    let mut r = rng("diff-max", 17);
    let (mut m, model_a) = base(&mut r, 500);
    let a = m.snapshot();
    let mut model_b = model_a.clone();
    mutate(&mut r, &mut m, &mut model_b, 50);
    let b = m.snapshot();
    let n = model_delta(&model_a, &model_b).len();
    assert!(n > 10, "{n}");
    assert_eq!(a.diff(&b, n).map(|d| d.len()), Ok(n));
    assert_eq!(
        a.diff(&b, n - 1).map(|d| d.len()),
        Err(TooManyDifferences { max: n - 1 })
    );
    assert_eq!(
        a.diff(&b, 0).map(|d| d.len()),
        Err(TooManyDifferences { max: 0 })
    );
    let (mut la, mut lb) = (a.to_map(), b.to_map());
    assert_eq!(
        la.diff(&mut lb, 3).map(|d| d.len()),
        Err(TooManyDifferences { max: 3 })
    );
    assert_eq!(
        TooManyDifferences { max: 3 }.to_string(),
        "more than 3 differences"
    );
}
