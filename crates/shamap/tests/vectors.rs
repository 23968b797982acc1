//! rippled's own SHAMap unit-test answers and the derived vectors.

use shamap::xrpl::LedgerHeader;
use shamap::{Hash256, Key, MapKind, ShaMap};

use crate::common::{
    deep_map_checked, delta_script, derived_deep_root, hex_hash, hex_key, small_key, strings,
    vectors,
};

#[test]
fn build_tear_roots_match_rippled_after_each_insert_and_delete() {
    let v = vectors();
    let bt = &v["build_tear"];
    let keys = strings(&bt["keys"], hex_key);
    let roots = strings(&bt["root_after_insert"], hex_hash);
    assert_eq!(keys.len(), 8);
    let mut map = ShaMap::new(MapKind::TransactionNoMeta);
    for (k, (key, root)) in keys.iter().zip(&roots).enumerate() {
        map.insert(*key, &[k as u8; 32]).expect("new key");
        assert_eq!(map.root_hash(), *root, "root after inserting item {k}");
        map.check().expect("canonical after insert");
    }
    for k in (0..keys.len()).rev() {
        assert_eq!(map.root_hash(), roots[k], "root before deleting item {k}");
        map.remove(&keys[k]).expect("present");
        map.check().expect("canonical after delete");
    }
    assert_eq!(map.root_hash(), Hash256::ZERO);
    assert!(map.is_empty());
}

#[test]
fn iteration_yields_ascending_order_whatever_the_insert_order() {
    let v = vectors();
    let order = strings(&v["iterate_order"]["insert_order"], str::to_owned);
    let full = strings(&v["build_tear"]["keys"], hex_key);
    let mut map = ShaMap::new(MapKind::TransactionNoMeta);
    for prefix in &order {
        let key = full
            .iter()
            .find(|k| k.to_hex().to_lowercase().starts_with(prefix.as_str()))
            .expect("prefix of a build_tear key");
        map.insert(*key, &[1; 32]).expect("new");
    }
    let got: Vec<String> = map
        .iter()
        .map(|(k, _)| k.to_hex().to_lowercase()[..8].to_string())
        .collect();
    let mut want = order.clone();
    want.reverse();
    assert_eq!(got, want);
}

#[test]
fn delta_script_behaves_like_rippled() {
    let (mut map, h) = delta_script();
    // rippled's test snapshots the map here; a clone is an independent copy
    // too, and compares as a map (snapshots: tests/versions.rs).
    let mut snap = map.clone();
    assert_eq!(snap.root_hash(), map.root_hash());
    assert_eq!(naive_delta(&map, &snap), Vec::<(Key, bool, bool)>::new());
    let before = snap.root_hash();
    map.remove(&h("h1")).expect("present");
    assert_ne!(map.root_hash(), before);
    assert_eq!(snap.root_hash(), before, "the copy is unaffected");
    assert_eq!(naive_delta(&map, &snap), vec![(h("h1"), false, true)]);
}

/// (key, present in a, present in b) for keys whose data differ.
fn naive_delta(a: &ShaMap, b: &ShaMap) -> Vec<(Key, bool, bool)> {
    let mut out = Vec::new();
    let all: std::collections::BTreeSet<Key> = a.iter().chain(b.iter()).map(|(k, _)| *k).collect();
    for k in all {
        let (x, y) = (a.get(&k), b.get(&k));
        if x != y {
            out.push((k, x.is_some(), y.is_some()));
        }
    }
    out
}

#[test]
fn single_item_maps_of_each_kind_match_derived_hashes() {
    let v = vectors();
    let s = &v["single_item_derived"];
    let key = hex_key(s["key"].as_str().expect("key"));
    for (name, kind) in [
        ("tx_nm", MapKind::TransactionNoMeta),
        ("tx_md", MapKind::TransactionWithMeta),
        ("state", MapKind::AccountState),
    ] {
        let case = &s["by_leaf_type"][name];
        assert_eq!(
            kind.leaf_hash(&key, &[1; 32]),
            hex_hash(case["leaf_hash"].as_str().expect("hex")),
            "{name} leaf"
        );
        let mut m = ShaMap::new(kind);
        m.insert(key, &[1; 32]).expect("new");
        assert_eq!(
            m.root_hash(),
            hex_hash(case["root_hash"].as_str().expect("hex")),
            "{name} root"
        );
    }
}

#[test]
fn deepest_possible_tree_matches_derived_roots() {
    let v = vectors();
    let mut m = deep_map_checked(|_, _| {});
    m.check().expect("canonical");
    for c in (1..=99u8).rev() {
        m.remove(&small_key(c)).expect("present");
        if let Some(want) = derived_deep_root(&v, c - 1) {
            assert_eq!(m.root_hash(), want, "after removing down to {}", c - 1);
        }
        m.check().expect("canonical while tearing down");
    }
    assert_eq!(m.root_hash(), Hash256::ZERO);
}

#[test]
fn ledger_header_hashes_match_rippled_and_xahaud() {
    let v = vectors();
    for case in v["ledger_headers"]["cases"].as_array().expect("cases") {
        let hh = |f: &str| hex_hash(case[f].as_str().expect("hex"));
        let num = |f: &str| case[f].as_u64().expect("number");
        let header = LedgerHeader {
            seq: num("seq") as u32,
            total_coins: case["total_coins"]
                .as_str()
                .expect("str")
                .parse()
                .expect("u64"),
            parent_hash: hh("parent_hash"),
            transaction_hash: hh("transaction_hash"),
            account_hash: hh("account_hash"),
            parent_close_time: num("parent_close_time") as u32,
            close_time: num("close_time") as u32,
            close_time_resolution: num("close_time_resolution") as u8,
            close_flags: num("close_flags") as u8,
        };
        assert_eq!(header.hash(), hh("ledger_hash"), "{}", case["source"]);
    }
}
