//! A sequence is served only as the ledger it is: when rippled's
//! `ledger.db` maps sequence N to a hash whose stored header says another
//! sequence (rows remapped), to a hash the node store does not hold, or to
//! a map node, every command taking `--ledger N` (and `diff`'s sequence
//! sides) exits 2 with one line naming the sequence and the hash (and the
//! header's sequence), and writes nothing.

use std::path::Path;

use shamap::Hash256;
use shamap_nudb_writer::{faults, Ledger};

use crate::support::{
    assert_contains, history_38129, nudb_with_ledger_db, ok, one_error_line, shamap, KEY_38129,
};

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A NuDB store (in `dir/nudb`, its `ledger.db` inside it) of ledgers
/// 38129, 38130 and 38131; the ledgers (a fourth, 38132, not stored);
/// `ledger.db` lists the three stored ones truthfully.
fn nudb_of_three(dir: &Path) -> (std::path::PathBuf, Vec<Ledger>) {
    let ls = history_38129(3, 7);
    let db = dir.join("nudb");
    nudb_with_ledger_db(&db, &db.join("ledger.db"), &ls[..3]);
    (db, ls)
}

/// [`nudb_of_three`] with ledger.db's rows 38129 and 38130 swapped (38131
/// left true).
fn nudb_of_three_swapped(dir: &Path) -> (std::path::PathBuf, Vec<Ledger>) {
    let (db, ls) = nudb_of_three(dir);
    let ldb = db.join("ledger.db");
    let (h0, h1) = (ls[0].hash(), ls[1].hash());
    faults::set_ledger_row(&ldb, 38129, &h1.0).expect("remap");
    faults::set_ledger_row(&ldb, 38130, &h0.0).expect("remap");
    (db, ls)
}

/// Every command that takes a ledger sequence, reading `db` at `seq`
/// (`diff`: `seq` against `other`). `sync` copies into `to`.
fn commands(db: &str, seq: &str, other: &str, to: &str, changes: &str) -> Vec<Vec<String>> {
    let v = |a: &[&str]| a.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
    vec![
        v(&["get", "--db", db, "--ledger", seq, KEY_38129]),
        v(&[
            "get", "--db", db, "--ledger", seq, "--kind", "tx", KEY_38129,
        ]),
        v(&["prove", "--db", db, "--ledger", seq, "--key", KEY_38129]),
        v(&["scan", "--db", db, "--ledger", seq]),
        v(&["diff", "--db", db, seq, other]),
        v(&["diff", "--db", db, other, seq]),
        v(&["export", "--db", db, "--ledger", seq]),
        v(&["sync", "--from", db, "--to", to, "--ledger", seq]),
        v(&["verify", "--db", db, "--ledger", seq]),
        v(&["apply", "--db", db, "--ledger", seq, changes]),
    ]
}

#[test]
fn a_remapped_ledger_db_row_is_refused_by_every_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, ls) = nudb_of_three_swapped(dir.path());
    let (h0, h1) = (ls[0].hash(), ls[1].hash());
    let (s0, s1, s2) = (ls[0].header.seq, ls[1].header.seq, ls[2].header.seq);
    assert_eq!((s0, s1, s2), (38129, 38130, 38131));
    let changes = dir.path().join("changes.txt");
    std::fs::write(&changes, format!("del {KEY_38129}\n")).expect("changes");
    let to = dir.path().join("to");
    let dbs = s(&db);
    for (seq, hash, says) in [(s0, h1, s1), (s1, h0, s0)] {
        for args in commands(dbs, &seq.to_string(), &s2.to_string(), s(&to), s(&changes)) {
            let r = shamap(&args, None);
            let line = one_error_line(&r, 2);
            let want = format!(
                "ledger.db) maps sequence {seq} to {hash}, whose header says sequence {says}"
            );
            if args[0] == "apply" {
                // A NuDB store is read-only: apply is refused before any
                // ledger is looked up (its --ledger is resolved by the same
                // `ledger_by_seq`, checked on every backend by the store
                // crate's own tests).
                assert_contains(&line, "read-only");
                continue;
            }
            if args[0] == "verify" {
                // `verify --db` on NuDB is the audit's; see
                // `verify_reports_a_remapped_row` below.
                continue;
            }
            assert_contains(&line, &want);
            assert!(r.stdout.is_empty(), "{args:?}: {}", r.stdout);
        }
    }
    assert!(!to.exists(), "sync created no target");
    // The row that tells the truth is served.
    let r = shamap(["export", "--db", dbs, "--ledger", &s2.to_string()], None);
    assert_contains(
        ok(&r),
        &format!(
            "\"ledger_hash\":\"{}\",\"ledger_index\":{s2},",
            ls[2].hash()
        ),
    );
    let r = shamap(["scan", "--db", dbs, "--ledger", &s2.to_string()], None);
    ok(&r);
}

#[test]
fn a_row_naming_no_stored_header_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, ls) = nudb_of_three(dir.path());
    let ldb = db.join("ledger.db");
    // 38132 exists, but the node store does not hold it; 38133 names the
    // state map of 38129, a stored inner node.
    let h3 = ls[3].hash();
    let root: Hash256 = ls[0].header.account_hash;
    faults::set_ledger_row(&ldb, 38132, &h3.0).expect("row");
    faults::set_ledger_row(&ldb, 38133, &root.0).expect("row");
    let changes = dir.path().join("changes.txt");
    std::fs::write(&changes, format!("del {KEY_38129}\n")).expect("changes");
    let to = dir.path().join("to");
    for (seq, hash, why) in [
        (
            38132,
            h3,
            "but no ledger header is stored under that hash: the store does not hold that ledger",
        ),
        (
            38133,
            root,
            "but the object stored under that hash is a map node, not a ledger header",
        ),
    ] {
        for args in commands(s(&db), &seq.to_string(), "38131", s(&to), s(&changes)) {
            if matches!(args[0].as_str(), "apply" | "verify") {
                continue;
            }
            let r = shamap(&args, None);
            let line = one_error_line(&r, 2);
            assert_contains(&line, &format!("maps sequence {seq} to {hash}, {why}"));
        }
    }
    assert!(!to.exists(), "sync created no target");
}

/// `verify --db DIR --ledger N` on a NuDB store goes through the NuDB
/// audit, not `ledger_by_seq`: what it does with a remapped row is
/// recorded here (it must not report the other ledger whole under N).
#[test]
fn verify_reports_a_remapped_row() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, ls) = nudb_of_three_swapped(dir.path());
    let h1 = ls[1].hash();
    let r = shamap(["verify", "--db", s(&db), "--ledger", "38129"], None);
    let all = format!("{}{}", r.stdout, r.stderr);
    assert_eq!(r.code, Some(2), "{all}");
    assert!(!r.stderr.contains("panicked"), "{all}");
    assert!(all.contains(&h1.to_string()), "{all}");
    assert!(all.contains("38130"), "{all}");
}
