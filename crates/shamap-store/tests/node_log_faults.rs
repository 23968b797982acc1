//! The node log (`LogStore`), beyond what `node_log.rs` covers (its SIGKILL
//! runs, the backed map against the oracles, the three kinds of unfinished
//! write at the end, a flipped bit anywhere, a forged plain value, gc's
//! reclaim beside a reader, a full disk on writes, the writer lock and a
//! read-only mount): the shared bodies of `support.rs` and `faults.rs` run
//! on it, and what is its own is pinned down further:
//!
//! - a batch cut at any byte applies none of its records, and the next
//!   write follows the last whole batch;
//! - damage names the exact batch it is in, also when it looks like an
//!   unfinished write but a whole batch follows;
//! - `reclaim_now` drops only the dead, a read-only opening made before
//!   it keeps reading the old log, and writes after it survive reopening;
//!   a reclaim right after opening a log with an unfinished write at the
//!   end leaves the file ending at its last batch;
//! - a full disk in gc's reclaim fails gc in words and leaves the
//!   store whole, usable and reopenable; with space again it reclaims;
//! - a sparse inner-node record that does not decode is corrupt, never
//!   data, and no reclaim drops it;
//! - files that are not a node log, an empty one, a leftover reclaim
//!   file, a plain file or a missing directory as the store;
//! - an unfinished write on a read-only mount is read around, never cut.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shamap::{Hash256, Key, MapKind, ShaMap};
use shamap_store::backend::ack;
use shamap_store::backend::log_store::format::{self, BatchEncoder};
use shamap_store::backend::log_store::LOG_FILE;
use shamap_store::{
    gc, verify_all, Batch, LogStore, NodeStore, NodeStoreExt, StoreError, StoredMap,
};

use crate::faults::{every_k, operations};
use crate::node_log::{
    append, assert_refusal, assert_versions_read, import, items, log_path, names, next_seq,
    open_log,
};
use crate::support::{count, nodes_of, random_map, seed};
use crate::tmpfs::Tmpfs;

/// The leftover of a reclaim (or a creation) that did not finish.
const NEW_LOG_FILE: &str = "nodes.log.compact";

/// A new store in a directory of its own (for `faults.rs`).
fn new_log() -> (LogStore, Option<tempfile::TempDir>) {
    let dir = tempfile::tempdir().expect("tempdir");
    (open_log(dir.path()), Some(dir))
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).expect("stat").len()
}

/// A batch of one 4000-byte node, cut 100 bytes short: a write that never
/// finished.
fn unfinished_batch() -> Vec<u8> {
    let mut e = BatchEncoder::default();
    e.begin();
    e.put_node(&Hash256([0x5A; 32]), &[0x5A; 4000]);
    e.finish(1 << 40);
    let b = e.bytes();
    b[..b.len() - 100].to_vec()
}

/// The batches of the log in `dir` as the public decoder reads them: the
/// offset and body length of each. The log must be whole batches.
fn batches(dir: &Path) -> Vec<(u64, u64)> {
    let bytes = std::fs::read(log_path(dir)).expect("read the log");
    let all = crate::support::log_batches(&bytes);
    let end = all
        .last()
        .map_or(format::FILE_HEADER_LEN as usize, |b| b.at + b.len);
    assert_eq!(end, bytes.len(), "the log ends with a whole batch");
    all.iter()
        .map(|b| (b.at as u64, (b.len - format::BATCH_HEADER_LEN) as u64))
        .collect()
}

/// `n` entries of `len` random bytes each (a few nodes holding many bytes).
fn fat_map(n: usize, len: usize, s: u64) -> (ShaMap, BTreeMap<Key, Vec<u8>>) {
    let mut rng = SmallRng::seed_from_u64(s);
    let mut map = ShaMap::new(MapKind::AccountState);
    let mut model = BTreeMap::new();
    while model.len() < n {
        let k = Key(rng.gen());
        let mut v = vec![0u8; len];
        rng.fill(&mut v[..]);
        if model.insert(k, v.clone()).is_none() {
            map.insert(k, &v).expect("fresh key");
        }
    }
    (map, model)
}

// ---- the shared bodies, on the node log ----

#[test]
fn a_batch_on_the_node_log_is_applied_whole_and_in_order() {
    crate::support::a_batch_is_applied_whole_and_in_order(open_log, seed(110));
}

/// Every write and sync of an import, a spilling backed commit, a gc and a
/// copy into an empty store fails in turn (and every 25th read), on the
/// node log: the last committed root verifies, and the retry succeeds.
#[test]
fn import_commit_gc_and_sync_on_the_node_log_survive_a_fault_at_every_operation() {
    for (name, op, on_empty_target) in operations() {
        every_k(name, op, on_empty_target, new_log, 25);
    }
}

// ---- unfinished writes and damage, to the byte ----

/// A batch of nodes, a delete of a committed root's node and a metadata
/// record, cut at its header, at record boundaries and inside records:
/// opening (read-only, so nothing is cut) sees none of it; whole, all of
/// it. After a cut, the next write follows the last whole batch.
#[test]
fn a_batch_cut_anywhere_applies_none_of_it_and_the_next_write_follows_the_last_whole_one() {
    let s = seed(111);
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut a, model_a) = random_map(MapKind::AccountState, 1000, s);
    let (mut b, _) = random_map(MapKind::AccountState, 300, s + 1);
    let nodes_b = nodes_of(&b.snapshot());
    let log = log_path(dir.path());
    let (ra, start) = {
        let store = open_log(dir.path());
        let ra = import(&store, "a", &mut a).expect("import a");
        let start = file_len(&log);
        let mut batch = Batch::new();
        for n in &nodes_b {
            batch.put_node(n.clone());
        }
        batch.delete_node(ra);
        batch.put_meta("cut", b"B".to_vec());
        // Written, never acknowledged as durable: what a crash in the
        // middle of its write would leave is no loss.
        store.write(batch).expect("write B");
        (ra, start)
    };
    // As after a crash: no checkpoint of the clean close.
    crate::node_log::without_checkpoint(dir.path());
    let whole = std::fs::read(&log).expect("read");
    let body_start = start as usize + format::BATCH_HEADER_LEN;
    let records: Vec<usize> = format::records(&whole[body_start..])
        .map(|r| body_start + r.expect("a record").0)
        .collect();
    assert_eq!(records.len(), nodes_b.len() + 2);
    let end = whole.len();
    // At the header, then at every 16th record boundary and just after it,
    // then just before the end.
    let mut cuts = vec![start as usize + 1, start as usize + 31, body_start];
    for &r in records.iter().step_by(16) {
        cuts.extend([r, r + 1, r + 8]);
    }
    cuts.extend([end - 8, end - 1]);
    cuts.retain(|&c| c > start as usize && c < end);
    let check = |what: &str, store: &LogStore, whole_b: bool| {
        for n in &nodes_b {
            assert_eq!(
                store.contains(&n.hash()).expect("read"),
                whole_b,
                "{what}: node {} of B",
                n.hash()
            );
        }
        assert_eq!(
            store.get_meta("cut").expect("meta").is_some(),
            whole_b,
            "{what}: B's record"
        );
        assert_eq!(
            store.contains(&ra).expect("read"),
            !whole_b,
            "{what}: B's delete"
        );
    };
    for &cut in &cuts {
        std::fs::write(&log, &whole[..cut]).expect("cut");
        let what = format!("seed {s}: B cut at byte {cut} (it spans {start}..{end})");
        let store = LogStore::open_read_only(dir.path()).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(store.usage().log_bytes, start, "{what}");
        check(&what, &store, false);
        verify_all(&store, &ra).unwrap_or_else(|e| panic!("{what}: {e}"));
    }
    eprintln!("{} cut points", cuts.len());
    // Had B been acknowledged as durable, every cut loses a commit: each
    // is refused, naming the cut and the acknowledged batch.
    let ack_path = dir.path().join(ack::ACK_FILE);
    let ack_before = std::fs::read(&ack_path).expect("the record of a's import");
    let b_seq = crate::support::log_batches(&whole)
        .last()
        .expect("B, whole")
        .seq;
    let acked_b = ack::encode(ack::Ack {
        seq: b_seq,
        end: end as u64,
    });
    std::fs::write(&ack_path, acked_b).expect("B acknowledged");
    for &cut in &cuts {
        std::fs::write(&log, &whole[..cut]).expect("cut");
        for (mode, opened) in [
            ("open", LogStore::open(dir.path())),
            ("open_read_only", LogStore::open_read_only(dir.path())),
        ] {
            let e = opened
                .expect_err("an acknowledged batch cut short")
                .to_string();
            assert!(!e.contains('\n'), "{mode}: one line: {e}");
            assert!(
                e.contains(&format!("damaged at byte {start}"))
                    && e.contains(&format!("batch {b_seq}"))
                    && e.contains("acknowledged"),
                "seed {s}: {mode}: cut at {cut}: {e}"
            );
        }
        assert_eq!(file_len(&log), cut as u64, "never truncated");
    }
    std::fs::write(&ack_path, &ack_before).expect("back to a's record");
    std::fs::write(&log, &whole).expect("restore");
    check("B whole", &open_log(dir.path()), true);
    crate::node_log::without_checkpoint(dir.path());
    std::fs::write(&ack_path, &ack_before).expect("back to a's record");

    // Cut in the middle of a record; a write afterwards.
    let cut = records[records.len() / 2] + 20;
    std::fs::write(&log, &whole[..cut]).expect("cut");
    {
        let store = open_log(dir.path());
        assert_eq!(file_len(&log), cut as u64, "opening writes nothing");
        store
            .put_meta("after", vec![7])
            .expect("a write after the cut");
        assert_eq!(file_len(&log), store.usage().log_bytes);
    }
    let store = open_log(dir.path());
    check("after the cut and a write", &store, false);
    assert_eq!(store.get_meta("after").expect("meta"), Some(vec![7]));
    assert_eq!(items(&store, ra), model_a);
    assert_eq!(names(&store), ["a"]);
}

/// Makes `change` at byte `at` of the log in `dir`, checks that both ways
/// of opening refuse it (a `Backend` error: one line naming the store and
/// containing every one of `words`) and change nothing, and undoes it.
fn refused_with(dir: &Path, at: u64, change: Change, words: &[&str]) {
    crate::node_log::without_checkpoint(dir);
    let log = log_path(dir);
    let good = std::fs::read(&log).expect("read");
    let mut bad = good.clone();
    let at = at as usize;
    match change {
        Change::Flip => bad[at] ^= 0x40,
        Change::Zero(n) => bad[at..at + n].fill(0),
    }
    std::fs::write(&log, &bad).expect("write");
    for (mode, opened) in [
        ("open", LogStore::open(dir)),
        ("open_read_only", LogStore::open_read_only(dir)),
    ] {
        let e = opened.expect_err("a damaged log does not open");
        assert!(matches!(e, StoreError::Backend { .. }), "{mode}: {e:?}");
        assert_refusal(&e, dir, words, &format!("{mode}: {change:?} at {at}"));
    }
    assert_eq!(std::fs::read(&log).expect("read"), bad, "never truncated");
    std::fs::write(&log, &good).expect("undo");
}

#[derive(Clone, Copy, Debug)]
enum Change {
    /// One byte flipped.
    Flip,
    /// This many bytes zeroed (a sector never written, a header never
    /// written).
    Zero(usize),
}

#[test]
fn damage_in_any_batch_but_the_last_is_refused_naming_that_batch() {
    let s = seed(112);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut roots = Vec::new();
    {
        let store = open_log(dir.path());
        for (i, n) in [2000, 30, 2000, 30].into_iter().enumerate() {
            let (mut m, model) = random_map(MapKind::AccountState, n, s + i as u64);
            roots.push((
                import(&store, &format!("v{i}"), &mut m).expect("import"),
                model,
            ));
            store
                .put_meta("between", vec![i as u8])
                .expect("a small batch");
        }
    }
    let all = batches(dir.path());
    assert!(all.len() >= 8, "{} batches", all.len());
    // The first batches, one in the middle, the first and last big ones
    // (of an import) and the one before the last.
    let big: Vec<usize> = (0..all.len() - 1).filter(|&i| all[i].1 >= 4096).collect();
    let mut picked = vec![0, 1, all.len() / 2, all.len() - 2];
    picked.extend(big.first().into_iter().chain(big.last()));
    picked.sort_unstable();
    picked.dedup();
    let mut zeroed = 0;
    for i in picked {
        let (start, len) = all[i];
        let (next, _) = all[i + 1];
        let here = format!("damaged at byte {start}:");
        // A flipped byte in the body, and in the header.
        refused_with(
            dir.path(),
            start + 32 + len / 2,
            Change::Flip,
            &[&here, "fails its checksum"],
        );
        refused_with(dir.path(), start + 10, Change::Flip, &[&here]);
        // What an unfinished write looks like (a header or a sector of
        // zeros), with a whole batch after it: damage all the same.
        let whole_after = format!("a whole batch follows at byte {next}");
        refused_with(dir.path(), start, Change::Zero(32), &[&here, &whole_after]);
        let sector = (start + 32).next_multiple_of(512);
        if sector + 512 <= start + 32 + len {
            refused_with(
                dir.path(),
                sector,
                Change::Zero(512),
                &[&here, &whole_after],
            );
            zeroed += 1;
        }
    }
    assert!(zeroed >= 2, "sectors zeroed in {zeroed} batches");
    assert_versions_read(dir.path(), &roots, "after undoing the damage");
}

/// An inner node's sparse record whose type byte is damaged, with its
/// checksums recomputed (as a buggy writer or a crafted file would have
/// them), does not decode. It is corrupt, never data; verification names
/// it; a reclaim refuses to copy it and changes nothing; a whole record
/// of the node written after it repairs the store.
#[test]
fn a_sparse_inner_record_that_does_not_decode_is_corrupt_and_no_reclaim_drops_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut map, model) = random_map(MapKind::AccountState, 300, seed(113));
    let (root, value) = {
        let store = open_log(dir.path());
        let root = import(&store, "m", &mut map).expect("import");
        (
            root,
            store.read_value(&root).expect("read").expect("the root"),
        )
    };
    let mut e = BatchEncoder::default();
    e.begin();
    let (at, _) = e.put_node(&root, &value);
    let seq = next_seq(&log_path(dir.path()));
    e.finish(seq);
    let mut bad = e.bytes().to_vec();
    let type_byte = at + format::RECORD_HEADER_LEN + 32;
    let (range, encoding) = format::node_value_range(&bad[at..], &root).expect("a node record");
    assert_eq!(
        encoding,
        format::Encoding::SparseInner,
        "the root is stored sparse"
    );
    assert_eq!(range.start + at, type_byte);
    bad[type_byte] = 77;
    let body_crc = crc32c::crc32c(&bad[format::BATCH_HEADER_LEN..]);
    bad[24..28].copy_from_slice(&body_crc.to_le_bytes());
    let header_crc = crc32c::crc32c(&bad[..28]);
    bad[28..32].copy_from_slice(&header_crc.to_le_bytes());
    let log = log_path(dir.path());
    append(&log, &bad);

    let store = open_log(dir.path());
    let err = store.get(&root).expect_err("corrupt");
    assert!(
        matches!(&err, StoreError::Corrupt { hash, reason } if *hash == root && reason.contains("does not decode")),
        "{err}"
    );
    let err = verify_all(&store, &root).expect_err("verify finds it");
    assert!(err.to_string().contains(&root.to_string()), "{err}");
    let mut seen = None;
    store
        .for_each_value(&mut |h, v| {
            if h == root {
                seen = Some(v.to_vec());
            }
            std::ops::ControlFlow::Continue(())
        })
        .expect("iterate");
    let seen = seen.expect("the iteration passes the record on");
    assert_ne!(seen, value, "as stored, never as the node");
    let bytes = std::fs::read(&log).expect("read");
    let err = store.reclaim_now().expect_err("nothing is dropped");
    assert!(
        err.to_string().contains(&root.to_string()) && err.to_string().contains("does not decode"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&log).expect("read"),
        bytes,
        "the log is unchanged"
    );
    assert!(!dir.path().join(NEW_LOG_FILE).exists());
    assert!(
        StoredMap::open(&store, root, MapKind::AccountState).is_err(),
        "a corrupt root does not open"
    );
    drop(store);

    // The node written again, whole: the later record wins.
    let mut e = BatchEncoder::default();
    e.begin();
    e.put_node(&root, &value);
    e.finish(seq + 1);
    append(&log, e.bytes());
    let store = open_log(dir.path());
    assert_eq!(items(&store, root), model);
    verify_all(&store, &root).expect("repaired");
}

// ---- reclaim ----

/// The reclaim's and the sparse inner encoding's old names still work:
/// `compact_now` and `compact_if_worthwhile` reclaim, `Encoding::CompactInner`
/// is `SparseInner`. (The module `shamap_store::compact` is gone, not
/// aliased: the store's root re-exports no module under a second name.)
#[test]
#[allow(deprecated)]
fn the_old_names_still_work() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_log(dir.path());
    let (mut m0, _) = random_map(MapKind::AccountState, 500, seed(118));
    let (mut m1, model1) = random_map(MapKind::AccountState, 500, seed(119));
    import(&store, "v0", &mut m0).expect("import");
    let r1 = import(&store, "v1", &mut m1).expect("import");
    gc(&store, &[r1]).expect("gc");
    let collected = store.usage();
    store.compact_now().expect("reclaim");
    assert!(store.usage().log_bytes < collected.log_bytes);
    store.compact_if_worthwhile().expect("nothing to reclaim");
    assert_eq!(items(&store, r1), model1);
    assert_eq!(
        format::Encoding::CompactInner,
        format::Encoding::SparseInner
    );
}

#[test]
fn reclaim_now_drops_only_the_dead_and_a_reader_opened_before_keeps_its_view() {
    let s = seed(114);
    let dir = tempfile::tempdir().expect("tempdir");
    let log = log_path(dir.path());
    let store = open_log(dir.path());
    let (mut m0, model0) = random_map(MapKind::AccountState, 3000, s);
    let (mut m1, model1) = random_map(MapKind::AccountState, 3000, s + 1);
    let r0 = import(&store, "v0", &mut m0).expect("import");
    let r1 = import(&store, "v1", &mut m1).expect("import");
    let reader = LogStore::open_read_only(dir.path()).expect("a reader");
    let before = store.usage();
    gc(&store, &[r1]).expect("gc");
    let collected = store.usage();
    // Too little dead for gc to reclaim on its own (4 MiB at least).
    assert!(collected.log_bytes > before.log_bytes, "{collected:?}");
    assert!(collected.nodes < before.nodes, "{collected:?}");
    store.reclaim_now().expect("reclaim");
    let rewritten = store.usage();
    assert_eq!(
        (rewritten.nodes, rewritten.live_bytes),
        (collected.nodes, collected.live_bytes)
    );
    assert!(
        rewritten.log_bytes < collected.log_bytes - (before.live_bytes - collected.live_bytes),
        "{collected:?} -> {rewritten:?}"
    );
    assert_eq!(file_len(&log), rewritten.log_bytes);
    assert!(!dir.path().join(NEW_LOG_FILE).exists());
    assert_eq!(count(&store), rewritten.nodes);
    assert_eq!(items(&store, r1), model1);
    assert!(verify_all(&store, &r0).is_err(), "v0 was collected");

    // The reader still reads the log it opened, collected version and all.
    assert_eq!(names(&reader), ["v0", "v1"]);
    assert_eq!(items(&reader, r0), model0);
    assert_eq!(items(&reader, r1), model1);
    let e = reader.reclaim_now().expect_err("read-only");
    assert!(e.to_string().contains("read-only"), "{e}");
    drop(reader);

    // Writes after the reclaim, and all of it after reopening.
    let (mut m2, model2) = random_map(MapKind::AccountState, 500, s + 2);
    let r2 = import(&store, "v2", &mut m2).expect("import after reclaim");
    let usage = store.usage();
    assert_eq!(file_len(&log), usage.log_bytes);
    drop(store);
    let store = open_log(dir.path());
    let reopened = store.usage();
    assert_eq!(
        (reopened.nodes, reopened.log_bytes, reopened.live_bytes),
        (usage.nodes, usage.log_bytes, usage.live_bytes)
    );
    assert_eq!(names(&store), ["v1", "v2"]);
    assert_eq!(items(&store, r1), model1);
    assert_eq!(items(&store, r2), model2);
}

/// Opening a log with an unfinished write at its end leaves it there (the
/// next write cuts it); a reclaim before that write replaces the file,
/// and the write after it must follow the rewritten log's last batch.
#[test]
fn a_reclaim_right_after_opening_a_log_with_an_unfinished_write_leaves_no_tail() {
    let s = seed(115);
    let dir = tempfile::tempdir().expect("tempdir");
    let log = log_path(dir.path());
    let (mut a, _) = random_map(MapKind::AccountState, 3000, s);
    let (mut b, model_b) = random_map(MapKind::AccountState, 3000, s + 1);
    let rb = {
        let store = open_log(dir.path());
        import(&store, "a", &mut a).expect("import");
        let rb = import(&store, "b", &mut b).expect("import");
        gc(&store, &[rb]).expect("gc (too little dead to reclaim)");
        rb
    };
    let whole = file_len(&log);
    append(&log, &unfinished_batch());
    {
        let store = open_log(dir.path());
        assert_eq!(store.usage().log_bytes, whole);
        store.reclaim_now().expect("reclaim");
        let rewritten = store.usage().log_bytes;
        assert!(rewritten < whole / 2, "{whole} -> {rewritten}");
        store.put_meta("after", vec![1]).expect("write");
        assert_eq!(
            file_len(&log),
            store.usage().log_bytes,
            "the file ends at the last batch (rewritten to {rewritten}, the unfinished write was at {whole})"
        );
    }
    assert_eq!(
        batches(dir.path()).len(),
        2,
        "the rewritten batch and the write"
    );
    let store = open_log(dir.path());
    assert_eq!(store.get_meta("after").expect("meta"), Some(vec![1]));
    assert_eq!(names(&store), ["b"]);
    assert_eq!(items(&store, rb), model_b);
}

/// Fills the file system of `path` to the last byte, then frees `free`
/// bytes of it.
fn fill_all_but(path: &Path, free: u64) {
    let mut f = std::fs::File::create(path).expect("filler");
    let chunk = vec![1u8; 64 << 10];
    let mut n = 0u64;
    while let Ok(k) = f.write(&chunk) {
        if k == 0 {
            break;
        }
        n += k as u64;
    }
    f.set_len(n.saturating_sub(free)).expect("free some");
}

/// gc's sweep fits on the disk, the reclaim after it does not: gc fails
/// in words and in bounded time, its deletes stand, nothing is left behind,
/// the kept version reads and survives reopening; with space again a
/// reclaim succeeds.
#[test]
fn a_full_disk_in_gcs_reclaim_fails_gc_in_words_and_leaves_the_store_whole() {
    let Some(fs) = Tmpfs::mount("16m") else {
        return;
    };
    let s = seed(116);
    let db = fs.path.join("db");
    let log = log_path(&db);
    let store = open_log(&db);
    // 2 MB a version in 1000 nodes of 2 KB: three dead versions (6 MB,
    // more than the live 2 MB and than 4 MiB) make gc reclaim, and their
    // deletes take only ~130 KB.
    for v in 0..3 {
        let (mut m, _) = fat_map(1000, 2000, s + v);
        import(&store, &format!("v{v}"), &mut m).expect("import");
    }
    let (mut kept, model) = fat_map(1000, 2000, s + 3);
    let root = import(&store, "kept", &mut kept).expect("import");
    fill_all_but(&fs.path.join("filler"), 1 << 20);
    let start = Instant::now();
    let err = gc(&store, &[root]).expect_err("the reclaim does not fit");
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "{:?}",
        start.elapsed()
    );
    let line = err.to_string();
    assert!(!line.contains('\n'), "one line: {line}");
    assert!(
        line.contains("cannot reclaim the node log's dead bytes"),
        "{line}"
    );
    assert!(line.contains("No space left on device"), "{line}");
    assert!(line.contains(&db.display().to_string()), "{line}");
    assert!(!db.join(NEW_LOG_FILE).exists(), "nothing left behind");
    // The sweep stands; the kept version reads.
    let after = store.usage();
    assert_eq!(after.nodes, count(&store));
    assert_eq!(names(&store), ["kept"]);
    assert_eq!(items(&store, root), model);
    assert_eq!(file_len(&log), after.log_bytes);
    drop(store);

    // Reopened while the disk is still full.
    let store = open_log(&db);
    assert_eq!(store.usage().nodes, after.nodes);
    verify_all(&store, &root).expect("the kept root verifies");
    let e = store.reclaim_now().expect_err("still no space");
    assert!(e.to_string().contains("No space left on device"), "{e}");

    // Space again.
    std::fs::remove_file(fs.path.join("filler")).expect("free space");
    store.reclaim_now().expect("reclaim");
    let rewritten = store.usage();
    assert!(
        rewritten.log_bytes * 2 < after.log_bytes,
        "{after:?} -> {rewritten:?}"
    );
    drop(store);
    let store = open_log(&db);
    assert_eq!(items(&store, root), model);
    assert_eq!(store.usage().log_bytes, rewritten.log_bytes);
}

// ---- what is a node log, and where one may be made ----

#[test]
fn files_that_are_not_a_node_log_are_refused_and_never_rewritten() {
    let cases: [(&str, Vec<u8>, &str); 3] = [
        (
            "another magic",
            b"SHAMAPNX\x01\0\0\0\0\0\0\0".to_vec(),
            "not a node log",
        ),
        ("empty", Vec::new(), "shorter than its header"),
        (
            "half a header",
            format::file_header()[..9].to_vec(),
            "shorter than its header",
        ),
    ];
    for (what, bytes, words) in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(log_path(dir.path()), &bytes).expect("write");
        assert!(LogStore::is_store(dir.path()), "{what}");
        for opened in [
            LogStore::open(dir.path()),
            LogStore::open_read_only(dir.path()),
        ] {
            let e = opened.expect_err(what).to_string();
            assert!(e.contains(words), "{what}: {e}");
            assert!(!e.contains('\n'), "{what}: {e}");
        }
        assert_eq!(
            std::fs::read(log_path(dir.path())).expect("read"),
            bytes,
            "{what}"
        );
    }
}

#[test]
fn a_store_is_made_only_where_there_is_none_and_read_only_where_there_is_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Read-only, nothing is made: not at a new path, nor in an empty
    // directory.
    let new = dir.path().join("new");
    let e = LogStore::open_read_only(&new).expect_err("no store");
    assert!(e.to_string().contains("no store here"), "{e}");
    assert!(!new.exists());
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    assert!(LogStore::open_read_only(&empty).is_err());
    assert_eq!(std::fs::read_dir(&empty).expect("list").count(), 0);
    // A plain file is not a directory.
    let file = dir.path().join("file");
    std::fs::write(&file, "mine").expect("write");
    let e = LogStore::open(&file).expect_err("a file");
    assert!(e.to_string().contains("not a directory"), "{e}");
    assert!(LogStore::open_read_only(&file).is_err());
    assert_eq!(std::fs::read(&file).expect("read"), b"mine");
    // `nodes.log` that is a directory makes no store.
    let odd = dir.path().join("odd");
    std::fs::create_dir_all(odd.join(LOG_FILE)).expect("mkdir");
    assert!(!LogStore::is_store(&odd));
    assert!(LogStore::open(&odd).is_err());
    // What a first opening or a reclaim killed part way leaves (the
    // lock file, a partial reclaim file) is not foreign: the store is
    // made, and the leftover removed.
    let killed = dir.path().join("killed");
    std::fs::create_dir(&killed).expect("mkdir");
    std::fs::write(killed.join("LOCK"), "").expect("lock file");
    std::fs::write(killed.join(NEW_LOG_FILE), &format::file_header()[..7]).expect("leftover");
    assert!(!LogStore::is_store(&killed));
    let store = open_log(&killed);
    assert!(LogStore::is_store(&killed));
    assert!(!killed.join(NEW_LOG_FILE).exists());
    let (mut m, model) = random_map(MapKind::AccountState, 200, seed(117));
    let root = import(&store, "m", &mut m).expect("import");
    drop(store);
    // In a store, a leftover reclaim file: a reader ignores it, a
    // writer removes it.
    std::fs::write(killed.join(NEW_LOG_FILE), b"partial").expect("leftover");
    let reader = LogStore::open_read_only(&killed).expect("read-only");
    assert_eq!(items(&reader, root), model);
    assert!(
        killed.join(NEW_LOG_FILE).exists(),
        "a reader writes nothing"
    );
    drop(reader);
    let store = open_log(&killed);
    assert!(!killed.join(NEW_LOG_FILE).exists());
    assert_eq!(items(&store, root), model);
}

#[test]
fn an_unfinished_write_on_a_read_only_mount_is_read_around_and_never_cut() {
    let Some((fs, db)) = Tmpfs::mount_db("8m") else {
        return;
    };
    let log = log_path(&db);
    let (mut m, model) = random_map(MapKind::AccountState, 800, seed(118));
    let root = import(&open_log(&db), "m", &mut m).expect("import");
    let whole = file_len(&log);
    append(&log, &unfinished_batch());
    let bytes = std::fs::read(&log).expect("read");
    fs.remount("ro");
    let e = LogStore::open(&db).expect_err("cannot be written");
    assert!(LogStore::is_unwritable(&e), "{e}");
    let store = LogStore::open_read_only(&db).expect("read-only");
    assert_eq!(store.usage().log_bytes, whole);
    assert_eq!(items(&store, root), model);
    drop(store);
    assert_eq!(std::fs::read(&log).expect("read"), bytes, "nothing cut");
    // Writable again: the next write cuts it.
    fs.remount("rw");
    let store = open_log(&db);
    store.put_meta("after", vec![1]).expect("write");
    assert_eq!(file_len(&log), store.usage().log_bytes);
    drop(store);
    let store = open_log(&db);
    assert_eq!(items(&store, root), model);
    assert_eq!(store.get_meta("after").expect("meta"), Some(vec![1]));
}
