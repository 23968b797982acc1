//! rippled's NuDB node store, read by `backend::nudb`: stores written by
//! the test-only writer (`shamap-nudb-writer`, NuDB 2.0.9's layout and
//! rippled's codec) from the shipped ledgers, a history sharing nodes, a
//! rotated `online_delete` layout, every codec type; and each fault of
//! the reader's list, found by the audit (or refused at opening) with the
//! file, key and offset named, the directory left byte for byte as it was.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use shamap::Hash256;
use shamap_nudb_writer::faults::{self, Field};
use shamap_nudb_writer::ledgers::node_value;
use shamap_nudb_writer::{
    history, write_ledger, write_ledger_db, write_ledgers, write_rotated, CodecPolicy, CodecType,
    Ledger, NudbOptions, NudbWriter,
};
use shamap_store::backend::nudb::{audit, AuditOptions, AuditReport, NudbStore};
use shamap_store::findings::Only;
use shamap_store::{
    open_with, verify_all, Access, NodeObject, NodeStore, NodeStoreExt, OpenOptions, Opened,
};

use crate::data_files::json_files;
use crate::support::{data, files_under, seed};

/// Every file under `dir` with its bytes: what must not change.
pub(crate) fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    files_under(dir)
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).expect("read");
            (p, bytes)
        })
        .collect()
}

pub(crate) fn no_progress(_: u64) {}

pub(crate) fn audit_all(store: &NudbStore) -> AuditReport {
    audit(store, &AuditOptions::default(), &no_progress).expect("audit runs")
}

/// One ledger walked alone, on one thread (no scan).
fn audit_one(store: &NudbStore, only: Only) -> AuditReport {
    let opts = AuditOptions {
        only: Some(only),
        threads: 1,
        memory: None,
    };
    audit(store, &opts, &no_progress).expect("the walk runs")
}

pub(crate) fn small() -> NudbOptions {
    NudbOptions {
        block_size: 128,
        load_factor: 0.9,
        ..NudbOptions::default()
    }
}

pub(crate) fn base() -> Ledger {
    Ledger::from_dump(&data("ledger-38129.json")).expect("ledger 38129")
}

/// The test's seed ([`seed`]`(default)`) and the history of `count`
/// ledgers after [`base`] made from it.
pub(crate) fn seeded_history(default: u64, count: usize) -> (u64, Vec<Ledger>) {
    let s = seed(default);
    (s, history(base(), count, s))
}

/// The header, the state root and a state leaf of `l`.
fn keys(l: &Ledger) -> [Hash256; 3] {
    let mut leaf = None;
    l.state.for_each_node(|n| {
        if n.is_leaf && leaf.is_none() {
            leaf = Some(n.hash);
        }
    });
    [l.hash(), l.header.account_hash, leaf.expect("a leaf")]
}

/// Every object of every shipped ledger is read back, verified, through
/// the store, for rippled's codec choice and for every codec type with
/// small blocks (spill records); the audit finds the ledger whole.
#[test]
fn shipped_ledgers_read_back_whole() {
    let mut tested = 0;
    for path in json_files(&data("")) {
        let Ok(l) = Ledger::from_dump(&path) else {
            continue;
        };
        tested += 1;
        for (o, codec) in [
            (NudbOptions::default(), CodecPolicy::Rippled),
            (small(), CodecPolicy::Mixed),
        ] {
            let dir = tempfile::tempdir().expect("tempdir");
            let w = write_ledger(dir.path(), NudbOptions { codec, ..o }, &l).expect("write");
            let before = snapshot(dir.path());
            let store = NudbStore::open(dir.path()).expect("open");
            for (h, v) in l.objects() {
                let got = store.get(&h).expect("read").expect("present");
                let mut want = v.clone();
                if NodeObject::decode(h, want.clone())
                    .expect("valid")
                    .prefix_bytes()
                    .starts_with(b"MIN\0")
                {
                    // rippled's codec drops an inner node's type byte.
                    if matches!(
                        w.record(&h.0).and_then(|r| r.codec),
                        Some(CodecType::InnerCompressed | CodecType::InnerFull)
                    ) {
                        want[8] = 0;
                    }
                }
                assert_eq!(got.value(), &want[..], "{} {h}", path.display());
            }
            assert!(!store.contains(&Hash256([7; 32])).expect("lookup"));
            verify_all(&store, &l.hash()).expect("verify_all");
            let r = audit_all(&store);
            assert!(r.is_whole(), "{}: {:?}", path.display(), r.nodes);
            assert_eq!(r.ledgers.len(), 1);
            let scan = r.scan.as_ref().expect("scan");
            assert_eq!(scan.records, w.records.len() as u64);
            // The key file indexes exactly the data records, so the walk
            // takes every node from the scan's checks, hashing none again.
            assert_eq!(scan.index_agrees, [true], "{}", path.display());
            let c = r.ledgers[0].counts;
            assert_eq!(c.hashed, 0, "{}", path.display());
            assert_eq!(c.inner + c.leaves, l.objects().len() as u64 - 1);
            assert_eq!(snapshot(dir.path()), before, "nothing written");
        }
    }
    assert!(tested >= 3, "shipped ledgers read: {tested}");
}

/// A history of ledgers sharing nodes, with `ledger.db`: every ledger
/// whole (by the scan, by hash, by sequence), later ledgers skipping the
/// subtrees the one before had; without `ledger.db` the headers are found
/// in the data file.
#[test]
fn a_history_is_audited_ledger_by_ledger() {
    let (s, ledgers) = seeded_history(40, 8);
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("nudb");
    write_ledgers(&db, NudbOptions::default(), &ledgers).expect("write");
    let before = snapshot(&db);
    let store = NudbStore::open(&db).expect("open");
    assert!(store.ledger_db().is_none());
    let r = audit_all(&store);
    assert!(r.is_whole(), "seed {s}: {:?}", r.nodes);
    assert_eq!(r.ledgers.len(), ledgers.len(), "seed {s}");
    assert!(
        r.ledgers[1..].iter().all(|l| l.counts.skipped > 0),
        "seed {s}"
    );
    let seqs: Vec<Option<u32>> = r.ledgers.iter().map(|l| l.seq).collect();
    let want: Vec<Option<u32>> = ledgers.iter().map(|l| Some(l.header.seq)).collect();
    assert_eq!(seqs, want);
    let headers: Vec<_> = ledgers.iter().map(|l| l.header).collect();
    write_ledger_db(&dir.path().join("ledger.db"), &headers).expect("ledger.db");
    let before_all = snapshot(dir.path());
    let store = NudbStore::open(&db).expect("open");
    assert!(store.ledger_db().is_some(), "found in the directory above");
    let r = audit_all(&store);
    assert!(r.is_whole() && r.ledgers.len() == ledgers.len(), "seed {s}");
    assert!(r.ledgers_from.ends_with("ledger.db"));
    for only in [
        Only::Seq(ledgers[5].header.seq),
        Only::Hash(ledgers[5].hash()),
    ] {
        let r = audit_one(&store, only);
        assert!(r.is_whole() && r.scan.is_none(), "{only:?}");
        assert_eq!(r.ledgers[0].hash, ledgers[5].hash());
        assert!(
            r.ledgers[0].counts.hashed > 0,
            "walked alone, every node hashed"
        );
    }
    assert_eq!(
        snapshot(dir.path()),
        before_all,
        "nothing written, nothing created"
    );
    assert_eq!(snapshot(&db), before);
}

/// rippled's `online_delete` layout: two `rippledb.*` directories under
/// the path, read as one store; every ledger whole.
#[test]
fn a_rotated_store_opens_as_one() {
    let (s, ledgers) = seeded_history(41, 6);
    let dir = tempfile::tempdir().expect("tempdir");
    write_rotated(dir.path(), NudbOptions::default(), &ledgers, 3).expect("rotated");
    let opened = open_with(dir.path(), &OpenOptions::new(Access::Read)).expect("opens");
    let Opened::Nudb(store) = opened else {
        panic!("not opened as NuDB");
    };
    assert_eq!(store.parts().len(), 2);
    for l in &ledgers {
        for (h, _) in l.objects() {
            assert!(store.get(&h).expect("read").is_some(), "seed {s}: {h}");
        }
    }
    let r = audit_all(&store);
    assert!(r.is_whole(), "seed {s}: {:?}", r.nodes);
    assert_eq!(r.ledgers.len(), ledgers.len());
    // Writing is refused, in one line.
    let e = open_with(dir.path(), &OpenOptions::new(Access::Write)).expect_err("read-only");
    assert!(e.to_string().contains("read-only"), "{e}");
    let nudb_arg = format!("nudb:{}", dir.path().display());
    assert!(matches!(
        open_with(&nudb_arg, &OpenOptions::new(Access::Read)),
        Ok(Opened::Nudb(_))
    ));
}

/// The damaged key of a fault and the audit's report: not whole, the key
/// named with its record's offset (when it has one) and the ledger it
/// breaks.
fn assert_damage(r: &AuditReport, key: &Hash256, offset: Option<u64>, what: &str) {
    assert!(!r.is_whole(), "{what}: reported whole");
    let node = r.nodes.iter().find(|n| n.key == *key);
    let record = r.damaged_records().iter().find(|d| d.key == Some(*key));
    assert!(
        node.is_some() || record.is_some(),
        "{what}: {key} not named: {:?} {:?}",
        r.nodes,
        r.damaged_records()
    );
    if let Some(off) = offset {
        let at = node
            .and_then(|n| n.at.as_ref().map(|a| a.1))
            .or(record.map(|d| d.offset));
        assert_eq!(at, Some(off), "{what}: offset");
    }
    if let Some(n) = node {
        assert!(!n.ledgers.is_empty(), "{what}: no ledger named");
    }
}

/// A flipped byte in a header, an inner node, a leaf: the record is
/// damaged (by the scan), the ledger is broken, the earlier ledgers whole.
#[test]
fn a_flipped_byte_is_found_with_its_key_and_offset() {
    let (s, ledgers) = seeded_history(42, 3);
    let last = ledgers.last().expect("ledgers");
    for (i, name) in ["header", "inner node", "leaf"].into_iter().enumerate() {
        let dir = tempfile::tempdir().expect("tempdir");
        let w = write_ledgers(dir.path(), small(), &ledgers).expect("write");
        // A key of the last ledger only (its header, root, a new leaf).
        let key = keys(last)[i];
        let Some(r) = w.record(&key.0).cloned() else {
            continue;
        };
        faults::flip_value_byte(&w, &key.0, r.size / 2).expect("flip");
        let before = snapshot(dir.path());
        let store = NudbStore::open(dir.path()).expect("open");
        let rep = audit_all(&store);
        assert_damage(&rep, &key, Some(r.offset), name);
        // The first ledger is whole unless it shares the damaged node.
        let shared = ledgers[0].objects().iter().any(|(h, _)| *h == key);
        assert_eq!(
            rep.ledgers[0].is_whole(),
            !shared,
            "{name}: the first ledger"
        );
        let last_audit = rep.ledgers.iter().find(|l| l.hash == last.hash());
        assert!(last_audit.is_none_or(|l| !l.is_whole()), "{name}: seed {s}");
        assert_eq!(snapshot(dir.path()), before);
        // One ledger walked alone finds it too.
        let one = audit_one(&store, Only::Hash(last.hash()));
        assert!(!one.is_whole(), "{name}: the walk alone");
    }
}

/// A missing inner node, leaf, state root: the ledger is broken, the key
/// named, "missing".
#[test]
fn a_missing_node_breaks_its_ledger() {
    let dir = tempfile::tempdir().expect("tempdir");
    let l = base();
    let w = write_ledger(&dir.path().join("full"), small(), &l).expect("write");
    let [_, root, leaf] = keys(&l);
    let mut inner = None;
    l.state.for_each_node(|n| {
        if !n.is_leaf && n.hash != root && inner.is_none() {
            inner = Some(n.hash);
        }
    });
    for (key, what) in [
        (inner.expect("an inner node"), "inner"),
        (leaf, "leaf"),
        (root, "state root"),
    ] {
        let out = dir.path().join(what.replace(' ', "_"));
        faults::without_records(&w, &out, small(), &[&key.0]).expect("rewrite");
        let before = snapshot(&out);
        let store = NudbStore::open(&out).expect("open");
        let r = audit_all(&store);
        assert_damage(&r, &key, None, what);
        let n = r.nodes.iter().find(|n| n.key == key).expect("named");
        assert!(n.what.contains("missing"), "{what}: {}", n.what);
        assert_eq!(snapshot(&out), before);
    }
}

/// An LZ4 value whose declared size lies (bigger, smaller, huge): the
/// record is damaged, named with its offset; nothing huge allocated.
#[test]
fn a_lying_lz4_size_is_damage() {
    let l = base();
    let [header, _, leaf] = keys(&l);
    let mut value = None;
    l.state.for_each_node(|n| {
        if n.hash == leaf {
            value = Some(node_value(3, &n.prefix_bytes));
        }
    });
    let value = value.expect("leaf value");
    let header_value = l
        .objects()
        .into_iter()
        .find(|(h, _)| *h == header)
        .expect("header")
        .1;
    for declared in [value.len() as u64 + 7, value.len() as u64 - 7, 1 << 40] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut w = NudbWriter::create(dir.path(), small()).expect("create");
        w.insert_raw(
            &leaf.0,
            &shamap_nudb_writer::codec::lz4_declaring(&value, declared),
        )
        .expect("insert");
        w.insert_as(&header.0, &header_value, CodecType::Lz4)
            .expect("header");
        let w = w.finish().expect("finish");
        let store = NudbStore::open(dir.path()).expect("open");
        let off = w.record(&leaf.0).expect("record").offset;
        let r = audit_all(&store);
        assert_damage(&r, &leaf, Some(off), &format!("declared {declared}"));
        let d = &r.damaged_records()[0];
        assert!(
            d.what.contains("LZ4") && d.what.contains(&leaf.to_string()),
            "{}",
            d.what
        );
        let e = store.get(&leaf).expect_err("a read refuses it");
        assert!(e.to_string().contains(&format!("byte {off}")), "{e}");
    }
}

/// A truncated data file: the scan stops at the cut record, naming the
/// file and offset; the ledger is broken.
#[test]
fn a_truncated_data_file_is_damage() {
    let l = base();
    // Cut inside the last record's key (not readable), and inside its
    // value (the key is read and named).
    for (cut, named) in [(10, false), (6 + 32 + 1, true)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let w = write_ledger(dir.path(), small(), &l).expect("write");
        let last = w.records.last().expect("records").clone();
        faults::truncate(&w.path("nudb.dat"), last.offset + cut).expect("truncate");
        let before = snapshot(dir.path());
        let store = NudbStore::open(dir.path()).expect("open");
        let r = audit_all(&store);
        assert!(!r.is_whole());
        let d = r
            .damaged_records()
            .iter()
            .find(|d| d.offset == last.offset)
            .expect("the cut record");
        assert!(
            d.what.contains("nudb.dat") && d.what.contains("past the end"),
            "{}",
            d.what
        );
        let want = named.then(|| Hash256::from_slice(&last.key).expect("a 32-byte key"));
        assert_eq!(d.key, want, "cut at {cut}");
        assert_eq!(snapshot(dir.path()), before);
    }
}

/// Refused at opening, one line naming the file: a key header that
/// contradicts the data file, a log of another store, a wrong appnum or
/// key size, a damaged pepper.
#[test]
fn refusals_at_opening_name_the_file() {
    let l = base();
    /// A header field patched in the key file or in both files, or the
    /// log of another store.
    enum Damage {
        Key(Field),
        Both(Field),
        ForeignLog,
    }
    let cases = [
        ("uid", Damage::Key(Field::Uid(99)), "nudb.key"),
        (
            "appnum in the key file",
            Damage::Key(Field::Appnum(2)),
            "nudb.key",
        ),
        ("log of another store", Damage::ForeignLog, "nudb.log"),
        ("appnum", Damage::Both(Field::Appnum(7)), "appnum 7"),
        ("key size", Damage::Both(Field::KeySize(20)), "key size"),
        ("pepper", Damage::Key(Field::Pepper(5)), "pepper"),
    ];
    for (what, damage, expect) in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        write_ledger(dir.path(), small(), &l).expect("write");
        match damage {
            Damage::Key(f) => faults::patch_key_header(dir.path(), f),
            Damage::Both(f) => faults::patch_both_headers(dir.path(), f),
            Damage::ForeignLog => {
                let mut log = b"nudb.log".to_vec();
                log.resize(80, 0x11);
                faults::write_log(dir.path(), &log)
            }
        }
        .expect("damage");
        let before = snapshot(dir.path());
        let e = NudbStore::open(dir.path()).expect_err(what).to_string();
        assert!(e.contains(expect), "{what}: {e}");
        assert!(!e.contains('\n'), "{what}: one line");
        assert_eq!(snapshot(dir.path()), before, "{what}");
    }
    // A log shorter than its header: a commit that changed nothing yet;
    // the store opens as it is.
    let dir = tempfile::tempdir().expect("tempdir");
    write_ledger(dir.path(), small(), &l).expect("write");
    faults::write_log(dir.path(), b"nudb.log and more").expect("log");
    let store = NudbStore::open(dir.path()).expect("a short log opens");
    assert!(
        store.notes()[0].contains("less than its header"),
        "{:?}",
        store.notes()
    );
}

/// A bucket entry pointing past the data file, and a spill chain that
/// loops: the walk's lookup fails with the file and offset, the ledger is
/// broken, no hang.
#[test]
fn key_file_damage_breaks_the_ledger() {
    let l = base();
    let [_, root, leaf] = keys(&l);
    for key in [root, leaf] {
        let dir = tempfile::tempdir().expect("tempdir");
        let w = write_ledger(dir.path(), small(), &l).expect("write");
        faults::point_entry_at(&w, &key.0, w.dat_len + 4096).expect("point");
        let store = NudbStore::open(dir.path()).expect("open");
        let r = audit_all(&store);
        assert!(!r.is_whole(), "{key}");
        let e = store.get(&key).expect_err("a read fails").to_string();
        assert!(
            e.contains("outside the records") && e.contains("nudb.dat"),
            "{e}"
        );
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let w = write_ledger(
        dir.path(),
        NudbOptions {
            block_size: 104,
            load_factor: 0.99,
            ..NudbOptions::default()
        },
        &l,
    )
    .expect("write");
    let (_bucket, _first) = faults::loop_spill_chain(&w).expect("loop");
    let store = NudbStore::open(dir.path()).expect("open");
    let r = audit_all(&store);
    assert!(!r.is_whole(), "a looping chain");
    assert!(
        r.damaged_records().iter().any(|d| d.what.contains("loops")),
        "{:?}",
        r.damaged_records()
    );
}

/// A bucket entry naming another record inside the data file, of the same
/// size (the key file check sees nothing out of the file): the key file no
/// longer indexes what the data file holds, so the walk trusts no entry,
/// reads the record, finds another key there and reports the leaf missing.
#[test]
fn an_entry_naming_another_record_breaks_the_ledger() {
    let l = base();
    let dir = tempfile::tempdir().expect("tempdir");
    let w = write_ledger(dir.path(), small(), &l).expect("write");
    // A leaf whose entry is in its bucket, not in a spill, of a size no
    // inner node has: one the walk would take from its entry alone.
    let mut leaves = Vec::new();
    l.state.for_each_node(|n| {
        if n.is_leaf {
            leaves.push(n.hash);
        }
    });
    let leaf = *leaves
        .iter()
        .find(|h| {
            let size = w.record(&h.0).map_or(0, |r| r.size);
            size % 32 != 3 && faults::locate_entry(&w, &h.0).is_ok_and(|e| e.depth == 0)
        })
        .expect("a leaf filed in its bucket");
    let mine = w.record(&leaf.0).expect("the leaf's record").clone();
    let other = w
        .records
        .iter()
        .filter(|r| r.key != mine.key)
        .min_by_key(|r| r.size.abs_diff(mine.size))
        .expect("another record");
    faults::point_entry_at(&w, &leaf.0, other.offset).expect("point");
    let store = NudbStore::open(dir.path()).expect("open");
    let r = audit_all(&store);
    assert_eq!(r.scan.as_ref().expect("scan").index_agrees, [false]);
    assert!(!r.is_whole());
    let n = r
        .nodes
        .iter()
        .find(|n| n.key == leaf)
        .expect("the leaf named");
    assert_eq!(n.ledgers.len(), 1, "{n:?}");
}

/// One ledger asked for by hash whose header record is gone: the report
/// still gives its sequence, from `ledger.db`.
#[test]
fn a_ledger_without_its_header_keeps_its_sequence_from_ledger_db() {
    let (s, ledgers) = seeded_history(42, 3);
    let dir = tempfile::tempdir().expect("tempdir");
    let w =
        write_ledgers(&dir.path().join("full"), NudbOptions::default(), &ledgers).expect("write");
    let gone = &ledgers[1];
    let db = dir.path().join("nudb");
    faults::without_records(&w, &db, NudbOptions::default(), &[&gone.hash().0]).expect("rewrite");
    let headers: Vec<_> = ledgers.iter().map(|l| l.header).collect();
    write_ledger_db(&dir.path().join("ledger.db"), &headers).expect("ledger.db");
    let store = NudbStore::open(&db).expect("open");
    let r = audit_one(&store, Only::Hash(gone.hash()));
    assert!(!r.is_whole(), "seed {s}");
    assert_eq!(r.ledgers[0].seq, Some(gone.header.seq), "seed {s}");
}
