//! The backed map and the engine's in-memory `ShaMap` fed the same seeded
//! blocks of upserts and removes: the seeded counterpart of the
//! `backed_differential` fuzz target, so that CI runs the comparison. Keys
//! come from a small space (so that writes collide and removes hit), data
//! is 12 to 75 bytes, the budget is small enough that the backed map
//! evicts, reloads and spills, and it commits after every block. Every
//! block's root is compared; at the end the contents are, also those of a
//! backed map reopened from the store alone.

use std::collections::BTreeMap;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shamap::xrpl::transaction_id;
use shamap::{Hash256, Key, MapKind, ShaMap};
use shamap_store::{verify_all, BackedMap, MemStore};

use crate::backed::contents;
use crate::backed_common::small_key;
use crate::support::{seed, with_budget};

/// 12 to 75 random bytes.
fn random_data(rng: &mut SmallRng) -> Vec<u8> {
    let len = rng.gen_range(12..76);
    (0..len).map(|_| rng.gen()).collect()
}

/// Runs `blocks` blocks of up to `ops` operations each and returns how
/// many keys were new, how many removes hit, and the backed map's spills.
fn differential(kind: MapKind, budget: usize, blocks: u32, ops: u32, s: u64) -> (u32, u32, u64) {
    let mut rng = SmallRng::seed_from_u64(s);
    let store = MemStore::new();
    let opts = with_budget(budget);
    let mut backed = BackedMap::new(&store, kind, opts);
    let mut engine = ShaMap::new(kind);
    // Transaction IDs of data already written, so that removes and
    // rewrites in a transaction map without metadata find present keys.
    let mut tx_keys: Vec<(Key, Vec<u8>)> = Vec::new();
    let (mut added, mut removed) = (0, 0);
    for block in 0..blocks {
        for _ in 0..rng.gen_range(1..=ops) {
            let (key, data) = if kind == MapKind::TransactionNoMeta {
                if !tx_keys.is_empty() && rng.gen_ratio(1, 2) {
                    tx_keys[rng.gen_range(0..tx_keys.len())].clone()
                } else {
                    let d = random_data(&mut rng);
                    let k = Key::from(transaction_id(&d));
                    tx_keys.push((k, d.clone()));
                    (k, d)
                }
            } else {
                (small_key(rng.gen()), random_data(&mut rng))
            };
            if rng.gen_ratio(2, 5) {
                let present = engine.remove(&key).is_ok();
                let got = backed.remove(&key).expect("backed remove");
                assert_eq!(got, present, "seed {s} block {block}: remove of {key:?}");
                removed += u32::from(present);
            } else {
                let new = engine.upsert(key, &data).expect("engine upsert");
                let got = backed.upsert(key, &data).expect("backed upsert");
                assert_eq!(got, new, "seed {s} block {block}: upsert of {key:?}");
                added += u32::from(new);
            }
        }
        let root = engine.root_hash();
        assert_eq!(
            backed.root_hash(),
            root,
            "seed {s} {kind:?} block {block}: the backed root differs from the engine's"
        );
        assert_eq!(backed.commit("head").expect("commit"), root, "seed {s}");
        if rng.gen_ratio(1, 4) {
            backed = BackedMap::open(&store, root, kind, opts).expect("reopen");
        }
        let st = backed.stats();
        assert!(st.cache_peak_bytes <= budget, "seed {s}: {st:?}");
    }
    let items: BTreeMap<Key, Vec<u8>> = engine.iter().map(|(k, v)| (*k, v.to_vec())).collect();
    assert_eq!(
        contents(&backed),
        items,
        "seed {s} {kind:?}: contents differ"
    );
    let root = engine.root_hash();
    let reopened = BackedMap::open(&store, root, kind, opts).expect("reopen at the end");
    assert_eq!(contents(&reopened), items, "seed {s} {kind:?}: reopened");
    if root != Hash256::ZERO {
        let r = verify_all(&store, &root).expect("every committed node verifies");
        assert_eq!(r.leaves as usize, items.len(), "seed {s}");
    }
    (added, removed, backed.stats().spills)
}

#[test]
fn backed_map_and_engine_agree_on_every_block() {
    let s = seed(4242);
    for (i, (kind, budget)) in [
        (MapKind::AccountState, 4 << 10),
        (MapKind::AccountState, 16 << 10),
        (MapKind::TransactionWithMeta, 8 << 10),
        (MapKind::TransactionNoMeta, 8 << 10),
    ]
    .into_iter()
    .enumerate()
    {
        let (added, removed, spills) = differential(kind, budget, 40, 120, s + i as u64);
        // The comparison means something only if keys were both added and
        // removed again, and the budget made the map spill.
        assert!(added > 100 && removed > 50, "seed {s}: {added} {removed}");
        assert!(spills > 0 || budget > 4 << 10, "seed {s}: no spill");
    }
}

#[test]
fn small_keys_collide_and_share_prefixes() {
    let keys: std::collections::BTreeSet<Key> = (0..=255).map(small_key).collect();
    assert_eq!(keys.len(), 256);
    let (a, b) = (small_key(0x00), small_key(0xF0));
    assert_eq!(a.0[..31], b.0[..31], "keys that part at the last byte");
}
