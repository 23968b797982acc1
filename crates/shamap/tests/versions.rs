//! Snapshots and undo sessions, checked against models and the allocator's
//! counters.

use std::collections::BTreeMap;

use rand::Rng;
use shamap::{Key, MapError, MapKind, ShaMap, Snapshot};

use crate::common::{
    check_against, key_near, oracle_root, random_data, random_key, rng, same_items,
};

fn filled(n: usize, seed: u64) -> (ShaMap, BTreeMap<Key, Vec<u8>>) {
    let mut r = rng("versions-fill", seed);
    let mut m = ShaMap::new(MapKind::AccountState);
    let mut model = BTreeMap::new();
    for _ in 0..n {
        let k = random_key(&mut r);
        let d = random_data(&mut r, 80);
        m.insert(k, &d).expect("distinct");
        model.insert(k, d);
    }
    (m, model)
}

fn same_contents(s: &Snapshot, model: &BTreeMap<Key, Vec<u8>>) -> bool {
    same_items(s.len(), s.iter(), model)
}

#[test]
fn a_snapshot_costs_bytes_not_megabytes_and_writes_copy_only_their_path() {
    let (mut m, model) = filled(100_000, 41);
    let root = m.root_hash();
    let before = m.mem_stats();
    let snap = m.snapshot();
    let after = m.mem_stats();
    assert_eq!(snap.root_hash(), root);
    assert_eq!(
        after.inner_nodes, before.inner_nodes,
        "no node copied by a snapshot"
    );
    assert!(
        after.bytes.total - before.bytes.total < 1024,
        "snapshot cost {} bytes",
        after.bytes.total - before.bytes.total
    );
    // k updates copy about k paths.
    let keys: Vec<Key> = model.keys().copied().step_by(1000).collect();
    for k in &keys {
        m.update(*k, b"changed").expect("present");
    }
    let grown = m.mem_stats();
    let depth = m.shape_stats().mean_leaf_depth();
    let extra = (grown.inner_nodes - after.inner_nodes) + (grown.leaf_nodes - after.leaf_nodes);
    let per_update = extra as f64 / keys.len() as f64;
    assert!(
        per_update <= depth + 1.5 && per_update >= depth - 1.0,
        "{per_update:.2} nodes copied per update at mean depth {depth:.2}"
    );
    // The snapshot still sees the old version.
    assert!(same_contents(&snap, &model));
    assert_eq!(snap.root_hash(), root);
    assert_ne!(m.root_hash(), root);
    m.check().expect("map consistent beside a snapshot");
}

#[test]
fn shared_nodes_are_freed_exactly_when_the_last_holder_lets_go() {
    let (mut m, model) = filled(20_000, 42);
    let snap = m.snapshot();
    for (i, k) in model.keys().enumerate() {
        match i % 4 {
            0 => m.update(*k, b"new data").expect("present"),
            1 => m.remove(k).expect("present"),
            _ => {}
        }
    }
    for _ in 0..2000 {
        let k = Key(rand::random());
        m.insert(k, b"fresh").expect("new");
    }
    m.root_hash();
    let shape = snap.shape_stats();
    drop(m);
    // Only the snapshot's own nodes are left, each exactly once.
    let s = snap.mem_stats();
    assert_eq!(s.inner_nodes as u64, shape.inner_nodes());
    assert_eq!(s.leaf_nodes as u64, shape.leaves());
    assert_eq!(s.shared_nodes, 0, "nothing is shared once the map is gone");
    assert!(same_contents(&snap, &model));
    // A map made from the snapshot shares everything until it writes.
    let mut again = snap.to_map();
    assert_eq!(again.root_hash(), snap.root_hash());
    assert_eq!(again.mem_stats().inner_nodes as u64, shape.inner_nodes());
    again.insert(Key([7; 32]), b"one more").expect("new");
    drop(snap);
    again
        .check()
        .expect("sole owner again: counters match the walk");
    let s = again.mem_stats();
    assert_eq!(s.leaf_nodes, model.len() + 1);
    assert_eq!(s.shared_nodes, 0);
}

#[test]
fn snapshots_are_readable_from_other_threads_while_the_writer_goes_on() {
    let (mut m, model) = filled(20_000, 43);
    let snap = m.snapshot();
    let want = snap.root_hash();
    std::thread::scope(|scope| {
        let readers: Vec<_> = (0..2)
            .map(|t| {
                let s = snap.clone();
                let model = &model;
                scope.spawn(move || {
                    for (i, (k, v)) in model.iter().enumerate() {
                        if i % 3 == t {
                            assert_eq!(s.get(k), Some(&v[..]));
                        }
                    }
                    assert!(same_contents(&s, model));
                    s.root_hash()
                })
            })
            .collect();
        let mut r = rng("writer", 44);
        for _ in 0..5000 {
            let k = random_key(&mut r);
            m.insert(k, b"writer").expect("new");
        }
        m.root_hash();
        for h in readers {
            assert_eq!(h.join().expect("reader thread"), want);
        }
    });
    let moved = std::thread::spawn(move || snap.len())
        .join()
        .expect("snapshot moves to a thread");
    assert_eq!(moved, model.len());
    m.check().expect("consistent");
}

/// Random operations with nested sessions against a stack of models.
#[test]
fn undo_sessions_interleaved_with_snapshots_match_a_model() {
    let mut r = rng("sessions", 45);
    let (mut m, base) = filled(2000, 46);
    let mut model = base.clone();
    let mut stack: Vec<BTreeMap<Key, Vec<u8>>> = Vec::new();
    let mut snaps: Vec<(Snapshot, BTreeMap<Key, Vec<u8>>)> = Vec::new();
    for step in 0..4000 {
        if r.gen_ratio(1, 500) {
            // Rare, since the map refills slowly afterwards.
            m.clear();
            model.clear();
            continue;
        }
        match r.gen_range(0..100) {
            0..=4 => {
                assert_eq!(m.begin_session(), stack.len() + 1);
                stack.push(model.clone());
            }
            5..=7 => match stack.pop() {
                Some(prev) => {
                    m.undo().expect("open session");
                    model = prev;
                }
                None => assert_eq!(m.undo(), Err(MapError::NoSession)),
            },
            8..=9 => match stack.pop() {
                Some(_) => m.squash().expect("open session"),
                None => assert_eq!(m.squash(), Err(MapError::NoSession)),
            },
            10 => {
                m.commit();
                stack.clear();
            }
            11..=12 => {
                let s = m.snapshot();
                snaps.push((s, model.clone()));
                if snaps.len() > 4 {
                    snaps.remove(r.gen_range(0..snaps.len()));
                }
            }
            13..=55 => {
                let base = *model
                    .keys()
                    .nth(r.gen_range(0..model.len().max(1)))
                    .unwrap_or(&Key([1; 32]));
                let k = if r.gen_bool(0.5) {
                    key_near(&mut r, &base)
                } else {
                    random_key(&mut r)
                };
                let d = random_data(&mut r, 60);
                m.upsert(k, &d).expect("upsert");
                model.insert(k, d);
            }
            56..=75 => {
                if let Some(k) = model
                    .keys()
                    .nth(r.gen_range(0..model.len().max(1)))
                    .copied()
                {
                    m.remove(&k).expect("present");
                    model.remove(&k);
                }
            }
            _ => {
                if let Some(k) = model
                    .keys()
                    .nth(r.gen_range(0..model.len().max(1)))
                    .copied()
                {
                    let d = random_data(&mut r, 60);
                    m.update(k, &d).expect("present");
                    model.insert(k, d);
                }
            }
        }
        if step % 250 == 0 {
            check_against(
                &mut m,
                &model,
                MapKind::AccountState,
                &format!("step {step}"),
            );
            for (s, sm) in &snaps {
                assert!(same_contents(s, sm), "snapshot changed by step {step}");
                assert_eq!(s.root_hash(), oracle_root(MapKind::AccountState, sm));
            }
        }
    }
    while let Some(prev) = stack.pop() {
        m.undo().expect("open session");
        model = prev;
        assert_eq!(m.root_hash(), oracle_root(MapKind::AccountState, &model));
    }
    drop(snaps);
    m.check().expect("sole owner at the end: counters match");
}

#[test]
fn undo_restores_the_exact_root_and_commit_frees_the_records() {
    let (mut m, _) = filled(5000, 47);
    let root = m.root_hash();
    let nodes = m.mem_stats().inner_nodes + m.mem_stats().leaf_nodes;
    m.begin_session();
    let mut r = rng("undo", 48);
    for _ in 0..500 {
        m.insert(random_key(&mut r), b"inside a session")
            .expect("new");
    }
    let inside = m.root_hash();
    assert_ne!(inside, root);
    m.undo().expect("open");
    assert_eq!(m.root_hash(), root);
    assert_eq!(
        m.mem_stats().inner_nodes + m.mem_stats().leaf_nodes,
        nodes,
        "undo frees the session's copies"
    );
    m.check().expect("consistent");
    // Nested: squash the inner session into the outer, then undo the outer.
    m.begin_session();
    m.insert(Key([1; 32]), b"outer").expect("new");
    m.begin_session();
    m.insert(Key([2; 32]), b"inner").expect("new");
    m.squash().expect("open");
    assert_eq!(m.session_depth(), 1);
    m.undo().expect("open");
    assert_eq!(m.root_hash(), root);
    // Commit keeps the changes and frees the undo records.
    m.begin_session();
    m.insert(Key([3; 32]), b"kept").expect("new");
    m.commit();
    assert_eq!(m.session_depth(), 0);
    assert_eq!(m.get(&Key([3; 32])), Some(&b"kept"[..]));
    assert_eq!(m.mem_stats().shared_nodes, 0);
    m.check().expect("sole owner after commit");
}

#[test]
fn every_stored_node_hashes_to_its_key() {
    let (mut m, model) = filled(3000, 49);
    let snap = m.snapshot();
    let mut count = (0, 0);
    snap.for_each_node(|n| {
        assert_eq!(shamap::xrpl::sha512_half(&[&n.prefix_bytes]), n.hash);
        if n.is_leaf {
            count.1 += 1;
        } else {
            count.0 += 1;
        }
    });
    assert_eq!(count.1, model.len());
    assert_eq!(count.0 as u64, snap.shape_stats().inner_nodes());
}

/// The last owner of an arena (map or snapshot) disposes of the tree
/// wholesale; the others release their nodes one by one. Every order of
/// dropping a map, its snapshot and a map made from the snapshot must free
/// every leaf with its own allocation (over 1 KiB of data): debug builds
/// assert the arena's large-leaf count is zero when it goes, and the
/// AddressSanitizer run of this suite reports any allocation left behind.
#[test]
fn every_drop_order_frees_large_leaves() {
    let orders: [[usize; 3]; 6] = [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ];
    for (i, order) in orders.iter().enumerate() {
        let mut r = rng("versions-drop", 90 + i as u64);
        let mut m = ShaMap::new(MapKind::AccountState);
        let mut model = BTreeMap::new();
        for j in 0..300 {
            let k = random_key(&mut r);
            let len = if j % 3 == 0 {
                r.gen_range(1100..6000)
            } else {
                r.gen_range(1..100)
            };
            let d: Vec<u8> = (0..len).map(|_| r.gen()).collect();
            m.insert(k, &d).expect("distinct");
            model.insert(k, d);
        }
        assert!(
            m.mem_stats().large_leaves >= 90,
            "the map holds large leaves"
        );
        m.root_hash();
        let snap = m.snapshot();
        // Writes after the snapshot: some large leaves replaced, removed or
        // added, so the map and the snapshot share some leaves and own others.
        let keys: Vec<Key> = model.keys().copied().collect();
        for k in keys.iter().step_by(7) {
            m.upsert(*k, &[7u8; 3000]).expect("upsert");
        }
        for k in keys.iter().skip(3).step_by(11) {
            m.remove(k).expect("present");
        }
        m.insert(key_near(&mut r, &keys[0]), &[9u8; 2500])
            .expect("new key");
        let mut copy = snap.to_map();
        copy.upsert(keys[1], &[5u8; 4000]).expect("upsert");
        assert!(same_contents(&snap, &model));
        let (mut m, mut snap, mut copy) = (Some(m), Some(snap), Some(copy));
        for &which in order {
            match which {
                0 => drop(m.take()),
                1 => drop(snap.take()),
                _ => drop(copy.take()),
            }
        }
    }
}

/// `clear` inside undo sessions: undoing the session brings every item
/// back (it used to leave them gone, and undoing a session with writes
/// before the clear panicked on a key that was no longer there).
#[test]
fn clear_in_a_session_is_undone() {
    let mut r = rng("versions-clear-undo", 193);
    let (mut m, model) = filled(2_000, 93);
    let big = fresh_key(&mut r, &model);
    m.insert(big, &[3u8; 5000]).expect("new key");
    let mut model = model;
    model.insert(big, vec![3u8; 5000]);
    let root = m.root_hash();
    m.begin_session();
    let k1 = fresh_key(&mut r, &model);
    m.insert(k1, b"before the clear").expect("new key");
    let mut inner_model = model.clone();
    inner_model.insert(k1, b"before the clear".to_vec());
    let inner_root = m.root_hash();
    m.begin_session();
    m.remove(&big).expect("present");
    m.clear();
    assert_eq!(m.len(), 0);
    assert_eq!(
        m.root_hash(),
        oracle_root(MapKind::AccountState, &BTreeMap::new())
    );
    m.check().expect("consistent after clear");
    m.insert(fresh_key(&mut r, &model), b"after the clear")
        .expect("new key");
    m.undo().expect("inner session");
    assert_eq!(m.root_hash(), inner_root);
    assert!(same_items(m.len(), m.iter(), &inner_model));
    m.check().expect("consistent after undo");
    m.clear();
    m.undo().expect("outer session");
    assert_eq!(m.root_hash(), root);
    assert!(same_items(m.len(), m.iter(), &model));
    m.check().expect("consistent after undo");
}

/// `clear` beside a snapshot releases only the map's own nodes (the
/// snapshot keeps its contents); alone, it frees the arena wholesale and
/// the map stays usable.
#[test]
fn clear_shared_and_alone() {
    let (mut m, model) = filled(3_000, 94);
    let mut r = rng("versions-clear-shared", 194);
    let mut model = model;
    for _ in 0..50 {
        let k = fresh_key(&mut r, &model);
        m.insert(k, &[1u8; 2000]).expect("new key");
        model.insert(k, vec![1u8; 2000]);
    }
    let snap = m.snapshot();
    m.clear();
    assert_eq!(m.len(), 0);
    m.check().expect("consistent after a shared clear");
    assert_eq!(snap.len(), 3_050);
    assert!(model.iter().all(|(k, v)| snap.get(k) == Some(&v[..])));
    let mut copy = snap.to_map();
    drop(snap);
    copy.clear();
    copy.check()
        .expect("consistent after a clear beside another map");
    drop(m);
    copy.clear();
    let stats = copy.mem_stats();
    assert_eq!(
        (stats.leaf_nodes, stats.large_leaves, stats.inner_nodes),
        (0, 0, 1)
    );
    for (k, v) in model.iter().take(100) {
        copy.insert(*k, v).expect("new key");
    }
    assert_eq!(copy.len(), 100);
    copy.check().expect("consistent after reuse");
}

/// A random key not in `model` (the tests' generators may share a seed).
fn fresh_key(r: &mut rand::rngs::SmallRng, model: &BTreeMap<Key, Vec<u8>>) -> Key {
    loop {
        let k = random_key(r);
        if !model.contains_key(&k) {
            return k;
        }
    }
}

/// A map made from a snapshot keeps every option of the map the snapshot
/// came from (`parallel_hashing` used to fall back to its default).
#[test]
fn to_map_keeps_the_options() {
    for parallel in [false, true] {
        let opts = shamap::MapOptions::default()
            .with_parallel_hashing(parallel)
            .with_hash(shamap::HashFunction::Blake3)
            .with_huge_pages(false);
        let mut m = ShaMap::with_options(MapKind::AccountState, opts);
        m.insert(Key([1; 32]), b"0123456789ab").expect("new key");
        let snap = m.snapshot();
        assert_eq!(snap.to_map().options(), opts);
        assert_eq!(snap.clone().to_map().options(), opts);
        assert_eq!(m.clone().options(), opts);
    }
}
