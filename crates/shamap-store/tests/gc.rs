//! History and garbage collection.

use std::sync::atomic::{AtomicBool, Ordering};

use shamap::{Hash256, Key, MapKind};
use shamap_store::{
    gc, meta, verify_all, write_changed, FjallStore, GcReport, MemStore, NodeStore, StoredMap,
};

use crate::support::{count, import_random, seed};

#[test]
fn gc_keeps_shared_nodes_and_drops_the_rest() {
    let store = MemStore::new();
    let (v1, model) = import_random(&store, "v1", 2000, seed(10));
    let keys: Vec<Key> = model.keys().copied().collect();
    let versions = crate::support::changed_versions(&store, v1, &keys);
    assert_eq!(meta::retained(&store).expect("meta").len(), 4);
    let before = count(&store);
    let keep = [versions[1].root_hash(), versions[3].root_hash()];
    let r = gc(&store, &keep).expect("gc");
    assert_eq!(count(&store), before - r.deleted);
    assert!(r.deleted > 0);
    for s in &versions[1..] {
        if keep.contains(&s.root_hash()) {
            verify_all(&store, &s.root_hash()).expect("kept version intact");
        }
    }
    assert!(verify_all(&store, &versions[0].root_hash()).is_err());
    assert_eq!(crate::support::retained_names(&store), ["v2", "v4"]);
    // Nothing left that no kept root reaches.
    let r2 = gc(&store, &keep).expect("gc again");
    assert_eq!(r2.deleted, 0);
    assert_eq!(r2.reachable, count(&store));
}

#[test]
fn gc_refuses_an_incomplete_root_and_deletes_nothing() {
    let store = MemStore::new();
    let (s, _) = import_random(&store, "a", 300, seed(11));
    let before = count(&store);
    let bogus = shamap::Hash256([7; 32]);
    let err = gc(&store, &[s.root_hash(), bogus]).expect_err("missing root");
    assert!(err.to_string().contains(&bogus.to_hex()), "{err}");
    assert_eq!(count(&store), before);
    assert_eq!(meta::retained(&store).expect("meta").len(), 1);
}

#[test]
fn a_reader_of_a_kept_root_runs_safely_beside_gc() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = FjallStore::open(dir.path()).expect("open");
    let (old, model) = import_random(&store, "old", 3000, seed(12));
    let mut m = old.to_map();
    let changed: Vec<Key> = model.keys().step_by(3).copied().collect();
    for k in &changed {
        m.update(*k, &[9; 40]).expect("update");
    }
    let new = m.snapshot();
    write_changed(&store, &new, &changed).expect("commit");
    shamap_store::record_root(&store, "new", new.root_hash(), Default::default()).expect("record");

    let r = gc_beside_a_reader(&store, &[new.root_hash()], new.root_hash(), model.len());
    assert!(r.deleted > 0);
    verify_all(&store, &new.root_hash()).expect("kept root intact");
}

/// Runs `gc(store, keep)` while another thread reads every item of the
/// kept root `read` (holding `items` items) over and over; no read may meet
/// a missing node. Returns gc's report.
pub(crate) fn gc_beside_a_reader(
    store: &dyn NodeStore,
    keep: &[Hash256],
    read: Hash256,
    items: usize,
) -> GcReport {
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut passes = 0;
            while !stop.load(Ordering::Relaxed) || passes == 0 {
                let sm =
                    StoredMap::open(store, read, MapKind::AccountState).expect("open kept root");
                let mut n = 0;
                for item in sm.iter() {
                    item.expect("no node of a kept root vanishes");
                    n += 1;
                }
                assert_eq!(n, items);
                passes += 1;
            }
            passes
        });
        let r = gc(store, keep).expect("gc");
        stop.store(true, Ordering::Relaxed);
        assert!(reader.join().expect("reader") > 0);
        r
    })
}

/// Some stored inner node other than `root`.
fn an_inner_node_below(store: &dyn NodeStore, root: Hash256) -> Hash256 {
    let mut found = None;
    store
        .for_each_value(&mut |h, v| {
            let obj = shamap_store::NodeObject::decode(h, v.to_vec()).expect("stored nodes decode");
            if h != root && matches!(obj.parse(), Ok(shamap_store::Node::Inner(_))) {
                found = Some(h);
                return std::ops::ControlFlow::Break(());
            }
            std::ops::ControlFlow::Continue(())
        })
        .expect("iterate");
    found.expect("a map of 2000 entries has inner nodes below its root")
}

#[test]
fn gc_refuses_a_hash_that_is_not_a_root_and_deletes_nothing() {
    let store = MemStore::new();
    let (s, _) = import_random(&store, "a", 2000, seed(13));
    let before = count(&store);
    let inner = an_inner_node_below(&store, s.root_hash());
    let err = gc(&store, &[inner]).expect_err("an inner node is not a root");
    assert!(
        matches!(err, shamap_store::StoreError::NotARoot { hash, .. } if hash == inner),
        "{err}"
    );
    assert_eq!(count(&store), before, "nothing deleted");
    assert_eq!(
        meta::retained(&store).expect("meta").len(),
        1,
        "list unchanged"
    );
    verify_all(&store, &s.root_hash()).expect("still verifies");
    // The empty map is a root every store knows; keeping it alone empties
    // the store of nodes, and that is what was asked.
    let r = gc(&store, &[Hash256::ZERO]).expect("the empty map is a root");
    assert_eq!((r.reachable, count(&store)), (0, 0));
}

/// A gc that fails part way (a full disk: every write from the third on
/// refused) reports how many nodes it deleted before the failure, not
/// "nothing"; the kept root stays whole, and gc run again finishes the job.
#[test]
fn a_gc_stopped_by_a_full_disk_counts_what_it_deleted_and_a_retry_finishes() {
    use shamap_store::backend::fault::{Fault, FaultError, FaultyStore, OpClass};
    let store = FaultyStore::new(MemStore::new());
    import_random(&store, "big", 16_000, seed(12));
    let kept = import_random(&store, "small", 50, seed(13)).0.root_hash();
    let before = count(&store);
    // The retained list's write passes, then one sweep batch, then the
    // disk is full.
    store.set(Fault {
        classes: vec![OpClass::Write],
        at: 3,
        error: FaultError::NoSpace,
        sticky: true,
    });
    let mut r = GcReport::default();
    let e = shamap_store::gc_counting(&store, &[kept], &mut r).expect_err("the disk fills");
    assert!(e.to_string().contains("No space left"), "{e}");
    assert!(r.deleted >= 10_000, "{r:?}");
    assert_eq!(count(&store), before - r.deleted, "what it says it deleted");
    verify_all(&store, &kept).expect("the kept root is whole");
    store.clear();
    let again = gc(&store, &[kept]).expect("the retry finishes");
    assert_eq!(count(&store), again.reachable);
    verify_all(&store, &kept).expect("the kept root is whole");
}
