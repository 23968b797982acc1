//! State sync through wire blobs only.

use shamap::xrpl::wire;
use shamap::{Hash256, MapKind};
use shamap_store::{
    missing_nodes, verify_all, wire_blob, AddOutcome, MemStore, Node, NodeId, NodeStore,
    NodeStoreExt, StoredMap, SyncSession,
};

use crate::support::{import_random, seed};

/// Entries of the full sync test: 100,000 (about 5 s in a debug build on
/// two cores: SHA-512 is built optimized even there), or
/// `SHAMAP_STORE_SYNC_N`.
fn sync_entries() -> usize {
    std::env::var("SHAMAP_STORE_SYNC_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
}

/// A source's answer to a request: the stored node as wire bytes, in the
/// full inner form every other time to exercise both forms.
fn fetch(source: &dyn NodeStore, hash: &Hash256, full: bool) -> Vec<u8> {
    let obj = source.load(hash).expect("source has every node");
    match obj.parse().expect("valid") {
        Node::Inner(children) if full => wire::encode_inner_full(&children),
        _ => wire_blob(source, hash).expect("readable").expect("present"),
    }
}

#[test]
fn a_100k_map_syncs_through_wire_blobs_and_compares_equal() {
    let n = sync_entries();
    let source = MemStore::new();
    let (snap, model) = import_random(&source, "src", n, seed(20));
    let root = snap.root_hash();

    let target = MemStore::new();
    let mut session = SyncSession::new(&target, root, MapKind::AccountState);
    let first = session.missing_nodes(256).expect("missing");
    assert_eq!(first, vec![(NodeId::ROOT, root)]);
    assert_eq!(
        session
            .add_root_node(&fetch(&source, &root, false))
            .expect("add"),
        AddOutcome::Useful
    );
    assert_eq!(
        session
            .add_root_node(&fetch(&source, &root, true))
            .expect("add"),
        AddOutcome::Duplicate
    );
    let (mut rounds, mut useful, mut flip) = (0, 0u64, false);
    loop {
        let missing = session.missing_nodes(4096).expect("missing");
        if missing.is_empty() {
            break;
        }
        rounds += 1;
        let blobs: Vec<(NodeId, Vec<u8>)> = missing
            .iter()
            .map(|(id, h)| {
                flip = !flip;
                (*id, fetch(&source, h, flip))
            })
            .collect();
        let offered: Vec<(NodeId, &[u8])> =
            blobs.iter().map(|(id, b)| (*id, b.as_slice())).collect();
        for o in session.add_known_nodes(&offered).expect("add") {
            assert_eq!(o, AddOutcome::Useful);
            useful += 1;
        }
    }
    eprintln!("{n} entries: {useful} nodes in {rounds} rounds");
    assert!(missing_nodes(&target, root, 10)
        .expect("missing")
        .is_empty());
    assert_eq!(target.node_count(), source.node_count());
    let report = verify_all(&target, &root).expect("complete and valid");
    assert_eq!(report.leaves as usize, n);
    let sm = StoredMap::open(&target, root, MapKind::AccountState).expect("open");
    let mut it = model.iter();
    for item in sm.iter() {
        let (k, d) = item.expect("readable");
        assert_eq!(it.next(), Some((&k, &d)));
    }
    assert_eq!(it.next(), None);
}

#[test]
fn bad_and_duplicate_blobs_are_reported_and_never_stored() {
    let source = MemStore::new();
    let (snap, _) = import_random(&source, "src", 500, seed(21));
    let root = snap.root_hash();
    let target = MemStore::new();
    let mut s = SyncSession::new(&target, root, MapKind::AccountState);
    // A root blob that is not the root.
    let missing = missing_nodes(&source, root, 0).expect("none");
    assert!(missing.is_empty());
    let leaf_blob = {
        let mut any = None;
        snap.for_each_node(|n| {
            if n.is_leaf && any.is_none() {
                any = Some(n.hash);
            }
        });
        fetch(&source, &any.expect("a leaf"), false)
    };
    assert!(matches!(
        s.add_root_node(&leaf_blob).expect("add"),
        AddOutcome::Invalid(_)
    ));
    assert!(matches!(
        s.add_root_node(&[1, 2, 3]).expect("add"),
        AddOutcome::Invalid(_)
    ));
    assert_eq!(target.node_count(), 0);
    assert_eq!(
        s.add_root_node(&fetch(&source, &root, false)).expect("add"),
        AddOutcome::Useful
    );
    let missing = s.missing_nodes(64).expect("missing");
    let (id, h) = missing[0];
    let good = fetch(&source, &h, false);
    // Wrong node for the ID, a flipped byte, garbage, a node ID nobody asked
    // for, and a child whose parent is not there yet.
    let (_, other) = missing[1];
    for bad in [
        fetch(&source, &other, false),
        {
            let mut b = good.clone();
            b[3] ^= 1;
            b
        },
        vec![0xFF; 40],
    ] {
        match s.add_known_node(&id, &bad).expect("add") {
            AddOutcome::Invalid(reason) => assert!(!reason.is_empty()),
            other => panic!("accepted a bad blob: {other:?}"),
        }
    }
    let stray = NodeId::new(&shamap::Key([0xEE; 32]), 9).expect("id");
    assert!(matches!(
        s.add_known_node(&stray, &good).expect("add"),
        AddOutcome::Invalid(_)
    ));
    assert_eq!(target.node_count(), 1);
    assert_eq!(
        s.add_known_node(&id, &good).expect("add"),
        AddOutcome::Useful
    );
    assert_eq!(
        s.add_known_node(&id, &good).expect("add"),
        AddOutcome::Duplicate
    );
    assert_eq!(target.node_count(), 2);
    // One-shot functions find the parent in the store.
    let (id2, h2) = missing[1];
    let blob2 = fetch(&source, &h2, true);
    assert_eq!(
        shamap_store::add_known_node(&target, MapKind::AccountState, root, &id2, &blob2)
            .expect("add"),
        AddOutcome::Useful
    );
    // Node IDs: 33 bytes, masked key then depth.
    let b = id2.to_bytes();
    assert_eq!(b[32], id2.depth());
    assert_eq!(NodeId::from_bytes(&b), Some(id2));
    let mut unmasked = b;
    unmasked[31] = 1;
    assert_eq!(NodeId::from_bytes(&unmasked), None);
}
