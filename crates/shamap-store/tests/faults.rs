//! Fault injection: every store operation of `import`, a backed-map commit
//! (the `apply` path, with spills), `copy_root` (sync) and `gc` fails in
//! turn, for every k up to the operation's count on a small case. After
//! each failure: the error is one line, the store's last committed root
//! still verifies and is the root from before or after the operation
//! (nothing in between), and the same operation succeeds once the fault
//! clears. The bodies are generic over the store: `log_store.rs` runs them
//! on the node log (sampling the read faults: each case there is a store in
//! a directory, with fsyncs).

use shamap::{Hash256, Key, MapKind, ShaMap};
use shamap_store::{
    copy_root, gc, import_ledger, meta, verify_all, BackedMap, Fault, FaultError, FaultyStore,
    MemStore, NodeStore, OpClass,
};

use crate::support::{random_map, with_budget};

/// A store holding one committed root (`base`), and the map behind it.
pub(crate) struct Case<S> {
    store: S,
    base: Hash256,
    map: ShaMap,
    /// Where `store` lives, if on disk: removed with the case.
    _dir: Option<tempfile::TempDir>,
}

/// A new, empty store of the kind under test, and the directory it lives
/// in if it is on disk.
pub(crate) type NewStore<S> = fn() -> (S, Option<tempfile::TempDir>);

fn mem() -> (MemStore, Option<tempfile::TempDir>) {
    (MemStore::new(), None)
}

fn case<S: NodeStore>(new: NewStore<S>) -> Case<S> {
    let (store, dir) = new();
    let (mut map, _) = random_map(MapKind::AccountState, 300, 71);
    let s = map.snapshot();
    import_ledger(&store, "base", Some(&s), None, None, &mut |_| {}).expect("base import");
    Case {
        store,
        base: s.root_hash(),
        map,
        _dir: dir,
    }
}

/// The keys changed by every operation: 40 updates, 10 inserts, 10 removes.
fn change(map: &mut ShaMap) -> Vec<(Key, Option<Vec<u8>>)> {
    let keys: Vec<Key> = map.iter().map(|(k, _)| *k).take(50).collect();
    let mut out = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        if i < 40 {
            out.push((*k, Some(vec![i as u8; 20])));
        } else {
            out.push((*k, None));
        }
    }
    for i in 0..10u8 {
        out.push((Key([0xA0 | i; 32]), Some(vec![i; 16])));
    }
    for (k, v) in &out {
        match v {
            Some(v) => map.upsert(*k, v).map(|_| ()).expect("upsert"),
            None => map.remove(k).map(|_| ()).expect("remove"),
        }
    }
    out
}

/// An operation under test: runs against `store` (the faulty wrapper) and
/// returns the root it committed.
pub(crate) type Op<S> = fn(&Case<S>, &dyn NodeStore) -> Result<Hash256, shamap_store::StoreError>;

pub(crate) fn op_import<S>(
    c: &Case<S>,
    store: &dyn NodeStore,
) -> Result<Hash256, shamap_store::StoreError> {
    let mut m = c.map.clone();
    change(&mut m);
    let s = m.snapshot();
    import_ledger(store, "next", Some(&s), None, None, &mut |_| {}).map(|r| r.account_hash)
}

pub(crate) fn op_commit<S>(
    c: &Case<S>,
    store: &dyn NodeStore,
) -> Result<Hash256, shamap_store::StoreError> {
    let mut m = c.map.clone();
    // A budget small enough that dirty nodes spill before the commit.
    let opts = with_budget(16 << 10);
    let mut b = BackedMap::open(store, c.base, MapKind::AccountState, opts)?;
    for (k, v) in change(&mut m) {
        match v {
            Some(v) => {
                b.upsert(k, &v)?;
            }
            None => {
                b.remove(&k)?;
            }
        }
    }
    b.commit("next")
}

pub(crate) fn op_gc<S>(
    c: &Case<S>,
    store: &dyn NodeStore,
) -> Result<Hash256, shamap_store::StoreError> {
    gc(store, &[c.base]).map(|_| c.base)
}

/// Copies `base` into an empty target; the target is the faulty store.
pub(crate) fn op_sync<S: NodeStore>(
    c: &Case<S>,
    store: &dyn NodeStore,
) -> Result<Hash256, shamap_store::StoreError> {
    copy_root(&c.store, store, c.base, "copied", &mut |_| {}).map(|_| c.base)
}

/// Runs `op` on stores from `new` once for every k up to its count of
/// `class` operations (every `read_stride`-th k for reads, and the last),
/// with that one failing (`error`, sticky or not), and checks the outcome.
pub(crate) fn every_k<S: NodeStore + Clone>(
    name: &str,
    op: Op<S>,
    on_empty_target: bool,
    new: NewStore<S>,
    read_stride: u64,
) {
    let target = |c: &Case<S>| {
        if on_empty_target {
            new()
        } else {
            (c.store.clone(), None)
        }
    };
    // A clean run: the operation counts and the root it commits.
    let c = case(new);
    if name == "gc" {
        // Something for gc to delete: a second root, then kept out.
        op_import(&c, &c.store).expect("second root");
    }
    let (clean, _clean_dir) = target(&c);
    let t = FaultyStore::new(clean);
    let expected = op(&c, &t).expect("clean run");
    let counts = t.counts();
    let mut failures = 0;
    for class in [OpClass::Read, OpClass::Write, OpClass::Sync] {
        let n = counts.of(class);
        let stride = if class == OpClass::Read {
            read_stride
        } else {
            1
        };
        for k in (1..=n).filter(|k| (k - 1) % stride == 0 || *k == n) {
            for (error, sticky) in [(FaultError::NoSpace, true), (FaultError::Io, false)] {
                let c = case(new);
                if name == "gc" {
                    op_import(&c, &c.store).expect("second root");
                }
                let (inner, _inner_dir) = target(&c);
                let before = meta::latest(&inner).expect("meta").map(|r| r.hash);
                let t = FaultyStore::new(inner.clone());
                t.set(Fault {
                    classes: vec![class],
                    at: k,
                    error,
                    sticky,
                });
                let what = format!("{name}: {class:?} #{k} fails with {error:?} (sticky {sticky})");
                match op(&c, &t) {
                    Ok(root) => {
                        // A read failure some step retries or does not need
                        // can pass; the result must still be right.
                        assert_eq!(root, expected, "{what}");
                    }
                    Err(e) => {
                        failures += 1;
                        let line = e.to_string();
                        assert!(!line.contains('\n'), "{what}: one line: {line}");
                        assert!(t.injected() > 0, "{what}: failed without the fault: {line}");
                    }
                }
                t.clear();
                // The last committed root is the old one or the new one,
                // and it verifies.
                let now = meta::latest(&inner).expect("meta").map(|r| r.hash);
                assert!(
                    now == before || now == Some(expected),
                    "{what}: last root {now:?}, neither {before:?} nor {expected}"
                );
                if let Some(root) = now {
                    verify_all(&inner, &root)
                        .unwrap_or_else(|e| panic!("{what}: last root {root}: {e}"));
                }
                // A retry once the fault clears succeeds.
                let root = op(&c, &t).unwrap_or_else(|e| panic!("{what}: retry: {e}"));
                assert_eq!(root, expected, "{what}: retry");
                verify_all(&inner, &root).unwrap_or_else(|e| panic!("{what}: after retry: {e}"));
            }
        }
    }
    eprintln!("{name}: {counts:?}, {failures} runs failed as injected");
    assert!(
        failures > 0,
        "{name}: no injected fault failed the operation"
    );
    assert!(counts.syncs > 0, "{name}: success without a sync");
}

/// The operations [`every_k`] is run on, each with its name and whether
/// it writes into an empty store of its own: an import, a spilling backed
/// commit, a gc and a copy into an empty store.
pub(crate) fn operations<S: NodeStore>() -> [(&'static str, Op<S>, bool); 4] {
    [
        ("import", op_import, false),
        ("commit", op_commit, false),
        ("gc", op_gc, false),
        ("sync", op_sync, true),
    ]
}

#[test]
fn import_commit_gc_and_sync_survive_a_fault_at_every_operation() {
    for (name, op, on_empty_target) in operations() {
        every_k(name, op, on_empty_target, mem, 1);
    }
}
