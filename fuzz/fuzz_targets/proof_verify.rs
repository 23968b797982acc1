//! Fuzz target: proof verification takes untrusted bytes. For any input,
//! `verify_path` and `verify_multi` return a value or an error, never
//! panic; what they accept is consistent; and real proofs from a map built
//! from the input verify, while any single flipped byte is rejected.
//!
//! Input: the first byte picks a mode, the rest feeds it.
//!
//! | mode | what |
//! |---|---|
//! | 0 raw | root (32 bytes), key (32), then blobs (2-byte little-endian length, bytes) checked as they are, and against the hash of their last blob |
//! | 1 chained | key (32), then blobs; each inner node's child on the key's path is set to its successor's hash, so the hash checks pass and the walk reaches the structure checks |
//! | 2 model | a count, then items (shared-nibble count, 32 key bytes) build a map of up to 23 keys; a query key, a byte to flip and a mask follow |
//! | 3 model, BLAKE3 | the same with a map hashed with BLAKE3, checked by the `_with` verifiers |
//!
//! Modes 0 and 1 also run the BLAKE3 verifiers on the same bytes (any
//! result but a panic or a multi-line error is fine there).

#![no_main]

use libfuzzer_sys::fuzz_target;
use shamap::verify::{
    verify_multi, verify_multi_with, verify_path, verify_path_with, ProofOutcome, MAX_PATH_NODES,
};
use shamap::xrpl::wire::{decode, encode_inner, WireNode};
use shamap::{Hash256, HashFunction, Key, MapKind, MapOptions, ShaMap};

#[path = "common.rs"]
mod common;
use common::take32;

fn split_blobs(data: &[u8]) -> Vec<Vec<u8>> {
    common::split_blobs(data, 200)
}

fn check_one_line(e: &impl std::fmt::Display) {
    let s = e.to_string();
    assert!(!s.contains('\n'), "multi-line error: {s:?}");
}

fn run_both(root: &Hash256, key: &Key, blobs: &[Vec<u8>]) {
    let f = HashFunction::Blake3;
    if let Err(e) = verify_path_with(f, root, key, blobs) {
        check_one_line(&e);
    }
    if let Err(e) = verify_multi_with(f, root, &[*key], blobs) {
        check_one_line(&e);
    }
    let path = verify_path(root, key, blobs);
    if let Err(e) = &path {
        check_one_line(e);
    }
    let mut other = *key;
    other.0[31] ^= 1;
    match verify_multi(root, &[*key, other], blobs) {
        Err(e) => check_one_line(&e),
        Ok(v) => assert_eq!(v.len(), 2),
    }
    // A valid path is a valid single-key multi-proof with the same outcome.
    if let Ok(outcome) = path {
        if let ProofOutcome::Included { data, .. } = &outcome {
            match decode(&blobs[0]) {
                Ok(WireNode::Leaf {
                    key: k, data: d, ..
                }) => {
                    assert_eq!(&k, key);
                    assert_eq!(&d, data);
                }
                other => panic!("included, but the first node is {other:?}"),
            }
        }
        let single = verify_multi(root, &[*key], blobs);
        assert_eq!(single, Ok(vec![(*key, outcome)]));
    }
}

fn raw(mut data: &[u8]) {
    let root = Hash256(take32(&mut data));
    let key = Key(take32(&mut data));
    let blobs = split_blobs(data);
    run_both(&root, &key, &blobs);
    if let Some(Ok(top)) = blobs.last().map(|b| decode(b)) {
        run_both(&top.hash(), &key, &blobs);
    }
}

fn chained(mut data: &[u8]) {
    let key = Key(take32(&mut data));
    let mut blobs = split_blobs(data);
    if blobs.len() > MAX_PATH_NODES {
        run_both(&Hash256([1; 32]), &key, &blobs);
        return;
    }
    let n = blobs.len();
    let mut below: Option<Hash256> = None;
    for (i, blob) in blobs.iter_mut().enumerate() {
        let depth = n - 1 - i;
        match decode(blob) {
            Ok(WireNode::Inner(mut children)) => {
                if let (Some(h), true) = (below, depth < 64) {
                    children[usize::from(key.nibble(depth).get())] = h;
                    *blob = encode_inner(&children);
                }
                below = decode(blob).ok().map(|n| n.hash());
            }
            Ok(node) => below = Some(node.hash()),
            Err(_) => below = None,
        }
    }
    let root = below.unwrap_or(Hash256::ZERO);
    run_both(&root, &key, &blobs);
}

fn model(mut data: &[u8], f: HashFunction) {
    let base = Key([0xA5; 32]);
    let mut map = ShaMap::with_options(MapKind::AccountState, MapOptions::default().with_hash(f));
    let count = usize::from(data.first().copied().unwrap_or(0) % 24);
    data = &data[data.len().min(1)..];
    let mut keys = Vec::new();
    for _ in 0..count {
        // Mostly shallow keys (cheap), some sharing 56..=63 nibbles with the
        // base (the deepest paths).
        let b = data.first().copied().unwrap_or(0);
        let shared = usize::from(if b < 224 { b % 8 } else { 56 + b % 8 });
        data = &data[data.len().min(1)..];
        let mut k = Key(take32(&mut data));
        for d in 0..shared {
            k.set_nibble(d, base.nibble(d));
        }
        let value: Vec<u8> = k.0.iter().take(12 + shared % 20).copied().collect();
        if map.insert(k, &value).is_ok() {
            keys.push(k);
        }
    }
    let query = Key(take32(&mut data));
    let flip_at = data.first().map_or(0, |b| usize::from(*b)) * 7;
    let mask = data.get(1).copied().unwrap_or(1).max(1);

    let root = map.root_hash();
    let mut asked = keys.clone();
    asked.push(query);
    // Hashing dominates under the fuzzer's instrumentation: single proofs
    // (and a flipped byte) for the query and a few keys; all in the multi.
    for (i, k) in asked.iter().rev().take(4).enumerate() {
        let proof = map.proof_path(k);
        let want = match map.get(k) {
            Some(d) => ProofOutcome::Included {
                data: d.to_vec(),
                kind: MapKind::AccountState,
            },
            None => ProofOutcome::Absent,
        };
        assert_eq!(
            verify_path_with(f, &root, k, &proof.nodes).as_ref(),
            Ok(&want)
        );
        let total: usize = proof.nodes.iter().map(Vec::len).sum();
        if total > 0 {
            let mut at = (flip_at + 131 * i) % total;
            let mut nodes = proof.nodes.clone();
            for n in nodes.iter_mut() {
                if at < n.len() {
                    n[at] ^= mask;
                    break;
                }
                at -= n.len();
            }
            assert!(
                verify_path_with(f, &root, k, &nodes).is_err(),
                "flipped byte accepted"
            );
        }
    }
    let multi = map.multi_proof(&asked);
    let got = verify_multi_with(f, &root, &asked, &multi).expect("a real multi-proof verifies");
    for (k, outcome) in got {
        assert_eq!(outcome.is_included(), map.contains(&k));
    }
}

fuzz_target!(|data: &[u8]| {
    common::run_mode(
        data,
        &[
            raw,
            chained,
            |d| model(d, HashFunction::Sha512Half),
            |d| model(d, HashFunction::Blake3),
        ],
    );
});
