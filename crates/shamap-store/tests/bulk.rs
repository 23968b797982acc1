//! The bulk path of an import (an empty store: sorted runs through
//! `NodeStore::ingest_sorted`, then `finish_bulk`) against the batched path
//! (a store that already has nodes), on fjall and in memory.

use shamap::{Hash256, MapKind};
use shamap_store::{
    import_ledger, verify_all, write_snapshot, BulkIngest, FjallStore, MemStore, StoredMap,
};

use crate::support::{random_map, seed};

#[test]
fn a_bulk_import_stores_every_node_and_reopens_whole() {
    let s = seed(101);
    let (mut map, model) = random_map(MapKind::AccountState, 5000, s);
    let snap = map.snapshot();
    let dir = tempfile::tempdir().expect("tempdir");
    let bulk = {
        let store = FjallStore::open(dir.path()).expect("open");
        let r = import_ledger(&store, "base", Some(&snap), None, None, &mut |_| {})
            .expect("bulk import");
        assert_eq!(r.account_hash, snap.root_hash(), "seed {s}");
        r.stats
    };
    // The same map through the batched path (the store has nodes now).
    let mem = MemStore::new();
    mem.insert_raw(Hash256([0xEE; 32]), vec![0; 8]);
    let batched = write_snapshot(&mem, &snap, &mut |_| {}).expect("batched write");
    assert_eq!(
        (bulk.visited, bulk.written, bulk.bytes),
        (batched.visited, batched.written, batched.bytes),
        "seed {s}"
    );
    let store = FjallStore::open(dir.path()).expect("reopen");
    verify_all(&store, &snap.root_hash()).expect("the imported root verifies");
    let stored = StoredMap::open(&store, snap.root_hash(), MapKind::AccountState).expect("open");
    for (k, v) in model.iter().step_by(7) {
        assert_eq!(stored.get(k).expect("get").as_ref(), Some(v), "seed {s}");
    }
    // A second import of the same map finds every node and writes none.
    let again = write_snapshot(&store, &snap, &mut |_| {}).expect("second write");
    assert_eq!(again.written, 0, "seed {s}");
}

#[test]
fn nodes_out_of_hash_order_are_refused_not_a_panic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = FjallStore::open(dir.path()).expect("open");
    let nodes = vec![
        (Hash256([2; 32]), vec![0; 20]),
        (Hash256([1; 32]), vec![0; 20]),
    ];
    let e = store
        .ingest_sorted(&mut nodes.into_iter())
        .expect_err("out of order");
    assert!(e.to_string().contains("out of hash order"), "{e}");
}
