//! The node log's recovery contract (see `docs/design.md`, "The node
//! log's recovery contract"): an acknowledged commit is never rolled back
//! without an error. One writer, always (its lock is on the directory); a
//! writer that finds its log replaced stops; a batch replayed, reordered or
//! left out, a log cut short below an acknowledged batch or below its
//! index checkpoint, and a flipped byte in an acknowledged last batch are
//! each refused in one line naming the byte offset; special files in the
//! store's place never hang an opening; the audit lists every damaged
//! place and the roots it affects.

use std::path::Path;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shamap::{Hash256, MapKind};
use shamap_store::backend::ack;
use shamap_store::backend::log_store::{checkpoint, format, LogStore, LOG_FILE};
use shamap_store::node::{NodeObject, NodeType};
use shamap_store::{verify_all, Batch, NodeStore, NodeStoreExt};

use crate::node_log::{
    assert_refusal, import, items, log_path, log_with_versions, names, open_log, without_checkpoint,
};
use crate::support::{random_map, seed};

/// The offset, sequence number and whole length (header and body) of each
/// batch of the log in `dir`.
fn batches(dir: &Path) -> Vec<(usize, u64, usize)> {
    let bytes = std::fs::read(log_path(dir)).expect("read the log");
    crate::support::log_batches(&bytes)
        .into_iter()
        .map(|b| (b.at, b.seq, b.len))
        .collect()
}

/// Both openings of `dir` refuse in one line naming the store and holding
/// every one of `words`, in bounded time.
fn refused(dir: &Path, what: &str, words: &[&str]) {
    for (mode, opened) in [
        ("open", timed(|| LogStore::open(dir))),
        ("open_read_only", timed(|| LogStore::open_read_only(dir))),
    ] {
        assert_refusal(
            &opened.expect_err(what),
            dir,
            words,
            &format!("{what}: {mode}"),
        );
    }
}

/// Runs `f`, failing when it takes more than 10 s (an opening that waits
/// on a FIFO would never return: such a test is caught by the harness's
/// own timeout, but a slow opening is caught here).
fn timed<T>(f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "took {:?}",
        start.elapsed()
    );
    out
}

fn a_node(seed: u8, len: usize) -> NodeObject {
    NodeObject::from_prefix(NodeType::AccountNode, &vec![seed; len])
}

#[test]
fn a_deleted_lock_file_lets_no_second_writer_in() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let first = open_log(d);
    first
        .write_durably({
            let mut b = Batch::new();
            b.put_node(a_node(1, 100));
            b
        })
        .expect("write");
    // The "stale lock" fix of a careless operator: every file but the log
    // removed (an old build's LOCK among them, if there is one).
    std::fs::write(d.join("LOCK"), b"").expect("an old lock file");
    for entry in std::fs::read_dir(d).expect("list") {
        let path = entry.expect("entry").path();
        if path.file_name().is_some_and(|n| n != LOG_FILE) {
            std::fs::remove_file(&path).expect("remove");
        }
    }
    let e = timed(|| LogStore::open(d)).expect_err("a second writer");
    assert!(LogStore::is_locked(&e), "{e}");
    // A reader may still open it.
    let reader = LogStore::open_read_only(d).expect("a reader");
    assert!(reader.contains(&a_node(1, 100).hash()).expect("read"));
    drop(first);
    open_log(d);
}

#[test]
fn a_writer_whose_log_was_replaced_or_removed_stops_writing() {
    for replace in [true, false] {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let store = open_log(d);
        let put = |seed: u8| {
            let mut b = Batch::new();
            b.put_node(a_node(seed, 100));
            b
        };
        store.write_durably(put(1)).expect("write");
        let log = log_path(d);
        if replace {
            // An older copy put in its place.
            let copy = d.join("copy");
            std::fs::copy(&log, &copy).expect("copy");
            std::fs::rename(&copy, &log).expect("replace");
        } else {
            std::fs::remove_file(&log).expect("remove");
        }
        let what = if replace { "replaced" } else { "removed" };
        let e = store.write_durably(put(2)).expect_err("a write after");
        let line = e.to_string();
        assert!(line.contains(what) && line.contains(LOG_FILE), "{line}");
        // Stopped for good: every later write, and a sync, is refused.
        assert!(store.write(put(3)).is_err());
        assert!(store.sync().is_err());
        drop(store);
        if !replace {
            // No empty log is started where acknowledged commits were.
            let e = LogStore::open(d).expect_err("the log is gone");
            assert!(e.to_string().contains("missing"), "{e}");
        }
    }
}

#[test]
fn a_replay_after_the_acknowledged_batch_is_cut_and_a_reorder_refused() {
    let s = seed(130);
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    {
        let store = open_log(d);
        for v in 0..3 {
            let (mut m, _) = random_map(MapKind::AccountState, 300, s + v);
            import(&store, &format!("v{v}"), &mut m).expect("import");
        }
    }
    let log = log_path(d);
    let good = std::fs::read(&log).expect("read");
    let all = batches(d);
    assert!(all.len() >= 4, "{} batches", all.len());
    let mut rng = SmallRng::seed_from_u64(s);

    // An earlier whole batch appended again, after the acknowledged last
    // batch: nothing there was acknowledged, so it is cut as a torn write
    // (the recovery contract since issue 41: a power loss may leave any
    // unsynced pages, so what follows the acknowledged batch is never
    // damage); the store opens with every retained root whole.
    for _ in 0..4 {
        let (at, _, len) = all[rng.gen_range(0..all.len() - 1)];
        let mut bad = good.clone();
        bad.extend_from_slice(&good[at..at + len]);
        std::fs::write(&log, &bad).expect("replay");
        without_checkpoint(d);
        let store = timed(|| LogStore::open_read_only(d))
            .expect("a replay after the acknowledged batch is cut");
        for r in shamap_store::meta::retained(&store).expect("retained") {
            verify_all(&store, &r.hash)
                .unwrap_or_else(|e| panic!("seed {s}: {} whole: {e}", r.name));
        }
    }
    std::fs::write(&log, &good).expect("restore");
    // Two neighbouring batches swapped.
    let i = rng.gen_range(0..all.len() - 1);
    let ((a, _, alen), (b, bseq, blen)) = (all[i], all[i + 1]);
    let mut bad = good[..a].to_vec();
    bad.extend_from_slice(&good[b..b + blen]);
    bad.extend_from_slice(&good[a..a + alen]);
    bad.extend_from_slice(&good[b + blen..]);
    std::fs::write(&log, &bad).expect("reorder");
    without_checkpoint(d);
    if i > 0 {
        refused(
            d,
            "reordered batches",
            &[
                &format!("damaged at byte {a}"),
                &format!("sequence number {bseq}"),
            ],
        );
    } else {
        // The first batch of a log may carry any number (a rewritten log
        // goes on from the old one's): the second is then out of order.
        refused(
            d,
            "reordered batches",
            &[&format!("damaged at byte {}", a + blen)],
        );
    }
    std::fs::write(&log, &good).expect("undo");
    assert_eq!(names(&open_log(d)), ["v0", "v1", "v2"]);
}

#[test]
fn a_log_cut_below_an_acknowledged_batch_is_refused_at_any_length() {
    let s = seed(131);
    let (dir, roots) = log_with_versions(3, 400, s);
    let d = dir.path();
    let log = log_path(d);
    let good = std::fs::read(&log).expect("read");
    let mut rng = SmallRng::seed_from_u64(s);
    // Every cut of 1..=1000 bytes and random deeper ones; with and without
    // the checkpoint (the acknowledgment record alone catches each).
    let mut cuts: Vec<usize> = (1..=1000).step_by(7).collect();
    cuts.extend((0..20).map(|_| rng.gen_range(1..good.len() - 16)));
    for (i, cut) in cuts.into_iter().enumerate() {
        let len = good.len() - cut;
        std::fs::write(&log, &good[..len]).expect("cut");
        if i % 2 == 0 {
            without_checkpoint(d);
        }
        refused(d, &format!("seed {s}: cut by {cut}"), &["damaged at byte"]);
        assert_eq!(
            std::fs::metadata(&log).expect("stat").len(),
            len as u64,
            "never truncated"
        );
    }
    std::fs::write(&log, &good).expect("undo");
    let store = open_log(d);
    for (root, model) in &roots {
        assert_eq!(&items(&store, *root), model);
    }
}

#[test]
fn a_flip_in_an_acknowledged_last_batch_holding_zeros_is_damage_not_a_torn_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let zeros = NodeObject::from_prefix(NodeType::AccountNode, &[0u8; 4000]);
    {
        let store = open_log(d);
        store.put_meta("first", vec![1]).expect("meta");
        let mut b = Batch::new();
        b.put_node(zeros.clone());
        b.put_node(a_node(9, 300));
        store.write_durably(b).expect("a batch with a run of zeros");
    }
    without_checkpoint(d);
    let log = log_path(d);
    let good = std::fs::read(&log).expect("read");
    let (at, _, len) = *batches(d).last().expect("the last batch");
    // A flip in the last batch, outside its zeros.
    let flip = at + len - 40;
    let mut bad = good.clone();
    bad[flip] ^= 0x08;
    std::fs::write(&log, &bad).expect("flip");
    refused(
        d,
        "a flipped acknowledged batch",
        &[&format!("damaged at byte {at}"), "acknowledged"],
    );
    std::fs::write(&log, &good).expect("undo");
    assert!(open_log(d).contains(&zeros.hash()).expect("read"));
}

#[test]
fn special_files_in_the_stores_place_are_refused_or_ignored_never_waited_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let (mut m, model) = random_map(MapKind::AccountState, 200, seed(132));
    let root = import(&open_log(d), "m", &mut m).expect("import");
    let fifo = |path: &Path| {
        let _ = std::fs::remove_file(path);
        let ok = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .expect("mkfifo")
            .success();
        assert!(ok, "mkfifo {}", path.display());
    };
    // The index checkpoint: ignored (the log is scanned), for readers and
    // writers; the writer's close puts a real one back.
    fifo(&d.join(checkpoint::CHECKPOINT_FILE));
    assert_eq!(
        items(
            &timed(|| LogStore::open_read_only(d)).expect("a reader"),
            root
        ),
        model
    );
    drop(timed(|| LogStore::open(d)).expect("a writer"));
    assert!(d.join(checkpoint::CHECKPOINT_FILE).is_file());
    // An old build's lock file: not used.
    fifo(&d.join("LOCK"));
    drop(timed(|| LogStore::open(d)).expect("a writer"));
    // The acknowledgment record: refused, naming it.
    let ack_bytes = std::fs::read(d.join(ack::ACK_FILE)).expect("read");
    fifo(&d.join(ack::ACK_FILE));
    refused(d, "a FIFO for the record", &[ack::ACK_FILE, "FIFO"]);
    std::fs::remove_file(d.join(ack::ACK_FILE)).expect("remove");
    std::fs::write(d.join(ack::ACK_FILE), ack_bytes).expect("put back");
    // The log itself.
    let log = std::fs::read(log_path(d)).expect("read");
    fifo(&log_path(d));
    for opened in [
        timed(|| LogStore::open(d)),
        timed(|| LogStore::open_read_only(d)),
    ] {
        let e = opened.expect_err("a FIFO for the log");
        assert!(e.to_string().contains("FIFO"), "{e}");
    }
    std::fs::remove_file(log_path(d)).expect("remove");
    std::fs::write(log_path(d), log).expect("put back");
    assert_eq!(items(&open_log(d), root), model);
}

#[test]
fn the_audit_lists_every_damaged_place_and_what_is_still_whole() {
    let s = seed(133);
    let (dir, roots) = log_with_versions(3, 300, s);
    let d = dir.path();
    let (store, audit) = LogStore::open_audit(d).expect("a whole log");
    assert!(audit.damage.is_empty(), "{:?}", audit.damage);
    assert_eq!(audit.batches as usize, batches(d).len());
    drop(store);

    // Flip a byte in the body of the batch holding the first version's
    // root and in the header of the one holding the second's: the
    // checkpoint hides both from a plain opening; the audit finds both.
    let all = batches(d);
    let log = log_path(d);
    let mut bytes = std::fs::read(&log).expect("read");
    let holding = |hash: Hash256| {
        all.iter()
            .position(|&(at, _, len)| {
                let body = &bytes[at + format::BATCH_HEADER_LEN..at + len];
                format::records(body).any(
                    |r| matches!(r, Ok((_, format::Record::PutNode { hash: h, .. })) if h == hash),
                )
            })
            .expect("a batch holds the root")
    };
    let (first, second) = (holding(roots[0].0), holding(roots[1].0));
    assert!(first < second);
    let (a, _, alen) = all[first];
    let (b, _, _) = all[second];
    bytes[a + alen / 2] ^= 0x01;
    bytes[b + 3] ^= 0x01;
    std::fs::write(&log, &bytes).expect("flip");
    let (store, audit) = LogStore::open_audit(d).expect("opens, listing the damage");
    let at: Vec<u64> = audit.damage.iter().map(|x| x.at).collect();
    assert_eq!(at, [a as u64, b as u64], "{:?}", audit.damage);
    for x in &audit.damage {
        assert!(!x.to_string().contains('\n'));
    }
    // The roots a damaged batch held nodes of fail to verify; the last
    // version, written after both, is whole.
    let last = roots.last().expect("a root");
    assert_eq!(items(&store, last.0), last.1);
    assert!(verify_all(&store, &roots[0].0).is_err());
    assert!(verify_all(&store, &roots[1].0).is_err());
    drop(store);
    // A plain opening (from the checkpoint) does not scan there, and
    // serves the versions written after the damage.
    let store = LogStore::open_read_only(d).expect("from the checkpoint");
    assert_eq!(store.usage().scanned_bytes, 0);
    assert_eq!(items(&store, last.0), last.1);
    drop(store);
    // A writer refuses to append above known damage: its opening reads
    // the log below the checkpoint before its first acknowledgment.
    let writer = LogStore::open(d).expect("opens from the checkpoint");
    let e = writer
        .write_durably({
            let mut batch = Batch::new();
            batch.put_node(a_node(3, 100));
            batch
        })
        .expect_err("no commit on a damaged log");
    assert!(
        e.to_string().contains(&format!("damaged at byte {a}")),
        "{e}"
    );
    drop(writer);
    assert_eq!(std::fs::read(&log).expect("read"), bytes, "nothing written");
}
