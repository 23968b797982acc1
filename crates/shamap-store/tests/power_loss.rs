//! Power loss as disks do it (issue 41, item 2), and the audit agreeing
//! with opening (item 5).
//!
//! What was synced is whole; any subset of the unsynced 4 KiB pages may be
//! lost (they read as zeros), not only a suffix. Everything after the
//! batch `nodes.ack` names was never acknowledged: a lost page there is a
//! write cut short, cut off at opening, whole batches after it or not.
//! Damage at or before that batch is refused, naming it. The record is
//! never seen empty: it is made whole before it appears, and an empty one
//! (an earlier build's crash) reads as no record.

use std::os::unix::fs::FileExt;
use std::path::Path;

use rand::{Rng, SeedableRng};
use shamap_store::{Batch, LogStore, NodeObject, NodeStore, NodeType};

use crate::support::{log_batches, seed};

fn node(seed: u64, len: usize) -> NodeObject {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let data: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
    NodeObject::from_prefix(NodeType::AccountNode, &data)
}

fn root_of(store: &dyn NodeStore) -> Option<Vec<u8>> {
    store.get_meta("root").expect("read")
}

/// A store whose first batch is acknowledged (`root` = 1), followed by
/// `n` batches of a few KiB each written without a sync (the last one
/// setting `root` = 2), closed as a crash leaves it: no index checkpoint.
fn acked_then_unsynced(dir: &Path, n: u64) -> Vec<u8> {
    {
        let store = LogStore::open(dir).expect("open");
        let mut b = Batch::new();
        b.put_node(node(1, 300));
        b.put_meta("root", vec![1]);
        store.write_durably(b).expect("acknowledged commit");
        for i in 0..n {
            let mut b = Batch::new();
            for j in 0..4 {
                b.put_node(node(100 + i * 10 + j, 1500));
            }
            if i + 1 == n {
                b.put_meta("root", vec![2]);
            }
            store.write(b).expect("unsynced write");
        }
    }
    // A crash leaves no checkpoint.
    std::fs::remove_file(dir.join("nodes.idx")).expect("the checkpoint a close left");
    std::fs::read(dir.join("nodes.log")).expect("log")
}

fn zero_page(dir: &Path, page: u64) {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("nodes.log"))
        .expect("log");
    f.write_all_at(&[0u8; 4096], page * 4096)
        .expect("zero a page");
}

#[test]
fn a_lost_page_after_the_acknowledged_batch_is_cut_off_as_a_torn_write() {
    let seed = seed(4101);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    for case in 0..8 {
        let dir = tempfile::tempdir().expect("tempdir");
        let dir = dir.path();
        let log = acked_then_unsynced(dir, 12);
        let batches = log_batches(&log);
        // The format record's batch, the acknowledged one, 12 more.
        assert_eq!(batches.len(), 14, "seed {seed}");
        let acked_end = (batches[1].at + batches[1].len) as u64;
        // A page wholly after the acknowledged batch, before the last one
        // (so whole batches follow the hole).
        let first = acked_end.div_ceil(4096);
        let last = batches[13].at as u64 / 4096;
        assert!(first < last, "seed {seed}");
        let page = rng.gen_range(first..last);
        zero_page(dir, page);
        let store = LogStore::open(dir).unwrap_or_else(|e| {
            panic!("seed {seed} case {case}: page {page} lost after the acknowledged batch: {e}")
        });
        assert_eq!(root_of(&store), Some(vec![1]), "seed {seed} case {case}");
        // The torn tail is cut before the next write; the store opens again.
        let mut b = Batch::new();
        b.put_meta("root", vec![3]);
        store.write_durably(b).expect("a commit after the cut");
        drop(store);
        std::fs::remove_file(dir.join("nodes.idx")).expect("checkpoint");
        let store = LogStore::open(dir).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(root_of(&store), Some(vec![3]), "seed {seed} case {case}");
    }
}

#[test]
fn damage_at_or_before_the_acknowledged_batch_is_refused_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    let log = acked_then_unsynced(dir, 3);
    // Batch 0 holds the format record; batch 1 was acknowledged.
    let first = log_batches(&log)[1];
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(dir.join("nodes.log"))
        .expect("log");
    let at = (first.at + first.len - 10) as u64;
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, at).expect("read");
    f.write_all_at(&[b[0] ^ 0x10], at).expect("flip");
    let err = LogStore::open(dir).expect_err("damage in the acknowledged batch");
    let line = err.to_string();
    assert!(line.contains("acknowledged as durable"), "{line}");
    assert!(line.contains("batch 1 "), "names the batch: {line}");
}

#[test]
fn an_empty_record_reads_as_the_crash_before_its_first_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    acked_then_unsynced(dir, 2);
    for bytes in [&[][..], &[0u8; 32][..]] {
        std::fs::write(dir.join("nodes.ack"), bytes).expect("record");
        let store = LogStore::open(dir)
            .unwrap_or_else(|e| panic!("an empty record ({} bytes): {e}", bytes.len()));
        assert_eq!(root_of(&store), Some(vec![2]));
        drop(store);
        std::fs::remove_file(dir.join("nodes.idx")).expect("checkpoint");
    }
}

#[test]
fn the_record_is_made_whole_under_another_name_never_through_a_link() {
    let dir = tempfile::tempdir().expect("tempdir");
    let outside = tempfile::NamedTempFile::new().expect("outside file");
    std::fs::write(outside.path(), b"not the store's").expect("write");
    let db = dir.path().join("db");
    {
        let store = LogStore::open(&db).expect("open");
        // No record yet: the first commit creates it.
        std::os::unix::fs::symlink(outside.path(), db.join("nodes.ack.tmp")).expect("symlink");
        let mut b = Batch::new();
        b.put_meta("root", vec![1]);
        store.write_durably(b).expect("commit");
    }
    assert_eq!(
        std::fs::read(outside.path()).expect("read"),
        b"not the store's"
    );
    assert!(!db.join("nodes.ack.tmp").exists());
    assert_eq!(
        std::fs::metadata(db.join("nodes.ack"))
            .expect("record")
            .len(),
        32
    );
}

/// Three commits into a new node log in `dir`, recording `root` = 0, 1
/// and 2, each with a node of 200 bytes when `with_nodes`.
fn three_commits(dir: &Path, with_nodes: bool) {
    let store = LogStore::open(dir).expect("open");
    for i in 0..3u8 {
        let mut b = Batch::new();
        if with_nodes {
            b.put_node(node(u64::from(i), 200));
        }
        b.put_meta("root", vec![i]);
        store.write_durably(b).expect("commit");
    }
}

/// Item 5: a store opening refuses (a log cut back, `nodes.ack` gone,
/// the index checkpoint recording the longer log) is never whole to the
/// audit of `verify --db`.
#[test]
fn the_audit_reads_the_checkpoint_and_refuses_what_opening_refuses() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    three_commits(dir, true);
    let (_, audit) = LogStore::open_audit(dir).expect("audit");
    assert!(audit.damage.is_empty(), "{:?}", audit.damage);
    let log = std::fs::read(dir.join("nodes.log")).expect("log");
    let last = *log_batches(&log).last().expect("batches");
    std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("nodes.log"))
        .and_then(|f| f.set_len(last.at as u64))
        .expect("cut");
    std::fs::remove_file(dir.join("nodes.ack")).expect("rm nodes.ack");
    let refused = LogStore::open(dir).expect_err("opening refuses the cut log");
    let (_, audit) = LogStore::open_audit(dir).expect("the audit opens");
    assert!(
        !audit.damage.is_empty(),
        "the audit found the store whole, opening refuses it: {refused}"
    );
}

/// Item 5, the other way: a checkpoint recording a batch number the log
/// disagrees with (what a failed acknowledgment left before it was fixed)
/// is damage to the audit, as to a writer.
#[test]
fn the_audit_refuses_a_checkpoint_whose_batch_numbers_the_log_disagrees_with() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    three_commits(dir, false);
    // The checkpoint's next sequence number (at byte 48, after its magic,
    // version, device, inode, end and the tail's crc; see
    // `log_store/checkpoint.rs`) moved on by one, its crc recomputed.
    let path = dir.join("nodes.idx");
    let mut c = std::fs::read(&path).expect("checkpoint");
    let n = c.len();
    let at = 48;
    let next = u64::from_le_bytes(c[at..at + 8].try_into().expect("8 bytes"));
    // The format record's batch and three commits.
    assert_eq!(next, 4, "the layout this test assumes");
    c[at..at + 8].copy_from_slice(&(next + 1).to_le_bytes());
    let crc = crc32c::crc32c(&c[..n - 4]);
    c[n - 4..].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&path, &c).expect("write");
    let (_, audit) = LogStore::open_audit(dir).expect("the audit opens");
    assert!(
        audit
            .damage
            .iter()
            .any(|d| d.what.contains("index checkpoint")),
        "{:?}",
        audit.damage
    );
}
