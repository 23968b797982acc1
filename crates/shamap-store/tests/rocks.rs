//! The RocksDB backend (feature `rocksdb`), tested for what the fjall
//! backend is: node round trips and the format version across reopening,
//! whole batches, corrupt values and damaged tables, import, reads,
//! verification and gc, a spilling backed map against its oracles, and
//! SIGKILL at random moments of imports and backed commits.
//!
//! Damage is written with the `rocksdb` crate itself, into the `nodes`
//! column family of a closed store: `RocksStore` has no raw write.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use shamap::{Hash256, Key, MapKind};
use shamap_store::{
    gc, import_ledger, meta, record_root, root_kind, verify_all, write_changed, BackedMap,
    BackedOptions, Batch, NodeStore, NodeStoreExt, RocksStore, RootKind, StoreError, StoredMap,
};

use crate::backed::contents;
use crate::crash;
use crate::support::{count, flipped_leaf, nodes_of, random_map, seed, write_and_iterate};

/// Every stored node, in the order `for_each_value` gives them.
fn all_values(store: &dyn NodeStore) -> Vec<(Hash256, Vec<u8>)> {
    let mut out = Vec::new();
    store
        .for_each_value(&mut |h, v| {
            out.push((h, v.to_vec()));
            ControlFlow::Continue(())
        })
        .expect("iterate");
    out
}

/// Runs `f` on the closed store in `dir` opened with the `rocksdb` crate
/// directly (column families `nodes` and `meta`), then closes it.
fn raw<T>(dir: &Path, f: impl FnOnce(&rocksdb::DB) -> T) -> T {
    let opts = rocksdb::Options::default();
    let db = rocksdb::DB::open_cf(&opts, dir, ["nodes", "meta"]).expect("raw open");
    f(&db)
}

fn raw_put_node(dir: &Path, hash: Hash256, value: &[u8]) {
    raw(dir, |db| {
        let cf = db.cf_handle("nodes").expect("nodes column family");
        db.put_cf(cf, hash.0, value).expect("raw put");
    });
}

#[test]
fn rocks_store_round_trips_nodes_and_records_the_version() {
    let s = seed(80);
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut state, _) = random_map(MapKind::AccountState, 1500, s);
    let (mut txs, _) = random_map(MapKind::TransactionWithMeta, 300, s + 1);
    let mut nodes = nodes_of(&state.snapshot());
    nodes.extend(nodes_of(&txs.snapshot()));
    let want: BTreeMap<Hash256, Vec<u8>> = nodes
        .iter()
        .map(|n| (n.hash(), n.value().to_vec()))
        .collect();
    assert_eq!(want.len(), nodes.len(), "seed {s}: distinct hashes");
    let gone: BTreeSet<Hash256> = want.keys().step_by(3).copied().collect();
    {
        let store = RocksStore::open(dir.path()).expect("open");
        assert_eq!(
            store.get_meta(meta::FORMAT_VERSION).expect("meta"),
            Some(meta::version_bytes()),
            "a new store records the format version"
        );
        assert_eq!(count(&store), 0);
        for chunk in nodes.chunks(500) {
            let mut b = Batch::new();
            for n in chunk {
                b.put_node(n.clone());
            }
            store.write(b).expect("write");
        }
        for n in &nodes {
            let got = store.get(&n.hash()).expect("read").expect("present");
            assert_eq!(&got, n, "seed {s}");
            assert!(store.contains(&n.hash()).expect("contains"));
        }
        let absent = Hash256([0xEE; 32]);
        assert_eq!(store.get(&absent).expect("read"), None);
        assert!(!store.contains(&absent).expect("contains"));
        assert_eq!(
            store.load(&absent).expect_err("absent"),
            StoreError::Missing { hash: absent }
        );
        // Iteration: every node once, in hash order, with its value.
        let it = all_values(&store);
        assert_eq!(
            it,
            want.iter()
                .map(|(h, v)| (*h, v.clone()))
                .collect::<Vec<_>>()
        );
        // Breaking stops it.
        let mut seen = 0;
        store
            .for_each_value(&mut |_, _| {
                seen += 1;
                ControlFlow::Break(())
            })
            .expect("iterate");
        assert_eq!(seen, 1);
        let gone: Vec<Hash256> = gone.iter().copied().collect();
        store.delete(&gone).expect("delete");
        // Deleting what is absent is no error.
        store.delete(&gone[..3]).expect("delete again");
        for h in &gone {
            assert_eq!(store.get(h).expect("read"), None);
        }
        assert_eq!(count(&store), (want.len() - gone.len()) as u64);
        store.sync().expect("sync");
        assert!(store.disk_bytes().expect("size") > 0);
        assert!(store.location().contains(&dir.path().display().to_string()));
    }
    // Reopened: what was left, nothing that was deleted.
    let store = RocksStore::open(dir.path()).expect("reopen");
    assert_eq!(
        store.get_meta(meta::FORMAT_VERSION).expect("meta"),
        Some(meta::version_bytes())
    );
    let left: Vec<(Hash256, Vec<u8>)> = want
        .iter()
        .filter(|(h, _)| !gone.contains(h))
        .map(|(h, v)| (*h, v.clone()))
        .collect();
    assert_eq!(all_values(&store), left, "seed {s}: after reopening");
    for (h, v) in &left {
        assert_eq!(store.load(h).expect("load").value(), v.as_slice());
    }
    for h in &gone {
        assert!(!store.contains(h).expect("contains"));
    }
    // Another version is refused, naming it and the directory.
    store
        .put_meta(meta::FORMAT_VERSION, 99u32.to_be_bytes().to_vec())
        .expect("write");
    drop(store);
    let err = RocksStore::open(dir.path()).expect_err("unknown version");
    let msg = err.to_string();
    assert!(matches!(err, StoreError::UnknownVersion { .. }), "{msg}");
    assert!(msg.contains("format version 99"), "{msg}");
    assert!(msg.contains(&dir.path().display().to_string()), "{msg}");
    // So are nodes with no version record.
    raw(dir.path(), |db| {
        let cf = db.cf_handle("meta").expect("meta column family");
        db.delete_cf(cf, meta::FORMAT_VERSION).expect("raw delete");
    });
    let err = RocksStore::open(dir.path()).expect_err("nodes without a version");
    assert!(err.to_string().contains("none"), "{err}");
}

/// Within a batch, changes apply in order; across threads, a batch is seen
/// whole or not at all; after reopening, every batch written is there.
#[test]
fn a_rocks_batch_is_applied_whole_and_in_order() {
    crate::support::a_batch_is_applied_whole_and_in_order(open_rocks, seed(81));
}

/// A random state map of `n` entries (seed `s`) imported into a RocksDB
/// store at `dir`, closed again: its snapshot and model.
fn imported_rocks(dir: &Path, n: usize, s: u64) -> (shamap::Snapshot, BTreeMap<Key, Vec<u8>>) {
    let (mut map, model) = random_map(MapKind::AccountState, n, s);
    let snap = map.snapshot();
    let store = RocksStore::open(dir).expect("open");
    import_ledger(&store, "t", Some(&snap), None, None, &mut |_| {}).expect("import");
    (snap, model)
}

#[test]
fn a_value_that_does_not_hash_to_its_key_in_rocks_is_corrupt_never_data() {
    let s = seed(82);
    let dir = tempfile::tempdir().expect("tempdir");
    let (snap, model) = imported_rocks(dir.path(), 800, s);
    let (key, leaf, bad) = flipped_leaf(&snap, &model);
    raw_put_node(dir.path(), leaf.hash(), &bad);

    let store = RocksStore::open(dir.path()).expect("reopen");
    assert_eq!(
        store.read_value(&leaf.hash()).expect("raw read"),
        Some(bad.clone()),
        "the damage is in the store"
    );
    let err = store.get(&leaf.hash()).expect_err("corrupt");
    assert!(
        matches!(err, StoreError::Corrupt { hash, .. } if hash == leaf.hash()),
        "{err}"
    );
    assert!(store.load(&leaf.hash()).is_err());
    let sm = StoredMap::open(&store, snap.root_hash(), MapKind::AccountState).expect("root ok");
    let msg = sm.get(key).expect_err("must fail").to_string();
    assert!(
        msg.contains(&leaf.hash().to_hex()) && msg.contains("corrupt"),
        "{msg}"
    );
    assert!(!msg.contains('\n'));
    assert!(
        sm.iter().any(|item| item.is_err()),
        "an iteration meets the corrupt leaf"
    );
    crate::support::assert_bad_node(
        verify_all(&store, &snap.root_hash()).expect_err("verify finds it"),
        leaf.hash(),
        &key,
    );
    let backed = BackedMap::open(
        &store,
        snap.root_hash(),
        MapKind::AccountState,
        BackedOptions::default(),
    )
    .expect("root ok");
    let err = backed.get(key).expect_err("corrupt leaf");
    assert!(
        matches!(err, StoreError::BadNode { hash, .. } if hash == leaf.hash()),
        "{err}"
    );
    // gc refuses to mark through it and deletes nothing.
    let before = count(&store);
    assert!(gc(&store, &[snap.root_hash()]).is_err());
    assert_eq!(count(&store), before);
    // Other keys still read.
    for (k, d) in model.iter().filter(|(k, _)| *k != key).step_by(29) {
        assert_eq!(sm.get(k).expect("read").as_ref(), Some(d), "seed {s}");
    }
    drop(sm);
    drop(backed);
    drop(store);
    // Writing the right bytes back repairs it.
    raw_put_node(dir.path(), leaf.hash(), leaf.value());
    let store = RocksStore::open(dir.path()).expect("reopen");
    assert_eq!(
        verify_all(&store, &snap.root_hash())
            .expect("intact")
            .leaves,
        800
    );
}

#[test]
fn a_flipped_byte_in_a_rocks_table_is_an_error_and_undoing_it_restores_everything() {
    let s = seed(83);
    let dir = tempfile::tempdir().expect("tempdir");
    let (snap, _) = imported_rocks(dir.path(), 3000, s);
    // Into table files (RocksStore leaves writes in the WAL and memtable).
    raw(dir.path(), |db| {
        for cf in ["nodes", "meta"] {
            db.flush_cf(db.cf_handle(cf).expect("column family"))
                .expect("flush");
        }
    });
    let table: PathBuf = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .max_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .expect("a table file");
    let size = std::fs::metadata(&table).expect("table").len();
    assert!(size > 100_000, "the node table: {size} bytes");
    crate::reader::flip_a_byte_then_undo(
        dir.path(),
        &table,
        |d| RocksStore::open(d),
        snap.root_hash(),
        3000,
    );
}

#[test]
fn the_shipped_ledger_imports_into_rocks_with_rippled_hashes() {
    let (st, tt, header) = crate::ledgers::ledger_38129();
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Hash256::from_hex(crate::ledgers::LEDGER_38129).expect("hex");
    {
        let store = RocksStore::open(dir.path()).expect("open");
        let r = import_ledger(
            &store,
            "ledger 38129",
            Some(&st),
            Some(&tt),
            Some(&header),
            &mut |_| {},
        )
        .expect("import");
        assert_eq!(r.ledger_hash, Some(ledger));
    }
    let store = RocksStore::open(dir.path()).expect("reopen");
    // The last batch of the import (header node and retained record) is
    // there, and so is everything before it.
    assert_eq!(
        meta::latest(&store).expect("meta").map(|r| r.hash),
        Some(ledger)
    );
    assert_eq!(
        root_kind(&store, &ledger).expect("kind"),
        RootKind::Ledger(header)
    );
    let report = verify_all(&store, &ledger).expect("verifies");
    assert_eq!(report.headers, 1);
    assert_eq!(report.leaves, 262);
    let sm = StoredMap::open(&store, st.root_hash(), MapKind::AccountState).expect("open");
    for (k, v) in st.iter() {
        assert_eq!(sm.get(k).expect("read").as_deref(), Some(v));
    }
    let again = import_ledger(
        &store,
        "again",
        Some(&st),
        Some(&tt),
        Some(&header),
        &mut |_| {},
    )
    .expect("import");
    assert_eq!(again.stats.written, 0);
    assert_eq!(meta::retained(&store).expect("meta").len(), 1);
}

/// Import, then versions by changed nodes; read every key of each; collect
/// with a reader of a kept root beside the sweep; reopen.
#[test]
fn rocks_imports_reads_verifies_and_collects() {
    let s = seed(84);
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut map, model) = random_map(MapKind::AccountState, 3000, s);
    let keys: Vec<Key> = model.keys().copied().collect();
    let mut versions = vec![(map.snapshot(), model)];
    let keep;
    {
        let store = RocksStore::open(dir.path()).expect("open");
        let v1 = &versions[0].0;
        let r = import_ledger(&store, "v1", Some(v1), None, None, &mut |_| {}).expect("v1");
        assert_eq!(r.recorded, v1.root_hash());
        assert_eq!(r.stats.written, count(&store));
        for round in 0..3u8 {
            let (prev, prev_model) = versions.last().expect("one");
            let mut m = prev.to_map();
            let mut next_model = prev_model.clone();
            let mut changed: Vec<Key> = Vec::new();
            for (i, k) in keys.iter().enumerate().skip(usize::from(round)).step_by(7) {
                if i % 5 == 0 {
                    m.remove(k).expect("remove");
                    next_model.remove(k);
                } else {
                    m.update(*k, &[round; 30]).expect("update");
                    next_model.insert(*k, vec![round; 30]);
                }
                changed.push(*k);
            }
            for i in 0..20u8 {
                let k = Key([i.wrapping_mul(41).wrapping_add(round); 32]);
                if next_model.insert(k, vec![i; 17]).is_none() {
                    m.insert(k, &[i; 17]).expect("insert");
                    changed.push(k);
                }
            }
            let snap = m.snapshot();
            let w = write_changed(&store, &snap, &changed).expect("commit");
            assert!(w.written > 0 && w.written < 3000);
            record_root(
                &store,
                &format!("v{}", round + 2),
                snap.root_hash(),
                Batch::new(),
            )
            .expect("record");
            versions.push((snap, next_model));
        }
        for (snap, model) in &versions {
            let sm =
                StoredMap::open(&store, snap.root_hash(), MapKind::AccountState).expect("open");
            for (k, d) in model {
                assert_eq!(sm.get(k).expect("read").as_ref(), Some(d), "seed {s}");
            }
            let items: Vec<(Key, Vec<u8>)> = sm.iter().collect::<Result<_, _>>().expect("iterate");
            assert!(items.iter().map(|(k, _)| k).eq(model.keys()), "seed {s}");
            let r = verify_all(&store, &snap.root_hash()).expect("verifies");
            assert_eq!(r.leaves as usize, model.len());
        }
        assert_eq!(meta::retained(&store).expect("meta").len(), 4);

        keep = [versions[1].0.root_hash(), versions[3].0.root_hash()];
        let before = count(&store);
        let (snap, model) = &versions[3];
        let r = crate::gc::gc_beside_a_reader(&store, &keep, snap.root_hash(), model.len());
        assert!(r.deleted > 0, "{r:?}");
        assert_eq!(count(&store), before - r.deleted);
        assert_eq!(r.reachable, count(&store));
    }
    let store = RocksStore::open(dir.path()).expect("reopen");
    assert_eq!(crate::support::retained_names(&store), ["v2", "v4"]);
    for (i, (snap, model)) in versions.iter().enumerate() {
        if keep.contains(&snap.root_hash()) {
            let r = verify_all(&store, &snap.root_hash()).expect("kept version intact");
            assert_eq!(r.leaves as usize, model.len());
        } else {
            assert!(
                verify_all(&store, &snap.root_hash()).is_err(),
                "version {} was collected",
                i + 1
            );
        }
    }
    let r2 = gc(&store, &keep).expect("gc again");
    assert_eq!(r2.deleted, 0);
    assert_eq!(r2.reachable, count(&store));
}

/// The backed map's random-operation test of `backed.rs` on a RocksStore,
/// then the store closed and reopened at the committed head.
fn backed_on_rocks_against_oracles(kind: MapKind, budget: usize, s: u64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (stats, head, model) = {
        let store = RocksStore::open(dir.path()).expect("open");
        crate::backed::random_ops_against_oracles(&store, kind, budget, s)
    };
    assert!(stats.spills > 0, "seed {s}: {stats:?}");
    // Closed and reopened: the head is recorded and whole.
    let store = RocksStore::open(dir.path()).expect("reopen");
    let rec = meta::retained(&store).expect("meta");
    assert_eq!(
        rec.last().map(|r| (r.name.as_str(), r.hash)),
        Some(("head", head))
    );
    let r = verify_all(&store, &head).expect("head verifies after reopening");
    assert_eq!(r.leaves as usize, model.len(), "seed {s}");
    let opts = BackedOptions {
        budget_bytes: budget,
        ..BackedOptions::default()
    };
    let m = BackedMap::open(&store, head, kind, opts).expect("open head");
    assert_eq!(contents(&m), model, "seed {s}: after reopening");
}

#[test]
fn a_backed_map_on_rocks_matches_the_in_memory_map_and_a_btreemap() {
    let s = seed(85);
    // 48 KiB: a few hundred nodes; every block evicts and spills.
    backed_on_rocks_against_oracles(MapKind::AccountState, 48 << 10, s);
    backed_on_rocks_against_oracles(MapKind::TransactionNoMeta, 96 << 10, s + 1);
}

// ---- SIGKILL: the tests of tests/crash.rs, on a RocksStore ----

const CHILD_ENV: &str = "SHAMAP_STORE_ROCKS_CRASH_DIR";
const BACKED_CHILD_ENV: &str = "SHAMAP_STORE_ROCKS_BACKED_CRASH_DIR";

fn open_rocks(dir: &Path) -> RocksStore {
    RocksStore::open(dir).expect("open the store")
}

#[test]
#[ignore = "child process of sigkill_during_rocks_imports_never_breaks_the_last_recorded_root"]
fn rocks_crash_child() {
    crash::import_child(CHILD_ENV, open_rocks);
}

#[test]
fn sigkill_during_rocks_imports_never_breaks_the_last_recorded_root() {
    crash::kill_imports("rocks::rocks_crash_child", CHILD_ENV, 86, open_rocks);
}

#[test]
#[ignore = "child process of sigkill_during_backed_commits_on_rocks_reopens_at_the_last_committed_root"]
fn rocks_backed_crash_child() {
    crash::backed_child(BACKED_CHILD_ENV, open_rocks);
}

#[test]
fn sigkill_during_backed_commits_on_rocks_reopens_at_the_last_committed_root() {
    crash::kill_backed_commits(
        "rocks::rocks_backed_crash_child",
        BACKED_CHILD_ENV,
        87,
        open_rocks,
    );
}

/// `write_snapshot` records no root; the nodes are there regardless.
#[test]
fn write_snapshot_to_rocks_stores_every_node() {
    let s = seed(88);
    let dir = tempfile::tempdir().expect("tempdir");
    let store = RocksStore::open(dir.path()).expect("open");
    for kind in [
        MapKind::AccountState,
        MapKind::TransactionWithMeta,
        MapKind::TransactionNoMeta,
    ] {
        let (mut map, model) = random_map(kind, 1200, s);
        let snap = map.snapshot();
        let context = format!("seed {s}: {kind:?}");
        let (_, w) = write_and_iterate(&store, &snap, kind, &model, 1200, &context);
        assert_eq!(
            verify_all(&store, &snap.root_hash())
                .expect("verifies")
                .nodes(),
            w.written
        );
    }
    assert_eq!(meta::retained(&store).expect("meta").len(), 0);
}
