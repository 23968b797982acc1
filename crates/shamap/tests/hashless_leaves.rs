//! The hashless-leaf mode (`LeafHashes::Recomputed`): leaves keep no hash,
//! and every operation must give what the default mode gives. A stored-hash
//! map and a hashless-leaf map take the same seeded stream of writes (single
//! writes, small and large `apply` blocks, undo sessions, snapshots, `clear`,
//! `repack`), and after each round roots, the oracle's root, `check()`,
//! proofs, multi-proofs, node-store walks and diffs are compared.

use std::collections::BTreeMap;

use rand::rngs::SmallRng;
use rand::Rng;
use shamap::verify::{verify_multi_with, verify_path_with, ProofOutcome};
use shamap::{HashFunction, Key, LeafHashes, MapKind, MapOptions, ShaMap, Snapshot, StoredNode};

use crate::common::{key_near, oracle_root_for, random_data, random_key, rng};

fn leaf_data(r: &mut SmallRng) -> Vec<u8> {
    // The wire format's (and rippled's) smallest leaf holds 12 bytes; now
    // and then a leaf too large for a pool.
    let len = if r.gen_range(0..50) == 0 {
        r.gen_range(1000..3000)
    } else {
        r.gen_range(12..300)
    };
    (0..len).map(|_| r.gen()).collect()
}

fn nodes_of(s: &Snapshot) -> Vec<StoredNode> {
    let mut v = Vec::new();
    s.for_each_node(|n| v.push(n));
    v
}

/// Everything observable agrees between the two maps and with the oracle.
fn compare(
    full: &mut ShaMap,
    hashless: &mut ShaMap,
    model: &BTreeMap<Key, Vec<u8>>,
    r: &mut SmallRng,
    round: usize,
) {
    let f = full.hash_function();
    let root = full.root_hash();
    assert_eq!(hashless.root_hash(), root, "round {round}: roots");
    assert_eq!(
        root,
        oracle_root_for(f, full.kind(), model),
        "round {round}: oracle"
    );
    full.check()
        .unwrap_or_else(|e| panic!("round {round}: {e}"));
    hashless
        .check()
        .unwrap_or_else(|e| panic!("round {round}: hashless: {e}"));
    assert!(hashless.iter().eq(full.iter()), "round {round}: items");
    let mut keys: Vec<Key> = model.keys().take(20).copied().collect();
    keys.extend((0..10).map(|_| random_key(r)));
    if let Some(k) = model.keys().next() {
        keys.push(key_near(r, k));
    }
    for k in &keys {
        let p = hashless.proof_path(k);
        assert_eq!(p, full.proof_path(k), "round {round}: proof of {k}");
        if full.kind() == MapKind::TransactionNoMeta {
            // Random keys are not their data's transaction IDs, which the
            // verifier of a txset leaf checks; the proofs are equal above.
            continue;
        }
        let got = verify_path_with(f, &root, k, &p.nodes).expect("a valid proof");
        match (got, model.get(k)) {
            (ProofOutcome::Included { data, .. }, Some(want)) => {
                assert_eq!(&data, want, "round {round}: {k}");
            }
            (ProofOutcome::Absent, None) => {}
            (got, want) => panic!("round {round}: {k}: proof says {got:?}, model {want:?}"),
        }
    }
    let multi = hashless.multi_proof(&keys);
    assert_eq!(multi, full.multi_proof(&keys), "round {round}: multi-proof");
    if full.kind() != MapKind::TransactionNoMeta {
        verify_multi_with(f, &root, &keys, &multi).expect("a valid multi-proof");
    }
    let (sf, sc) = (full.snapshot(), hashless.snapshot());
    assert_eq!(sc.root_hash(), root);
    assert_eq!(nodes_of(&sc), nodes_of(&sf), "round {round}: node walk");
    assert!(
        sc.diff(&sf, usize::MAX).expect("no limit").is_empty(),
        "round {round}: a hashless and a full map with the same items differ"
    );
}

/// One round of random writes, the same on both maps and the model.
fn writes(
    r: &mut SmallRng,
    full: &mut ShaMap,
    hashless: &mut ShaMap,
    model: &mut BTreeMap<Key, Vec<u8>>,
    n: usize,
) {
    let how = r.gen_range(0..3);
    let mut block: Vec<(Key, Option<Vec<u8>>)> = Vec::with_capacity(n);
    for _ in 0..n {
        let existing = (!model.is_empty() && r.gen_bool(0.4)).then(|| {
            *model
                .keys()
                .nth(r.gen_range(0..model.len()))
                .expect("in range")
        });
        let k = match existing {
            Some(k) => k,
            None if r.gen_bool(0.3) && !model.is_empty() => {
                let near = *model.keys().next().expect("non-empty");
                key_near(r, &near)
            }
            None => random_key(r),
        };
        let d = if existing.is_some() && r.gen_bool(0.4) {
            None
        } else {
            Some(leaf_data(r))
        };
        block.push((k, d));
    }
    for (k, d) in &block {
        match d {
            Some(d) => {
                model.insert(*k, d.clone());
            }
            None => {
                model.remove(k);
            }
        }
    }
    if how == 0 {
        for (k, d) in &block {
            for m in [&mut *full, &mut *hashless] {
                match d {
                    Some(d) => {
                        m.upsert(*k, d).expect("upsert");
                    }
                    None => {
                        let _ = m.remove(k);
                    }
                }
            }
        }
    } else {
        let ops = || block.iter().map(|(k, d)| (*k, d.as_deref()));
        let a = full.apply(ops()).expect("apply");
        let b = hashless.apply(ops()).expect("apply");
        assert_eq!(a, b, "apply results");
    }
}

fn twins(kind: MapKind, f: HashFunction, seed: u64, rounds: usize, test: &str) {
    let mut r = rng(test, seed);
    let opts = MapOptions::default().with_hash(f);
    let mut full = ShaMap::with_options(kind, opts);
    let mut hashless = ShaMap::with_options(kind, opts.hashless_leaves());
    assert_eq!(hashless.options().leaf_hashes, LeafHashes::Recomputed);
    let mut model = BTreeMap::new();
    let mut kept: Vec<(Snapshot, Snapshot)> = Vec::new();
    for round in 0..rounds {
        // Mostly small rounds; some of 1024+ writes (the split and
        // parallel paths of root_hash, the parallel path of apply).
        let n = if round % 5 == 4 {
            r.gen_range(1100..2500)
        } else {
            r.gen_range(1..300)
        };
        match round % 7 {
            3 => {
                // An undo session: changes, then undone.
                let before = model.clone();
                full.begin_session();
                hashless.begin_session();
                writes(&mut r, &mut full, &mut hashless, &mut model, n);
                compare(&mut full, &mut hashless, &model, &mut r, round);
                full.undo().expect("a session");
                hashless.undo().expect("a session");
                model = before;
            }
            5 => {
                writes(&mut r, &mut full, &mut hashless, &mut model, n);
                full.repack();
                hashless.repack();
                let copy = hashless.clone();
                assert_eq!(copy.options().leaf_hashes, LeafHashes::Recomputed);
                copy.check().expect("a clone is consistent");
            }
            _ => writes(&mut r, &mut full, &mut hashless, &mut model, n),
        }
        compare(&mut full, &mut hashless, &model, &mut r, round);
        // Snapshots kept across rounds: their diffs agree, and a map made
        // from an old hashless-leaf snapshot goes on like one made from the
        // full.
        let pair = (full.snapshot(), hashless.snapshot());
        if let Some((of, oc)) = kept.last() {
            let owned = |a: &Snapshot, b: &Snapshot| -> Vec<_> {
                a.diff(b, usize::MAX)
                    .expect("no limit")
                    .into_iter()
                    .map(|d| {
                        (
                            d.key,
                            d.left.map(<[u8]>::to_vec),
                            d.right.map(<[u8]>::to_vec),
                        )
                    })
                    .collect()
            };
            let (df, dc) = (owned(of, &pair.0), owned(oc, &pair.1));
            assert_eq!(dc, df, "round {round}: diffs between versions");
            let (mut mf, mut mc) = (of.to_map(), oc.to_map());
            let k = random_key(&mut r);
            let d = random_data(&mut r, 100);
            mf.upsert(k, &d).expect("upsert");
            mc.upsert(k, &d).expect("upsert");
            assert_eq!(
                mc.root_hash(),
                mf.root_hash(),
                "round {round}: from a snapshot"
            );
            mc.check()
                .expect("a map from a hashless-leaf snapshot is consistent");
        }
        kept.push(pair);
        if kept.len() > 3 {
            kept.remove(0);
        }
        if round == rounds / 2 {
            full.clear();
            hashless.clear();
            model.clear();
            compare(&mut full, &mut hashless, &model, &mut r, round);
        }
    }
    // A hashless-leaf map holds no leaf hash; everything else is the same.
    drop(kept);
    let (a, b) = (full.mem_stats(), hashless.mem_stats());
    assert_eq!(b.leaf_hashes, LeafHashes::Recomputed);
    assert_eq!(b.bytes.leaf_hashes, 0);
    assert_eq!(a.bytes.leaf_hashes, 32 * model.len());
    assert_eq!(
        (b.bytes.leaf_keys, b.bytes.leaf_data, b.inner_nodes),
        (a.bytes.leaf_keys, a.bytes.leaf_data, a.inner_nodes)
    );
}

#[test]
fn hashless_state_maps_agree_with_full_ones_and_the_oracle() {
    twins(
        MapKind::AccountState,
        HashFunction::Sha512Half,
        301,
        16,
        "hashless_state",
    );
}

#[test]
fn hashless_tx_maps_agree_with_full_ones_and_the_oracle() {
    twins(
        MapKind::TransactionWithMeta,
        HashFunction::Sha512Half,
        302,
        8,
        "hashless_tx",
    );
    twins(
        MapKind::TransactionNoMeta,
        HashFunction::Blake3,
        303,
        8,
        "hashless_txset_blake3",
    );
}

/// `invalidate_hashes` and a root from scratch, `from_sorted` with the
/// hashless-leaf options, and the memory saved: 32 bytes per leaf in pooled
/// chunks.
#[test]
fn hashless_maps_from_sorted_rehash_from_scratch_and_save_32_bytes_a_leaf() {
    let mut r = rng("hashless_sorted", 304);
    let mut model = BTreeMap::new();
    for _ in 0..20_000 {
        model.insert(random_key(&mut r), random_data(&mut r, 200));
    }
    let items = || model.iter().map(|(k, v)| (*k, v.clone()));
    let mut full = ShaMap::from_sorted(MapKind::AccountState, items()).expect("sorted");
    let mut hashless = ShaMap::from_sorted_with_options(
        MapKind::AccountState,
        MapOptions::default().hashless_leaves(),
        items(),
    )
    .expect("sorted");
    let root = full.root_hash();
    assert_eq!(hashless.root_hash(), root);
    hashless.invalidate_hashes();
    assert_eq!(hashless.cached_root_hash(), None);
    assert_eq!(hashless.root_hash(), root, "a root from scratch");
    hashless.check().expect("consistent");
    let (a, b) = (full.mem_stats(), hashless.mem_stats());
    let pooled = |s: &shamap::MemStats| -> usize {
        s.leaf_pools.iter().map(|p| p.leaves * p.chunk_bytes).sum()
    };
    assert_eq!(a.large_leaves, 0);
    assert_eq!(pooled(&a) - pooled(&b), 32 * model.len());
    // Pool slack and bookkeeping (the table of leaf pools) differ with the
    // chunk sizes; the rest is exactly 32 bytes a leaf apart.
    let beyond_slack = |s: &shamap::MemStats| s.bytes.total - s.bytes.pool_slack - s.bytes.other;
    assert_eq!(beyond_slack(&a) - beyond_slack(&b), 32 * model.len());
}
