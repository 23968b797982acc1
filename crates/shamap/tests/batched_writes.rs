//! `ShaMap::apply` (batched writes) against single writes, a BTreeMap and
//! the dense reference, with snapshots and undo sessions around it.

use std::collections::BTreeMap;

use rand::rngs::SmallRng;
use rand::Rng;
use shamap::tree::{APPLY_RUN, PARALLEL_MIN_WRITES};
use shamap::{Applied, Hash256, HashFunction, Key, MapKind, MapOptions, ShaMap, SizeClasses};

use crate::common::{check_against, key_near, oracle_root, random_data, random_key, rng};

/// A random block of writes: sets of present and new keys (many of them
/// near present ones, so splits and deep chains happen), removals of
/// present and absent keys, and repeated keys.
fn random_block(
    r: &mut SmallRng,
    model: &BTreeMap<Key, Vec<u8>>,
    n: usize,
) -> Vec<(Key, Option<Vec<u8>>)> {
    let present: Vec<Key> = model.keys().copied().collect();
    let mut block: Vec<(Key, Option<Vec<u8>>)> = Vec::with_capacity(n);
    for _ in 0..n {
        let roll = r.gen_range(0..100);
        let key = if roll < 10 && !block.is_empty() {
            // A key written earlier in this block.
            block[r.gen_range(0..block.len())].0
        } else if roll < 55 && !present.is_empty() {
            present[r.gen_range(0..present.len())]
        } else if roll < 80 && !present.is_empty() {
            let base = present[r.gen_range(0..present.len())];
            key_near(r, &base)
        } else {
            random_key(r)
        };
        let data = if r.gen_range(0..100) < 30 {
            None
        } else {
            Some(random_data(r, 120))
        };
        block.push((key, data));
    }
    block
}

/// The counts `apply` must report for `block` on `model`, and `model`
/// updated by it.
fn expected(model: &mut BTreeMap<Key, Vec<u8>>, block: &[(Key, Option<Vec<u8>>)]) -> Applied {
    let mut last: BTreeMap<Key, &Option<Vec<u8>>> = BTreeMap::new();
    for (k, d) in block {
        last.insert(*k, d);
    }
    let mut want = Applied::default();
    for (k, d) in last {
        match (d, model.contains_key(&k)) {
            (Some(d), true) => {
                want.replaced += 1;
                model.insert(k, d.clone());
            }
            (Some(d), false) => {
                want.added += 1;
                model.insert(k, d.clone());
            }
            (None, true) => {
                want.removed += 1;
                model.remove(&k);
            }
            (None, false) => want.absent += 1,
        }
    }
    want
}

fn as_writes(block: &[(Key, Option<Vec<u8>>)]) -> impl Iterator<Item = (Key, Option<&[u8]>)> {
    block.iter().map(|(k, d)| (*k, d.as_deref()))
}

/// Applies `block` one write at a time.
fn apply_singly(map: &mut ShaMap, block: &[(Key, Option<Vec<u8>>)]) {
    for (k, d) in block {
        match d {
            Some(d) => {
                map.upsert(*k, d).expect("upsert");
            }
            None => {
                let _ = map.remove(k);
            }
        }
    }
}

/// `body` on a rayon pool of `threads` threads: with one, `apply` always
/// takes its fused path; with two, blocks of `PARALLEL_MIN_WRITES` or more
/// take the parallel one.
fn on_threads<T: Send>(threads: usize, body: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("pool")
        .install(body)
}

fn run(kind: MapKind, options: MapOptions, test: &str, seed: u64, rounds: usize) {
    for threads in [1, 2] {
        on_threads(threads, || {
            run_on(
                kind,
                options,
                &format!("{test}, {threads} thread(s)"),
                seed,
                rounds,
            )
        });
    }
}

fn run_on(kind: MapKind, options: MapOptions, test: &str, seed: u64, rounds: usize) {
    let mut r = rng(test, seed);
    let mut batched = ShaMap::with_options(kind, options);
    let mut single = ShaMap::with_options(kind, options);
    let mut model = BTreeMap::new();
    for round in 0..rounds {
        // Block sizes from one write to several runs of `APPLY_RUN`.
        let n = match r.gen_range(0..10) {
            0 => 1,
            1..=5 => r.gen_range(2..200),
            6..=8 => r.gen_range(200..1500),
            _ => r.gen_range(APPLY_RUN..PARALLEL_MIN_WRITES + 3 * APPLY_RUN),
        };
        let block = random_block(&mut r, &model, n);
        let want = expected(&mut model, &block);
        let got = batched.apply(as_writes(&block)).expect("apply");
        apply_singly(&mut single, &block);
        let what = format!("round {round} ({n} writes)");
        assert_eq!(
            (got.added, got.replaced, got.removed, got.absent),
            (want.added, want.replaced, want.removed, want.absent),
            "{what}: counts"
        );
        assert_eq!(
            got.root_hash,
            single.root_hash(),
            "{what}: root differs from single writes"
        );
        check_against(&mut batched, &model, kind, &what);
        if round % 4 == 3 {
            // Now and then, remove a large share of the keys in one block,
            // so inner nodes empty and collapse on many levels at once.
            let doomed: Vec<(Key, Option<Vec<u8>>)> = model
                .keys()
                .filter(|_| r.gen_bool(0.7))
                .map(|k| (*k, None))
                .collect();
            let want = expected(&mut model, &doomed);
            let got = batched.apply(as_writes(&doomed)).expect("apply removals");
            apply_singly(&mut single, &doomed);
            assert_eq!(got.removed, want.removed, "{what}: removals");
            assert_eq!(
                got.root_hash,
                single.root_hash(),
                "{what}: root after removals"
            );
            check_against(&mut batched, &model, kind, &format!("{what}, removals"));
        }
    }
    // Everything removed in one block: the empty root, one inner node left.
    let all: Vec<(Key, Option<Vec<u8>>)> = model.keys().map(|k| (*k, None)).collect();
    let got = batched.apply(as_writes(&all)).expect("apply");
    assert_eq!(got.root_hash, Hash256::ZERO);
    assert_eq!(got.removed, model.len());
    batched.check().expect("the empty map is consistent");
    let stats = batched.mem_stats();
    assert_eq!(
        (stats.entries, stats.leaf_nodes, stats.inner_nodes),
        (0, 0, 1)
    );
}

#[test]
fn apply_matches_single_writes_and_both_oracles_on_state_maps() {
    run(
        MapKind::AccountState,
        MapOptions::default(),
        "apply_state",
        0xA991_0001,
        24,
    );
}

#[test]
fn apply_matches_single_writes_and_both_oracles_on_tx_maps_and_other_classes() {
    run(
        MapKind::TransactionWithMeta,
        MapOptions::default(),
        "apply_tx",
        0xA991_0002,
        12,
    );
    let classes = SizeClasses::new(&[2, 5, 16]).expect("valid classes");
    run(
        MapKind::TransactionNoMeta,
        MapOptions::default().with_size_classes(classes),
        "apply_txset_classes",
        0xA991_0003,
        12,
    );
}

#[test]
fn apply_on_blake3_maps_matches_single_writes_and_both_oracles() {
    run(
        MapKind::AccountState,
        MapOptions::default().with_hash(HashFunction::Blake3),
        "apply_blake3",
        0xA991_0005,
        12,
    );
}

#[test]
fn apply_keeps_snapshots_and_is_undone_by_sessions() {
    for threads in [1, 2] {
        on_threads(threads, || {
            versions(&format!("apply_versions, {threads} thread(s)"))
        });
    }
}

fn versions(test: &str) {
    let kind = MapKind::AccountState;
    let mut r = rng(test, 0xA991_0004);
    let mut map = ShaMap::new(kind);
    let mut model = BTreeMap::new();
    let first = random_block(&mut r, &model, 3000);
    expected(&mut model, &first);
    map.apply(as_writes(&first)).expect("apply");
    for round in 0..6 {
        let before = model.clone();
        let snap = map.snapshot();
        map.begin_session();
        let block = random_block(&mut r, &model, 1500);
        let mut after = model.clone();
        expected(&mut after, &block);
        let got = map.apply(as_writes(&block)).expect("apply");
        assert_eq!(got.root_hash, oracle_root(kind, &after), "round {round}");
        // The snapshot still reads the old version, whose nodes the batch
        // copied before changing.
        assert_eq!(
            snap.root_hash(),
            oracle_root(kind, &before),
            "round {round}"
        );
        let mut old = snap.to_map();
        check_against(&mut old, &before, kind, &format!("round {round}: snapshot"));
        if round % 2 == 0 {
            map.undo().expect("undo");
            check_against(&mut map, &before, kind, &format!("round {round}: undone"));
        } else {
            map.commit();
            model = after;
            check_against(&mut map, &model, kind, &format!("round {round}: kept"));
        }
    }
}

#[test]
fn apply_after_unhashed_single_writes_and_empty_blocks() {
    let kind = MapKind::AccountState;
    let mut r = rng("apply_stale", 0xA991_0005);
    let mut map = ShaMap::new(kind);
    let mut model = BTreeMap::new();
    // Nothing to do on an empty map.
    let got = map.apply(std::iter::empty()).expect("empty block");
    assert_eq!(got, Applied::default());
    for round in 0..5 {
        // Single writes leave stale nodes that the batch must not trust.
        for _ in 0..300 {
            let k = random_key(&mut r);
            let d = random_data(&mut r, 40);
            map.upsert(k, &d).expect("upsert");
            model.insert(k, d);
        }
        let block = random_block(&mut r, &model, 500);
        expected(&mut model, &block);
        map.apply(as_writes(&block)).expect("apply");
        check_against(&mut map, &model, kind, &format!("round {round}"));
        let root = map.root_hash();
        let got = map.apply(std::iter::empty()).expect("empty block");
        assert_eq!(got.root_hash, root);
    }
}
