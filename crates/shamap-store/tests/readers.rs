//! Readers beside the writer: threads that read committed roots while one
//! writer applies blocks and commits, as rippled serves RPC reads from
//! closed ledgers while it builds the next. Each reader opens the newest
//! committed root and checks everything it reads against the contents of
//! that version, so it can only pass if readers see whole committed
//! versions and nothing of the writer's work in progress.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shamap::{Hash256, Key, MapKind};
use shamap_store::{meta, BackedMap, FjallStore, LogStore, NodeStore, StoredMap};

use crate::support::{random_map, seed, with_budget};

type Model = Arc<BTreeMap<Key, Vec<u8>>>;

#[test]
fn readers_of_committed_roots_run_beside_a_committing_writer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = FjallStore::open(dir.path()).expect("open");
    readers_beside_a_writer(&store, seed(81));
}

#[test]
fn readers_of_committed_roots_run_beside_a_committing_writer_on_the_node_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = LogStore::open(dir.path()).expect("open");
    readers_beside_a_writer(&store, seed(82));
}

/// Three reader threads check every read against the version they opened
/// while one writer commits 30 blocks to `store`.
fn readers_beside_a_writer(store: &dyn NodeStore, s: u64) {
    let (mut shadow, model) = random_map(MapKind::AccountState, 3000, s);
    let mut writer = BackedMap::new(store, MapKind::AccountState, with_budget(256 << 10));
    for (k, v) in &model {
        writer.upsert(*k, v).expect("upsert");
    }
    let first = writer.commit("head").expect("first commit");
    assert_eq!(first, shadow.root_hash());
    // Every committed version, published before its commit so that a
    // reader that finds a root in the store always finds its contents.
    let versions: RwLock<BTreeMap<Hash256, Model>> =
        RwLock::new(BTreeMap::from([(first, Arc::new(model.clone()))]));
    let stop = AtomicBool::new(false);
    let reads = AtomicU64::new(0);
    let roots_seen = AtomicU64::new(0);
    let commits = std::thread::scope(|scope| {
        let readers: Vec<_> = (0..3u64)
            .map(|r| {
                let (versions, stop, reads, roots_seen) = (&versions, &stop, &reads, &roots_seen);
                scope.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(s ^ r);
                    let mut last = Hash256::ZERO;
                    while !stop.load(Ordering::Relaxed) {
                        let root = meta::latest(store).expect("meta").expect("a root").hash;
                        let expected = versions
                            .read()
                            .expect("lock")
                            .get(&root)
                            .cloned()
                            .unwrap_or_else(|| {
                                panic!("reader {r}: root {root} was never committed")
                            });
                        if root != last {
                            roots_seen.fetch_add(1, Ordering::Relaxed);
                            last = root;
                        }
                        let map =
                            StoredMap::open(store, root, MapKind::AccountState).expect("open");
                        let keys: Vec<&Key> = expected.keys().collect();
                        for _ in 0..50 {
                            let k = keys[rng.gen_range(0..keys.len())];
                            assert_eq!(
                                map.get(k).expect("get").as_deref(),
                                expected.get(k).map(Vec::as_slice),
                                "reader {r}, root {root}, key {k}"
                            );
                            // A key the version does not hold.
                            let absent = Key([rng.gen(); 32]);
                            if !expected.contains_key(&absent) {
                                assert_eq!(map.get(&absent).expect("get"), None);
                            }
                        }
                        if rng.gen_ratio(1, 8) {
                            let all: Vec<(Key, Vec<u8>)> =
                                map.iter().map(|e| e.expect("iterate")).collect();
                            assert!(
                                all.iter().map(|(k, v)| (k, v)).eq(expected.iter()),
                                "reader {r}: a full read of root {root} differs from its version"
                            );
                        }
                        reads.fetch_add(100, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        // The writer: 30 blocks of 300 changes, each committed.
        let mut rng = SmallRng::seed_from_u64(s.wrapping_add(1));
        let mut current = model;
        for block in 0..30u32 {
            let keys: Vec<Key> = current.keys().copied().collect();
            for i in 0..300u32 {
                match i % 5 {
                    0 => {
                        let k = keys[rng.gen_range(0..keys.len())];
                        if current.remove(&k).is_some() {
                            writer.remove(&k).expect("remove");
                            shadow.remove(&k).expect("remove");
                        }
                    }
                    1 => {
                        let k = Key(rng.gen());
                        let v = vec![block as u8; 24];
                        writer.upsert(k, &v).expect("insert");
                        shadow.upsert(k, &v).expect("insert");
                        current.insert(k, v);
                    }
                    _ => {
                        let k = keys[rng.gen_range(0..keys.len())];
                        if current.contains_key(&k) {
                            let v = [block.to_be_bytes(), i.to_be_bytes()].concat().repeat(4);
                            writer.upsert(k, &v).expect("update");
                            shadow.upsert(k, &v).expect("update");
                            current.insert(k, v);
                        }
                    }
                }
            }
            let next = shadow.root_hash();
            versions
                .write()
                .expect("lock")
                .insert(next, Arc::new(current.clone()));
            assert_eq!(
                writer.commit("head").expect("commit"),
                next,
                "block {block}"
            );
        }
        stop.store(true, Ordering::Relaxed);
        for h in readers {
            h.join().expect("a reader failed");
        }
        30
    });
    eprintln!(
        "{commits} commits; readers made {} reads over {} root changes",
        reads.load(Ordering::Relaxed),
        roots_seen.load(Ordering::Relaxed)
    );
    assert!(
        reads.load(Ordering::Relaxed) > 0,
        "the readers read nothing"
    );
}
