//! Seeded random maps, the shipped ledgers, and bodies of backend tests
//! shared by the backends' suites.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shamap::{Key, MapKind, ShaMap, Snapshot};
use shamap_store::{
    import_ledger, write_snapshot, Batch, ImportedLedger, NodeObject, NodeStore, NodeStoreExt,
    NodeType, StoredMap, WriteStats,
};

pub use crate::seeds::seed;

/// Writes `snap` to `store` (more than `min_written` nodes), opens it as
/// a stored map of `kind` and checks that it iterates, in order, as
/// `model` (`context` names the case in the failure).
pub fn write_and_iterate<'s>(
    store: &'s dyn NodeStore,
    snap: &Snapshot,
    kind: MapKind,
    model: &BTreeMap<Key, Vec<u8>>,
    min_written: u64,
    context: &str,
) -> (StoredMap<'s>, WriteStats) {
    let stats = write_snapshot(store, snap, &mut |_| {}).expect("write");
    assert!(stats.written > min_written, "{context}");
    let sm = StoredMap::open(store, snap.root_hash(), kind).expect("open");
    let items: Vec<(Key, Vec<u8>)> = sm.iter().collect::<Result<_, _>>().expect("iterate");
    let want: Vec<(Key, Vec<u8>)> = model.iter().map(|(k, d)| (*k, d.clone())).collect();
    assert_eq!(items, want, "{context}");
    (sm, stats)
}

/// The 18th entry of `model` (a state map), its leaf in `snap`, and the
/// leaf's stored value with one byte flipped 40 bytes from its end.
pub fn flipped_leaf<'m>(
    snap: &Snapshot,
    model: &'m BTreeMap<Key, Vec<u8>>,
) -> (&'m Key, NodeObject, Vec<u8>) {
    let (key, _) = model.iter().nth(17).expect("entry");
    let proof = snap.proof_path(key);
    let leaf = NodeObject::from_wire(MapKind::AccountState, &proof.nodes[0]).expect("leaf");
    let mut bad = leaf.value().to_vec();
    let at = bad.len() - 40;
    bad[at] ^= 0x01;
    (key, leaf, bad)
}

/// `n` random entries (keys random, data 12..60 bytes) as a map and its
/// `BTreeMap` model.
pub fn random_map(kind: MapKind, n: usize, seed: u64) -> (ShaMap, BTreeMap<Key, Vec<u8>>) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut map = ShaMap::new(kind);
    let mut model = BTreeMap::new();
    while model.len() < n {
        let mut k = [0u8; 32];
        rng.fill(&mut k[..]);
        // Keys that share long prefixes now and then: deep chains.
        if rng.gen_ratio(1, 50) {
            if let Some((prev, _)) = model.iter().next() {
                let prev: &Key = prev;
                let share = rng.gen_range(1..32);
                k[..share].copy_from_slice(&prev.0[..share]);
            }
        }
        let len = rng.gen_range(12..60);
        let data: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        // A tx-only leaf does not store its key: it is the leaf's hash.
        let key = if kind == MapKind::TransactionNoMeta {
            Key::from(shamap::xrpl::transaction_id(&data))
        } else {
            Key(k)
        };
        if model.insert(key, data.clone()).is_none() {
            map.insert(key, &data).expect("fresh key");
        }
    }
    (map, model)
}

/// Imports `snap` into `store` as a ledger's state map, without a header,
/// retained as `name`.
pub fn import_state(store: &dyn NodeStore, name: &str, snap: &Snapshot) -> ImportedLedger {
    import_ledger(store, name, Some(snap), None, None, &mut |_| {})
        .unwrap_or_else(|e| panic!("import of {name}: {e}"))
}

/// A random account-state map of `n` entries ([`random_map`]) imported
/// into `store` as `name` ([`import_state`]): its snapshot and model.
pub fn import_random(
    store: &dyn NodeStore,
    name: &str,
    n: usize,
    seed: u64,
) -> (Snapshot, BTreeMap<Key, Vec<u8>>) {
    let (mut map, model) = random_map(MapKind::AccountState, n, seed);
    let snap = map.snapshot();
    import_state(store, name, &snap);
    (snap, model)
}

/// Every node of `snap`, as stored values.
pub fn nodes_of(snap: &Snapshot) -> Vec<NodeObject> {
    let t = NodeType::for_map(snap.kind());
    let mut out = Vec::new();
    snap.for_each_node(|n| out.push(NodeObject::from_prefix(t, &n.prefix_bytes)));
    out
}

/// Nodes in `store`.
pub fn count(store: &dyn NodeStore) -> u64 {
    let mut n = 0;
    store
        .for_each_value(&mut |_, _| {
            n += 1;
            std::ops::ControlFlow::Continue(())
        })
        .expect("iterate");
    n
}

/// The batch contract every backend keeps, on the store `open` opens in a
/// directory: within a batch, changes apply in order; across threads, a
/// batch is seen whole or not at all; after reopening, every batch written
/// is there. Run by the RocksDB and node-log suites.
pub fn a_batch_is_applied_whole_and_in_order<S: NodeStore>(open: fn(&Path) -> S, s: u64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut map, _) = random_map(MapKind::AccountState, 3000, s);
    let nodes = nodes_of(&map.snapshot());
    let (a, b) = (&nodes[0], &nodes[1]);
    let chunks: Vec<&[NodeObject]> = nodes[2..].chunks(37).collect();
    // Node counts a consistent view may show: b, then whole batches.
    let mut valid = BTreeSet::from([1u64]);
    let mut total = 1u64;
    for c in &chunks {
        total += c.len() as u64;
        valid.insert(total);
    }
    {
        let store = open(dir.path());
        let mut batch = Batch::new();
        batch.put_node(a.clone());
        batch.delete_node(a.hash());
        batch.delete_node(b.hash());
        batch.put_node(b.clone());
        batch.put_meta("x", vec![1]);
        batch.delete_meta("x");
        batch.put_meta("y", vec![2]);
        store.write(batch).expect("write");
        assert!(
            !store.contains(&a.hash()).expect("read"),
            "put, then delete"
        );
        assert!(store.contains(&b.hash()).expect("read"), "delete, then put");
        assert_eq!(store.get_meta("x").expect("meta"), None);
        assert_eq!(store.get_meta("y").expect("meta"), Some(vec![2]));
        store.write(Batch::new()).expect("an empty batch");

        // Each batch names itself first (`progress`), then adds its nodes: a
        // reader that sees the name must see every node of that batch, and
        // an iteration sees whole batches only. The writer starts once the
        // reader runs, and yields after each batch: a fast store (the node
        // log) would otherwise be done before the reader's first look.
        let done = AtomicBool::new(false);
        let started = AtomicBool::new(false);
        let (checks, views) = std::thread::scope(|scope| {
            let reader = scope.spawn(|| {
                started.store(true, Ordering::Release);
                let (mut checks, mut views) = (0u32, 0u32);
                for round in 0u32.. {
                    let finished = done.load(Ordering::Acquire);
                    if let Some(p) = store.get_meta("progress").expect("meta") {
                        let i = u32::from_be_bytes(p.try_into().expect("4 bytes")) as usize;
                        for n in chunks[i] {
                            assert!(
                                store.contains(&n.hash()).expect("read"),
                                "seed {s}: batch {i} is named but node {} is absent",
                                n.hash()
                            );
                        }
                        checks += 1;
                    }
                    // A full iteration costs more: one pass in four.
                    if round % 4 == 0 || finished {
                        let n = count(&store);
                        assert!(valid.contains(&n), "seed {s}: a view of {n} nodes");
                        views += 1;
                    }
                    if finished {
                        break;
                    }
                }
                (checks, views)
            });
            while !started.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            for (i, c) in chunks.iter().enumerate() {
                let mut batch = Batch::new();
                batch.put_meta("progress", (i as u32).to_be_bytes().to_vec());
                for n in *c {
                    batch.put_node(n.clone());
                }
                store.write(batch).expect("write");
                std::thread::yield_now();
            }
            done.store(true, Ordering::Release);
            reader.join().expect("reader")
        });
        eprintln!("reader: {checks} batch checks, {views} views");
        assert!(checks > 0 && views > 0);
    }
    let store = open(dir.path());
    assert_eq!(
        store.get_meta("progress").expect("meta"),
        Some(((chunks.len() - 1) as u32).to_be_bytes().to_vec())
    );
    assert_eq!(store.get_meta("y").expect("meta"), Some(vec![2]));
    assert_eq!(count(&store), total);
    assert!(!store.contains(&a.hash()).expect("read"));
    for n in &nodes[1..] {
        assert_eq!(store.get(&n.hash()).expect("read").as_ref(), Some(n));
    }
}

/// A file of the project's `data/` directory.
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data")
        .join(name)
}

/// A store holding a small map with one leaf off its path, built from wire
/// blobs (no hand-built hash messages):
///
/// ```text
/// root ─1─ A (key 11…)
///      └5─ X ─7─ C (key 57…)
///            ├8─ B (key 59…)   <- off its path: B's second nibble is 9
///            └9─ B (key 59…)   <- the same leaf, where it belongs
/// ```
///
/// Every node is valid by itself (each value hashes to its key); only B
/// under branch 8 is misplaced. A, stored too, serves as a leaf given as a
/// map root.
pub struct Misplaced {
    /// The store (every node above present).
    pub store: shamap_store::MemStore,
    /// The root's hash.
    pub root: shamap::Hash256,
    /// B's hash.
    pub leaf: shamap::Hash256,
    /// B's key (under branch 9 of X: its place).
    pub leaf_key: Key,
    /// A key under branch 8 of X: its walk meets B off its path.
    pub probe: Key,
    /// The nibble path where B is misplaced (`58`).
    pub misplaced_at: &'static str,
    /// X's hash.
    pub inner: shamap::Hash256,
    /// A's hash (a leaf, stored: a leaf as a map root).
    pub lone_leaf: shamap::Hash256,
    /// The map's items where each sits (A, C, B), in key order.
    pub items: Vec<(Key, Vec<u8>)>,
}

/// Builds [`Misplaced`] for a map of kind `kind` (state or tx+meta: a
/// tx-only leaf's key is its hash, so it cannot be chosen).
pub fn misplaced_leaf(kind: MapKind) -> Misplaced {
    use shamap::xrpl::wire;
    use shamap::Hash256;
    use shamap_store::MemStore;

    let mut batch = Batch::new();
    let mut put = |blob: Vec<u8>| {
        let node = NodeObject::from_wire(kind, &blob).expect("a valid blob");
        let h = node.hash();
        batch.put_node(node);
        h
    };
    let key = |first: u8| {
        let mut k = [first; 32];
        k[31] = 0xA5;
        Key(k)
    };
    let (ka, kc, kb) = (key(0x11), key(0x57), key(0x59));
    let (da, dc, db) = (vec![1u8; 20], vec![2u8; 24], vec![3u8; 28]);
    let a = put(wire::encode_leaf(kind, &ka, &da));
    let c = put(wire::encode_leaf(kind, &kc, &dc));
    let b = put(wire::encode_leaf(kind, &kb, &db));
    let mut x_children = [Hash256::ZERO; 16];
    x_children[7] = c;
    x_children[8] = b;
    x_children[9] = b;
    let x = put(wire::encode_inner_full(&x_children));
    let mut root_children = [Hash256::ZERO; 16];
    root_children[1] = a;
    root_children[5] = x;
    let root = put(wire::encode_inner_full(&root_children));
    let store = MemStore::new();
    store.write(batch).expect("write");
    let mut probe = kb;
    probe.0[0] = 0x58;
    Misplaced {
        store,
        root,
        leaf: b,
        leaf_key: kb,
        probe,
        misplaced_at: "58",
        inner: x,
        lone_leaf: a,
        items: vec![(ka, da), (kc, dc), (kb, db)],
    }
}

/// One whole batch of a node log's bytes.
#[derive(Clone, Copy, Debug)]
pub struct LogBatch {
    /// Its offset in the log.
    pub at: usize,
    /// Its sequence number.
    pub seq: u64,
    /// Its bytes, header and body.
    pub len: usize,
}

/// The whole batches of a node log's bytes (`log`), in order, as the
/// public decoders read them: up to the end, or the first batch that is
/// not whole (a header that does not decode, a body cut short or failing
/// its checksum).
pub fn log_batches(log: &[u8]) -> Vec<LogBatch> {
    use shamap_store::backend::log_store::format;
    let mut out = Vec::new();
    let mut pos = format::FILE_HEADER_LEN as usize;
    while pos + format::BATCH_HEADER_LEN <= log.len() {
        let h: &[u8; format::BATCH_HEADER_LEN] = log[pos..pos + format::BATCH_HEADER_LEN]
            .try_into()
            .expect("header length");
        let Ok(header) = format::decode_batch_header(h) else {
            break;
        };
        let len = format::BATCH_HEADER_LEN + header.body_len as usize;
        if pos + len > log.len()
            || crc32c::crc32c(&log[pos + format::BATCH_HEADER_LEN..pos + len]) != header.body_crc
        {
            break;
        }
        out.push(LogBatch {
            at: pos,
            seq: header.seq,
            len,
        });
        pos += len;
    }
    out
}

/// Three more versions of `v1` (the snapshot of a map whose keys are
/// `keys`, already imported as `v1`): each updates every twentieth key
/// (shifted by one each round), is written with `write_changed` and
/// recorded as `v2`…`v4`. Returns the four snapshots.
pub fn changed_versions(store: &dyn NodeStore, v1: Snapshot, keys: &[Key]) -> Vec<Snapshot> {
    let mut versions = vec![v1];
    for round in 0..3u8 {
        let mut m = versions.last().expect("one").to_map();
        let changed: Vec<Key> = keys
            .iter()
            .skip(usize::from(round))
            .step_by(20)
            .copied()
            .collect();
        for k in &changed {
            m.update(*k, &[round; 30]).expect("update");
        }
        let s = m.snapshot();
        shamap_store::write_changed(store, &s, &changed).expect("commit");
        shamap_store::record_root(
            store,
            &format!("v{}", round + 2),
            s.root_hash(),
            Default::default(),
        )
        .expect("record");
        versions.push(s);
    }
    versions
}

/// The names of the roots `store` retains, oldest first.
pub fn retained_names(store: &dyn NodeStore) -> Vec<String> {
    shamap_store::meta::retained(store)
        .expect("meta")
        .into_iter()
        .map(|r| r.name)
        .collect()
}

/// Backed-map options with a cache budget of `bytes`, the rest default.
pub fn with_budget(bytes: usize) -> shamap_store::BackedOptions {
    shamap_store::BackedOptions {
        budget_bytes: bytes,
        ..shamap_store::BackedOptions::default()
    }
}

/// `err` is the verified fetch's error for the node `hash` on the path of
/// `key`, naming its nibble path.
pub fn assert_bad_node(err: shamap_store::StoreError, hash: shamap::Hash256, key: &Key) {
    match err {
        shamap_store::StoreError::BadNode {
            hash: found, path, ..
        } => {
            assert_eq!(found, hash);
            let want: String = (0..path.len())
                .map(|d| format!("{:X}", key.nibble(d).get()))
                .collect();
            assert_eq!(path, want);
        }
        other => panic!("{other}"),
    }
}

/// Copies the store directory `from` to `to`, which must not exist (sparse
/// files stay sparse: fjall's journals are preallocated).
pub fn copy_store_dir(from: &std::path::Path, to: &std::path::Path) {
    let ok = std::process::Command::new("cp")
        .args(["-a", "--sparse=always"])
        .arg(from)
        .arg(to)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "cp -a {} {}", from.display(), to.display());
}

/// Every file under `dir`, at any depth, in no particular order.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}
