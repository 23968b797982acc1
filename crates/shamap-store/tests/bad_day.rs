//! A node log after an ordinary bad day (issue 41, items 3, 4 and 6): side
//! files a user or a crash left (a FIFO, a symlink at a temporary file), a
//! stale checkpoint beside a new log on the old inode, damaged copies the
//! log's checksums let through (repaired by a sync and by an import), dead
//! bytes that a gc gives back, and a tail of zeros that an opening does not
//! read through.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant};

use shamap::{Hash256, MapKind};
use shamap_store::backend::log_store::checkpoint::{CHECKPOINT_FILE, CHECKPOINT_TMP_FILE};
use shamap_store::backend::log_store::format::{self, Encoding, Record};
use shamap_store::backend::log_store::LOG_FILE;
use shamap_store::{
    copy_root, gc, import_ledger, verify_all, Batch, LogStore, NodeObject, NodeStore, NodeStoreExt,
    NodeType,
};

use crate::support::{import_random, log_batches, nodes_of, random_map, seed};

const NEW_LOG_FILE: &str = "nodes.log.compact";

/// Runs `f` on a thread of its own; fails the test if it has not returned
/// within `limit` (a FIFO would block it for ever).
fn within<T: Send + 'static>(
    limit: Duration,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("{what}: still running after {limit:?}"))
}

fn mkfifo(path: &Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mkfifo {}", path.display());
}

/// A store in `dir` holding a random map of `n` entries, recorded as "m";
/// the map's root and nodes.
fn store_with_map(dir: &Path, n: usize, s: u64) -> (Hash256, Vec<NodeObject>) {
    let store = LogStore::open(dir).expect("open");
    let (snap, _) = import_random(&store, "m", n, s);
    (snap.root_hash(), nodes_of(&snap))
}

/// [`store_with_map`] in a new temporary directory: the directory, the
/// map's root and nodes.
fn temp_store_with_map(n: usize, s: u64) -> (tempfile::TempDir, Hash256, Vec<NodeObject>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (root, nodes) = store_with_map(dir.path(), n, s);
    (dir, root, nodes)
}

/// A FIFO or a symlink at the checkpoint's temporary file, or at the file
/// a reclaim writes: closing the store (which saves a checkpoint) and
/// reclaiming neither block nor write through the link, and the store
/// reopens with everything.
#[test]
fn a_fifo_or_a_symlink_at_a_temporary_file_neither_blocks_nor_writes_outside() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let outside = dir.path().join("outside.txt");
    std::fs::write(&outside, b"the user's own file").expect("write");
    let (root, _) = store_with_map(&db, 300, seed(41));
    for (name, special) in [
        (CHECKPOINT_TMP_FILE, "fifo"),
        (CHECKPOINT_TMP_FILE, "symlink"),
        (NEW_LOG_FILE, "symlink"),
        (NEW_LOG_FILE, "fifo"),
    ] {
        let db2 = db.clone();
        let store = LogStore::open(&db).expect("open");
        let at = db.join(name);
        match special {
            "fifo" => mkfifo(&at),
            _ => std::os::unix::fs::symlink(&outside, &at).expect("symlink"),
        }
        let what = format!("{special} at {name}");
        within(Duration::from_secs(20), &what, move || {
            if name == NEW_LOG_FILE {
                store.reclaim_now().expect("reclaim");
            }
            drop(store);
        });
        assert_eq!(
            std::fs::read(&outside).expect("read"),
            b"the user's own file",
            "{what}: written through"
        );
        let reopened = within(Duration::from_secs(20), &what, move || {
            LogStore::open(&db2).expect("reopen")
        });
        verify_all(&reopened, &root).unwrap_or_else(|e| panic!("{what}: {e}"));
        if name == CHECKPOINT_TMP_FILE {
            assert!(
                db.join(CHECKPOINT_FILE)
                    .symlink_metadata()
                    .expect("checkpoint")
                    .is_file(),
                "{what}: no checkpoint saved"
            );
            assert!(
                reopened.usage().scanned_bytes < reopened.usage().log_bytes,
                "{what}: the checkpoint was not used"
            );
        }
        drop(reopened);
        assert!(!db.join(name).exists(), "{what}: left behind");
    }
}

/// A symlink in place of `nodes.ack`, to a file outside the store holding
/// the very record: the store refuses to open in one line naming the file
/// and the link, and nothing is written through it.
#[test]
fn a_symlink_at_the_acknowledgment_record_is_refused_not_followed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    store_with_map(&db, 50, seed(43));
    let ack = db.join(shamap_store::backend::ack::ACK_FILE);
    let outside = dir.path().join("outside.ack");
    std::fs::rename(&ack, &outside).expect("move the record out");
    std::os::unix::fs::symlink(&outside, &ack).expect("symlink");
    let before = std::fs::read(&outside).expect("read");
    let e = LogStore::open(&db).expect_err("refused").to_string();
    assert!(
        e.contains("nodes.ack") && e.contains("symbolic link") && !e.contains('\n'),
        "{e}"
    );
    assert_eq!(std::fs::read(&outside).expect("read"), before);
}

/// Rewrites the checkpoint `bytes` to name the log at `log` by its device
/// and inode (bytes 16..32, crc32c last, as `log_store::checkpoint`
/// documents): what a checkpoint of a removed log looks like to a new log
/// that the file system gave the old one's inode.
fn point_checkpoint_at(bytes: &mut [u8], log: &Path) {
    let m = std::fs::metadata(log).expect("log");
    bytes[16..24].copy_from_slice(&m.dev().to_le_bytes());
    bytes[24..32].copy_from_slice(&m.ino().to_le_bytes());
    let n = bytes.len();
    let crc = crc32c::crc32c(&bytes[..n - 4]);
    bytes[n - 4..].copy_from_slice(&crc.to_le_bytes());
}

/// `rm nodes.log nodes.ack` and a new store in the directory: a checkpoint
/// of the old log that names the new one's device and inode (ext4 reuses
/// inodes) describes a log with another identity, and is ignored: the new
/// store opens empty, not "cut short".
#[test]
fn a_stale_checkpoint_never_describes_a_new_log_on_the_old_inode() {
    let (dir, root, _) = temp_store_with_map(500, seed(42));
    let db = dir.path();
    let mut old = std::fs::read(db.join(CHECKPOINT_FILE)).expect("a checkpoint");
    std::fs::remove_file(db.join(LOG_FILE)).expect("rm log");
    std::fs::remove_file(db.join("nodes.ack")).expect("rm ack");
    // A new store in the directory; its checkpoint removed, the old one
    // put back as if the new log had the old inode.
    let node = NodeObject::from_prefix(NodeType::AccountNode, &[7; 40]);
    {
        let store = LogStore::open(db).expect("a new store");
        assert!(!store.contains(&root).expect("read"), "the old log's root");
        let mut b = Batch::new();
        b.put_node(node.clone());
        store.write_durably(b).expect("write");
    }
    point_checkpoint_at(&mut old, &db.join(LOG_FILE));
    std::fs::write(db.join(CHECKPOINT_FILE), &old).expect("stale checkpoint");
    let store = LogStore::open(db).unwrap_or_else(|e| panic!("the new log refused: {e}"));
    assert!(store.contains(&node.hash()).expect("read"));
    assert!(!store.contains(&root).expect("read"));
    assert_eq!(store.usage().scanned_bytes, store.usage().log_bytes - 16);
}

/// A log of layout version 1 (earlier builds: no identity) opens, is
/// written to, and reopens from its own checkpoint; a reclaim rewrites
/// it as version 2.
#[test]
fn a_version_1_log_still_opens_and_a_reclaim_gives_it_an_identity() {
    let (dir, root, _) = temp_store_with_map(400, seed(43));
    let db = dir.path();
    let mut log = std::fs::read(db.join(LOG_FILE)).expect("log");
    assert_eq!(
        log[8..12],
        2u32.to_le_bytes(),
        "this build writes version 2"
    );
    assert_ne!(log[12..16], [0; 4], "with an identity");
    log[8..16].copy_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]);
    std::fs::write(db.join(LOG_FILE), &log).expect("as version 1");
    std::fs::remove_file(db.join(CHECKPOINT_FILE)).expect("rm checkpoint");
    let node = NodeObject::from_prefix(NodeType::AccountNode, &[9; 40]);
    {
        let store = LogStore::open(db).expect("a version 1 log opens");
        verify_all(&store, &root).expect("whole");
        let mut b = Batch::new();
        b.put_node(node.clone());
        store.write_durably(b).expect("write");
    }
    let store = LogStore::open(db).expect("reopen");
    assert!(
        store.usage().scanned_bytes < store.usage().log_bytes - 16,
        "its checkpoint was not used"
    );
    assert!(store.contains(&node.hash()).expect("read"));
    store.reclaim_now().expect("reclaim");
    drop(store);
    let log = std::fs::read(db.join(LOG_FILE)).expect("log");
    assert_eq!(log[8..12], 2u32.to_le_bytes());
    let store = LogStore::open(db).expect("reopen");
    verify_all(&store, &root).expect("whole");
}

/// Changes one byte of the stored value of the first node record of
/// `hash` in the log at `path` and recomputes its batch's checksums: a
/// damaged copy that the log's checks let through.
fn forge(path: &Path, hash: &Hash256, byte: impl Fn(&[u8]) -> usize) -> Encoding {
    let mut log = std::fs::read(path).expect("log");
    for b in log_batches(&log) {
        let body_at = b.at + format::BATCH_HEADER_LEN;
        let body = &log[body_at..b.at + b.len];
        let found = format::records(body).find_map(|r| match r.expect("record") {
            (
                at,
                Record::PutNode {
                    hash: h,
                    value,
                    encoding,
                },
            ) if h == *hash => Some((at + format::NODE_HEAD_LEN, byte(value), encoding)),
            _ => None,
        });
        let Some((value_at, i, encoding)) = found else {
            continue;
        };
        log[body_at + value_at + i] ^= 0x5A;
        let crc = crc32c::crc32c(&log[body_at..b.at + b.len]);
        log[b.at + 24..b.at + 28].copy_from_slice(&crc.to_le_bytes());
        let crc = crc32c::crc32c(&log[b.at..b.at + 28]);
        log[b.at + 28..b.at + 32].copy_from_slice(&crc.to_le_bytes());
        std::fs::write(path, &log).expect("write");
        return encoding;
    }
    panic!("no record of {hash}");
}

/// Damages, in the store at `db`, one leaf (a byte of its data) and one
/// inner node (its sparse record's type byte: it no longer decodes);
/// removes the checkpoint (which would see the change). Returns both
/// hashes.
fn damage_two(db: &Path, nodes: &[NodeObject], root: &Hash256) -> [Hash256; 2] {
    let leaf = nodes
        .iter()
        .find(|n| n.value().len() != 525)
        .expect("a leaf")
        .hash();
    let inner = nodes
        .iter()
        .find(|n| n.value().len() == 525 && n.hash() != *root)
        .expect("an inner node")
        .hash();
    let log = db.join(LOG_FILE);
    assert_eq!(forge(&log, &leaf, |v| v.len() - 1), Encoding::Plain);
    assert_eq!(forge(&log, &inner, |_| 0), Encoding::SparseInner);
    std::fs::remove_file(db.join(CHECKPOINT_FILE)).expect("rm checkpoint");
    let store = LogStore::open(db).expect("the damage passes the log's checks");
    assert!(verify_all(&store, root).is_err(), "the damage is seen");
    [leaf, inner]
}

/// A damaged copy (a changed byte of a leaf, a sparse inner record that
/// no longer decodes) is missing to a sync, not fatal: `copy_root` from a
/// good store rewrites both and says so; the map then verifies.
#[test]
fn a_sync_from_a_good_store_repairs_damaged_copies() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (good, bad) = (dir.path().join("good"), dir.path().join("bad"));
    let s = seed(44);
    let (root, nodes) = store_with_map(&good, 2000, s);
    store_with_map(&bad, 2000, s);
    let damaged = damage_two(&bad, &nodes, &root);
    let from = LogStore::open_read_only(&good).expect("good");
    let to = LogStore::open(&bad).expect("bad");
    let report = copy_root(&from, &to, root, "synced", &mut |_| {})
        .unwrap_or_else(|e| panic!("the sync did not repair: {e}"));
    assert_eq!(report.repaired, 2, "{report:?}");
    assert_eq!(report.copied, 2, "{report:?}");
    for h in damaged {
        assert!(to.get(&h).expect("whole now").is_some());
    }
    verify_all(&to, &root).expect("repaired");
    drop(to);
    let to = LogStore::open(&bad).expect("reopen");
    verify_all(&to, &root).expect("repaired for good");
}

/// The same damage met by an import of the same map: both copies are
/// written again, counted as repaired.
#[test]
fn an_import_over_damaged_copies_repairs_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path();
    let s = seed(45);
    let (root, nodes) = store_with_map(db, 2000, s);
    damage_two(db, &nodes, &root);
    let (mut map, _) = random_map(MapKind::AccountState, 2000, s);
    let snap = map.snapshot();
    let store = LogStore::open(db).expect("open");
    let r = import_ledger(&store, "again", Some(&snap), None, None, &mut |_| {})
        .unwrap_or_else(|e| panic!("the import did not repair: {e}"));
    assert_eq!(r.stats.repaired, 2, "{:?}", r.stats);
    assert_eq!(r.stats.written, 2, "{:?}", r.stats);
    verify_all(&store, &root).expect("repaired");
}

/// Records written again (by earlier builds, or repairs) are dead bytes: a
/// gc that deletes nothing still reclaims the log when a quarter of it is
/// dead, and everything reads back.
#[test]
fn a_gc_reclaims_dead_bytes_even_when_it_deletes_nothing() {
    let (dir, root, nodes) = temp_store_with_map(20_000, seed(46));
    let db = dir.path();
    let store = LogStore::open(db).expect("open");
    let before = store.usage();
    // Every node written again: half the log is dead.
    for chunk in nodes.chunks(4096) {
        let mut b = Batch::new();
        for n in chunk {
            b.put_node(n.clone());
        }
        store.write(b).expect("write");
    }
    let grown = store.usage();
    assert!(grown.log_bytes > before.log_bytes * 3 / 2, "{grown:?}");
    let r = gc(&store, &[root]).expect("gc");
    assert_eq!(r.deleted, 0);
    let after = store.usage();
    assert!(
        after.log_bytes <= before.log_bytes + (1 << 16),
        "not reclaimed: {before:?} then {grown:?} then {after:?}"
    );
    verify_all(&store, &root).expect("whole");
    drop(store);
    let store = LogStore::open(db).expect("reopen");
    verify_all(&store, &root).expect("whole");
}

/// A log whose tail was extended with 4 GiB of zeros (as a file system
/// may leave one after a crash): a reader's opening does not read through
/// them (measured before: 12 s per opening), and a writer's opening cuts
/// them off.
#[test]
fn a_tail_of_zeros_is_not_read_through_at_opening() {
    let (dir, root, _) = temp_store_with_map(300, seed(47));
    let db = dir.path();
    let log = db.join(LOG_FILE);
    let len = std::fs::metadata(&log).expect("log").len();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&log)
        .expect("open");
    f.set_len(len + (4 << 30)).expect("extend");
    drop(f);
    let mut times = BTreeMap::new();
    for round in 0..3 {
        let start = Instant::now();
        let store = LogStore::open_read_only(db).expect("a reader opens");
        times.insert(round, start.elapsed());
        verify_all(&store, &root).expect("whole");
    }
    let slowest = times.values().max().copied().unwrap_or_default();
    assert!(slowest < Duration::from_secs(2), "openings took {times:?}");
    let store = LogStore::open(db).expect("a writer opens");
    let mut b = Batch::new();
    b.put_node(NodeObject::from_prefix(NodeType::AccountNode, &[3; 40]));
    store.write_durably(b).expect("write");
    drop(store);
    assert!(std::fs::metadata(&log).expect("log").len() < len + (1 << 20));
}
