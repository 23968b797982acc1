//! The backed map against two oracles: an in-memory `ShaMap` fed the same
//! operations (root hashes) and a `BTreeMap` (contents), with budgets small
//! enough that every walk evicts, loads and spills.

use std::collections::BTreeMap;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shamap::{Hash256, Key, MapKind, ShaMap};
use shamap_store::{
    import_ledger, meta, verify_all, BackedMap, BackedOptions, MemStore, NodeStore,
};

use crate::support::{import_random, random_map, seed, with_budget};

pub(crate) use crate::backed_common::contents;

/// A key near an existing one (sharing `share` nibbles), or a fresh one.
fn pick_key(rng: &mut SmallRng, model: &BTreeMap<Key, Vec<u8>>) -> Key {
    let mut k = Key(rng.gen());
    if !model.is_empty() && rng.gen_ratio(1, 3) {
        let i = rng.gen_range(0..model.len());
        let near = *model.keys().nth(i).expect("in range");
        if rng.gen_ratio(1, 2) {
            return near;
        }
        let share = rng.gen_range(1..32);
        k.0[..share].copy_from_slice(&near.0[..share]);
    }
    k
}

fn run_against_oracles(kind: MapKind, budget: usize, s: u64) {
    random_ops_against_oracles(&MemStore::new(), kind, budget, s);
}

/// Seeded random upserts and removes on a backed map over `store` (after
/// importing a 3000-entry map), checked against an in-memory `ShaMap`
/// (roots) and a `BTreeMap` (contents), committing every third block as
/// `head` and reopening each commit from the store. Returns the backed
/// map's stats, the last committed root and the final contents.
pub(crate) fn random_ops_against_oracles(
    store: &dyn NodeStore,
    kind: MapKind,
    budget: usize,
    s: u64,
) -> (shamap_store::BackedStats, Hash256, BTreeMap<Key, Vec<u8>>) {
    let (mut mem, mut model) = random_map(kind, 3000, s);
    let snap = mem.snapshot();
    import_ledger(store, "base", Some(&snap), None, None, &mut |_| {}).expect("import");
    let opts = with_budget(budget);
    let mut backed = BackedMap::open(store, snap.root_hash(), kind, opts).expect("open");
    let mut rng = SmallRng::seed_from_u64(s ^ 0xBAC);
    for block in 0..12 {
        for _ in 0..250 {
            let k = pick_key(&mut rng, &model);
            if rng.gen_ratio(2, 5) {
                let was = model.remove(&k).is_some();
                assert_eq!(backed.remove(&k).expect("remove"), was, "seed {s}");
                if was {
                    mem.remove(&k).expect("present");
                }
            } else {
                let len = rng.gen_range(1..80);
                let d: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                let k = if kind == MapKind::TransactionNoMeta {
                    Key::from(shamap::xrpl::transaction_id(&d))
                } else {
                    k
                };
                let added = model.insert(k, d.clone()).is_none();
                assert_eq!(backed.upsert(k, &d).expect("upsert"), added, "seed {s}");
                mem.upsert(k, &d).expect("upsert");
            }
        }
        assert_eq!(
            backed.root_hash(),
            mem.root_hash(),
            "seed {s} block {block}: backed root differs from the in-memory map"
        );
        for _ in 0..50 {
            let k = pick_key(&mut rng, &model);
            assert_eq!(
                backed.get(&k).expect("get"),
                model.get(&k).cloned(),
                "seed {s}"
            );
        }
        let st = backed.stats();
        assert!(st.cache_peak_bytes <= budget, "seed {s}: {st:?}");
        if block % 3 == 2 {
            let root = backed.commit("head").expect("commit");
            assert_eq!(root, mem.root_hash(), "seed {s}");
            assert!(!backed.is_dirty());
            // Reopen from the store alone: same contents.
            let again = BackedMap::open(store, root, kind, opts).expect("reopen");
            assert_eq!(contents(&again), model, "seed {s} block {block}");
            let rec = meta::retained(store).expect("meta");
            assert_eq!(
                rec.last().map(|r| (r.name.as_str(), r.hash)),
                Some(("head", root))
            );
            if !root.is_zero() {
                let r = verify_all(store, &root).expect("every committed node verifies");
                assert_eq!(r.leaves as usize, model.len(), "seed {s}");
            }
        }
    }
    assert_eq!(contents(&backed), model, "seed {s}");
    assert_eq!(backed.committed_root(), mem.root_hash(), "seed {s}");
    (backed.stats(), backed.committed_root(), model)
}

#[test]
fn random_operations_match_the_in_memory_map_and_a_btreemap() {
    let s = seed(71);
    // 48 KiB: a few hundred nodes; every block evicts and spills.
    run_against_oracles(MapKind::AccountState, 48 << 10, s);
    run_against_oracles(MapKind::TransactionWithMeta, 1 << 20, s + 1);
    run_against_oracles(MapKind::TransactionNoMeta, 96 << 10, s + 2);
}

#[test]
fn spills_and_evictions_keep_memory_within_budget() {
    let s = seed(72);
    let store = MemStore::new();
    let budget = 64 << 10;
    let mut backed = BackedMap::new(&store, MapKind::AccountState, with_budget(budget));
    let mut mem = ShaMap::new(MapKind::AccountState);
    let mut rng = SmallRng::seed_from_u64(s);
    for i in 0..20_000u32 {
        let k = Key(rng.gen());
        backed.upsert(k, &i.to_be_bytes()).expect("upsert");
        mem.upsert(k, &i.to_be_bytes()).expect("upsert");
    }
    let st = backed.stats();
    assert!(st.spills > 10, "seed {s}: {st:?}");
    assert!(st.cache_peak_bytes <= budget, "seed {s}: {st:?}");
    // A spill happens at the first write past a quarter of the budget; one
    // write adds at most a path of nodes.
    assert!(
        st.dirty_peak_bytes <= budget / 4 + 64 * 1024 / 16,
        "seed {s}: {st:?}"
    );
    let root = backed.commit("head").expect("commit");
    assert_eq!(root, mem.root_hash(), "seed {s}");
    // Nothing of it was retained before the commit, but every node is there.
    let r = verify_all(&store, &root).expect("verifies");
    assert_eq!(r.leaves, 20_000);
}

#[test]
fn removing_everything_gives_the_empty_root() {
    let s = seed(73);
    let store = MemStore::new();
    let (snap, model) = import_random(&store, "base", 500, s);
    let mut snap_map = snap.to_map();
    let mut backed = BackedMap::open(
        &store,
        snap.root_hash(),
        MapKind::AccountState,
        BackedOptions::default(),
    )
    .expect("open");
    for k in model.keys() {
        assert!(backed.remove(k).expect("remove"), "seed {s}");
        snap_map.remove(k).expect("remove");
        if k.0[0] % 16 == 0 {
            assert_eq!(backed.root_hash(), snap_map.root_hash(), "seed {s}");
        }
    }
    assert_eq!(backed.root_hash(), Hash256::ZERO);
    assert_eq!(backed.commit("head").expect("commit"), Hash256::ZERO);
    let again = BackedMap::open(
        &store,
        Hash256::ZERO,
        MapKind::AccountState,
        BackedOptions::default(),
    )
    .expect("open empty");
    assert!(contents(&again).is_empty());
}

/// `n` random entries of an account-state map (seed `s`) imported into a
/// fresh store: the map, its model, the store and the root.
fn imported_random_map(n: usize, s: u64) -> (ShaMap, BTreeMap<Key, Vec<u8>>, MemStore, Hash256) {
    let store = MemStore::new();
    let (snap, model) = import_random(&store, "base", n, s);
    (snap.to_map(), model, store, snap.root_hash())
}

#[test]
fn prefetch_loads_the_paths_so_the_block_that_follows_loads_nothing() {
    let s = seed(91);
    let (mut shadow, model, store, root) = imported_random_map(4000, s);
    let opts = with_budget(8 << 20);
    let mut map = BackedMap::open(&store, root, MapKind::AccountState, opts).expect("open");
    let mut rng = SmallRng::seed_from_u64(s);
    let keys: Vec<Key> = model
        .keys()
        .copied()
        .filter(|_| rng.gen_ratio(1, 4))
        .collect();
    let mut fresh: Vec<Key> = (0..200).map(|_| Key(rng.gen())).collect();
    fresh.extend_from_slice(&keys);
    map.prefetch(&fresh, 2).expect("prefetch");
    let loads = map.stats().loads;
    assert!(
        loads > keys.len() as u64,
        "seed {s}: prefetch loaded {loads} nodes"
    );
    for k in &keys {
        assert_eq!(map.get(k).expect("get").as_ref(), model.get(k), "seed {s}");
        map.upsert(*k, b"changed").expect("upsert");
        shadow.update(*k, b"changed").expect("update");
    }
    assert_eq!(
        map.stats().loads,
        loads,
        "seed {s}: the block loaded nothing more"
    );
    commits_the_shadows_root(&mut map, &mut shadow, s);
}

/// `map` commits to the root the in-memory `shadow` has.
fn commits_the_shadows_root(map: &mut BackedMap<'_>, shadow: &mut ShaMap, s: u64) {
    let root = map.commit("head").expect("commit");
    assert_eq!(root, shadow.root_hash(), "seed {s}");
}

/// A lookup's leaf enters the cache on its second use only (a leaf is on
/// one key's path; inner nodes are shared): read once, it costs no cache
/// entry; read, then written or read again soon (from probation), it is
/// loaded once; read again after many other leaves, the doorkeeper admits
/// it on its second load. Every answer stays the oracle's.
#[test]
fn a_lookups_leaf_is_cached_from_its_second_use_and_loaded_once_for_read_modify_write() {
    let s = seed(92);
    let (mut shadow, model, store, root) = imported_random_map(3000, s);
    let opts = with_budget(8 << 20);
    let keys: Vec<Key> = model.keys().copied().collect();
    let get = |map: &BackedMap<'_>, k: &Key| {
        assert_eq!(map.get(k).expect("get").as_ref(), model.get(k), "seed {s}");
    };
    // 1. A cold map: its leaves were never read.
    let cold = BackedMap::open(&store, root, MapKind::AccountState, opts).expect("open");
    let k = keys[keys.len() / 2];
    get(&cold, &k);
    let after_one = cold.stats();
    // The path's inner nodes are cached; the leaf is not.
    get(&cold, &k);
    let after_two = cold.stats();
    assert_eq!(
        after_two.loads, after_one.loads,
        "seed {s}: a second read soon after takes the leaf from probation"
    );
    assert_eq!(
        after_two.cache_entries,
        after_one.cache_entries + 1,
        "seed {s}: and admits it"
    );
    get(&cold, &k);
    assert_eq!(
        cold.stats().loads,
        after_one.loads,
        "seed {s}: then it is a hit"
    );
    // Leaves read once do not grow the cache: 500 other keys, read once,
    // add their paths' inner nodes but no leaf entries.
    let others: Vec<Key> = keys.iter().copied().filter(|o| *o != k).take(500).collect();
    let before = cold.stats();
    for o in &others {
        get(&cold, o);
    }
    let mid = cold.stats();
    let leaf_loads = mid.loads - before.loads;
    assert!(
        leaf_loads >= others.len() as u64,
        "seed {s}: each leaf loaded ({leaf_loads} loads)"
    );
    assert!(
        mid.cache_entries - before.cache_entries < leaf_loads as usize - others.len() + 1,
        "seed {s}: {} new entries for {leaf_loads} loads of which {} leaves",
        mid.cache_entries - before.cache_entries,
        others.len()
    );
    // Read again: the last few are still on probation (64 leaves); the
    // rest are loaded a second time, and the doorkeeper admits them (but
    // for a few whose slot another leaf took, which go on probation). A
    // third read is all hits.
    for o in &others {
        get(&cold, o);
    }
    let second = cold.stats();
    let again = second.loads - mid.loads;
    assert!(
        again <= others.len() as u64 && again >= others.len() as u64 - 64,
        "seed {s}: {again} loads: at most one each (its leaf), none for the last 64"
    );
    for o in &others {
        get(&cold, o);
    }
    assert_eq!(cold.stats().loads, second.loads, "seed {s}: then hits");
    drop(cold);
    // 2. Read, modify, write on a cold map: the read loads the path, the
    // write nothing.
    let mut rmw = BackedMap::open(&store, root, MapKind::AccountState, opts).expect("open");
    let mut rng = SmallRng::seed_from_u64(s ^ 1);
    let picked: Vec<Key> = (0..100)
        .map(|_| keys[rng.gen_range(0..keys.len())])
        .collect();
    for k in &picked {
        let mut data = rmw.get(k).expect("get").expect("present");
        let read = rmw.stats().loads;
        data.push(1);
        rmw.upsert(*k, &data).expect("upsert");
        shadow.update(*k, &data).expect("update");
        assert_eq!(
            rmw.stats().loads,
            read,
            "seed {s}: the write after the read loaded nothing"
        );
    }
    commits_the_shadows_root(&mut rmw, &mut shadow, s);
}

/// `next_after` / `last_before` agree with a `BTreeMap` on keys present,
/// absent and near others, with dirty, spilled and committed nodes.
#[test]
fn neighbours_match_an_ordered_model() {
    let s = seed(4711);
    let mut rng = SmallRng::seed_from_u64(s);
    let store = MemStore::new();
    let mut map = BackedMap::open(
        &store,
        Hash256::ZERO,
        MapKind::AccountState,
        with_budget(64 << 10),
    )
    .expect("open");
    let mut model: BTreeMap<Key, Vec<u8>> = BTreeMap::new();
    for round in 0..6 {
        for _ in 0..300 {
            let k = pick_key(&mut rng, &model);
            if rng.gen_ratio(1, 4) {
                map.remove(&k).expect("remove");
                model.remove(&k);
            } else {
                let v = vec![round as u8; 12 + rng.gen_range(0..20)];
                map.upsert(k, &v).expect("upsert");
                model.insert(k, v);
            }
        }
        if round % 2 == 1 {
            map.commit("n").expect("commit");
        }
        for _ in 0..200 {
            let probe = pick_key(&mut rng, &model);
            let up = model
                .range((std::ops::Bound::Excluded(probe), std::ops::Bound::Unbounded))
                .next()
                .map(|(k, v)| (*k, v.clone()));
            let down = model
                .range(..probe)
                .next_back()
                .map(|(k, v)| (*k, v.clone()));
            assert_eq!(map.next_after(&probe).expect("next"), up, "seed {s}");
            assert_eq!(map.last_before(&probe).expect("prev"), down, "seed {s}");
        }
    }
    assert_eq!(map.next_after(&Key([0xFF; 32])).expect("next"), None);
    assert_eq!(map.last_before(&Key::ZERO).expect("prev"), None);
}

/// One random block of writes for the differential test: sizes from one
/// write to a few thousand, keys near existing ones (deep splits, collapses),
/// repeated keys within the block (the last write wins), removals of absent
/// keys, and now and then a block that removes most of the map.
fn random_block(rng: &mut SmallRng, model: &BTreeMap<Key, Vec<u8>>) -> Vec<(Key, Option<Vec<u8>>)> {
    if !model.is_empty() && rng.gen_ratio(1, 12) {
        // Remove almost everything: rippled's collapse all the way up.
        let keep = rng.gen_range(0..4);
        return model.keys().skip(keep).map(|k| (*k, None)).collect();
    }
    let len = match rng.gen_range(0..4) {
        0 => rng.gen_range(1..4),
        1 => rng.gen_range(4..64),
        2 => rng.gen_range(64..600),
        _ => rng.gen_range(600..3000),
    };
    let mut block: Vec<(Key, Option<Vec<u8>>)> = Vec::with_capacity(len);
    for _ in 0..len {
        let k = if !block.is_empty() && rng.gen_ratio(1, 20) {
            block[rng.gen_range(0..block.len())].0
        } else {
            pick_key(rng, model)
        };
        if rng.gen_ratio(2, 5) {
            block.push((k, None));
        } else {
            let n = rng.gen_range(1..120);
            block.push((k, Some((0..n).map(|_| rng.gen()).collect())));
        }
    }
    block
}

/// The backed map keeps a tree of its own (`backed/tree.rs`, `commit.rs`)
/// beside the engine's batched `apply` (`tree/apply.rs`): the design notes
/// say why. This runs both on the same random blocks, over a budget small
/// enough that the backed map evicts, reloads and spills within a block, and
/// compares every block's root, its counts, and the contents at the end.
#[test]
fn every_root_matches_the_engines_apply_on_the_same_random_blocks() {
    let s = seed(74);
    for (round, (kind, budget)) in [
        (MapKind::AccountState, 40 << 10),
        (MapKind::AccountState, 8 << 20),
        (MapKind::TransactionWithMeta, 96 << 10),
    ]
    .into_iter()
    .enumerate()
    {
        let s = s + round as u64;
        let mut rng = SmallRng::seed_from_u64(s);
        let store = MemStore::new();
        let (mut engine, mut model) = random_map(kind, rng.gen_range(0..2000), s);
        let snap = engine.snapshot();
        import_ledger(&store, "base", Some(&snap), None, None, &mut |_| {}).expect("import");
        let opts = with_budget(budget);
        let mut backed = BackedMap::open(&store, snap.root_hash(), kind, opts).expect("open");
        drop(snap);
        for block_no in 0..40 {
            let block = random_block(&mut rng, &model);
            let done = engine
                .apply(block.iter().map(|(k, d)| (*k, d.as_deref())))
                .expect("engine apply");
            let (mut added, mut removed) = (0, 0);
            // The backed map takes the block one write at a time, in order;
            // the counts are of the block's net effect, as `apply` gives them.
            let before: BTreeMap<Key, bool> = block
                .iter()
                .map(|(k, _)| (*k, model.contains_key(k)))
                .collect();
            for (k, d) in &block {
                match d {
                    Some(d) => {
                        backed.upsert(*k, d).expect("upsert");
                        model.insert(*k, d.clone());
                    }
                    None => {
                        backed.remove(k).expect("remove");
                        model.remove(k);
                    }
                }
            }
            for (k, was) in &before {
                match (was, model.contains_key(k)) {
                    (false, true) => added += 1,
                    (true, false) => removed += 1,
                    _ => {}
                }
            }
            let ctx = format!(
                "seed {s} kind {kind:?} block {block_no} ({} writes)",
                block.len()
            );
            assert_eq!((done.added, done.removed), (added, removed), "{ctx}");
            assert_eq!(backed.root_hash(), done.root_hash, "{ctx}: roots differ");
            assert_eq!(engine.len(), model.len(), "{ctx}");
            if block_no % 5 == 4 {
                let root = backed.commit("head").expect("commit");
                assert_eq!(root, done.root_hash, "{ctx}: committed root differs");
            }
        }
        assert_eq!(contents(&backed), model, "seed {s}");
        let st = backed.stats();
        assert!(st.cache_peak_bytes <= budget, "seed {s}: {st:?}");
        if budget < 1 << 20 {
            assert!(
                st.spills > 0 && st.loads > 0,
                "seed {s}: the small budget must spill and load: {st:?}"
            );
        }
    }
}

/// `dirty_share` sets how much the dirty nodes may hold before a spill: the
/// same inserts spill about four times as often at 16 as at 4, the largest
/// dirty set stays within its share, and both maps commit the same root.
#[test]
fn dirty_share_sets_the_spill_size() {
    let budget = 1 << 20;
    let run = |share: usize| {
        let store = MemStore::new();
        let opts = BackedOptions {
            budget_bytes: budget,
            dirty_share: share,
            ..BackedOptions::default()
        };
        let mut map = BackedMap::new(&store, MapKind::AccountState, opts);
        let mut rng = SmallRng::seed_from_u64(11);
        for _ in 0..20_000 {
            let mut k = [0u8; 32];
            rng.fill(&mut k[..]);
            map.upsert(Key(k), &[7; 40]).expect("upsert");
        }
        let root = map.commit("m").expect("commit");
        (root, map.stats())
    };
    let (root4, s4) = run(4);
    let (root16, s16) = run(16);
    assert_eq!(root4, root16);
    assert!(
        s16.spills >= 3 * s4.spills && s4.spills > 0,
        "spills: {} at 16, {} at 4",
        s16.spills,
        s4.spills
    );
    assert!(s16.dirty_peak_bytes <= budget / 16 + 4096, "{s16:?}");
}

/// What the fake heap probe reports (bytes).
static FAKE_HEAP: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn fake_heap() -> Option<usize> {
    Some(FAKE_HEAP.load(std::sync::atomic::Ordering::SeqCst))
}

/// With a heap probe, memory the heap holds beyond the map's own
/// accounting (here: reported by a fake probe) is taken from the clean
/// cache at the next write-out, down to the cache's floor of an eighth of
/// the budget, and given back once the probe reports it gone. Every
/// answer stays the oracle's.
#[test]
fn the_cache_gives_way_to_heap_growth_outside_the_map() {
    let s = seed(93);
    let (_, model, store, root) = imported_random_map(20_000, s);
    let budget = 2 << 20;
    let opts = BackedOptions {
        budget_bytes: budget,
        heap_probe: Some(shamap_store::HeapProbe(fake_heap)),
        ..BackedOptions::default()
    };
    FAKE_HEAP.store(10 << 20, std::sync::atomic::Ordering::SeqCst);
    let mut map = BackedMap::open(&store, root, MapKind::AccountState, opts).expect("open");
    let read_all = |map: &mut BackedMap<'_>| {
        for (k, v) in &model {
            assert_eq!(map.get(k).expect("get").as_ref(), Some(v), "seed {s}");
        }
        // A write-out reads the probe (an update that changes nothing
        // leaves no dirty node, so write one and put it back).
        let (k, v) = model.iter().next().expect("entries");
        map.upsert(*k, b"x").expect("upsert");
        map.upsert(*k, v).expect("upsert");
        map.commit("head").expect("commit");
        for (k, v) in &model {
            assert_eq!(map.get(k).expect("get").as_ref(), Some(v), "seed {s}");
        }
        map.stats()
    };
    // Nothing outside the map: the cache fills most of the budget.
    let full = read_all(&mut map);
    assert_eq!(full.heap_outside_bytes, 0, "seed {s}: {full:?}");
    assert!(full.cache_bytes > budget / 2, "seed {s}: {full:?}");
    // The heap holds the map's full budget and 1.5 MiB more that the map
    // does not hold: the cache makes room.
    FAKE_HEAP.store(
        (10 << 20) + budget + (3 << 19),
        std::sync::atomic::Ordering::SeqCst,
    );
    let squeezed = read_all(&mut map);
    assert!(
        squeezed.heap_outside_bytes >= 3 << 19,
        "seed {s}: {squeezed:?}"
    );
    assert!(
        squeezed.cache_bytes <= budget - (3 << 19),
        "seed {s}: the cache holds {} with 1.5 MiB of the 2 MiB budget outside: {squeezed:?}",
        squeezed.cache_bytes
    );
    // Gone again: the cache keeps room for it over the next few probe
    // reads (heap outside the map comes and goes), then grows back.
    FAKE_HEAP.store(10 << 20, std::sync::atomic::Ordering::SeqCst);
    map.probe_heap();
    assert!(
        map.stats().heap_outside_bytes >= 3 << 19,
        "seed {s}: the recent high is forgotten at once: {:?}",
        map.stats()
    );
    for _ in 0..8 {
        map.probe_heap();
    }
    let back = read_all(&mut map);
    assert_eq!(back.heap_outside_bytes, 0, "seed {s}: {back:?}");
    assert!(back.cache_bytes > budget / 2, "seed {s}: {back:?}");
}
