//! The node log's index checkpoint: left by a writer that closes cleanly,
//! used by the next opening to skip the log it covers, and ignored (the
//! whole log scanned) whenever it does not describe the log: damaged, of a
//! log since rewritten, of bytes since changed. In every case an opening
//! sees exactly what an opening that scans the whole log sees.

use std::collections::BTreeMap;
use std::path::Path;

use shamap::{Hash256, Key, MapKind};
use shamap_store::backend::log_store::{checkpoint, format, LogStore, LogUsage};
use shamap_store::{gc, verify_all, NodeStore, NodeStoreExt, StoredMap};

use crate::node_log::{
    import, import_versions, items, log_path, log_with_versions, names, open_log,
    without_checkpoint,
};
use crate::support::{log_batches, random_map, seed};

type Model = BTreeMap<Key, Vec<u8>>;

fn checkpoint_path(dir: &Path) -> std::path::PathBuf {
    dir.join(checkpoint::CHECKPOINT_FILE)
}

fn log_len(dir: &Path) -> u64 {
    std::fs::metadata(log_path(dir)).expect("stat").len()
}

/// What an opening of `dir` sees: its retained names, every version's
/// items, its metadata counters. Read-only, so `dir` is not changed.
fn seen(dir: &Path, versions: &[(Hash256, Model)]) -> (Vec<String>, Vec<Model>, LogUsage) {
    let store = LogStore::open_read_only(dir).expect("open read-only");
    let all = versions
        .iter()
        .map(|(root, _)| items(&store, *root))
        .collect();
    (names(&store), all, store.usage())
}

/// Asserts that an opening of `dir` that uses its checkpoint (scanning
/// `scanned` bytes) sees what one that scans the whole log sees, and what
/// the models say; leaves the checkpoint in place.
fn agrees_with_a_whole_scan(dir: &Path, versions: &[(Hash256, Model)], scanned: u64, what: &str) {
    let (names_c, items_c, usage_c) = seen(dir, versions);
    assert_eq!(usage_c.scanned_bytes, scanned, "{what}: bytes scanned");
    let saved = std::fs::read(checkpoint_path(dir)).ok();
    without_checkpoint(dir);
    let (names_s, items_s, usage_s) = seen(dir, versions);
    if let Some(bytes) = saved {
        std::fs::write(checkpoint_path(dir), bytes).expect("put the checkpoint back");
    }
    assert_eq!(
        usage_s.scanned_bytes,
        log_len(dir) - format::FILE_HEADER_LEN,
        "{what}: a whole scan"
    );
    assert_eq!(names_c, names_s, "{what}: names");
    assert_eq!(items_c, items_s, "{what}: items");
    let counters = |u: LogUsage| (u.nodes, u.log_bytes, u.live_bytes, u.index_bytes);
    assert_eq!(counters(usage_c), counters(usage_s), "{what}: counters");
    for ((_, model), got) in versions.iter().zip(&items_c) {
        assert_eq!(got, model, "{what}: against the model");
    }
}

#[test]
fn a_clean_close_leaves_a_checkpoint_and_the_next_opening_scans_nothing_before_it() {
    let s = seed(120);
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let mut versions = Vec::new();
    {
        let store = open_log(d);
        versions.extend(import_versions(&store, 2, 1500, s));
        assert!(!checkpoint_path(d).exists(), "none while a writer is open");
    }
    assert!(checkpoint_path(d).exists(), "left by the clean close");
    agrees_with_a_whole_scan(d, &versions, 0, "after the first close");

    // A writer keeps it at opening (the log only grows after it, so it
    // stays true); its own close leaves a new one.
    {
        let store = open_log(d);
        assert!(checkpoint_path(d).exists(), "kept by the writer's opening");
        assert_eq!(store.usage().scanned_bytes, 0, "the writer used it");
        let (mut m, model) = random_map(MapKind::AccountState, 1500, s + 2);
        versions.push((import(&store, "v2", &mut m).expect("import"), model));
    }
    agrees_with_a_whole_scan(d, &versions, 0, "after the second close");

    // A checkpoint that covers a prefix: the first one, put back after the
    // log grew (with deletes: gc drops v0) under a writer that left its
    // own, as a build without checkpoints would have. The opening scans
    // the rest and applies it.
    let first = std::fs::read(checkpoint_path(d)).expect("read");
    let covered = log_len(d);
    {
        let store = open_log(d);
        let keep: Vec<Hash256> = versions[1..].iter().map(|v| v.0).collect();
        gc(&store, &keep).expect("gc");
        store.put_meta("after", vec![9]).expect("meta");
    }
    versions.remove(0);
    std::fs::write(checkpoint_path(d), &first).expect("the older checkpoint");
    let grown = log_len(d);
    assert!(grown > covered, "the log grew");
    agrees_with_a_whole_scan(d, &versions, grown - covered, "from an older checkpoint");
    let store = LogStore::open_read_only(d).expect("open");
    assert_eq!(store.get_meta("after").expect("meta"), Some(vec![9]));
    assert_eq!(names(&store), ["v1", "v2"]);
}

#[test]
fn a_checkpoint_that_does_not_describe_the_log_is_ignored() {
    let s = seed(121);
    let (dir, versions) = log_with_versions(3, 1500, s);
    let d = dir.path();
    let good = std::fs::read(checkpoint_path(d)).expect("read");
    let whole = log_len(d) - format::FILE_HEADER_LEN;

    // Damaged anywhere: its checksum.
    for at in [0, 9, 40, good.len() / 2, good.len() - 1] {
        let mut bad = good.clone();
        bad[at] ^= 0x04;
        std::fs::write(checkpoint_path(d), &bad).expect("damage");
        agrees_with_a_whole_scan(d, &versions, whole, &format!("damaged at {at}"));
    }
    // Cut short, empty.
    for len in [0, 3, 60, good.len() - 4] {
        std::fs::write(checkpoint_path(d), &good[..len]).expect("cut");
        agrees_with_a_whole_scan(d, &versions, whole, &format!("cut to {len}"));
    }

    // The log's last bytes below what it covers changed (same file, same
    // length): the tail check. Undone, the checkpoint is used again.
    std::fs::write(checkpoint_path(d), &good).expect("restore");
    let log = std::fs::read(log_path(d)).expect("read");
    let mut changed = log.clone();
    let at = changed.len() - 100;
    changed[at] ^= 0x01;
    std::fs::write(log_path(d), &changed).expect("change");
    let e = LogStore::open_read_only(d).expect_err("the checkpoint's record contradicts the log");
    let start = log.len() as u64 - 4096;
    assert!(
        e.to_string()
            .contains(&format!("damaged at bytes {start}..{}", log.len())),
        "{e}"
    );
    // Cut short below what it recorded: refused, naming the cut.
    std::fs::write(log_path(d), &log[..log.len() - 40]).expect("cut");
    let e = LogStore::open(d).expect_err("the log lost bytes the checkpoint recorded");
    assert!(
        e.to_string()
            .contains(&format!("damaged at byte {}", log.len() - 40))
            && e.to_string().contains("cut short"),
        "{e}"
    );
    assert!(checkpoint_path(d).exists(), "a reader removes nothing");
    std::fs::write(log_path(d), &log).expect("undo");
    agrees_with_a_whole_scan(d, &versions, 0, "the log as it was");

    // The log reclaimed (a new file) after gc dropped v0 and v1, the old
    // checkpoint put back: another file.
    {
        let store = open_log(d);
        gc(&store, &[versions[2].0]).expect("gc");
        store.reclaim_now().expect("reclaim");
    }
    std::fs::write(checkpoint_path(d), &good).expect("the old checkpoint");
    let whole = log_len(d) - format::FILE_HEADER_LEN;
    let kept = vec![versions[2].clone()];
    agrees_with_a_whole_scan(
        d,
        &kept,
        whole,
        "a checkpoint of the log before the reclaim",
    );
    let store = LogStore::open_read_only(d).expect("open");
    assert!(
        StoredMap::open(&store, versions[0].0, MapKind::AccountState).is_err(),
        "a dropped version stays dropped"
    );
}

#[test]
fn damage_below_an_index_checkpoint_is_met_by_the_read_that_needs_it() {
    let s = seed(122);
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let (ra, rb, model_a) = {
        let store = open_log(d);
        let (mut a, ma) = random_map(MapKind::AccountState, 1500, s);
        let (mut b, _) = random_map(MapKind::AccountState, 1500, s + 1);
        let ra = import(&store, "a", &mut a).expect("import a");
        (ra, import(&store, "b", &mut b).expect("import b"), ma)
    };
    // A byte of b's root node's stored value, far below the log's end.
    let log = std::fs::read(log_path(d)).expect("read");
    let at = value_byte_of(&log, &rb);
    assert!(at + 8192 < log.len(), "below the checked tail");
    let mut bad = log.clone();
    bad[at] ^= 0x20;
    std::fs::write(log_path(d), &bad).expect("damage");

    let store = LogStore::open_read_only(d).expect("the checkpoint is used");
    assert_eq!(store.usage().scanned_bytes, 0);
    let e = StoredMap::open(&store, rb, MapKind::AccountState)
        .map(|m| m.iter().count())
        .expect_err("b's root does not verify");
    let line = e.to_string();
    assert!(!line.contains('\n'), "one line: {line}");
    assert!(verify_all(&store, &rb).is_err(), "verify finds it");
    assert_eq!(items(&store, ra), model_a, "a is untouched");
    drop(store);
    // Without the checkpoint the opening scans, and refuses with the byte.
    without_checkpoint(d);
    let e = LogStore::open_read_only(d).expect_err("refused");
    assert!(e.to_string().contains("damaged at byte"), "{e}");
}

/// The offset in `log` of a byte of the stored value of node `hash`.
fn value_byte_of(log: &[u8], hash: &Hash256) -> usize {
    for batch in log_batches(log) {
        let body_start = batch.at + format::BATCH_HEADER_LEN;
        for r in format::records(&log[body_start..batch.at + batch.len]) {
            if let Ok((at, format::Record::PutNode { hash: h, value, .. })) = r {
                if h == *hash && value.len() > 4 {
                    return body_start + at + format::RECORD_HEADER_LEN + 32 + 2;
                }
            }
        }
    }
    panic!("no record of {hash}");
}
