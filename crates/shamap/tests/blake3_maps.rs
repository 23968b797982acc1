//! Maps hashed with BLAKE3: roots against the oracle with BLAKE3, and every
//! feature that carries or checks hashes (bulk build, parallel hashing,
//! snapshots, clones, proofs) keeping to the map's function.

use std::collections::BTreeMap;

use rand::Rng;
use shamap::verify::{
    verify_multi, verify_multi_with, verify_path, verify_path_with, ProofOutcome,
};
use shamap::{HashFunction, Key, MapKind, MapOptions, ShaMap};

use crate::common::{oracle_root_for, random_data, random_entries, random_key, rng};

const BLAKE3: HashFunction = HashFunction::Blake3;

fn blake3_opts() -> MapOptions {
    MapOptions::default().with_hash(BLAKE3)
}

fn random_model(test: &str, seed: u64, n: usize) -> BTreeMap<Key, Vec<u8>> {
    random_entries(&mut rng(test, seed), n, 200)
        .into_iter()
        .collect()
}

#[test]
fn blake3_roots_match_the_oracle_and_differ_from_sha512_half() {
    for kind in [
        MapKind::AccountState,
        MapKind::TransactionWithMeta,
        MapKind::TransactionNoMeta,
    ] {
        let model = random_model("blake3_roots", 0xB1A3_0001, 3000);
        let mut b = ShaMap::with_options(kind, blake3_opts());
        let mut s = ShaMap::new(kind);
        for (k, v) in &model {
            b.insert(*k, v).expect("insert");
            s.insert(*k, v).expect("insert");
        }
        let want = oracle_root_for(BLAKE3, kind, &model);
        assert_eq!(b.root_hash(), want, "{kind:?}");
        assert_ne!(
            b.root_hash(),
            s.root_hash(),
            "{kind:?}: same root under both"
        );
        assert_eq!(
            s.root_hash(),
            oracle_root_for(HashFunction::Sha512Half, kind, &model)
        );
        assert_eq!(b.hash_function(), BLAKE3);
        assert_eq!(b.options().hash, BLAKE3);
        b.check().expect("consistent");
        // A clone keeps the function, and so does its hashing after writes.
        let mut c = b.clone();
        assert_eq!(c.hash_function(), BLAKE3);
        let (k, _) = model.iter().next().expect("non-empty");
        c.remove(k).expect("present");
        let mut less = model.clone();
        less.remove(k);
        assert_eq!(c.root_hash(), oracle_root_for(BLAKE3, kind, &less));
    }
}

#[test]
fn blake3_bulk_builds_and_parallel_hashing_agree_with_the_oracle() {
    let model = random_model("blake3_bulk", 0xB1A3_0002, 20_000);
    let want = oracle_root_for(BLAKE3, MapKind::AccountState, &model);
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool");
        pool.install(|| {
            let mut bulk = ShaMap::from_sorted_with_options(
                MapKind::AccountState,
                blake3_opts(),
                model.iter().map(|(k, v)| (*k, v)),
            )
            .expect("sorted");
            assert_eq!(bulk.root_hash(), want, "{threads} thread(s): from_sorted");
            let mut applied = ShaMap::with_options(MapKind::AccountState, blake3_opts());
            let done = applied
                .apply(model.iter().map(|(k, v)| (*k, Some(&v[..]))))
                .expect("apply");
            assert_eq!(done.root_hash, want, "{threads} thread(s): apply");
            applied.invalidate_hashes();
            assert_eq!(applied.root_hash(), want, "{threads} thread(s): rehash");
        });
    }
}

#[test]
fn blake3_snapshots_and_their_maps_keep_the_function() {
    let mut r = rng("blake3_snapshots", 0xB1A3_0003);
    let mut model = random_model("blake3_snapshots_model", 0xB1A3_0004, 2000);
    let mut map = ShaMap::with_options(MapKind::AccountState, blake3_opts());
    for (k, v) in &model {
        map.insert(*k, v).expect("insert");
    }
    let snap = map.snapshot();
    assert_eq!(snap.hash_function(), BLAKE3);
    let mut child = snap.to_map();
    assert_eq!(child.hash_function(), BLAKE3);
    for _ in 0..300 {
        let k = random_key(&mut r);
        let v = random_data(&mut r, 64);
        child.upsert(k, &v).expect("upsert");
        model.insert(k, v);
    }
    assert_eq!(
        child.root_hash(),
        oracle_root_for(BLAKE3, MapKind::AccountState, &model)
    );
    assert_eq!(
        snap.root_hash(),
        map.root_hash(),
        "the snapshot did not change"
    );
}

#[test]
fn blake3_proofs_verify_only_with_blake3() {
    let model = random_model("blake3_proofs", 0xB1A3_0005, 500);
    let mut map = ShaMap::with_options(MapKind::AccountState, blake3_opts());
    for (k, v) in &model {
        map.insert(*k, v).expect("insert");
    }
    let root = map.root_hash();
    let mut r = rng("blake3_proofs_keys", 0xB1A3_0006);
    let keys: Vec<Key> = model
        .keys()
        .take(5)
        .copied()
        .chain([random_key(&mut r)])
        .collect();
    for k in &keys {
        let proof = map.proof_path(k);
        let outcome = verify_path_with(BLAKE3, &root, k, &proof.nodes).expect("verifies");
        match model.get(k) {
            Some(v) => assert_eq!(
                outcome,
                ProofOutcome::Included {
                    data: v.clone(),
                    kind: MapKind::AccountState
                }
            ),
            None => assert_eq!(outcome, ProofOutcome::Absent),
        }
        let err = verify_path(&root, k, &proof.nodes).expect_err("not SHA512Half nodes");
        assert!(err.to_string().contains("hash"), "{err}");
    }
    let nodes = map.multi_proof(&keys);
    let outcomes = verify_multi_with(BLAKE3, &root, &keys, &nodes).expect("verifies");
    assert_eq!(outcomes.len(), keys.len());
    assert!(verify_multi(&root, &keys, &nodes).is_err());
    // A flipped byte anywhere in a blob is refused.
    let proof = map.proof_path(&keys[0]);
    let mut bad = proof.nodes.clone();
    let i = r.gen_range(0..bad.len());
    let j = r.gen_range(0..bad[i].len());
    bad[i][j] ^= 1;
    assert!(verify_path_with(BLAKE3, &root, &keys[0], &bad).is_err());
}
