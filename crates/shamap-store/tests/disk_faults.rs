//! A real full disk and a real read-only file system under a `FjallStore`:
//! small tmpfs mounts (root only; elsewhere each test says why it skips).
//!
//! - A write that finds no space fails with one line, in bounded time, and
//!   dropping the store afterwards does not wait for a flush that cannot
//!   happen; once there is space again the store reopens with the last
//!   committed root intact, and the same import succeeds.
//! - A store on a read-only mount opens read-only: every read works, every
//!   write is refused in words, and nothing on the mount changes.
//!
//! And the directory rules of a `FjallStore`: never created among a user's
//! files, created afresh where a creation was cut short, one writer.

use std::path::Path;
use std::time::{Duration, Instant};

use shamap::MapKind;
use shamap_store::{
    import_ledger, meta, verify_all, FjallStore, NodeStore, NodeStoreExt, StoredMap,
};

use crate::support::random_map;
use crate::tmpfs::Tmpfs;

/// Imports `map` as a state map under `name`.
fn import(
    store: &FjallStore,
    name: &str,
    map: &mut shamap::ShaMap,
) -> Result<shamap_store::ImportedLedger, shamap_store::StoreError> {
    import_ledger(store, name, Some(&map.snapshot()), None, None, &mut |_| {})
}

fn store_in(dir: &Path) -> FjallStore {
    FjallStore::open(dir).expect("open the store")
}

#[test]
fn a_full_disk_fails_the_import_in_bounded_time_and_keeps_the_committed_root() {
    let Some((fs, db)) = Tmpfs::mount_db("3m") else {
        return;
    };
    let (mut small, _) = random_map(MapKind::AccountState, 300, 61);
    let (mut big, _) = random_map(MapKind::AccountState, 30_000, 62);
    let start = Instant::now();
    let committed = {
        let store = store_in(&db);
        let first = import(&store, "small", &mut small).expect("a small import fits");
        let err = import(&store, "big", &mut big).expect_err("30k entries do not fit in 3 MB");
        let line = err.to_string();
        assert!(!line.contains('\n'), "one line: {line}");
        assert!(line.contains("No space left on device"), "{line}");
        assert!(
            line.contains(&db.display().to_string()),
            "names the store: {line}"
        );
        first.account_hash
        // The store drops here: no flush wait may hang.
    };
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "took {:?}",
        start.elapsed()
    );
    // Space again: the store reopens at the committed root, and the same
    // import now succeeds.
    fs.remount("size=256m");
    let store = store_in(&db);
    let roots = meta::retained(&store).expect("retained");
    assert_eq!(roots.last().map(|r| r.hash), Some(committed));
    verify_all(&store, &committed).expect("the committed root verifies");
    let r = import(&store, "big", &mut big).expect("retry after the fault clears");
    assert_eq!(r.account_hash, big.root_hash());
    verify_all(&store, &r.account_hash).expect("the retried import verifies");
}

#[test]
fn a_store_on_a_read_only_mount_is_read_and_never_written() {
    let Some((fs, db)) = Tmpfs::mount_db("64m") else {
        return;
    };
    let (mut map, model) = random_map(MapKind::AccountState, 2000, 63);
    {
        let store = store_in(&db);
        import(&store, "state", &mut map).expect("import");
    }
    fs.remount("ro");
    let err = FjallStore::open(&db).expect_err("a read-only mount cannot be opened for writing");
    assert!(FjallStore::is_unwritable(&err), "{err}");
    let store = FjallStore::open_read_only(&db).expect("opens read-only");
    assert_eq!(store.location(), db.display().to_string());
    let root = meta::latest(&store).expect("meta").expect("a root").hash;
    assert_eq!(root, map.root_hash());
    verify_all(&store, &root).expect("verifies");
    let sm = StoredMap::open(&store, root, MapKind::AccountState).expect("open map");
    for (k, v) in model.iter().take(50) {
        assert_eq!(sm.get(k).expect("get").as_deref(), Some(&v[..]));
    }
    assert_eq!(sm.iter().count(), model.len());
    let refused = store
        .put_meta("x", vec![1])
        .expect_err("writes are refused");
    assert!(refused.to_string().contains("read-only"), "{refused}");
}

#[test]
fn a_store_is_not_created_inside_an_unrelated_non_empty_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("notes.txt"), b"mine").expect("a user's file");
    let err = FjallStore::open(dir.path()).expect_err("refused");
    assert!(err.to_string().contains("not a store"), "{err}");
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(
        names,
        vec![std::ffi::OsString::from("notes.txt")],
        "nothing written"
    );
    // An empty directory, or a new path, is fine.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    FjallStore::open(&empty).expect("an empty directory becomes a store");
    FjallStore::open(&empty).expect("and reopens as one");
}

/// fjall makes a new database's lock file, `keyspaces` folder and first
/// journal before its version marker: a process killed in between (the
/// SIGKILL test did this once in CI) used to leave a directory refused at
/// every later opening. Each such state, cut after each step and inside
/// the marker's write, now opens as a new store that keeps what is
/// committed to it; the same leftovers beside a user's file are refused
/// and left alone.
#[test]
fn a_store_whose_creation_was_cut_short_is_created_afresh() {
    type Step = fn(&Path);
    let steps: [(&str, Step); 6] = [
        ("lock file", |d| {
            std::fs::write(d.join("lock"), b"").expect("lock")
        }),
        ("keyspaces folder", |d| {
            std::fs::create_dir(d.join("keyspaces")).expect("keyspaces")
        }),
        ("first journal", |d| {
            let j = std::fs::File::create(d.join("0.jnl")).expect("journal");
            j.set_len(64 << 20).expect("preallocate");
        }),
        ("empty marker", |d| {
            std::fs::write(d.join("version"), b"").expect("marker")
        }),
        ("half a marker", |d| {
            std::fs::write(d.join("version"), b"FJ").expect("marker")
        }),
        ("whole marker", |d| {
            std::fs::write(d.join("version"), b"FJL\x03").expect("marker")
        }),
    ];
    let (mut map, model) = random_map(MapKind::AccountState, 300, 41);
    for cut in 1..=steps.len() {
        let dir = tempfile::tempdir().expect("tempdir");
        for (_, step) in &steps[..cut] {
            step(dir.path());
        }
        let what = steps[cut - 1].0;
        let root = {
            let store = FjallStore::open(dir.path())
                .unwrap_or_else(|e| panic!("cut after the {what}: {e}"));
            let root = import(&store, "v", &mut map).expect("import").account_hash;
            store.sync().expect("sync");
            root
        };
        let store = store_in(dir.path());
        let r = verify_all(&store, &root).unwrap_or_else(|e| panic!("cut after the {what}: {e}"));
        assert_eq!(r.leaves as usize, model.len(), "cut after the {what}");
    }

    // The same leftovers beside a file of the user's: not ours to remove.
    let dir = tempfile::tempdir().expect("tempdir");
    for (_, step) in &steps[..4] {
        step(dir.path());
    }
    std::fs::write(dir.path().join("notes.txt"), b"mine").expect("a user's file");
    let err = FjallStore::open(dir.path()).expect_err("refused");
    assert!(err.to_string().contains("not a store"), "{err}");
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name().into_string().expect("name"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["0.jnl", "keyspaces", "lock", "notes.txt", "version"]
    );
}

/// A second writer of the same store is refused in words (after the lock
/// patience of about a second), and opens once the first has closed.
#[test]
fn a_second_writer_is_refused_until_the_first_closes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = store_in(dir.path());
    first.put_meta("x", vec![1]).expect("write");
    let start = Instant::now();
    let err = FjallStore::open(dir.path()).expect_err("a second writer");
    assert!(
        err.to_string().contains("locked by another process"),
        "{err}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "refused in bounded time"
    );
    drop(first);
    let second = store_in(dir.path());
    assert_eq!(second.get_meta("x").expect("read"), Some(vec![1]));
}
