//! Proof verification: rippled's proof behaviours, every key of random maps,
//! tampering, non-inclusion, multi-key proofs and snapshots. Transactions
//! proven in the real ledgers of `data/` are tested in `shamap-ledger`,
//! which reads them.

use std::collections::BTreeSet;

use rand::rngs::SmallRng;
use rand::Rng;
use shamap::verify::{
    verify_multi, verify_path, verify_tx_in_ledger, ProofError, ProofOutcome, TxInLedgerProof,
    MAX_PATH_NODES,
};
use shamap::xrpl::wire::{decode, encode_inner, encode_inner_full, encode_leaf, WireNode};
use shamap::xrpl::{transaction_id, tx_with_meta_item};
use shamap::{Hash256, Key, MapKind, ShaMap};

use crate::common::{deep_map_checked, key_near, key_sharing, random_key, rng, small_key};

/// Random data of 12..max bytes: rippled's (and the wire decoder's) minimum
/// leaf size is 12.
fn leaf_data(r: &mut SmallRng, max: usize) -> Vec<u8> {
    let len = r.gen_range(12..max);
    (0..len).map(|_| r.gen()).collect()
}

/// A random account-state map of `n` entries and its keys.
fn random_map(r: &mut SmallRng, n: usize) -> (ShaMap, Vec<Key>) {
    let mut m = ShaMap::new(MapKind::AccountState);
    let mut keys = Vec::with_capacity(n);
    while keys.len() < n {
        let k = random_key(r);
        if m.insert(k, &leaf_data(r, 100)).is_ok() {
            keys.push(k);
        }
    }
    (m, keys)
}

/// [`random_map`] and its root hash.
fn random_hashed_map(r: &mut SmallRng, n: usize) -> (ShaMap, Vec<Key>, Hash256) {
    let (mut m, keys) = random_map(r, n);
    let root = m.root_hash();
    (m, keys, root)
}

/// The generator `rng(name, seed)` and the [`random_hashed_map`] of `n`
/// keys drawn from it first.
fn seeded_hashed_map(name: &str, seed: u64, n: usize) -> (SmallRng, ShaMap, Vec<Key>, Hash256) {
    let mut r = rng(name, seed);
    let (m, keys, root) = random_hashed_map(&mut r, n);
    (r, m, keys, root)
}

/// One of `keys`, drawn by `r`.
fn any_key(r: &mut SmallRng, keys: &[Key]) -> Key {
    keys[r.gen_range(0..keys.len())]
}

/// The `proof_map_derived` map: keys 1..=99 as `uint256(c)`, data = key.
fn deep_map() -> ShaMap {
    deep_map_checked(|_, _| {})
}

fn included(data: &[u8], kind: MapKind) -> ProofOutcome {
    ProofOutcome::Included {
        data: data.to_vec(),
        kind,
    }
}

#[test]
fn rippled_path_proof_script_extra_node_wrong_key_and_too_long() {
    deep_map_checked(|m, c| {
        let k = small_key(c);
        let root = m.root_hash();
        let mut path = m.proof_path(&k);
        assert!(path.included);
        assert_eq!(path.root, root);
        assert_eq!(
            verify_path(&root, &k, &path.nodes),
            Ok(included(&k.0, MapKind::AccountState)),
            "key {c}"
        );
        if c == 1 {
            // Extra node: the leaf repeated in front.
            path.nodes.insert(0, path.nodes[0].clone());
            assert_eq!(
                verify_path(&root, &k, &path.nodes),
                Err(ProofError::ExtraNodes { count: 1 })
            );
            // Wrong key: the map has no proof of inclusion for it, and the
            // proof of key 1 does not pass as one.
            let wrong = small_key(c + 1);
            assert!(!m.proof_path(&wrong).included);
            path.nodes.remove(0);
            let got = verify_path(&root, &wrong, &path.nodes);
            assert!(!matches!(got, Ok(ProofOutcome::Included { .. })), "{got:?}");
        }
        if c == 99 {
            // The deepest possible path: 64 inner nodes and a leaf.
            assert_eq!(path.nodes.len(), MAX_PATH_NODES);
            // Too long: one more node is rejected by the count alone.
            path.nodes.insert(0, path.nodes[0].clone());
            assert_eq!(
                verify_path(&root, &k, &path.nodes),
                Err(ProofError::TooManyNodes {
                    count: 66,
                    max: MAX_PATH_NODES
                })
            );
        }
    });
}

#[test]
fn the_node_count_is_checked_before_any_decoding() {
    let garbage = vec![vec![0xEEu8; 3]; 66];
    assert_eq!(
        verify_path(&Hash256([1; 32]), &Key([1; 32]), &garbage),
        Err(ProofError::TooManyNodes { count: 66, max: 65 })
    );
    // Multi-key proofs: 65 per key.
    let keys = [Key([1; 32]), Key([2; 32])];
    let garbage = vec![vec![0xEEu8; 3]; 131];
    assert_eq!(
        verify_multi(&Hash256([1; 32]), &keys, &garbage),
        Err(ProofError::TooManyNodes {
            count: 131,
            max: 130
        })
    );
}

#[test]
fn empty_path_proves_only_the_empty_map() {
    let empty: [Vec<u8>; 0] = [];
    let k = Key([3; 32]);
    assert_eq!(
        verify_path(&Hash256([9; 32]), &k, &empty),
        Err(ProofError::EmptyPath {
            root: Hash256([9; 32])
        })
    );
    assert_eq!(
        verify_path(&Hash256::ZERO, &k, &empty),
        Ok(ProofOutcome::Absent)
    );
    // The engine's proof for an empty map is that empty path.
    let mut m = ShaMap::new(MapKind::AccountState);
    let p = m.proof_path(&k);
    assert!(p.nodes.is_empty() && !p.included && p.root.is_zero());
    assert_eq!(
        verify_multi(&Hash256::ZERO, &[k], &empty),
        Ok(vec![(k, ProofOutcome::Absent)])
    );
}

#[test]
fn garbage_and_bad_node_types_are_rejected() {
    let mut m = deep_map();
    let k = small_key(40);
    let root = m.root_hash();
    let good = m.proof_path(&k).nodes;
    let garbage: [&[u8]; 6] = [
        &[],
        &[1],
        &[0xFF; 40],
        b"not a node at all, just text",
        &[0x02; 100],
        &[0x03; 34],
    ];
    for g in garbage {
        for at in [0, 10, good.len() - 1] {
            let mut p = good.clone();
            p[at] = g.to_vec();
            let e = verify_path(&root, &k, &p).expect_err("garbage node accepted");
            assert!(
                matches!(
                    e,
                    ProofError::Malformed { index, .. } | ProofError::HashMismatch { index, .. }
                        if index == at
                ),
                "{e:?}"
            );
        }
    }
    // Bad node type: every type byte rippled does not define.
    for at in [0, 1, 32, good.len() - 1] {
        for t in 5..=255u8 {
            let mut p = good.clone();
            *p[at].last_mut().expect("non-empty blob") = t;
            assert!(
                matches!(
                    verify_path(&root, &k, &p),
                    Err(ProofError::Malformed { index, .. }) if index == at
                ),
                "type {t} at {at}"
            );
        }
    }
}

#[test]
fn a_path_without_its_leaf_is_rejected() {
    let (mut m, keys, root) = random_hashed_map(&mut rng("missing-leaf", 7), 300);
    for k in keys.iter().take(50) {
        let p = m.proof_path(k).nodes;
        let e = verify_path(&root, k, &p[1..]).expect_err("missing leaf accepted");
        assert!(
            matches!(e, ProofError::MissingNode { depth, .. } if depth == p.len() - 1),
            "{e:?}"
        );
    }
}

#[test]
fn every_key_of_a_random_map_has_a_verifying_proof() {
    let (mut m, keys, root) = random_hashed_map(&mut rng("every-key", 2000), 2000);
    for k in &keys {
        let p = m.proof_path(k);
        assert!(p.included);
        let want = included(m.get(k).expect("present"), MapKind::AccountState);
        assert_eq!(verify_path(&root, k, &p.nodes), Ok(want), "key {k}");
        // Another root rejects it.
        assert!(verify_path(&Hash256([1; 32]), k, &p.nodes).is_err());
    }
}

#[test]
fn inner_nodes_verify_in_either_wire_form() {
    let (mut m, keys, root) = random_hashed_map(&mut rng("wire-forms", 5), 500);
    for k in keys.iter().take(100) {
        let mut p = m.proof_path(k).nodes;
        for blob in p.iter_mut().skip(1) {
            let Ok(WireNode::Inner(children)) = decode(blob) else {
                panic!("inner node expected above the leaf");
            };
            *blob = encode_inner_full(&children);
        }
        assert!(verify_path(&root, k, &p)
            .expect("full form verifies")
            .is_included());
    }
}

/// Asserts that the proof `p` with byte `at.1` of node `at.0` XOR-ed with
/// `x` is rejected; `p` is restored afterwards.
fn assert_flip_rejected(root: &Hash256, key: &Key, p: &mut [Vec<u8>], at: (usize, usize), x: u8) {
    p[at.0][at.1] ^= x;
    let got = verify_path(root, key, p);
    p[at.0][at.1] ^= x;
    assert!(
        got.is_err(),
        "flip {x:#04x} at node {} byte {} accepted: {got:?}",
        at.0,
        at.1
    );
}

#[test]
fn flipping_any_sampled_byte_of_a_random_proof_fails() {
    let (mut r, mut m, keys, root) = seeded_hashed_map("flips", 99, 2000);
    for _ in 0..400 {
        let k = any_key(&mut r, &keys);
        let mut p = m.proof_path(&k).nodes;
        let node = r.gen_range(0..p.len());
        let byte = r.gen_range(0..p[node].len());
        let x = r.gen_range(1..=255u8);
        assert_flip_rejected(&root, &k, &mut p, (node, byte), x);
    }
}

#[test]
fn flipping_any_byte_of_the_deepest_proof_fails() {
    let mut m = deep_map();
    let root = m.root_hash();
    let k = small_key(1);
    let good = m.proof_path(&k).nodes;
    assert_eq!(good.len(), 65);
    // Every byte, inverted and with one bit flipped (the bit rotating with
    // the position, so every bit of every kind of field is hit).
    let mut p = good.clone();
    let mut tried = 0;
    for node in 0..p.len() {
        for byte in 0..p[node].len() {
            for x in [0xFF, 1 << (byte % 8)] {
                assert_flip_rejected(&root, &k, &mut p, (node, byte), x);
                tried += 1;
            }
        }
    }
    assert_eq!(p, good);
    assert!(tried > 2 * 2000, "{tried}");
    // Truncating or extending any node fails too.
    for node in 0..good.len() {
        let mut p = good.clone();
        p[node].pop();
        assert!(verify_path(&root, &k, &p).is_err(), "truncated node {node}");
        let mut p = good.clone();
        p[node].insert(0, 0);
        assert!(verify_path(&root, &k, &p).is_err(), "extended node {node}");
    }
}

#[test]
fn an_inclusion_proof_presented_for_an_absent_key_fails() {
    let (mut r, mut m, keys, root) = seeded_hashed_map("absent-key", 3, 2000);
    for _ in 0..500 {
        let present = any_key(&mut r, &keys);
        let absent = key_near(&mut r, &present);
        if m.contains(&absent) {
            continue;
        }
        let p = m.proof_path(&present).nodes;
        let got = verify_path(&root, &absent, &p);
        assert!(
            !matches!(got, Ok(ProofOutcome::Included { .. })),
            "proof of {present} included {absent}"
        );
    }
}

#[test]
fn non_inclusion_proofs_verify_as_absent_in_both_shapes() {
    let (mut r, mut m, keys, root) = seeded_hashed_map("non-inclusion", 11, 2000);
    let (mut at_empty_branch, mut at_other_leaf) = (0, 0);
    for i in 0..1000u32 {
        // Half random keys (mostly an empty branch), half keys sharing many
        // nibbles with a present key (mostly that key's leaf).
        let absent = if i.is_multiple_of(2) {
            random_key(&mut r)
        } else {
            let base = any_key(&mut r, &keys);
            let shared = r.gen_range(6..64);
            key_sharing(&mut r, &base, shared)
        };
        if m.contains(&absent) {
            continue;
        }
        let p = m.proof_path(&absent);
        assert!(!p.included);
        assert_eq!(
            verify_path(&root, &absent, &p.nodes),
            Ok(ProofOutcome::Absent)
        );
        match decode(&p.nodes[0]).expect("valid") {
            WireNode::Inner(_) => at_empty_branch += 1,
            WireNode::Leaf { key, .. } => {
                assert_ne!(key, absent);
                at_other_leaf += 1;
            }
        }
        // The same proof does not prove inclusion of a present key beside it.
        if let WireNode::Leaf { key, .. } = decode(&p.nodes[0]).expect("valid") {
            assert!(verify_path(&root, &key, &p.nodes)
                .expect("valid for the leaf's own key")
                .is_included());
        }
    }
    assert!(at_empty_branch > 100, "{at_empty_branch}");
    assert!(at_other_leaf > 100, "{at_other_leaf}");
    // Deep map: a key that stops at the depth-63 node's empty branch.
    let mut d = deep_map();
    let root = d.root_hash();
    for (b, nodes, why) in [
        (0x70, 63, "root..depth-62 node; branch 7 is empty"),
        (0x6F, 64, "the depth-63 node; branch F is empty"),
    ] {
        let absent = small_key(b);
        let p = d.proof_path(&absent);
        assert_eq!(p.nodes.len(), nodes, "{why}");
        assert_eq!(
            verify_path(&root, &absent, &p.nodes),
            Ok(ProofOutcome::Absent)
        );
    }
}

#[test]
fn proofs_from_a_snapshot_stay_valid_while_the_map_changes() {
    let mut r = rng("snapshot-proofs", 21);
    let (mut m, keys) = random_map(&mut r, 1000);
    let snap = m.snapshot();
    let old_root = snap.root_hash();
    let old: Vec<(Key, Vec<u8>)> = keys
        .iter()
        .take(200)
        .map(|k| (*k, m.get(k).expect("present").to_vec()))
        .collect();
    for (i, k) in keys.iter().enumerate().take(300) {
        match i % 3 {
            0 => m.remove(k).expect("present"),
            1 => m.update(*k, &leaf_data(&mut r, 60)).expect("present"),
            _ => m.insert(key_near(&mut r, k), &[5; 20]).unwrap_or(()),
        }
    }
    let new_root = m.root_hash();
    assert_ne!(new_root, old_root);
    for (i, (k, data)) in old.iter().enumerate() {
        let p = snap.proof_path(k);
        assert_eq!(p.root, old_root);
        assert_eq!(
            verify_path(&old_root, k, &p.nodes),
            Ok(included(data, MapKind::AccountState))
        );
        // The live map's proof is for the new root only.
        let live = m.proof_path(k);
        assert!(verify_path(&new_root, k, &live.nodes).is_ok());
        if i.is_multiple_of(3) {
            assert!(!live.included);
        }
        assert!(verify_path(&old_root, k, &live.nodes).is_err());
    }
}

#[test]
fn multi_key_proofs_verify_and_are_smaller_than_single_proofs() {
    let (mut r, mut m, keys, root) = seeded_hashed_map("multi", 8, 2000);
    let sorted: Vec<Key> = keys
        .iter()
        .copied()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    for round in 0..20 {
        // Nearby keys: a run of neighbours in key order, plus absent keys
        // next to them.
        let start = r.gen_range(0..sorted.len() - 8);
        let mut ask: Vec<Key> = sorted[start..start + 8].to_vec();
        for _ in 0..3 {
            let base = ask[r.gen_range(0..ask.len())];
            let k = key_near(&mut r, &base);
            if !m.contains(&k) {
                ask.push(k);
            }
        }
        let multi = m.multi_proof(&ask);
        let got = verify_multi(&root, &ask, &multi).expect("valid multi proof");
        let (mut single_nodes, mut single_bytes) = (0, 0);
        for (k, outcome) in &got {
            let p = m.proof_path(k);
            assert_eq!(verify_path(&root, k, &p.nodes).as_ref(), Ok(outcome));
            assert_eq!(outcome.is_included(), m.contains(k));
            single_nodes += p.nodes.len();
            single_bytes += p.nodes.iter().map(Vec::len).sum::<usize>();
        }
        let multi_bytes: usize = multi.iter().map(Vec::len).sum();
        assert!(multi.len() < single_nodes, "round {round}");
        assert!(multi_bytes < single_bytes, "round {round}");
        // Order does not matter.
        let mut reversed = multi.clone();
        reversed.reverse();
        assert_eq!(verify_multi(&root, &ask, &reversed).as_ref(), Ok(&got));
    }
}

#[test]
fn multi_key_proofs_reject_smuggled_duplicated_missing_and_flipped_nodes() {
    let (mut r, mut m, keys, root) = seeded_hashed_map("multi-reject", 9, 1000);
    let ask = [keys[0], keys[1], keys[2]];
    let good = m.multi_proof(&ask);
    assert!(verify_multi(&root, &ask, &good).is_ok());
    // A node from another key's path (valid bytes, but unused).
    let other = m.proof_path(&keys[3]).nodes;
    let extra = other
        .iter()
        .find(|b| !good.contains(b))
        .expect("some node of another path is not in the proof")
        .clone();
    let mut p = good.clone();
    p.push(extra);
    assert_eq!(
        verify_multi(&root, &ask, &p),
        Err(ProofError::UnusedNode { index: good.len() })
    );
    // The same node twice, also in the other wire form.
    let mut p = good.clone();
    p.push(good[1].clone());
    assert_eq!(
        verify_multi(&root, &ask, &p),
        Err(ProofError::DuplicateNode {
            index: good.len(),
            first: 1
        })
    );
    let WireNode::Inner(children) = decode(&good[0]).expect("root") else {
        panic!("root is inner");
    };
    let mut p = good.clone();
    p.push(encode_inner_full(&children));
    assert!(matches!(
        verify_multi(&root, &ask, &p),
        Err(ProofError::DuplicateNode { first: 0, .. })
    ));
    // A missing node.
    for drop in 0..good.len() {
        let mut p = good.clone();
        p.remove(drop);
        let e = verify_multi(&root, &ask, &p).expect_err("missing node accepted");
        assert!(matches!(e, ProofError::MissingNode { .. }), "{e:?}");
    }
    // Flipped bytes.
    for _ in 0..300 {
        let mut p = good.clone();
        let node = r.gen_range(0..p.len());
        let byte = r.gen_range(0..p[node].len());
        p[node][byte] ^= r.gen_range(1..=255u8);
        assert!(verify_multi(&root, &ask, &p).is_err());
    }
    // Fewer keys than the proof covers: the other paths' nodes are unused.
    assert!(matches!(
        verify_multi(&root, &ask[..1], &good),
        Err(ProofError::UnusedNode { .. })
    ));
    // No keys, no nodes: nothing to show.
    let none: [Vec<u8>; 0] = [];
    assert_eq!(verify_multi(&root, &[], &none), Ok(vec![]));
}

#[test]
fn leaves_of_different_kinds_in_one_proof_are_rejected() {
    let a = Key([0x11; 32]);
    let b = Key([0x22; 32]);
    let la = encode_leaf(MapKind::AccountState, &a, &[1; 12]);
    let lb = encode_leaf(MapKind::TransactionWithMeta, &b, &[2; 12]);
    let mut children = [Hash256::ZERO; 16];
    children[1] = decode(&la).expect("valid").hash();
    children[2] = decode(&lb).expect("valid").hash();
    let rb = encode_inner(&children);
    let root = decode(&rb).expect("valid").hash();
    assert_eq!(
        verify_multi(&root, &[a, b], &[rb, la.clone(), lb.clone()]),
        Err(ProofError::MixedKinds {
            index: 2,
            found: "tx",
            first: 1,
            expected: "state"
        })
    );
    // Each path alone is fine: the kind comes with the leaf.
    let rb = encode_inner(&children);
    assert_eq!(
        verify_path(&root, &b, &[lb, rb]),
        Ok(included(&[2; 12], MapKind::TransactionWithMeta))
    );
}

#[test]
fn transaction_only_leaves_prove_their_derived_key() {
    let mut m = ShaMap::new(MapKind::TransactionNoMeta);
    let mut ids = Vec::new();
    for i in 0..50u8 {
        let blob = vec![i; 20 + usize::from(i)];
        let id = Key::from(transaction_id(&blob));
        m.insert(id, &blob).expect("new");
        ids.push((id, blob));
    }
    let root = m.root_hash();
    for (id, blob) in &ids {
        let p = m.proof_path(id);
        assert_eq!(
            verify_path(&root, id, &p.nodes),
            Ok(included(blob, MapKind::TransactionNoMeta))
        );
    }
}

#[test]
fn a_tx_proof_of_the_wrong_kind_or_id_is_rejected() {
    // A state leaf standing where a transaction should be.
    let (tx, meta) = (vec![0x12; 30], vec![0x20; 15]);
    let (id, data) = tx_with_meta_item(&tx, &meta).expect("small");
    let mut state = ShaMap::new(MapKind::AccountState);
    state.insert(id, &data).expect("new");
    let header = |root| shamap::xrpl::LedgerHeader {
        seq: 1,
        total_coins: 1,
        parent_hash: Hash256::ZERO,
        transaction_hash: root,
        account_hash: Hash256::ZERO,
        parent_close_time: 0,
        close_time: 0,
        close_time_resolution: 10,
        close_flags: 0,
    };
    // The proof of `key` in `map` as the transactions of a ledger, checked
    // against that ledger's hash.
    let check = |map: &mut ShaMap, key: &Key| {
        let h = header(map.root_hash());
        let proof = TxInLedgerProof {
            header: h,
            tx_path: map.proof_path(key).nodes,
        };
        verify_tx_in_ledger(&h.hash(), key, &proof)
    };
    assert_eq!(
        check(&mut state, &id),
        Err(ProofError::WrongKind { found: "state" })
    );
    // Leaf data filed under a key that is not its transaction's ID.
    let wrong = Key([0x33; 32]);
    let mut txs = ShaMap::new(MapKind::TransactionWithMeta);
    txs.insert(wrong, &data).expect("new");
    assert!(matches!(
        check(&mut txs, &wrong),
        Err(ProofError::TxIdMismatch { .. })
    ));
    // Leaf data that is not two VL blobs.
    let mut txs = ShaMap::new(MapKind::TransactionWithMeta);
    txs.insert(wrong, &[0xFF; 20]).expect("new");
    assert!(matches!(
        check(&mut txs, &wrong),
        Err(ProofError::BadTxData(_))
    ));
}

#[test]
fn a_multi_proof_for_no_keys_is_empty() {
    let (mut m, _, root) = random_hashed_map(&mut rng("multi-no-keys", 1), 10);
    let proof = m.multi_proof(&[]);
    assert_eq!(verify_multi(&root, &[], &proof), Ok(vec![]));
    assert!(proof.is_empty(), "the union of no paths has no nodes");
}

#[test]
fn a_leaf_below_rippleds_minimum_size_yields_a_proof_that_does_not_verify() {
    // The engine stores short data (see docs/design.md), but the wire
    // format, like rippled, rejects leaves under 12 bytes.
    let mut m = ShaMap::new(MapKind::AccountState);
    let k = Key([0x77; 32]);
    m.insert(k, &[1; 11]).expect("new");
    m.insert(Key([0x88; 32]), &[2; 12]).expect("new");
    let root = m.root_hash();
    let p = m.proof_path(&k);
    assert!(p.included);
    assert!(matches!(
        verify_path(&root, &k, &p.nodes),
        Err(ProofError::Malformed { index: 0, .. })
    ));
}
