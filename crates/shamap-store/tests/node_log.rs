//! The node log (`LogStore`) as a store: the shared backend tests (SIGKILL
//! crash tests, a backed map against the oracles) on it, and what is its
//! own: unfinished writes cut off, damage refused with its offset and never
//! truncated, reclaim after gc beside a reader, a full disk, the writer
//! lock and read-only openings, foreign directories and files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use shamap::{Hash256, Key, MapKind, ShaMap};
use shamap_store::backend::log_store::format::BatchEncoder;
use shamap_store::backend::log_store::{checkpoint, LOG_FILE};
use shamap_store::{
    gc, import_ledger, meta, verify_all, BackedMap, BackedOptions, LogStore, NodeStore,
    NodeStoreExt, StoreError, StoredMap,
};

use crate::backed::{contents, random_ops_against_oracles};
use crate::crash;
use crate::support::{random_map, seed, with_budget};
use crate::tmpfs::Tmpfs;

pub(crate) fn open_log(dir: &Path) -> LogStore {
    LogStore::open(dir).expect("open the store")
}

pub(crate) fn log_path(dir: &Path) -> PathBuf {
    dir.join(LOG_FILE)
}

/// Imports `map` as a state map under `name`; returns its root.
pub(crate) fn import(
    store: &dyn NodeStore,
    name: &str,
    map: &mut ShaMap,
) -> Result<Hash256, StoreError> {
    import_ledger(store, name, Some(&map.snapshot()), None, None, &mut |_| {})
        .map(|r| r.account_hash)
}

/// Versions of a map: each one's root and model.
pub(crate) type Versions = Vec<(Hash256, BTreeMap<Key, Vec<u8>>)>;

/// Imports `n` random maps of `entries` entries (seeds `s`, `s + 1`, …) as
/// `v0`, `v1`, …; their roots and models.
pub(crate) fn import_versions(store: &dyn NodeStore, n: u64, entries: usize, s: u64) -> Versions {
    (0..n)
        .map(|i| {
            let (mut m, model) = random_map(MapKind::AccountState, entries, s + i);
            let root = import(store, &format!("v{i}"), &mut m).expect("import");
            (root, model)
        })
        .collect()
}

/// A node log in a new temporary directory, closed, holding
/// [`import_versions`]`(n, entries, s)`: the directory, the roots and
/// models.
pub(crate) fn log_with_versions(n: u64, entries: usize, s: u64) -> (tempfile::TempDir, Versions) {
    let dir = tempfile::tempdir().expect("tempdir");
    let versions = import_versions(&open_log(dir.path()), n, entries, s);
    (dir, versions)
}

/// Opens the node log in `dir` and reads every version back whole.
pub(crate) fn assert_versions_read(
    dir: &Path,
    versions: &[(Hash256, BTreeMap<Key, Vec<u8>>)],
    what: &str,
) {
    let store = open_log(dir);
    for (root, model) in versions {
        assert_eq!(&items(&store, *root), model, "{what}");
    }
}

/// [`Tmpfs::mount_db`] with `taken` bytes of the tmpfs held by a file:
/// the tmpfs, the path `db` on it, and the file (remove it to free the
/// space).
fn mount_db_filled(size: &str, taken: usize) -> Option<(Tmpfs, PathBuf, PathBuf)> {
    let (fs, db) = Tmpfs::mount_db(size)?;
    let filler = fs.path.join("filler");
    std::fs::write(&filler, vec![1u8; taken]).expect("filler");
    Some((fs, db, filler))
}

/// Asserts that `e`, a store's refusal to open `dir`, is one line naming
/// the store and holding every one of `words`; `what` names the case.
pub(crate) fn assert_refusal(e: &StoreError, dir: &Path, words: &[&str], what: &str) {
    let line = e.to_string();
    assert!(!line.contains('\n'), "{what}: one line: {line}");
    assert!(
        line.contains(&dir.display().to_string()),
        "{what}: names the store: {line}"
    );
    for w in words {
        assert!(line.contains(w), "{what}: {w:?} in {line}");
    }
}

/// Every item of the map at `root`, read through a `StoredMap`.
pub(crate) fn items(store: &dyn NodeStore, root: Hash256) -> BTreeMap<Key, Vec<u8>> {
    StoredMap::open(store, root, MapKind::AccountState)
        .expect("open")
        .iter()
        .map(|e| e.expect("read"))
        .collect()
}

/// The names of the retained roots, oldest first.
pub(crate) fn names(store: &dyn NodeStore) -> Vec<String> {
    meta::retained(store)
        .expect("meta")
        .into_iter()
        .map(|r| r.name)
        .collect()
}

// ---- the shared backend tests, on the node log ----

const CHILD_ENV: &str = "SHAMAP_STORE_LOG_CRASH_DIR";
const BACKED_CHILD_ENV: &str = "SHAMAP_STORE_LOG_BACKED_CRASH_DIR";

#[test]
#[ignore = "child process of sigkill_during_node_log_imports_never_breaks_the_last_recorded_root"]
fn log_crash_child() {
    crash::import_child(CHILD_ENV, open_log);
}

#[test]
fn sigkill_during_node_log_imports_never_breaks_the_last_recorded_root() {
    crash::kill_imports("node_log::log_crash_child", CHILD_ENV, 90, open_log);
}

const GC_CHILD_ENV: &str = "SHAMAP_STORE_LOG_GC_CRASH_DIR";

#[test]
#[ignore = "child process of sigkill_during_node_log_imports_gc_and_reclaims_never_breaks_the_last_recorded_root"]
fn log_gc_crash_child() {
    crash::import_child_collecting(GC_CHILD_ENV, open_log, Some(4), |store| {
        store.reclaim_now().expect("reclaim");
    });
}

/// The import child with a gc and a reclaim (copy, fsync, rename) after
/// every fourth version, so kills land in sweeps and reclaims too.
#[test]
fn sigkill_during_node_log_imports_gc_and_reclaims_never_breaks_the_last_recorded_root() {
    crash::kill_imports("node_log::log_gc_crash_child", GC_CHILD_ENV, 103, open_log);
}

#[test]
#[ignore = "child process of sigkill_during_backed_commits_on_the_node_log_reopens_at_the_last_committed_root"]
fn log_backed_crash_child() {
    crash::backed_child(BACKED_CHILD_ENV, open_log);
}

#[test]
fn sigkill_during_backed_commits_on_the_node_log_reopens_at_the_last_committed_root() {
    crash::kill_backed_commits(
        "node_log::log_backed_crash_child",
        BACKED_CHILD_ENV,
        91,
        open_log,
    );
}

const PRUNING_CHILD_ENV: &str = "SHAMAP_STORE_PRUNING_CRASH_DIR";

#[test]
#[ignore = "child process of sigkill_during_pruning_commits_on_the_node_log_reopens_at_the_last_committed_root"]
fn log_pruning_crash_child() {
    crash::backed_child_with(PRUNING_CHILD_ENV, open_log, true);
}

/// As above, with a map that deletes in each commit what the commit
/// replaced: a kill in such a commit leaves the previous head or the new
/// one, whole.
#[test]
fn sigkill_during_pruning_commits_on_the_node_log_reopens_at_the_last_committed_root() {
    crash::kill_backed_commits(
        "node_log::log_pruning_crash_child",
        PRUNING_CHILD_ENV,
        95,
        open_log,
    );
}

#[test]
fn a_backed_map_on_the_node_log_matches_the_in_memory_map_and_a_btreemap() {
    for (kind, budget, s) in [
        (MapKind::AccountState, 48 << 10, seed(92)),
        (MapKind::TransactionNoMeta, 96 << 10, seed(93)),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let (_, head, model) = {
            let store = open_log(dir.path());
            random_ops_against_oracles(&store, kind, budget, s)
        };
        // Closed and reopened: the head is recorded and whole.
        let store = open_log(dir.path());
        let rec = meta::retained(&store).expect("meta");
        assert_eq!(rec.last().map(|r| r.hash), Some(head), "seed {s}");
        if !head.is_zero() {
            verify_all(&store, &head).expect("head verifies after reopening");
        }
        let m = BackedMap::open(&store, head, kind, BackedOptions::default()).expect("open head");
        assert_eq!(contents(&m), model, "seed {s}: after reopening");
    }
}

/// A backed map's budget covers the node log's index: what the cache may
/// hold shrinks by it, and the stats report it.
#[test]
fn a_backed_maps_budget_covers_the_node_logs_index() {
    let s = seed(94);
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_log(dir.path());
    let (mut m, model) = random_map(MapKind::AccountState, 30_000, s);
    let root = import(&store, "m", &mut m).expect("import");
    let index = store.usage().index_bytes;
    assert!(index > 0);
    // The index and the few metadata records.
    let resident = store.memory().resident;
    assert!(
        resident >= index && resident < index + 4096,
        "{resident} vs {index}"
    );
    let budget = 4 * index as usize;
    let opts = with_budget(budget);
    let map = BackedMap::open(&store, root, MapKind::AccountState, opts).expect("open");
    for (k, v) in &model {
        assert_eq!(map.get(k).expect("get").as_ref(), Some(v), "seed {s}");
    }
    let st = map.stats();
    assert_eq!(st.store_resident_bytes, store.memory().resident);
    assert!(st.cache_peak_bytes > 0);
    assert!(
        st.cache_peak_bytes + st.store_resident_bytes as usize <= budget,
        "seed {s}: {st:?}"
    );
}

// ---- unfinished writes and damage ----

/// A store with two imported versions; returns their roots and contents.
fn two_versions(dir: &Path, s: u64) -> [(Hash256, BTreeMap<Key, Vec<u8>>); 2] {
    let store = open_log(dir);
    let (mut a, ma) = random_map(MapKind::AccountState, 2000, s);
    let (mut b, mb) = random_map(MapKind::AccountState, 2000, s + 1);
    let ra = import(&store, "a", &mut a).expect("import a");
    let rb = import(&store, "b", &mut b).expect("import b");
    [(ra, ma), (rb, mb)]
}

/// The bytes of one whole batch holding a node put and a metadata record.
fn a_batch(seq: u64) -> Vec<u8> {
    let mut e = BatchEncoder::default();
    e.begin();
    e.put_node(&Hash256([0x5A; 32]), &[0x5A; 4000]);
    e.put_meta("retained", b"not a list");
    e.finish(seq);
    e.bytes().to_vec()
}

/// The sequence number the next batch appended to the log at `path` must
/// have: one more than its last whole batch's.
pub(crate) fn next_seq(path: &Path) -> u64 {
    let bytes = std::fs::read(path).expect("read the log");
    crate::support::log_batches(&bytes)
        .last()
        .map_or(0, |b| b.seq + 1)
}

/// Appends `bytes` to the file at `path` (behind the store's back).
pub(crate) fn append(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .expect("open the log");
    f.write_all(bytes).expect("append");
}

#[test]
fn an_unfinished_write_at_the_end_is_cut_off_and_everything_before_it_stays() {
    let s = seed(94);
    // Three ways a write can be left unfinished: the file ends inside the
    // batch; its header never reached the disk (zeros); a sector of its
    // body never did (zeros where the body should be).
    let batch = a_batch(1 << 40);
    let mut zero_sector = batch.clone();
    let mid = zero_sector.len() / 2 / 512 * 512;
    zero_sector[mid..mid + 1024].fill(0);
    let cases: [(&str, Vec<u8>); 3] = [
        ("cut short", batch[..batch.len() - 100].to_vec()),
        ("header never written", {
            let mut b = batch.clone();
            b[..32].fill(0);
            b
        }),
        ("a sector never written", zero_sector),
    ];
    for (what, tail) in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        let versions = two_versions(dir.path(), s);
        let log = log_path(dir.path());
        let before = std::fs::metadata(&log).expect("stat").len();
        append(&log, &tail);
        {
            let store = open_log(dir.path());
            // Opening wrote nothing.
            assert_eq!(
                std::fs::metadata(&log).expect("stat").len(),
                before + tail.len() as u64,
                "{what}: opening changed the file"
            );
            for (root, model) in &versions {
                verify_all(&store, root).unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!(&items(&store, *root), model, "{what}");
            }
            // The next write cuts the unfinished one off and follows the
            // last whole batch.
            let (mut c, mc) = random_map(MapKind::AccountState, 500, s + 2);
            let rc = import(&store, "c", &mut c).expect("import after the cut");
            assert_eq!(items(&store, rc), mc, "{what}");
        }
        let store = open_log(dir.path());
        let names = names(&store);
        assert_eq!(names, ["a", "b", "c"], "{what}");
        for (root, model) in &versions {
            assert_eq!(&items(&store, *root), model, "{what}: after reopening");
        }
    }
}

/// Removes the index checkpoint a writer left in `dir` on closing: an
/// opening then scans every batch of the log (what the damage tests test;
/// damage below a checkpoint is met by the reads, see
/// `damage_below_an_index_checkpoint_is_met_by_the_read_that_needs_it`).
pub(crate) fn without_checkpoint(dir: &Path) {
    match std::fs::remove_file(dir.join(checkpoint::CHECKPOINT_FILE)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => panic!("remove: {e}"),
        _ => {}
    }
}

/// Flips one bit at `at` of the log in `dir`, runs `check`, flips it back.
fn with_a_flipped_bit(dir: &Path, at: usize, check: impl FnOnce()) {
    without_checkpoint(dir);
    let log = log_path(dir);
    let good = std::fs::read(&log).expect("read");
    let mut bad = good.clone();
    bad[at] ^= 0x10;
    std::fs::write(&log, &bad).expect("write");
    check();
    // Nothing was truncated or rewritten.
    assert_eq!(
        std::fs::read(&log).expect("read"),
        bad,
        "the log was changed"
    );
    std::fs::write(&log, &good).expect("restore");
}

#[test]
fn damage_anywhere_is_refused_with_its_offset_and_undoing_it_restores_everything() {
    let s = seed(95);
    let dir = tempfile::tempdir().expect("tempdir");
    let versions = two_versions(dir.path(), s);
    let len = std::fs::metadata(log_path(dir.path())).expect("stat").len() as usize;
    // In the middle (whole batches follow), in the last batch (the root
    // record of `b`), in the file header, in a batch header.
    for at in [len / 3, len - 20, 3, 16 + 9] {
        with_a_flipped_bit(dir.path(), at, || {
            for opened in [
                LogStore::open(dir.path()),
                LogStore::open_read_only(dir.path()),
            ] {
                let e = opened.expect_err("a damaged log does not open").to_string();
                assert!(!e.contains('\n'), "one line: {e}");
                assert!(
                    e.contains(&dir.path().display().to_string()),
                    "names the store: {e}"
                );
                assert!(
                    e.contains("damaged at byte") || e.contains("not a node log"),
                    "byte {at}: {e}"
                );
            }
        });
    }
    assert_versions_read(dir.path(), &versions, "after undoing the damage");
}

#[test]
fn a_file_that_is_not_a_node_log_and_a_foreign_directory_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("notes.txt"), "mine").expect("write");
    let e = LogStore::open(dir.path()).expect_err("foreign").to_string();
    assert!(e.contains("not a store"), "{e}");
    assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 1);

    let dir = tempfile::tempdir().expect("tempdir");
    drop(open_log(dir.path()));
    let log = log_path(dir.path());
    let mut bytes = std::fs::read(&log).expect("read");
    bytes[8] = 9; // the layout version
    std::fs::write(&log, &bytes).expect("write");
    let e = LogStore::open(dir.path())
        .expect_err("version 9")
        .to_string();
    assert!(e.contains("version 9"), "{e}");
    std::fs::write(&log, b"SQLite format 3\0").expect("write");
    let e = LogStore::open(dir.path())
        .expect_err("not ours")
        .to_string();
    assert!(e.contains("not a node log"), "{e}");

    // An empty directory becomes a store.
    let empty = tempfile::tempdir().expect("tempdir");
    let store = open_log(empty.path());
    assert!(LogStore::is_store(empty.path()));
    assert!(meta::retained(&store).expect("meta").is_empty());
}

#[test]
fn a_value_that_does_not_hash_to_its_key_is_corrupt_never_data() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut map, _) = random_map(MapKind::AccountState, 300, seed(96));
    let root = {
        let store = open_log(dir.path());
        import(&store, "m", &mut map).expect("import")
    };
    // Write a batch, with valid checksums, that stores other bytes under
    // the root's hash: the store hands them back only as corrupt.
    let mut e = BatchEncoder::default();
    e.begin();
    let mut forged = vec![0u8; 9 + 4 + 512];
    forged[8] = 3;
    forged[9..13].copy_from_slice(b"MIN\0");
    forged[20] = 1;
    e.put_node(&root, &forged);
    e.finish(next_seq(&log_path(dir.path())));
    append(&log_path(dir.path()), e.bytes());
    let store = open_log(dir.path());
    let err = store.get(&root).expect_err("corrupt");
    assert!(
        matches!(err, StoreError::Corrupt { hash, .. } if hash == root),
        "{err}"
    );
    let err = verify_all(&store, &root).expect_err("verify finds it");
    assert!(err.to_string().contains(&root.to_string()), "{err}");
}

// ---- gc and reclaim ----

#[test]
fn gc_reclaims_the_log_beside_a_reader_and_keeps_the_kept_root_whole() {
    let s = seed(97);
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_log(dir.path());
    // Twelve versions, each a different map: after gc keeps the last,
    // most of the log is dead.
    let mut last = (Hash256::ZERO, BTreeMap::new());
    for v in 0..12 {
        let (mut m, model) = random_map(MapKind::AccountState, 12_000, s + v);
        last = (
            import(&store, &format!("v{v}"), &mut m).expect("import"),
            model,
        );
    }
    let before = store.usage();
    assert!(before.log_bytes > 16 << 20, "{before:?}");
    let (root, model) = last;
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut rounds = 0;
            while !stop.load(Ordering::Relaxed) || rounds == 0 {
                assert_eq!(items(&store, root), model, "the reader, round {rounds}");
                rounds += 1;
            }
            rounds
        });
        gc(&store, &[root]).expect("gc");
        stop.store(true, Ordering::Relaxed);
        let rounds = reader.join().expect("the reader did not panic");
        assert!(rounds > 0);
    });
    let after = store.usage();
    assert!(
        after.log_bytes * 4 < before.log_bytes,
        "reclaimed: {before:?} -> {after:?}"
    );
    assert_eq!(
        std::fs::metadata(log_path(dir.path())).expect("stat").len(),
        after.log_bytes
    );
    verify_all(&store, &root).expect("the kept root verifies");
    assert!(!dir.path().join("nodes.log.compact").exists());
    drop(store);
    let store = open_log(dir.path());
    assert_eq!(store.usage(), after, "the same after reopening");
    assert_eq!(items(&store, root), model);
    let names = names(&store);
    assert_eq!(names, ["v11"]);
}

// ---- full disk, locks, read-only ----

/// A write that met a full disk failed in one line naming the cause and
/// the store, within a minute of `start`.
fn assert_a_full_disk_in_one_line(err: &StoreError, db: &Path, start: Instant) {
    let line = err.to_string();
    assert!(!line.contains('\n'), "one line: {line}");
    assert!(line.contains("No space left on device"), "{line}");
    assert!(line.contains(&db.display().to_string()), "{line}");
    assert!(start.elapsed() < Duration::from_secs(60));
}

#[test]
fn a_full_disk_fails_a_write_in_bounded_time_and_the_store_recovers() {
    // 4 MiB taken: the big import (~5.6 MB) fits only once it is freed.
    let Some((_fs, db, filler)) = mount_db_filled("8m", 4 << 20) else {
        return;
    };
    let (mut small, small_model) = random_map(MapKind::AccountState, 300, seed(98));
    let (mut big, big_model) = random_map(MapKind::AccountState, 40_000, seed(99));
    let start = Instant::now();
    let store = open_log(&db);
    let first = import(&store, "small", &mut small).expect("a small import fits");
    let err = import(&store, "big", &mut big).expect_err("does not fit");
    assert_a_full_disk_in_one_line(&err, &db, start);
    // Still readable, and the committed root whole.
    assert_eq!(items(&store, first), small_model);
    // With space again, the same import succeeds, and all of it survives
    // reopening.
    std::fs::remove_file(&filler).expect("free space");
    let big_root = import(&store, "big", &mut big).expect("fits now");
    drop(store);
    let store = open_log(&db);
    assert_eq!(items(&store, first), small_model);
    assert_eq!(items(&store, big_root), big_model);
}

/// The first import into a log is its bulk write (`ingest_unordered`:
/// batches encoded on one thread, written and indexed on another). A full
/// disk part way: one line, the log cut back to its last whole batch (it
/// reopens, and the nodes written before the failure read back), and a
/// retry with space completes the import.
#[test]
fn a_full_disk_during_an_import_into_an_empty_log_fails_in_words_and_a_retry_completes_it() {
    // ~11 MB of log (three bulk batches) into ~6 MiB of space.
    let Some((_fs, db, filler)) = mount_db_filled("16m", 10 << 20) else {
        return;
    };
    let (mut big, big_model) = random_map(MapKind::AccountState, 80_000, seed(97));
    let start = Instant::now();
    let store = open_log(&db);
    let err = import(&store, "big", &mut big).expect_err("does not fit");
    assert_a_full_disk_in_one_line(&err, &db, start);
    assert!(names(&store).is_empty(), "no root recorded");
    let written = store.usage();
    assert!(written.nodes > 0, "the batches before the failure stay");
    let log_len = std::fs::metadata(log_path(&db)).expect("log").len();
    assert_eq!(
        log_len, written.log_bytes,
        "cut back to the last whole batch"
    );
    drop(store);
    // Reopening finds whole batches only, and every node in them verifies.
    let store = open_log(&db);
    assert_eq!(store.usage(), written);
    let mut checked = 0;
    store
        .for_each_value(&mut |hash, _| {
            store.get(&hash).expect("a stored node verifies");
            checked += 1;
            std::ops::ControlFlow::Continue(())
        })
        .expect("read the log");
    assert_eq!(checked, written.nodes);
    std::fs::remove_file(&filler).expect("free space");
    let root = import(&store, "big", &mut big).expect("fits now");
    drop(store);
    let store = open_log(&db);
    assert_eq!(items(&store, root), big_model);
    verify_all(&store, &root).expect("verifies");
}

#[test]
fn one_writer_at_a_time_and_readers_beside_it_see_the_store_as_of_their_opening() {
    let dir = tempfile::tempdir().expect("tempdir");
    let writer = open_log(dir.path());
    let (mut a, ma) = random_map(MapKind::AccountState, 500, seed(100));
    let ra = import(&writer, "a", &mut a).expect("import");
    let e = LogStore::open(dir.path()).expect_err("locked");
    assert!(LogStore::is_locked(&e), "{e}");
    assert!(e.to_string().contains("locked by another process"), "{e}");
    let reader = LogStore::open_read_only(dir.path()).expect("a reader beside the writer");
    let (mut b, _) = random_map(MapKind::AccountState, 500, seed(101));
    import(&writer, "b", &mut b).expect("the writer goes on");
    assert_eq!(items(&reader, ra), ma);
    let names = names(&reader);
    assert_eq!(names, ["a"], "as of its opening");
    let e = import(&reader, "c", &mut b).expect_err("read-only");
    assert!(e.to_string().contains("read-only"), "{e}");
    drop(writer);
    drop(open_log(dir.path()));
}

/// A `flock` belongs to the open file, and a child process being started
/// shares every open file until its `exec`: a store closed and opened
/// again while another thread spawns processes once found its own old
/// lock held (a fifth of openings failed, "locked by another process").
#[test]
fn a_store_reopens_while_another_thread_spawns_processes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut m, _) = random_map(MapKind::AccountState, 50, seed(103));
    let root = import(&open_log(dir.path()), "m", &mut m).expect("import");
    let stop = AtomicBool::new(false);
    // The openings' outcome is asserted after the spawner has stopped: a
    // panic inside the scope would wait for it forever.
    let (spawned, opened) = std::thread::scope(|scope| {
        let spawner = scope.spawn(|| {
            let mut spawned = 0u32;
            while !stop.load(Ordering::Relaxed) {
                match std::process::Command::new("true").status() {
                    Ok(status) if status.success() => spawned += 1,
                    _ => break,
                }
            }
            spawned
        });
        let opened = (0..2000).try_for_each(|i| {
            let store = LogStore::open(dir.path())
                .map_err(|e| format!("opening {i} beside a spawning thread: {e}"))?;
            if i % 100 == 0 {
                verify_all(&store, &root).map_err(|e| format!("opening {i}: {e}"))?;
            }
            Ok::<(), String>(())
        });
        stop.store(true, Ordering::Relaxed);
        (spawner.join().expect("spawner"), opened)
    });
    opened.unwrap_or_else(|e| panic!("{e}"));
    assert!(spawned > 0, "no process was spawned beside the openings");
}

#[test]
fn a_store_on_a_read_only_mount_opens_read_only_and_nothing_changes() {
    let Some((fs, db)) = Tmpfs::mount_db("8m") else {
        return;
    };
    let (mut m, model) = random_map(MapKind::AccountState, 800, seed(102));
    let root = import(&open_log(&db), "m", &mut m).expect("import");
    let bytes = std::fs::read(log_path(&db)).expect("read");
    fs.remount("ro");
    let e = LogStore::open(&db).expect_err("cannot be written");
    assert!(LogStore::is_unwritable(&e), "{e}");
    let store = LogStore::open_read_only(&db).expect("read-only");
    assert_eq!(items(&store, root), model);
    verify_all(&store, &root).expect("verifies");
    let e = import(&store, "again", &mut m).expect_err("refused");
    assert!(e.to_string().contains("read-only"), "{e}");
    drop(store);
    assert_eq!(std::fs::read(log_path(&db)).expect("read"), bytes);
    fs.remount("rw");
}
