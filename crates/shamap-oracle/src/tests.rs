//! Known-answer and shape tests for the oracle.

use super::*;
use serde_json::Value;

const VECTORS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../data/vectors/shamap-vectors.json"
);

fn vectors() -> Value {
    let text = std::fs::read_to_string(VECTORS).expect("read shamap-vectors.json");
    serde_json::from_str(&text).expect("parse shamap-vectors.json")
}

fn key32(hex: &str) -> [u8; 32] {
    from_hex(hex).try_into().expect("32-byte key")
}

fn s(v: &Value) -> &str {
    v.as_str().expect("string field")
}

/// Key with `first` as its leading bytes and zeros after.
fn key_with(first: &[u8]) -> [u8; 32] {
    let mut k = [0u8; 32];
    k[..first.len()].copy_from_slice(first);
    k
}

/// Deterministic Fisher-Yates shuffle driven by a small LCG.
fn shuffle<T>(v: &mut [T], mut seed: u64) {
    for i in (1..v.len()).rev() {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let j = usize::try_from((seed >> 33) % (i as u64 + 1)).expect("fits");
        v.swap(i, j);
    }
}

#[test]
fn build_tear() {
    let v = vectors();
    let bt = &v["build_tear"];
    let keys: Vec<[u8; 32]> = bt["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .map(|k| key32(s(k)))
        .collect();
    let roots = bt["root_after_insert"].as_array().expect("roots");
    assert_eq!(keys.len(), 8);
    assert_eq!(roots.len(), keys.len());
    let mut items = Vec::new();
    for (k, key) in keys.iter().enumerate() {
        items.push((*key, vec![u8::try_from(k).expect("small"); 32]));
        let root = root_hash(OracleKind::TransactionNoMeta, &items);
        assert_eq!(to_hex_upper(&root), s(&roots[k]), "after inserting key {k}");
    }
    // Tear down: removing the last key restores the previous root; finally zero.
    while items.pop().is_some() {
        let expected = match items.len() {
            0 => to_hex_upper(&ZERO),
            n => s(&roots[n - 1]).to_string(),
        };
        assert_eq!(
            to_hex_upper(&root_hash(OracleKind::TransactionNoMeta, &items)),
            expected
        );
    }
}

#[test]
fn single_item_derived() {
    let v = vectors();
    let si = &v["single_item_derived"];
    let key = key32(s(&si["key"]));
    let data = vec![0x01u8; 32];
    for (name, kind) in [
        ("tx_nm", OracleKind::TransactionNoMeta),
        ("tx_md", OracleKind::TransactionWithMeta),
        ("state", OracleKind::AccountState),
    ] {
        let case = &si["by_leaf_type"][name];
        assert_eq!(
            to_hex_upper(&leaf_hash(kind, &key, &data)),
            s(&case["leaf_hash"]),
            "{name} leaf"
        );
        let root = root_hash(kind, &[(key, data.clone())]);
        assert_eq!(to_hex_upper(&root), s(&case["root_hash"]), "{name} root");
    }
}

#[test]
fn proof_map_derived() {
    let v = vectors();
    let expected = v["proof_map_derived"]["root_after"]
        .as_object()
        .expect("root_after");
    assert_eq!(expected.len(), 5);
    let mut items = Vec::new();
    for c in 1u8..=99 {
        let mut key = [0u8; 32];
        key[31] = c;
        items.push((key, key.to_vec()));
        if let Some(root) = expected.get(&c.to_string()) {
            assert_eq!(
                to_hex_upper(&root_hash(OracleKind::AccountState, &items)),
                s(root),
                "after {c}"
            );
        }
    }
    let keys: Vec<[u8; 32]> = items.iter().map(|i| i.0).collect();
    // Keys 1..=15 share 63 nibbles: leaves at depth 64.
    assert!(leaf_depths(&keys[..2]).iter().all(|&(_, d)| d == 64));
    // 64 inner nodes (depths 0..=63); only the one at depth 63 branches.
    let mut hist = [0u64; 17];
    hist[1] = 63;
    hist[2] = 1;
    assert_eq!(child_count_histogram(&keys[..2]), hist);
}

#[test]
fn empty_map() {
    assert_eq!(root_hash(OracleKind::AccountState, &[]), [0u8; 32]);
    assert_eq!(root_from_leaf_hashes(&[]), [0u8; 32]);
    assert!(leaf_depths(&[]).is_empty());
    let mut hist = [0u64; 17];
    hist[0] = 1;
    assert_eq!(child_count_histogram(&[]), hist);
}

#[test]
fn one_item_is_root_over_leaf() {
    let key = key_with(&[0x7f, 0x01]);
    let leaf = leaf_hash(OracleKind::AccountState, &key, b"abc");
    let mut parts: Vec<&[u8]> = vec![b"MIN\0"];
    let mut children = [[0u8; 32]; 16];
    children[7] = leaf;
    parts.extend(children.iter().map(|c| c.as_slice()));
    assert_eq!(
        root_hash(OracleKind::AccountState, &[(key, b"abc".to_vec())]),
        sha512_half(&parts)
    );
    assert_eq!(leaf_depths(&[key]), vec![(key, 1)]);
    let mut hist = [0u64; 17];
    hist[1] = 1;
    assert_eq!(child_count_histogram(&[key]), hist);
}

#[test]
fn order_independence() {
    let mut items: Vec<([u8; 32], Vec<u8>)> = (0u8..60)
        .map(|i| {
            let key = sha512_half(&[&[i]]);
            (key, vec![i; usize::from(i % 7) + 1])
        })
        .collect();
    let reference = root_hash(OracleKind::TransactionWithMeta, &items);
    for seed in 0..5 {
        shuffle(&mut items, seed);
        assert_eq!(
            root_hash(OracleKind::TransactionWithMeta, &items),
            reference
        );
    }
}

#[test]
fn shape_of_hand_made_map() {
    // Root has branches 1, 5, A. Prefix "1" splits into 2 and 3 (leaves at
    // depth 2). Prefix "A" -> "AB" -> "ABC" is a chain of single-child inner
    // nodes; "ABC" splits into 1 and 2 (leaves at depth 4).
    let k1 = key_with(&[0x12]);
    let k2 = key_with(&[0x13]);
    let k3 = key_with(&[0x50]);
    let k4 = key_with(&[0xAB, 0xC1]);
    let k5 = key_with(&[0xAB, 0xC2]);
    let keys = [k5, k3, k1, k4, k2];
    assert_eq!(
        leaf_depths(&keys),
        vec![(k1, 2), (k2, 2), (k3, 1), (k4, 4), (k5, 4)]
    );
    let mut hist = [0u64; 17];
    hist[1] = 2; // "A", "AB"
    hist[2] = 2; // "1", "ABC"
    hist[3] = 1; // root
    assert_eq!(child_count_histogram(&keys), hist);

    // The root hash, assembled by hand from the same shape.
    let lh: Vec<[u8; 32]> = keys.iter().map(|k| sha512_half(&[k])).collect();
    let pairs: Vec<([u8; 32], [u8; 32])> = keys.iter().copied().zip(lh.iter().copied()).collect();
    let inner = |slots: &[(usize, [u8; 32])]| {
        let mut children = [[0u8; 32]; 16];
        for &(i, h) in slots {
            children[i] = h;
        }
        let mut parts: Vec<&[u8]> = vec![b"MIN\0"];
        parts.extend(children.iter().map(|c| c.as_slice()));
        sha512_half(&parts)
    };
    let (h5, h3, h1, h4, h2) = (lh[0], lh[1], lh[2], lh[3], lh[4]);
    let abc = inner(&[(1, h4), (2, h5)]);
    let ab = inner(&[(0xC, abc)]);
    let a = inner(&[(0xB, ab)]);
    let one = inner(&[(2, h1), (3, h2)]);
    let root = inner(&[(1, one), (5, h3), (0xA, a)]);
    assert_eq!(root_from_leaf_hashes(&pairs), root);
}

#[test]
#[should_panic(expected = "duplicate key")]
fn duplicate_keys_panic() {
    let k = key_with(&[1, 2, 3]);
    root_from_leaf_hashes(&[(k, [1; 32]), (k, [2; 32])]);
}

#[test]
fn hex_round_trip() {
    let bytes: Vec<u8> = (0u8..=255).collect();
    let hex = to_hex_upper(&bytes);
    assert_eq!(&hex[..8], "00010203");
    assert_eq!(from_hex(&hex), bytes);
    assert_eq!(from_hex(&hex.to_lowercase()), bytes);
}
