//! A failed acknowledgment (issue 41, item 1): the record of the last
//! durable write (`nodes.ack`, fjall's `shamap.ack`) cannot be opened or
//! written after the write was synced. The writer stops taking writes, the
//! error's words are true (a node log cuts the batch back: "not committed";
//! when it cannot, or the record may have been written, and on fjall,
//! which cannot take a committed write back: "may have landed"), and the store opens again with the right end, writes on
//! and opens again (no gap in its batch numbers).
//!
//! Failures are injected in the store's own I/O
//! ([`shamap_store::fail_acknowledgments`]), for each error a disk or the
//! system gives (EPERM, EACCES, ENOSPC, EMFILE, EIO); and, as root on a
//! file system that has it, with a real immutable record (`chattr +i`).

use std::path::Path;
use std::process::Command;

use shamap_store::{
    fail_acknowledgments, AckFault, AckStage, Batch, FjallStore, LogStore, NodeObject, NodeStore,
    NodeStoreExt, NodeType, StoreError,
};

const ERRNOS: [(i32, &str); 5] = [
    (libc::EPERM, "EPERM"),
    (libc::EACCES, "EACCES"),
    (libc::ENOSPC, "ENOSPC"),
    (libc::EMFILE, "EMFILE"),
    (libc::EIO, "EIO"),
];

/// A batch of one node (its hash returned) and the metadata record
/// `root` naming `tag`.
fn commit_batch(tag: u8) -> (Batch, shamap::Hash256) {
    let node = NodeObject::from_prefix(NodeType::AccountNode, &[tag; 60]);
    let hash = node.hash();
    let mut b = Batch::new();
    b.put_node(node);
    b.put_meta("root", vec![tag]);
    (b, hash)
}

/// Every acknowledgment of `stage` of the store in `dir` fails with
/// `errno`, from the next one on.
fn fail_from_now(dir: &Path, stage: AckStage, errno: i32) {
    fail_acknowledgments(
        dir,
        Some(AckFault {
            stage,
            errno,
            after: 0,
        }),
    );
}

fn root_of(store: &dyn NodeStore) -> Option<u8> {
    store.get_meta("root").expect("read").map(|v| v[0])
}

/// The store in `dir` after a failed acknowledgment of `stage`: what the
/// error said, checked; then reopened, written and reopened again.
fn log_case(dir: &Path, stage: AckStage, errno: i32, name: &str) {
    {
        let store = LogStore::open(dir).expect("open");
        store
            .write_durably(commit_batch(1).0)
            .expect("first commit");
        store
            .write(commit_batch(2).0)
            .expect("a write not yet synced");
    }
    let (landed, second) = {
        let store = LogStore::open(dir).expect("reopen");
        // The handle on the record is open once a commit was recorded in
        // this process: the failure at `Record` strikes an open record.
        if stage == AckStage::Record {
            store
                .write_durably(commit_batch(3).0)
                .expect("third commit");
        }
        fail_from_now(dir, stage, errno);
        let (batch, hash) = commit_batch(4);
        let err = store
            .write_durably(batch)
            .expect_err("a commit whose acknowledgment fails");
        let line = err.to_string();
        assert!(!line.contains('\n'), "{name}: one line: {line}");
        assert!(
            line.contains("nodes.ack"),
            "{name}: names the record: {line}"
        );
        let landed = match stage {
            AckStage::Open => {
                assert!(line.contains("not committed"), "{name}: {line}");
                false
            }
            AckStage::Record => {
                assert!(line.contains("may have landed"), "{name}: {line}");
                true
            }
        };
        // Poisoned: no more writes, in words.
        let again = store
            .write_durably(commit_batch(5).0)
            .expect_err("a write after the failed acknowledgment");
        assert!(
            again.to_string().contains("reopen the store"),
            "{name}: {again}"
        );
        assert!(store.sync().is_err(), "{name}: a sync after it");
        fail_acknowledgments(dir, None);
        (landed, hash)
        // A clean close: it must not leave a checkpoint the log disagrees
        // with.
    };
    let store = LogStore::open(dir).unwrap_or_else(|e| panic!("{name}: reopening refused: {e}"));
    let want = if landed {
        4
    } else if stage == AckStage::Record {
        3
    } else {
        2
    };
    assert_eq!(
        root_of(&store),
        Some(want),
        "{name}: the root after reopening"
    );
    assert_eq!(
        store.contains(&second).expect("read"),
        landed,
        "{name}: the failed commit's node"
    );
    // Writes on, and opens again (no gap, no stale end).
    let (batch, hash) = commit_batch(6);
    store
        .write_durably(batch)
        .expect("a commit after reopening");
    drop(store);
    let store = LogStore::open(dir).unwrap_or_else(|e| panic!("{name}: third opening: {e}"));
    assert_eq!(root_of(&store), Some(6), "{name}");
    assert!(store.contains(&hash).expect("read"));
    drop(store);
    let store = LogStore::open_read_only(dir).expect("read-only");
    assert_eq!(root_of(&store), Some(6), "{name}");
}

#[test]
fn a_failed_acknowledgment_cuts_the_log_back_and_the_store_opens_again() {
    for (errno, name) in ERRNOS {
        let dir = tempfile::tempdir().expect("tempdir");
        log_case(dir.path(), AckStage::Open, errno, name);
    }
}

#[test]
fn a_record_that_may_have_been_written_keeps_the_synced_batch_and_says_so() {
    for (errno, name) in ERRNOS {
        let dir = tempfile::tempdir().expect("tempdir");
        log_case(dir.path(), AckStage::Record, errno, name);
    }
}

#[test]
fn fjall_a_failed_acknowledgment_says_the_commit_may_have_landed_and_stops_writes() {
    for (stage, (errno, name)) in [AckStage::Open, AckStage::Record]
        .into_iter()
        .flat_map(|s| ERRNOS.into_iter().map(move |e| (s, e)))
    {
        let dir = tempfile::tempdir().expect("tempdir");
        let dir = dir.path();
        {
            let store = FjallStore::open(dir).expect("open");
            store
                .write_durably(commit_batch(1).0)
                .expect("first commit");
            fail_from_now(dir, stage, errno);
            let err = store
                .write_durably(commit_batch(2).0)
                .expect_err("a commit whose acknowledgment fails");
            let line = err.to_string();
            assert!(line.contains("shamap.ack"), "{name}: {line}");
            assert!(line.contains("may have landed"), "{name}: {line}");
            let again = store
                .write(commit_batch(3).0)
                .expect_err("a write after the failed acknowledgment");
            assert!(again.to_string().contains("reopen the store"), "{again}");
            fail_acknowledgments(dir, None);
        }
        let store = FjallStore::open(dir).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(root_of(&store), Some(2), "{name}: the commit landed");
        store.write_durably(commit_batch(4).0).expect("writes on");
        drop(store);
        let store = FjallStore::open(dir).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(root_of(&store), Some(4), "{name}");
    }
}

/// `chattr` on `path`; false when it is not supported here (not root, or
/// a file system without the attribute).
fn chattr(flag: &str, path: &Path) -> bool {
    Command::new("chattr")
        .arg(flag)
        .arg(path)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Commits root 1 into a new store in `dir`, makes its acknowledgment
/// record `ack` immutable, and commits root 2: that commit's error, the
/// attribute taken off again. `None` when `chattr +i` is not available.
fn commit_with_an_immutable_record<S: NodeStore>(
    dir: &Path,
    ack: &str,
    open: impl Fn(&Path) -> Result<S, StoreError>,
) -> Option<String> {
    open(dir)
        .expect("open")
        .write_durably(commit_batch(1).0)
        .expect("first commit");
    let path = dir.join(ack);
    if !chattr("+i", &path) {
        return None;
    }
    let result = (|| {
        let store = open(dir).map_err(|e| e.to_string())?;
        match store.write_durably(commit_batch(2).0) {
            Ok(()) => Err(format!("a commit with an immutable {ack} succeeded")),
            Err(e) => Ok(e.to_string()),
        }
    })();
    assert!(chattr("-i", &path));
    Some(result.expect("the failed commit"))
}

/// The reproduction, in the store: an immutable `nodes.ack`, a
/// commit, the attribute taken off, and the store opened.
#[test]
fn an_immutable_record_fails_the_commit_and_the_store_opens_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    let Some(line) = commit_with_an_immutable_record(dir, "nodes.ack", |d| LogStore::open(d))
    else {
        eprintln!("skipped: chattr +i is not available here (root on ext4, xfs or btrfs)");
        return;
    };
    assert!(line.contains("not committed"), "{line}");
    let store = LogStore::open(dir).unwrap_or_else(|e| panic!("reopening refused: {e}"));
    assert_eq!(root_of(&store), Some(1));
    store.write_durably(commit_batch(3).0).expect("writes on");
    drop(store);
    assert_eq!(root_of(&LogStore::open(dir).expect("opens")), Some(3));

    // fjall's record.
    let fj = tempfile::tempdir().expect("tempdir");
    let fj = fj.path();
    let line = commit_with_an_immutable_record(fj, "shamap.ack", |d| FjallStore::open(d))
        .expect("chattr +i worked for the node log");
    assert!(line.contains("may have landed"), "{line}");
    let store = FjallStore::open(fj).unwrap_or_else(|e| panic!("reopening refused: {e}"));
    assert_eq!(root_of(&store), Some(2));
}
