//! `shamap verify --db` and `info --db` on rippled's NuDB node store
//! (written by the test-only writer): whole stores exit 0 with every
//! ledger whole; each damaged variant exits 2 naming the damaged key,
//! the file and the offset, the earlier ledgers whole; nothing in the
//! store's directory changes.

use shamap_nudb_writer::{faults, write_ledger_db, write_ledgers, NudbOptions};

use crate::support::{data, files_in, history_38129, nudb_in, ok, one_error_line, shamap};

#[test]
fn verify_and_info_on_a_whole_store() {
    let ls = history_38129(4, 40);
    let dir = tempfile::tempdir().expect("tempdir");
    let db = nudb_in(dir.path(), &ls);
    let before = files_in(&db);
    let db_s = db.to_str().expect("utf-8");
    let out = ok(&shamap(["verify", "--db", db_s], None)).to_owned();
    assert!(out.contains("every record whole"), "{out}");
    for l in &ls {
        assert!(
            out.contains(&format!("ledger {} {} whole", l.header.seq, l.hash())),
            "{out}"
        );
    }
    let out = ok(&shamap(["info", "--db", db_s], None)).to_owned();
    assert!(out.contains("rippled's NuDB node store"), "{out}");
    assert!(
        out.contains(&format!(
            "ledgers from ledger headers in the data files: {}",
            ls.len()
        )),
        "{out}"
    );
    // By sequence and by hash, with ledger.db given.
    let headers: Vec<_> = ls.iter().map(|l| l.header).collect();
    let ldb = dir.path().join("elsewhere.db");
    write_ledger_db(&ldb, &headers).expect("ledger.db");
    let seq = ls[2].header.seq.to_string();
    let r = shamap(
        [
            "verify",
            "--db",
            db_s,
            "--ledger",
            &seq,
            "--ledger-db",
            ldb.to_str().expect("utf-8"),
        ],
        None,
    );
    assert!(
        ok(&r).contains(&format!("ledger {seq} {} whole", ls[2].hash())),
        "{}",
        r.stdout
    );
    let root = ls[1].hash().to_hex();
    let r = shamap(
        [
            "verify",
            "--db",
            &format!("nudb:{db_s}"),
            "--root",
            &root,
            "--json",
        ],
        None,
    );
    let v: serde_json::Value = serde_json::from_str(ok(&r)).expect("json");
    assert_eq!(v["ok"], true);
    assert_eq!(v["roots"][0]["root"], root);
    assert_eq!(files_in(&db), before, "nothing in the store changed");
}

#[test]
fn a_damaged_store_exits_2_naming_the_node() {
    let ls = history_38129(4, 40);
    let last = ls.last().expect("ledgers");
    let dir = tempfile::tempdir().expect("tempdir");
    let w = write_ledgers(dir.path(), NudbOptions::default(), &ls).expect("write");
    let key = last.header.account_hash;
    let rec = w.record(&key.0).expect("record").clone();
    faults::flip_value_byte(&w, &key.0, rec.size / 2).expect("flip");
    let before = files_in(dir.path());
    let db = dir.path().to_str().expect("utf-8");
    let r = shamap(["verify", "--db", db], None);
    let line = one_error_line(&r, 2);
    assert!(line.contains(&key.to_string()), "{line}");
    assert!(line.contains(&format!("at byte {}", rec.offset)), "{line}");
    assert!(
        r.stdout.contains(&format!(
            "ledger {} {} whole",
            ls[0].header.seq,
            ls[0].hash()
        )),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(&format!(
            "ledger {} {} DAMAGED",
            last.header.seq,
            last.hash()
        )),
        "{}",
        r.stdout
    );
    let r = shamap(["verify", "--db", db, "--json"], None);
    assert_eq!(r.code, Some(2));
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    assert_eq!(v["ok"], false);
    assert_eq!(v["damage"][0]["key"], key.to_hex());
    assert_eq!(v["damage"][0]["at"], rec.offset);
    // A log that is not this store's: refused in one line.
    let mut log = b"nudb.log".to_vec();
    log.resize(80, 0x22);
    faults::write_log(dir.path(), &log).expect("log");
    let r = shamap(["info", "--db", db], None);
    let line = one_error_line(&r, 2);
    assert!(line.contains("nudb.log"), "{line}");
    std::fs::remove_file(dir.path().join("nudb.log")).expect("rm log");
    assert_eq!(files_in(dir.path()), before);
    // Writing is refused.
    let r = shamap(
        [
            "import",
            data("ledger-38129.json").to_str().expect("utf-8"),
            "--db",
            db,
        ],
        None,
    );
    let line = one_error_line(&r, 2);
    assert!(line.contains("read-only"), "{line}");
}
