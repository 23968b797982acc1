//! The store commands after an ordinary bad day (issue 41): side files at
//! the temporary checkpoint, a store started again after `rm`, damaged
//! copies repaired by `sync` and `import`, the same changes applied three
//! times, and input the store and the readers refuse, with messages that
//! say what is wrong.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use shamap_store::backend::log_store::format::{self, Encoding, Record};

use crate::support::{
    import, ledger_38129, ok, one_error_line, shamap, shamap_within, temp_file, Run, ACCOUNT_38129,
    KEY_38129, LEDGER_38129, TX_38129,
};

fn run(args: &[&OsStr]) -> Run {
    shamap(args, None)
}

fn os<S: AsRef<OsStr> + ?Sized>(s: &S) -> &OsStr {
    s.as_ref()
}

/// A temporary directory with a store `db` holding ledger 38129.
fn store_38129() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    import(&[ledger_38129()], &db);
    (dir, db)
}

fn changes_file(dir: &Path) -> PathBuf {
    let path = dir.join("changes.txt");
    let mut text = String::new();
    for i in 1..=40u8 {
        text.push_str(&format!(
            "set {} {}\n",
            format!("{i:02X}").repeat(32),
            "AB".repeat(30)
        ));
    }
    text.push_str(&format!("set {KEY_38129} {}\n", "CD".repeat(40)));
    std::fs::write(&path, text).expect("write");
    path
}

fn apply(db: &Path, changes: &Path, limit: Duration) -> Run {
    shamap_within(
        [
            os("apply"),
            os("--db"),
            db.as_os_str(),
            os("--root"),
            os(ACCOUNT_38129),
            changes.as_os_str(),
        ],
        None,
        limit,
    )
}

fn log_len(db: &Path) -> u64 {
    std::fs::metadata(db.join("nodes.log")).expect("log").len()
}

#[test]
fn a_fifo_or_a_symlink_at_the_temporary_checkpoint_neither_hangs_nor_writes_outside() {
    let (dir, db) = store_38129();
    let changes = changes_file(dir.path());
    let tmp = db.join("nodes.idx.tmp");
    let ok_fifo = std::process::Command::new("mkfifo")
        .arg(&tmp)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok_fifo, "mkfifo");
    ok(&apply(&db, &changes, Duration::from_secs(60)));
    assert!(!tmp.exists(), "the FIFO is left");
    assert!(db
        .join("nodes.idx")
        .symlink_metadata()
        .expect("checkpoint")
        .is_file());

    let outside = dir.path().join("outside.txt");
    std::fs::write(&outside, b"mine").expect("write");
    std::os::unix::fs::symlink(&outside, &tmp).expect("symlink");
    ok(&apply(&db, &changes, Duration::from_secs(60)));
    assert_eq!(
        std::fs::read(&outside).expect("read"),
        b"mine",
        "written through"
    );
    assert!(outside.exists() && !tmp.exists());
    ok(&run(&[os("verify"), os("--db"), db.as_os_str()]));
}

#[test]
fn removing_the_log_and_its_acknowledgment_then_importing_makes_a_fresh_store() {
    let (_dir, db) = store_38129();
    std::fs::remove_file(db.join("nodes.log")).expect("rm log");
    std::fs::remove_file(db.join("nodes.ack")).expect("rm ack");
    import(&[ledger_38129()], &db);
    ok(&run(&[os("verify"), os("--db"), db.as_os_str()]));
    let r = run(&[os("get"), os("--db"), db.as_os_str(), os(KEY_38129)]);
    ok(&r);
}

/// Changes one byte of the stored value of the first node record `pick`
/// chooses in `db`'s log and recomputes its batch's checksums (the damage
/// passes the log's checks); removes the index checkpoint, which would
/// see it. Returns the node's hash.
fn forge(db: &Path, pick: impl Fn(&shamap::Hash256, Encoding) -> bool, byte: usize) -> String {
    let path = db.join("nodes.log");
    let mut log = std::fs::read(&path).expect("log");
    let mut pos = format::FILE_HEADER_LEN as usize;
    while pos + format::BATCH_HEADER_LEN <= log.len() {
        let h: &[u8; format::BATCH_HEADER_LEN] = log[pos..pos + format::BATCH_HEADER_LEN]
            .try_into()
            .expect("32");
        let header = format::decode_batch_header(h).expect("a whole log");
        let body_at = pos + format::BATCH_HEADER_LEN;
        let end = body_at + header.body_len as usize;
        let found = format::records(&log[body_at..end]).find_map(|r| match r.expect("record") {
            (
                at,
                Record::PutNode {
                    hash,
                    value,
                    encoding,
                },
            ) if pick(&hash, encoding) => {
                Some((at + format::NODE_HEAD_LEN + byte.min(value.len() - 1), hash))
            }
            _ => None,
        });
        if let Some((at, hash)) = found {
            log[body_at + at] ^= 0x5A;
            let crc = crc32c::crc32c(&log[body_at..end]);
            log[pos + 24..pos + 28].copy_from_slice(&crc.to_le_bytes());
            let crc = crc32c::crc32c(&log[pos..pos + 28]);
            log[pos + 28..pos + 32].copy_from_slice(&crc.to_le_bytes());
            std::fs::write(&path, &log).expect("write");
            let _ = std::fs::remove_file(db.join("nodes.idx"));
            return hash.to_hex();
        }
        pos = end;
    }
    panic!("no record to damage");
}

/// A leaf's last data byte, and an inner node's sparse record (its type
/// byte: it no longer decodes), damaged in `db`; `verify --db` sees it.
fn damage_a_leaf_and_an_inner_node(db: &Path) {
    forge(db, |_, e| e == Encoding::Plain, usize::MAX);
    forge(
        db,
        |h, e| e == Encoding::SparseInner && h.to_hex() != ACCOUNT_38129 && h.to_hex() != TX_38129,
        0,
    );
    let r = run(&[os("verify"), os("--db"), db.as_os_str()]);
    assert_ne!(r.code, Some(0), "the damage is not seen: {}", r.stdout);
}

#[test]
fn sync_from_a_good_store_repairs_damaged_copies_and_says_so() {
    let (dir, bad) = store_38129();
    let good = dir.path().join("good");
    import(&[ledger_38129()], &good);
    damage_a_leaf_and_an_inner_node(&bad);
    let r = run(&[
        os("sync"),
        os("--from"),
        good.as_os_str(),
        os("--to"),
        bad.as_os_str(),
        os("--root"),
        os(LEDGER_38129),
    ]);
    let out = ok(&r);
    assert!(
        out.contains("2 nodes copied") && out.contains("2 of them replacing a damaged copy"),
        "{out}"
    );
    ok(&run(&[os("verify"), os("--db"), bad.as_os_str()]));
}

#[test]
fn import_over_damaged_copies_repairs_them_and_says_so() {
    let (_dir, db) = store_38129();
    damage_a_leaf_and_an_inner_node(&db);
    let out = import(&[ledger_38129()], &db);
    assert!(
        out.contains("2 of the nodes written replaced damaged copies"),
        "{out}"
    );
    ok(&run(&[os("verify"), os("--db"), db.as_os_str()]));
}

/// The same file applied three times: the first writes the changed nodes,
/// the next two only their retained-root record (not every touched node
/// again).
#[test]
fn applying_the_same_changes_again_writes_almost_nothing() {
    let (dir, db) = store_38129();
    let changes = changes_file(dir.path());
    let start = log_len(&db);
    ok(&apply(&db, &changes, Duration::from_secs(120)));
    let first = log_len(&db) - start;
    for _ in 0..2 {
        ok(&apply(&db, &changes, Duration::from_secs(120)));
    }
    let again = log_len(&db) - start - first;
    assert!(
        again * 10 <= first,
        "the first apply grew the log by {first} bytes, the next two by {again}"
    );
    // gc keeps the root, deletes nothing it needs, and the map reads.
    let r = run(&[os("info"), os("--db"), db.as_os_str()]);
    ok(&r);
}

#[test]
fn apply_refuses_leaves_under_twelve_bytes_and_names_a_long_name() {
    let (dir, db) = store_38129();
    let tiny_dir = tempfile::tempdir_in(dir.path()).expect("tmp");
    let tiny = temp_file(
        &tiny_dir,
        "tiny.txt",
        format!("set {} {}\n", "5A".repeat(32), "AB".repeat(11)).as_bytes(),
    );
    let line = one_error_line(&apply(&db, &tiny, Duration::from_secs(60)), 2);
    assert!(
        line.contains(":1: ") && line.contains("11 bytes") && line.contains("12"),
        "{line}"
    );
    let changes = changes_file(dir.path());
    let long = "n".repeat(300);
    let r = run(&[
        os("apply"),
        os("--db"),
        db.as_os_str(),
        os("--name"),
        os(&long),
        changes.as_os_str(),
    ]);
    let line = one_error_line(&r, 2);
    assert!(
        line.contains("too long") && line.contains("300 bytes"),
        "{line}"
    );
    assert!(!line.contains("malformed"), "{line}");
}

#[test]
fn root_zero_is_the_empty_map_as_the_help_says() {
    let (_dir, db) = store_38129();
    let r = run(&[
        os("get"),
        os("--db"),
        db.as_os_str(),
        os("--root"),
        os("0"),
        os(KEY_38129),
    ]);
    let line = one_error_line(&r, 1);
    assert!(line.contains("not in map"), "{line}");
    let help = ok(&run(&[os("get"), os("--help")])).to_owned();
    assert!(help.contains("empty map"), "{help}");
    assert!(!help.contains("newest imported state map"), "{help}");
}

#[test]
fn a_proof_file_with_a_key_twice_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let key = "02CE52E3E46AD340B1C7900F86AFB959AE0C246916E3463905EDD61DE26FFFDD";
    let proof = run(&[os("prove"), ledger_38129().as_os_str(), os(key)]);
    let text = ok(&proof).to_owned();
    // A second "root" (the transaction root) before the real one: a reader
    // keeping the last would never see it.
    let twice = text.replacen(
        "\"root\"",
        &format!("\"root\": \"{TX_38129}\",\n  \"root\""),
        1,
    );
    let file = temp_file(&dir, "twice.json", twice.as_bytes());
    let r = run(&[
        os("check-proof"),
        os("--root"),
        os(ACCOUNT_38129),
        os("--key"),
        os(key),
        file.as_os_str(),
    ]);
    let line = one_error_line(&r, 2);
    assert!(line.contains("duplicate key \"root\""), "{line}");
}

/// Numbers a decoded ledger holds only as rippled prints them.
#[test]
fn decoded_numbers_rippled_never_prints_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text =
        std::fs::read_to_string(crate::support::data("ledger-full-38129.json")).expect("fixture");
    assert!(text.contains("\"370000000\""));
    for (from, to) in [
        ("\"Balance\":\"370000000\"", "\"Balance\":\"+370000000\""),
        ("\"Balance\":\"370000000\"", "\"Balance\":\"3.7e8\""),
        ("\"Balance\":\"370000000\"", "\"Balance\":\"370000000.0\""),
        ("\"OwnerCount\":0,", "\"OwnerCount\":-0,"),
    ] {
        assert!(text.contains(from), "the fixture lacks {from}");
        let bad = text.replacen(from, to, 1);
        let file = temp_file(&dir, "odd.json", bad.as_bytes());
        let r = run(&[os("verify"), file.as_os_str()]);
        let line = one_error_line(&r, 2);
        assert!(line.contains("rippled"), "{to}: {line}");
    }
}
