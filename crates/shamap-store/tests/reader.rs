//! Store, read back, verify, and reject damage.

use shamap::{Hash256, Key, MapKind, ShaMap};
use shamap_store::{
    import_ledger, meta, verify_all, write_changed, write_snapshot, FjallStore, MemStore,
    NodeStore, NodeStoreExt, StoreError, StoredMap,
};

use crate::support::{
    files_under, flipped_leaf, import_random, random_map, seed, write_and_iterate,
};

#[test]
fn stored_map_reads_every_key_and_iterates_in_order() {
    let store = MemStore::new();
    for kind in [
        MapKind::AccountState,
        MapKind::TransactionWithMeta,
        MapKind::TransactionNoMeta,
    ] {
        let (mut map, model) = random_map(kind, 2000, seed(1));
        assert_eq!(map.len(), model.len());
        let snap = map.snapshot();
        let (sm, _) = write_and_iterate(&store, &snap, kind, &model, 2000, &format!("{kind:?}"));
        for (k, d) in model.iter().take(200) {
            assert_eq!(sm.get(k).expect("read").as_ref(), Some(d));
        }
        let mut absent = *model.keys().next().expect("non-empty");
        absent.0[31] ^= 1;
        if !model.contains_key(&absent) {
            assert_eq!(sm.get(&absent).expect("read"), None);
        }
    }
}

#[test]
fn empty_map_has_zero_root_and_no_nodes() {
    let store = MemStore::new();
    let mut map = ShaMap::new(MapKind::AccountState);
    let snap = map.snapshot();
    assert_eq!(
        write_snapshot(&store, &snap, &mut |_| {})
            .expect("write")
            .written,
        0
    );
    let sm = StoredMap::open(&store, Hash256::ZERO, MapKind::AccountState).expect("empty");
    assert_eq!(sm.iter().count(), 0);
    assert_eq!(sm.get(&Key([1; 32])).expect("read"), None);
}

#[test]
fn a_flipped_byte_is_corrupt_never_data() {
    let store = MemStore::new();
    let (mut map, model) = random_map(MapKind::AccountState, 500, seed(2));
    let snap = map.snapshot();
    write_snapshot(&store, &snap, &mut |_| {}).expect("write");
    let (key, leaf, bad) = flipped_leaf(&snap, &model);
    store.insert_raw(leaf.hash(), bad);

    let err = store.get(&leaf.hash()).expect_err("corrupt");
    assert!(matches!(err, StoreError::Corrupt { hash, .. } if hash == leaf.hash()));
    let sm = StoredMap::open(&store, snap.root_hash(), MapKind::AccountState).expect("root ok");
    let err = sm.get(key).expect_err("must fail");
    let msg = err.to_string();
    assert!(
        msg.contains(&leaf.hash().to_hex()) && msg.contains("corrupt"),
        "{msg}"
    );
    assert!(!msg.contains('\n'));
    let err = verify_all(&store, &snap.root_hash()).expect_err("verify finds it");
    crate::support::assert_bad_node(err, leaf.hash(), key);
    // Other keys still read.
    let (other, d) = model.iter().find(|(k, _)| *k != key).expect("another");
    if sm.get(other).is_ok() {
        assert_eq!(sm.get(other).expect("ok").as_ref(), Some(d));
    }
}

#[test]
fn verify_all_counts_nodes_and_reports_missing_ones() {
    let store = MemStore::new();
    let (mut map, _) = random_map(MapKind::AccountState, 1000, seed(3));
    let snap = map.snapshot();
    let w = write_snapshot(&store, &snap, &mut |_| {}).expect("write");
    let r = verify_all(&store, &snap.root_hash()).expect("intact");
    assert_eq!(r.leaves, 1000);
    assert_eq!(r.nodes(), w.written);
    // Delete some inner node below the root.
    let mut victim = None;
    snap.for_each_node(|n| {
        if victim.is_none() && !n.is_leaf && n.depth == 2 {
            victim = Some(n.hash);
        }
    });
    let victim = victim.expect("an inner node at depth 2");
    store.delete(&[victim]).expect("delete");
    let err = verify_all(&store, &snap.root_hash()).expect_err("missing");
    assert!(err.to_string().contains("missing"), "{err}");
    assert!(err.to_string().contains(&victim.to_hex()), "{err}");
}

#[test]
fn changed_nodes_commit_matches_a_full_write() {
    let store = MemStore::new();
    let full = MemStore::new();
    let (mut map, model) = random_map(MapKind::AccountState, 3000, seed(4));
    let snap = map.snapshot();
    write_snapshot(&store, &snap, &mut |_| {}).expect("write");
    let mut next = snap.to_map();
    let mut changed = Vec::new();
    for (i, k) in model.keys().enumerate().filter(|(i, _)| i % 7 == 0) {
        if i % 2 == 0 {
            next.update(*k, &[i as u8; 20]).expect("update");
        } else {
            next.remove(k).expect("remove");
        }
        changed.push(*k);
    }
    for i in 0..50u8 {
        let k = Key([i.wrapping_mul(37); 32]);
        if !model.contains_key(&k) {
            next.insert(k, &[i; 15]).expect("insert");
            changed.push(k);
        }
    }
    let snap2 = next.snapshot();
    let w = write_changed(&store, &snap2, &changed).expect("commit");
    assert!(w.written > 0 && w.written < 3000);
    verify_all(&store, &snap2.root_hash()).expect("new version complete");
    verify_all(&store, &snap.root_hash()).expect("old version intact");
    write_snapshot(&full, &snap2, &mut |_| {}).expect("full");
    let a: Vec<_> = StoredMap::open(&store, snap2.root_hash(), MapKind::AccountState)
        .expect("open")
        .iter()
        .collect::<Result<_, _>>()
        .expect("iter");
    let b: Vec<_> = next.iter().map(|(k, d)| (*k, d.to_vec())).collect();
    assert_eq!(a, b);
}

#[test]
fn fjall_store_round_trips_and_records_the_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut map, model) = random_map(MapKind::AccountState, 1500, seed(5));
    let snap = map.snapshot();
    {
        let store = FjallStore::open(dir.path()).expect("open");
        let r =
            import_ledger(&store, "test", Some(&snap), None, None, &mut |_| {}).expect("import");
        assert_eq!(r.recorded, snap.root_hash());
    }
    let store = FjallStore::open(dir.path()).expect("reopen");
    assert_eq!(
        meta::latest(&store).expect("meta").map(|r| r.hash),
        Some(snap.root_hash())
    );
    verify_all(&store, &snap.root_hash()).expect("intact");
    let sm = StoredMap::open(&store, snap.root_hash(), MapKind::AccountState).expect("open");
    for (k, d) in model.iter().step_by(37) {
        assert_eq!(sm.get(k).expect("read").as_ref(), Some(d));
    }
    assert!(store.disk_bytes().expect("size") > 0);
    store
        .put_meta(meta::FORMAT_VERSION, 99u32.to_be_bytes().to_vec())
        .expect("write");
    drop(sm);
    drop(store);
    let err = FjallStore::open(dir.path()).expect_err("unknown version");
    let msg = err.to_string();
    assert!(msg.contains("format version 99"), "{msg}");
    assert!(msg.contains(&dir.path().display().to_string()), "{msg}");
}

#[test]
fn a_flipped_byte_in_a_fjall_table_is_an_error_and_undoing_it_restores_everything() {
    let dir = tempfile::tempdir().expect("tempdir");
    let snap = {
        let store = FjallStore::open(dir.path()).expect("open");
        let (snap, _) = import_random(&store, "t", 3000, seed(6));
        store.flush_memtables().expect("flush");
        snap
    };
    let table = files_under(dir.path())
        .into_iter()
        .filter(|p| p.parent().is_some_and(|x| x.ends_with("tables")))
        .max_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .expect("a table file");
    flip_a_byte_then_undo(
        dir.path(),
        &table,
        |d| FjallStore::open(d),
        snap.root_hash(),
        3000,
    );
}

/// Flips a bit a third of the way into `table` (a file of the store in
/// `dir`): opening the store with `open` and verifying `root` must fail
/// with a one-line error; after undoing the flip all `leaves` verify.
pub(crate) fn flip_a_byte_then_undo<S: NodeStore>(
    dir: &std::path::Path,
    table: &std::path::Path,
    open: impl Fn(&std::path::Path) -> Result<S, StoreError>,
    root: Hash256,
    leaves: u64,
) {
    let good = std::fs::read(table).expect("read");
    let mut bad = good.clone();
    let at = bad.len() / 3;
    bad[at] ^= 0x04;
    std::fs::write(table, &bad).expect("write");
    let outcome = open(dir).and_then(|s| verify_all(&s, &root));
    let err = outcome.expect_err("damage is seen");
    assert!(!err.to_string().contains('\n'), "{err}");
    eprintln!("damage reported as: {err}");
    std::fs::write(table, &good).expect("undo");
    let store = open(dir).expect("reopen");
    assert_eq!(verify_all(&store, &root).expect("intact").leaves, leaves);
}

/// A map hashed with BLAKE3 is refused by every writer before anything is
/// written: a store names nodes by their SHA512Half.
#[test]
fn blake3_maps_are_refused_and_nothing_is_written() {
    let store = MemStore::new();
    let (sha, _) = random_map(MapKind::AccountState, 300, seed(41));
    let mut sha = sha;
    let sha_snap = sha.snapshot();
    write_snapshot(&store, &sha_snap, &mut |_| {}).expect("write");
    let before = store.node_count();
    let mut map = ShaMap::with_options(
        MapKind::AccountState,
        shamap::MapOptions::default().with_hash(shamap::HashFunction::Blake3),
    );
    for i in 0..300u16 {
        let mut k = [0u8; 32];
        k[..2].copy_from_slice(&i.to_be_bytes());
        map.insert(Key(k), &[1, 2, 3]).expect("insert");
    }
    let snap = map.snapshot();
    let err = write_snapshot(&store, &snap, &mut |_| {}).expect_err("refused");
    assert!(matches!(err, StoreError::NotSha512Half { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("BLAKE3") && !msg.contains('\n'), "{msg}");
    let err = write_changed(&store, &snap, &[Key([0; 32])]).expect_err("refused");
    assert!(matches!(err, StoreError::NotSha512Half { .. }), "{err}");
    // The SHA512Half state map with a BLAKE3 tx map: refused as a whole.
    let err = import_ledger(
        &store,
        "mixed",
        Some(&sha_snap),
        Some(&snap),
        None,
        &mut |_| {},
    )
    .expect_err("refused");
    assert!(matches!(err, StoreError::NotSha512Half { .. }), "{err}");
    assert_eq!(store.node_count(), before, "nothing was written");
    assert!(meta::retained(&store).expect("meta").is_empty());
}
