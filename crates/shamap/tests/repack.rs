//! `ShaMap::repack`, the key-order repack (and `Clone`, which makes the
//! same key-order copy): contents, hashes, stale marks, sessions and
//! snapshots survive; memory comes back to what a fresh bulk build of the
//! same items takes.

use std::collections::BTreeMap;

use rand::rngs::SmallRng;
use rand::Rng;
use shamap::{Key, MapKind, ShaMap};

use crate::common::{oracle_root, random_data, random_key, rng, same_items};

/// Data of every length class: empty, short, pooled, over 1 KiB (own
/// allocation) and over 65534 bytes (length stored in the chunk).
fn mixed_data(r: &mut SmallRng) -> Vec<u8> {
    match r.gen_range(0..100) {
        0 => vec![r.gen(); 70_000],
        1..=3 => vec![r.gen(); r.gen_range(1025..3000)],
        _ => random_data(r, 200),
    }
}

fn churned(n: usize, seed: u64) -> (ShaMap, BTreeMap<Key, Vec<u8>>, SmallRng) {
    let mut r = rng("repack", seed);
    let mut m = ShaMap::new(MapKind::AccountState);
    let mut model = BTreeMap::new();
    for _ in 0..n {
        let k = random_key(&mut r);
        let d = mixed_data(&mut r);
        m.insert(k, &d).expect("distinct");
        model.insert(k, d);
    }
    m.root_hash();
    // Remove about a third, change the data of another third (some to a
    // different size class), and leave the last writes unhashed.
    let keys: Vec<Key> = model.keys().copied().collect();
    for k in keys {
        match r.gen_range(0..3) {
            0 => {
                m.remove(&k).expect("present");
                model.remove(&k);
            }
            1 => {
                let d = mixed_data(&mut r);
                m.update(k, &d).expect("present");
                model.insert(k, d);
            }
            _ => {}
        }
    }
    (m, model, r)
}

fn same(m: &ShaMap, model: &BTreeMap<Key, Vec<u8>>) -> bool {
    same_items(m.len(), m.iter(), model)
}

/// `adds` random upserts, then the removal of every `step`-th key of the
/// model, on `m` and `model` alike.
fn more_writes(
    m: &mut ShaMap,
    model: &mut BTreeMap<Key, Vec<u8>>,
    r: &mut SmallRng,
    adds: usize,
    step: usize,
) {
    for _ in 0..adds {
        let k = random_key(r);
        let d = mixed_data(r);
        m.upsert(k, &d).expect("upsert");
        model.insert(k, d);
    }
    let gone: Vec<Key> = model.keys().copied().step_by(step).collect();
    for k in &gone {
        m.remove(k).expect("present");
        model.remove(k);
    }
}

#[test]
fn repack_keeps_contents_hashes_and_stale_marks() {
    let seed = 301;
    let (mut m, mut model, mut r) = churned(6_000, seed);
    assert!(
        m.cached_root_hash().is_none(),
        "writes pending before repack"
    );
    m.repack();
    m.check().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    assert!(same(&m, &model), "seed {seed}: contents");
    assert!(
        m.cached_root_hash().is_none(),
        "seed {seed}: stale marks copied"
    );
    assert_eq!(m.root_hash(), oracle_root(MapKind::AccountState, &model));
    // Hashed now: repacking again copies the hashes, computing none.
    let root = m.root_hash();
    m.repack();
    assert_eq!(
        m.cached_root_hash(),
        Some(root),
        "seed {seed}: hashes copied"
    );
    m.check().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    // The repacked map goes on taking writes.
    more_writes(&mut m, &mut model, &mut r, 2_000, 3);
    assert_eq!(
        m.root_hash(),
        oracle_root(MapKind::AccountState, &model),
        "seed {seed}"
    );
    m.check().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    assert!(same(&m, &model), "seed {seed}: contents after more writes");
}

#[test]
fn repack_gives_back_what_removals_left() {
    let seed = 302;
    let (mut m, model, _) = churned(30_000, seed);
    // Remove most of what is left: pools keep blocks with a few live chunks.
    let keys: Vec<Key> = model.keys().copied().collect();
    let mut kept = BTreeMap::new();
    for (i, k) in keys.iter().enumerate() {
        if i % 10 == 0 {
            kept.insert(*k, model[k].clone());
        } else {
            m.remove(k).expect("present");
        }
    }
    let before = m.mem_stats();
    m.repack();
    let after = m.mem_stats();
    let fresh = ShaMap::from_sorted(MapKind::AccountState, kept.clone()).expect("sorted");
    let fresh_stats = fresh.mem_stats();
    assert!(
        after.bytes.total * 2 < before.bytes.total,
        "seed {seed}: {} bytes before, {} after",
        before.bytes.total,
        after.bytes.total
    );
    // Pool bytes equal a bulk build's exactly. Leaves over 1 KiB have
    // allocations of their own, whose padding `malloc` decides, and the
    // bookkeeping vectors' capacities depend on the order sizes came in:
    // those may differ a little.
    let pools = |s: &shamap::MemStats| {
        let b = &s.bytes;
        let pooled = (b.inner_hashes, b.child_slots_used, b.child_slots_unused);
        let leaves = (b.leaf_hashes, b.leaf_keys, b.leaf_data);
        (pooled, leaves, b.pool_slack, b.pool_untouched)
    };
    assert_eq!(
        pools(&after),
        pools(&fresh_stats),
        "seed {seed}: repacked map takes what a bulk build takes"
    );
    assert!(
        after.bytes.total.abs_diff(fresh_stats.bytes.total) < 4096,
        "seed {seed}: {:?} vs {:?}",
        after.bytes,
        fresh_stats.bytes
    );
    assert_eq!(
        after.inner_classes, fresh_stats.inner_classes,
        "seed {seed}"
    );
    // A clone is the same key-order copy.
    let c = m.clone();
    assert_eq!(pools(&c.mem_stats()), pools(&after), "seed {seed}");
    assert!(same(&c, &kept) && same(&m, &kept), "seed {seed}");
    c.check().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
}

#[test]
fn repack_leaves_snapshots_and_sessions_alone() {
    let seed = 303;
    let (mut m, model, mut r) = churned(5_000, seed);
    let snap = m.snapshot();
    let snap_root = snap.root_hash();
    // A session opened before repacking is undone after it.
    m.begin_session();
    let mut changed = model.clone();
    more_writes(&mut m, &mut changed, &mut r, 500, 4);
    m.repack();
    m.check().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    assert!(same(&m, &changed), "seed {seed}: session writes kept");
    // The snapshot still reads its own version from the old arena.
    assert_eq!(snap.root_hash(), snap_root);
    assert!(
        same_items(snap.len(), snap.iter(), &model),
        "seed {seed}: snapshot contents"
    );
    m.undo().expect("a session is open");
    assert!(same(&m, &model), "seed {seed}: undo after repack");
    assert_eq!(m.root_hash(), snap_root, "seed {seed}");
    // Each of map and snapshot now owns its arena alone; either may go first.
    let from_snap = snap.to_map();
    drop(snap);
    m.check().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    assert_eq!(m.root_hash(), from_snap.clone().root_hash(), "seed {seed}");
    drop(m);
    assert!(same(&from_snap, &model), "seed {seed}");
    from_snap
        .check()
        .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
}

#[test]
fn repack_of_empty_and_tiny_maps() {
    let mut m = ShaMap::new(MapKind::TransactionNoMeta);
    m.repack();
    assert_eq!(m.len(), 0);
    assert_eq!(m.root_hash(), shamap::Hash256::ZERO);
    m.check().expect("empty map");
    let k = Key([7; 32]);
    m.insert(k, b"one").expect("new");
    m.repack();
    assert_eq!(m.get(&k), Some(&b"one"[..]));
    let mut model = BTreeMap::new();
    model.insert(k, b"one".to_vec());
    assert_eq!(
        m.root_hash(),
        oracle_root(MapKind::TransactionNoMeta, &model)
    );
    m.check().expect("one item");
}

/// `compact`, the repack's old name, still repacks; `MapOptions::compact`,
/// the hashless-leaf mode's old name, still gives that mode.
#[test]
#[allow(deprecated)]
fn the_old_names_still_work() {
    let mut r = rng("repack_old_names", 9);
    let mut m = ShaMap::new(MapKind::AccountState);
    for _ in 0..200 {
        m.insert(random_key(&mut r), &random_data(&mut r, 100))
            .expect("distinct");
    }
    let root = m.root_hash();
    m.compact();
    assert_eq!(m.root_hash(), root);
    m.check().expect("consistent");
    assert_eq!(
        shamap::MapOptions::default().compact(),
        shamap::MapOptions::default().hashless_leaves()
    );
}
