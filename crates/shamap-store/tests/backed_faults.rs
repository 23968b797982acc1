//! The backed map when the store fails it: a corrupt or missing node is an
//! error naming it (for reads and for `prefetch`), a failed commit keeps
//! everything in memory, and a `gc` beside a spilling writer never takes
//! what the writer needs.

use std::ops::ControlFlow;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shamap::{Hash256, Key, MapKind};
use shamap_store::{
    import_ledger, meta, verify_all, BackedMap, BackedOptions, MemStore, NodeStore, NodeStoreExt,
    StoreError,
};

use crate::support::{import_random, random_map, seed, with_budget};

/// Stores `map` and returns the store, the root, and the hash of a node two
/// levels down on the path of `key`.
fn stored_with_inner(key: &Key) -> (MemStore, Hash256, Hash256) {
    let (mut map, _) = random_map(MapKind::AccountState, 2000, 5);
    map.upsert(*key, b"target").expect("upsert");
    let snap = map.snapshot();
    let store = MemStore::new();
    import_ledger(&store, "base", Some(&snap), None, None, &mut |_| {}).expect("import");
    // The proof path's second blob from the root is the depth-1 node.
    let path = snap.proof_path(key);
    assert!(path.included);
    let blob = &path.nodes[path.nodes.len() - 2];
    let node = shamap_store::NodeObject::from_wire(MapKind::AccountState, blob).expect("wire");
    (store, snap.root_hash(), node.hash())
}

/// Flips a byte of the stored value of `hash` (near its end: a child hash
/// or the key), behind the store's back.
fn flip_a_byte(store: &MemStore, hash: &Hash256) {
    let mut value = store.read_value(hash).expect("read").expect("present");
    let at = value.len() - 7;
    value[at] ^= 1;
    store.insert_raw(*hash, value);
}

#[test]
fn a_corrupt_node_is_an_error_naming_it_and_changes_nothing() {
    let key = Key([0x5A; 32]);
    let (store, root, bad) = stored_with_inner(&key);
    flip_a_byte(&store, &bad);

    let mut backed = BackedMap::open(
        &store,
        root,
        MapKind::AccountState,
        BackedOptions::default(),
    )
    .expect("root is fine");
    let err = backed.get(&key).expect_err("corrupt node on the path");
    assert!(
        matches!(err, StoreError::BadNode { hash, .. } if hash == bad),
        "{err}"
    );
    assert!(err.to_string().contains(&bad.to_string()), "{err}");
    let err = backed
        .upsert(key, b"new")
        .expect_err("corrupt node on the path");
    assert!(err.to_string().contains("corrupt"), "{err}");
    assert_eq!(backed.root_hash(), root, "a failed write changes nothing");
    assert!(!backed.is_dirty());
    let err = backed.remove(&key).expect_err("corrupt");
    assert!(err.to_string().contains(&bad.to_string()), "{err}");
    assert_eq!(backed.root_hash(), root);
    let mut n = 0;
    let scan = backed.for_each(&mut |_, _| {
        n += 1;
        ControlFlow::Continue(())
    });
    assert!(scan.is_err(), "a scan stops at the corrupt node");
}

#[test]
fn a_missing_node_is_an_error_and_a_leaf_is_not_a_root() {
    let key = Key([0x11; 32]);
    let (store, root, gone) = stored_with_inner(&key);
    store.delete(&[gone]).expect("delete");
    let backed = BackedMap::open(
        &store,
        root,
        MapKind::AccountState,
        BackedOptions::default(),
    )
    .expect("open");
    let err = backed.get(&key).expect_err("missing");
    assert!(err.to_string().contains("missing"), "{err}");

    let store = MemStore::new();
    let (snap, model) = import_random(&store, "x", 10, 3);
    let k = *model.keys().next().expect("one");
    let leaf = MapKind::AccountState.leaf_hash(&k, &model[&k]);
    let err = BackedMap::open(
        &store,
        leaf,
        MapKind::AccountState,
        BackedOptions::default(),
    )
    .expect_err("leaf as root");
    assert!(err.to_string().contains("root"), "{err}");
    let err = BackedMap::open(
        &store,
        snap.root_hash(),
        MapKind::TransactionWithMeta,
        BackedOptions::default(),
    )
    .expect_err("wrong kind");
    assert!(err.to_string().contains("another map kind"), "{err}");
}

#[test]
fn a_failed_commit_keeps_everything_in_memory() {
    let store = MemStore::new();
    let mut backed = BackedMap::new(&store, MapKind::AccountState, BackedOptions::default());
    for i in 0..100u8 {
        backed.upsert(Key([i; 32]), &[i]).expect("upsert");
    }
    let root = backed.root_hash();
    // A store that refuses writes.
    store.fail_writes(true);
    assert!(backed.commit("head").is_err());
    assert!(backed.is_dirty());
    assert_eq!(backed.get(&Key([7; 32])).expect("get"), Some(vec![7]));
    store.fail_writes(false);
    assert_eq!(backed.commit("head").expect("commit"), root);
    assert_eq!(verify_all(&store, &root).expect("verifies").leaves, 100);
}

/// `gc` beside a writer: a backed map opened at a root that is not
/// retained, spilling (uncommitted nodes reachable from no retained root),
/// while another thread collects with nothing kept. Every commit must
/// verify, and the writer's reads must never meet a missing node.
#[test]
fn gc_beside_a_spilling_writer_keeps_what_the_writer_needs() {
    let s = seed(74);
    let store = MemStore::new();
    let (mut mem, model) = random_map(MapKind::AccountState, 2000, s);
    let snap = mem.snapshot();
    // Stored, then dropped from the retained list: only the pin holds it.
    shamap_store::write_snapshot(&store, &snap, &mut |_| {}).expect("write");
    let keys: Vec<Key> = model.keys().copied().collect();
    // Opened before the collector starts: until a backed map pins the root,
    // nothing holds an unretained root, and gc may rightly sweep it.
    let opts = with_budget(32 << 10);
    let mut backed =
        BackedMap::open(&store, snap.root_hash(), MapKind::AccountState, opts).expect("open");
    let stop = std::sync::atomic::AtomicBool::new(false);
    let collections = std::thread::scope(|scope| {
        let collector = scope.spawn(|| {
            let mut n = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let keep: Vec<Hash256> = meta::retained(&store)
                    .expect("meta")
                    .iter()
                    .map(|r| r.hash)
                    .collect();
                shamap_store::gc(&store, &keep).expect("gc");
                n += 1;
                // Collections come and go (a tight loop would starve the
                // writer of the lock it takes for each spill).
                std::thread::sleep(std::time::Duration::from_millis(3));
            }
            n
        });
        // Stops the collector however this closure ends (a failed assert
        // must not leave the scope waiting for it forever).
        struct StopOnDrop<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for StopOnDrop<'_> {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
        let stopper = StopOnDrop(&stop);
        let mut rng = SmallRng::seed_from_u64(s);
        for round in 0..30u32 {
            for _ in 0..60 {
                let k = keys[rng.gen_range(0..keys.len())];
                backed
                    .upsert(k, &round.to_be_bytes())
                    .expect("upsert: no node swept");
                mem.upsert(k, &round.to_be_bytes()).expect("upsert");
            }
            if round % 5 == 4 {
                let root = backed.commit("head").expect("commit");
                assert_eq!(root, mem.root_hash(), "seed {s} round {round}");
            }
            assert!(backed.get(&keys[0]).expect("get").is_some());
        }
        let root = backed.commit("head").expect("commit");
        assert!(
            backed.stats().spills > 0,
            "the writer spilled: {:?}",
            backed.stats()
        );
        drop(stopper);
        let n = collector.join().expect("collector");
        let r = verify_all(&store, &root).expect("the last commit is complete");
        assert_eq!(r.leaves, 2000);
        n
    });
    assert!(collections > 0, "the collector ran");
}

#[test]
fn prefetch_reports_a_corrupt_node_naming_it() {
    let key = Key([0x5A; 32]);
    let (store, root, bad) = stored_with_inner(&key);
    flip_a_byte(&store, &bad);
    let map = BackedMap::open(
        &store,
        root,
        MapKind::AccountState,
        BackedOptions::default(),
    )
    .expect("root is fine");
    let err = map
        .prefetch(&[Key([1; 32]), key], 2)
        .expect_err("the corrupt node is refused");
    assert!(err.to_string().contains(&bad.to_string()), "{err}");
}
