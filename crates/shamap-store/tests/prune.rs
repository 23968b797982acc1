//! A backed map that prunes ([`BackedOptions::prune_replaced`]): after each
//! commit the store holds exactly the nodes the committed root reaches (no
//! more: the replaced ones are gone; no less: the map reopens from the
//! store alone with the oracle's contents), through spills before and after
//! the first commit, changes undone within a block (nodes that come back),
//! and on both the in-memory store and the node log. With another root
//! retained, or another writer, nothing is deleted.

use std::collections::BTreeMap;

use hashbrown::HashSet;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shamap::{Hash256, Key, MapKind, ShaMap};
use shamap_store::map::gc::mark;
use shamap_store::{verify_all, BackedMap, BackedOptions, LogStore, MemStore, NodeStore};

use crate::backed::contents;
use crate::support::{count, import_random, seed, with_budget};

/// Nodes `root` reaches.
fn reachable(store: &dyn NodeStore, root: Hash256) -> usize {
    let mut marked = HashSet::new();
    if !root.is_zero() {
        mark(store, &root, &mut marked).expect("every reachable node is there");
    }
    marked.len()
}

/// Random data of 1..80 bytes.
fn data(rng: &mut SmallRng) -> Vec<u8> {
    let len = rng.gen_range(1..80);
    (0..len).map(|_| rng.gen()).collect()
}

/// Blocks of random changes on a pruning backed map over `store` from an
/// empty map, against a `ShaMap` (roots) and a `BTreeMap` (contents), with
/// changes undone inside a block; after each commit, the store holds
/// exactly what the root reaches. Returns the nodes pruned.
fn prune_against_oracles(store: &dyn NodeStore, budget: usize, s: u64) -> u64 {
    let opts = with_budget(budget).pruning();
    let mut backed = BackedMap::new(store, MapKind::AccountState, opts);
    let mut mem = ShaMap::new(MapKind::AccountState);
    let mut model: BTreeMap<Key, Vec<u8>> = BTreeMap::new();
    let mut rng = SmallRng::seed_from_u64(s);
    // The first block builds 4000 entries (spills before any commit), then
    // smaller blocks, now and then one that spills after a commit, and one
    // too large to list what it replaces (left for gc).
    let mut spilled_and_pruned = 0;
    for block in 0..16 {
        let ops = match block {
            0 => 4000,
            b if b % 5 == 4 => 600,
            15 => 6000,
            _ => rng.gen_range(1..400),
        };
        let before = backed.stats();
        let mut undo: Vec<(Key, Option<Vec<u8>>)> = Vec::new();
        for _ in 0..ops {
            let existing = (!model.is_empty() && rng.gen_ratio(1, 2)).then(|| {
                let i = rng.gen_range(0..model.len());
                *model.keys().nth(i).expect("in range")
            });
            let k = existing.unwrap_or_else(|| Key(rng.gen()));
            if block > 0 && rng.gen_ratio(1, 10) && !undo.is_empty() {
                // Undo an earlier change of this block: a node comes back.
                let (k, old) = undo.swap_remove(rng.gen_range(0..undo.len()));
                match old {
                    Some(d) => {
                        backed.upsert(k, &d).expect("upsert");
                        mem.upsert(k, &d).expect("upsert");
                        model.insert(k, d);
                    }
                    None => {
                        if model.remove(&k).is_some() {
                            assert!(backed.remove(&k).expect("remove"), "seed {s}");
                            mem.remove(&k).expect("present");
                        }
                    }
                }
            } else if existing.is_some() && rng.gen_ratio(1, 3) {
                let old = model.remove(&k);
                assert!(backed.remove(&k).expect("remove"), "seed {s}");
                mem.remove(&k).expect("present");
                undo.push((k, old));
            } else {
                let d = if existing.is_some() && rng.gen_ratio(1, 8) {
                    model[&k].clone() // the same data again
                } else {
                    data(&mut rng)
                };
                let old = model.insert(k, d.clone());
                backed.upsert(k, &d).expect("upsert");
                mem.upsert(k, &d).expect("upsert");
                undo.push((k, old));
            }
        }
        let root = backed.commit("state").expect("commit");
        assert_eq!(root, mem.root_hash(), "seed {s} block {block}");
        let st = backed.stats();
        let reached = reachable(store, root);
        let mut held = count(store) as usize;
        if st.prune_skipped == before.prune_skipped {
            if block > 0 && st.spills > before.spills {
                spilled_and_pruned += 1;
            }
        } else {
            // Left for gc, which finds them (the map's pin is marked too).
            assert!(held > reached, "seed {s} block {block}");
            let r = shamap_store::gc(store, &[root]).expect("gc");
            assert_eq!(r.deleted as usize, held - reached, "seed {s} block {block}");
            held = count(store) as usize;
        }
        assert_eq!(
            held, reached,
            "seed {s} block {block}: the store holds {held} nodes, the root reaches {reached} ({st:?})"
        );
        // The store alone, through a tiny cache: the oracle's contents.
        let again = BackedMap::open(store, root, MapKind::AccountState, with_budget(16 << 10))
            .expect("reopen");
        assert_eq!(contents(&again), model, "seed {s} block {block}");
    }
    let st = backed.stats();
    assert!(
        spilled_and_pruned > 0 && st.prune_skipped > 0,
        "seed {s}: blocks that spilled after a commit and pruned: {spilled_and_pruned}; {st:?}"
    );
    st.nodes_pruned
}

#[test]
fn a_pruning_map_keeps_exactly_its_last_commit_in_memory() {
    let s = seed(131);
    let pruned = prune_against_oracles(&MemStore::new(), 1 << 20, s);
    assert!(pruned > 1000, "seed {s}: {pruned} pruned");
}

#[test]
fn a_pruning_map_keeps_exactly_its_last_commit_on_the_node_log() {
    let s = seed(132);
    let dir = tempfile::tempdir().expect("tempdir");
    let store = LogStore::open(dir.path()).expect("open");
    let pruned = prune_against_oracles(&store, 1 << 20, s);
    assert!(pruned > 1000, "seed {s}: {pruned} pruned");
    let live = store.usage().nodes;
    drop(store);
    // Reopened (its recovery replays the deletes): the same live nodes.
    let store = LogStore::open(dir.path()).expect("reopen");
    assert_eq!(store.usage().nodes, live);
}

#[test]
fn a_pruning_map_deletes_nothing_while_another_root_is_retained() {
    let s = seed(133);
    let store = MemStore::new();
    let (snap, base_model) = import_random(&store, "base", 2000, s);
    let before = count(&store) as usize;
    // A map opened on the same root, changed and committed under its own
    // name: "base" shares its untouched nodes and keeps the replaced ones.
    let opts = BackedOptions::with_budget_mb(1).pruning();
    let mut m =
        BackedMap::open(&store, snap.root_hash(), MapKind::AccountState, opts).expect("open");
    let mut rng = SmallRng::seed_from_u64(s);
    for k in base_model.keys().take(300) {
        m.upsert(*k, &data(&mut rng)).expect("upsert");
    }
    m.commit("mine").expect("commit");
    let st = m.stats();
    assert_eq!(st.nodes_pruned, 0, "seed {s}: {st:?}");
    assert_eq!(st.prune_skipped, 1, "seed {s}: {st:?}");
    assert!(count(&store) as usize > before);
    let r = verify_all(&store, &snap.root_hash()).expect("base is whole");
    assert_eq!(r.leaves as usize, base_model.len());
}

#[test]
fn a_pruning_map_deletes_nothing_while_another_map_writes_the_store() {
    let s = seed(134);
    let store = MemStore::new();
    let opts = BackedOptions::with_budget_mb(1).pruning();
    let mut a = BackedMap::new(&store, MapKind::AccountState, opts);
    let mut rng = SmallRng::seed_from_u64(s);
    let keys: Vec<Key> = (0..500).map(|_| Key(rng.gen())).collect();
    for k in &keys {
        a.upsert(*k, &data(&mut rng)).expect("upsert");
    }
    let root = a.commit("a").expect("commit");
    // A second writer hangs its clean slots under the same root.
    let b = BackedMap::open(&store, root, MapKind::AccountState, opts).expect("open");
    for k in &keys[..100] {
        a.upsert(*k, &data(&mut rng)).expect("upsert");
    }
    a.commit("a").expect("commit");
    assert_eq!(a.stats().prune_skipped, 1);
    // Everything the second writer can reach is still there.
    assert_eq!(contents(&b).len(), keys.len(), "seed {s}");
}
