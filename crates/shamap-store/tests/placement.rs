//! Every reader rejects a stored leaf that is not where its key says it
//! belongs (off its nibble path, or as a map root), with an error naming
//! the node's hash: `StoredMap::get`, the stored-map iterator, the backed
//! map (get, writes, scans, cache hits), `verify`, and sync (walking stored
//! nodes and checking received blobs).

use std::ops::ControlFlow;

use shamap::{Hash256, MapKind};
use shamap_store::{
    map::verify::verify_map, missing_nodes, verify_all, wire_blob, AddOutcome, BackedMap,
    BackedOptions, MemStore, NodeId, NodeStore, StoreError, StoredMap, SyncSession, VerifyReport,
};

use crate::support::{misplaced_leaf, Misplaced};

const KINDS: [MapKind; 2] = [MapKind::AccountState, MapKind::TransactionWithMeta];

/// `err` is a [`StoreError::BadNode`] for `hash` at nibble path `path`,
/// and its one-line message names the hash.
fn names(err: &StoreError, hash: Hash256, path: &str) {
    match err {
        StoreError::BadNode {
            hash: h, path: p, ..
        } => {
            assert_eq!(*h, hash, "{err}");
            assert_eq!(p, path, "{err}");
        }
        other => panic!("not a BadNode: {other}"),
    }
    let msg = err.to_string();
    assert!(msg.contains(&hash.to_string()), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");
}

/// An error (of any variant) whose message names `hash`.
fn mentions(err: &StoreError, hash: Hash256) {
    let msg = err.to_string();
    assert!(msg.contains(&hash.to_string()), "{msg}");
}

fn blob(m: &Misplaced, hash: &Hash256) -> Vec<u8> {
    wire_blob(&m.store, hash)
        .expect("readable")
        .expect("present")
}

#[test]
fn stored_map_get_rejects_a_leaf_off_its_path_and_as_root() {
    for kind in KINDS {
        let m = misplaced_leaf(kind);
        let sm = StoredMap::open(&m.store, m.root, kind).expect("the root is fine");
        // Where they belong, the leaves read.
        for (k, d) in &m.items {
            assert_eq!(sm.get(k).expect("in place").as_ref(), Some(d));
        }
        // The walk for the probe meets B under branch 8: not its path.
        let err = sm.get(&m.probe).expect_err("B is off its path");
        names(&err, m.leaf, m.misplaced_at);
        let Err(err) = StoredMap::open(&m.store, m.lone_leaf, kind) else {
            panic!("a leaf opened as a map root");
        };
        mentions(&err, m.lone_leaf);
    }
}

#[test]
fn stored_map_iterator_rejects_a_leaf_off_its_path() {
    for kind in KINDS {
        let m = misplaced_leaf(kind);
        let sm = StoredMap::open(&m.store, m.root, kind).expect("the root is fine");
        let mut it = sm.iter();
        for want in &m.items[..2] {
            assert_eq!(&it.next().expect("an item").expect("in place"), want);
        }
        let err = it.next().expect("an item").expect_err("B is off its path");
        names(&err, m.leaf, m.misplaced_at);
        assert!(it.next().is_none(), "stops after the error");
    }
}

#[test]
fn backed_map_rejects_a_leaf_off_its_path_even_from_its_cache() {
    for kind in KINDS {
        let m = misplaced_leaf(kind);
        let open = || {
            BackedMap::open(&m.store, m.root, kind, BackedOptions::default())
                .expect("the root is fine")
        };
        // Loaded from the store at the wrong place.
        let backed = open();
        let err = backed.get(&m.probe).expect_err("B is off its path");
        names(&err, m.leaf, m.misplaced_at);
        // Loaded (and cached) where it belongs first, then met off its path:
        // the cache hit is checked against its place too.
        let backed = open();
        assert_eq!(
            backed.get(&m.leaf_key).expect("in place").as_deref(),
            Some(&m.items[2].1[..])
        );
        let err = backed.get(&m.probe).expect_err("B is off its path");
        names(&err, m.leaf, m.misplaced_at);
        // A scan.
        let mut seen = Vec::new();
        let err = backed
            .for_each(&mut |k, _| {
                seen.push(*k);
                ControlFlow::Continue(())
            })
            .expect_err("the scan meets B off its path");
        names(&err, m.leaf, m.misplaced_at);
        assert_eq!(seen, vec![m.items[0].0, m.items[1].0]);
        // Writes on the probe's path fail and change nothing.
        let mut backed = open();
        let err = backed
            .upsert(m.probe, b"new")
            .expect_err("B is off its path");
        names(&err, m.leaf, m.misplaced_at);
        assert_eq!(backed.root_hash(), m.root);
        assert!(!backed.is_dirty());
        // The same with B cached first: before the one fetch, a cache hit
        // went unchecked, the scan yielded B twice and this write split B
        // against the probe down past depth 64 (a panic).
        let mut backed = open();
        backed.get(&m.leaf_key).expect("in place");
        let err = backed
            .for_each(&mut |_, _| ControlFlow::Continue(()))
            .expect_err("the scan meets B off its path");
        names(&err, m.leaf, m.misplaced_at);
        let err = backed
            .upsert(m.probe, b"new")
            .expect_err("B is off its path");
        names(&err, m.leaf, m.misplaced_at);
        let err = backed.remove(&m.probe).expect_err("B is off its path");
        names(&err, m.leaf, m.misplaced_at);
        assert_eq!(backed.root_hash(), m.root);
        // A leaf as the root.
        let err = BackedMap::open(&m.store, m.lone_leaf, kind, BackedOptions::default())
            .expect_err("a leaf as root");
        names(&err, m.lone_leaf, "");
    }
}

#[test]
fn verify_rejects_a_leaf_off_its_path_and_as_root() {
    for kind in KINDS {
        let m = misplaced_leaf(kind);
        let err = verify_all(&m.store, &m.root).expect_err("B is off its path");
        names(&err, m.leaf, m.misplaced_at);
        let mut report = VerifyReport::default();
        let err = verify_map(&m.store, &m.root, kind, &mut report).expect_err("B");
        names(&err, m.leaf, m.misplaced_at);
        let err = verify_all(&m.store, &m.lone_leaf).expect_err("a leaf as root");
        names(&err, m.lone_leaf, "");
        let err = verify_map(&m.store, &m.lone_leaf, kind, &mut report).expect_err("leaf root");
        names(&err, m.lone_leaf, "");
    }
}

#[test]
fn sync_rejects_a_leaf_off_its_path_and_as_root() {
    for kind in KINDS {
        let m = misplaced_leaf(kind);
        // Walking a store that holds the whole (bad) map.
        let mut s = SyncSession::new(&m.store, m.root, kind);
        let err = s.missing_nodes(100).expect_err("B is off its path");
        names(&err, m.leaf, m.misplaced_at);
        let err = missing_nodes(&m.store, m.root, 100).expect_err("one-shot");
        names(&err, m.leaf, m.misplaced_at);
        let mut s = SyncSession::new(&m.store, m.lone_leaf, kind);
        let err = s.missing_nodes(100).expect_err("a leaf as root");
        names(&err, m.lone_leaf, "");

        // Receiving the nodes as blobs: B offered at 58 is refused.
        let target = MemStore::new();
        let mut s = SyncSession::new(&target, m.root, kind);
        assert_eq!(
            s.add_root_node(&blob(&m, &m.root)).expect("add"),
            AddOutcome::Useful
        );
        let x_id = NodeId::new(&m.probe, 1).expect("id");
        assert_eq!(
            s.add_known_node(&x_id, &blob(&m, &m.inner)).expect("add"),
            AddOutcome::Useful
        );
        let b_id = NodeId::new(&m.probe, 2).expect("id");
        match s.add_known_node(&b_id, &blob(&m, &m.leaf)).expect("add") {
            AddOutcome::Invalid(reason) => {
                assert!(reason.contains(&m.leaf.to_string()), "{reason}");
                assert!(reason.contains("not on its path"), "{reason}");
            }
            other => panic!("accepted B off its path: {other:?}"),
        }
        assert!(!target.contains(&m.leaf).expect("read"));
        // Where it belongs, B is accepted.
        let b_home = NodeId::new(&m.leaf_key, 2).expect("id");
        assert_eq!(
            s.add_known_node(&b_home, &blob(&m, &m.leaf)).expect("add"),
            AddOutcome::Useful
        );
        // A leaf offered as the root (hashing to the root the session wants).
        let target = MemStore::new();
        let mut s = SyncSession::new(&target, m.lone_leaf, kind);
        match s.add_root_node(&blob(&m, &m.lone_leaf)).expect("add") {
            AddOutcome::Invalid(reason) => {
                assert!(reason.contains(&m.lone_leaf.to_string()), "{reason}");
            }
            other => panic!("accepted a leaf as root: {other:?}"),
        }
        assert_eq!(target.node_count(), 0);
    }
}
