//! A ledger named by its hash (`--root`, the key of its header object) or
//! its sequence (`--ledger`) in every store command: `get`, `scan`,
//! `prove --db`, `diff --db`, `sync --from`, `verify --db`, with
//! `--kind tx` for the transaction map; on a node log with retained
//! records and on one without any (as rippled's node store has none).

use std::path::Path;

use shamap::xrpl::tx::{transaction_id, tx_with_meta_item};
use shamap_store::{meta, Batch, LogStore, NodeStore};

use crate::support::{
    assert_contains, data, import, ledger_38129, ledger_38129_json, ok, one_error_line, shamap,
    string_at, temp_file, ACCOUNT_38129, KEY_38129, LEDGER_38129, TX_38129,
};

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn run(args: &[&str]) -> crate::support::Run {
    shamap(args, None)
}

/// Ledger 40000's hash (its `transaction_hash` is zero: no transactions).
const LEDGER_40000: &str = "16BB8E41DD96D643BC72E1981865C5D76B990464E2EA151FEAC16CDF1AE29388";

/// The one transaction of ledger 38129: its ID, and its leaf data
/// (`VL(tx) ‖ VL(meta)`) in hex.
fn tx_38129() -> (String, String) {
    let v = ledger_38129_json();
    let t = &v["ledger"]["transactions"][0];
    let hex = |k: &str| shamap::hash::decode_hex(t[k].as_str().expect("hex")).expect("hex");
    let (tx, meta) = (hex("tx_blob"), hex("meta"));
    let (key, data) = tx_with_meta_item(&tx, &meta).expect("small");
    assert_eq!(key.to_hex(), transaction_id(&tx).to_hex());
    (key.to_hex(), shamap::hash::encode_hex_upper(&data))
}

/// A node log holding ledgers 38129 and 40000 (retained).
fn store(dir: &tempfile::TempDir) -> std::path::PathBuf {
    let db = dir.path().join("db");
    import(&[ledger_38129(), data("ledger-full-40000.json")], &db);
    db
}

/// Removes the store's retained list: only the objects stay, as in a
/// store that keeps no metadata of ours.
fn forget_retained(db: &Path) {
    let store = LogStore::open(db).expect("open");
    let mut b = Batch::new();
    meta::put_retained(&mut b, &[]);
    store.write(b).expect("write");
    assert!(meta::retained(&store).expect("read").is_empty());
}

#[test]
fn get_scan_and_prove_read_either_map_of_a_ledger() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = store(&dir);
    let (txid, txdata) = tx_38129();
    for at in [["--root", LEDGER_38129], ["--ledger", "38129"]] {
        let mut args = vec!["get", "--db", s(&db)];
        args.extend(at);
        let mut tx = args.clone();
        tx.extend(["--kind", "tx", &txid]);
        assert_eq!(ok(&run(&tx)).trim(), txdata);
        // The state map by default; the transaction's ID is not in it.
        args.push(&txid);
        let r = run(&args);
        assert_contains(
            &one_error_line(&r, 1),
            &format!("not in map {ACCOUNT_38129}"),
        );

        let mut scan = vec!["scan", "--db", s(&db), "--json"];
        scan.extend(at);
        let v: serde_json::Value = serde_json::from_str(ok(&run(&scan))).expect("JSON");
        assert_eq!(v["root"], ACCOUNT_38129);
        assert_eq!(v["items"], 261);
        scan.extend(["--kind", "tx"]);
        let v: serde_json::Value = serde_json::from_str(ok(&run(&scan))).expect("JSON");
        assert_eq!(
            (v["root"].as_str(), v["items"].as_u64()),
            (Some(TX_38129), Some(1))
        );
        assert_eq!(v["kind"], "tx");

        let mut prove = vec!["prove", "--db", s(&db)];
        prove.extend(at);
        prove.extend(["--kind", "tx", "--key", &txid]);
        let proof = ok(&run(&prove)).to_owned();
        let v: serde_json::Value = serde_json::from_str(&proof).expect("JSON");
        assert_eq!(v["root"], TX_38129);
        let file = dir.path().join("proof.json");
        std::fs::write(&file, &proof).expect("write");
        let r = run(&["check-proof", "--root", TX_38129, "--key", &txid, s(&file)]);
        assert_eq!(ok(&r).trim(), "included");
    }
}

#[test]
fn a_ledger_without_transactions_has_no_tx_map_to_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = store(&dir);
    let (txid, _) = tx_38129();
    // Each command on the ledger's transaction map, named by sequence or
    // by hash, with the key it reads where it reads one.
    for (command, ledger, key) in [
        ("get", ["--ledger", "40000"], Some(txid.as_str())),
        ("scan", ["--root", LEDGER_40000], None),
        ("prove", ["--ledger", "40000"], Some(txid.as_str())),
    ] {
        let mut cmd = vec![
            command,
            "--db",
            s(&db),
            ledger[0],
            ledger[1],
            "--kind",
            "tx",
        ];
        if command == "prove" {
            cmd.push("--key");
        }
        cmd.extend(key);
        let line = one_error_line(&run(&cmd), 2);
        assert_contains(
            &line,
            &format!("ledger {LEDGER_40000} (sequence 40000) has no transactions: its transaction_hash is zero"),
        );
    }
}

#[test]
fn stored_diffs_equal_the_files_diffs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = store(&dir);
    let a = ledger_38129();
    let b = data("ledger-full-40000.json");
    let files = run(&["diff", s(&a), s(&b)]);
    let expected = ok(&files);
    assert!(
        expected.ends_with("2 differences: 0 added, 0 removed, 2 modified\n"),
        "{expected}"
    );
    for (x, y) in [("38129", "40000"), (LEDGER_38129, LEDGER_40000)] {
        let r = run(&["diff", "--db", s(&db), x, y]);
        assert_eq!(ok(&r), expected);
    }
    // Limits and JSON as for files.
    let r = run(&["diff", "--db", s(&db), "38129", "40000", "--max", "1"]);
    assert_contains(&one_error_line(&r, 1), "more than 1 differences");
    let r = run(&["diff", "--db", s(&db), "38129", "40000", "--json"]);
    let v: serde_json::Value = serde_json::from_str(ok(&r)).expect("JSON");
    let f: serde_json::Value =
        serde_json::from_str(ok(&run(&["diff", s(&a), s(&b), "--json"]))).expect("JSON");
    assert_eq!(v["differences"], f["differences"]);
    assert_eq!(v["left"]["root"], ACCOUNT_38129);
    assert_eq!(v["left"]["entries"], serde_json::Value::Null);
    // Equal ledgers: nothing.
    let r = run(&[
        "diff",
        "--db",
        s(&db),
        "38129",
        LEDGER_38129,
        "--kind",
        "tx",
    ]);
    assert_eq!(ok(&r), "0 differences: 0 added, 0 removed, 0 modified\n");
    // A transaction map against the empty one of ledger 40000.
    let r = run(&["diff", "--db", s(&db), "38129", "40000", "--kind", "tx"]);
    assert_contains(&one_error_line(&r, 2), "has no transactions");
    let r = run(&["diff", "--db", s(&db), "38129", "1"]);
    assert_contains(&one_error_line(&r, 2), "no ledger with sequence 1 ");
}

#[test]
fn ledger_hashes_need_no_retained_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = store(&dir);
    forget_retained(&db);
    let (txid, txdata) = tx_38129();
    let dbs = s(&db);
    let r = run(&["get", "--db", dbs, "--root", LEDGER_38129, KEY_38129]);
    assert!(!ok(&r).is_empty());
    let r = run(&[
        "get",
        "--db",
        dbs,
        "--root",
        LEDGER_38129,
        "--kind",
        "tx",
        &txid,
    ]);
    assert_eq!(ok(&r).trim(), txdata);
    let r = run(&[
        "prove",
        "--db",
        dbs,
        "--root",
        LEDGER_38129,
        "--key",
        KEY_38129,
    ]);
    ok(&r);
    let r = run(&["verify", "--db", dbs, "--root", LEDGER_38129]);
    assert_contains(ok(&r), &format!("root {LEDGER_38129} (given) ok"));
    let to = dir.path().join("copy");
    let r = run(&[
        "sync",
        "--from",
        dbs,
        "--to",
        s(&to),
        "--root",
        LEDGER_38129,
    ]);
    ok(&r);
    let r = run(&["verify", "--db", s(&to), "--ledger", "38129"]);
    assert_contains(ok(&r), &format!("root {LEDGER_38129} (ledger 38129) ok"));
    // Without a list, neither a sequence nor a bare map root names a map.
    let r = run(&["scan", "--db", dbs, "--ledger", "38129"]);
    assert_contains(
        &one_error_line(&r, 2),
        "no ledger with sequence 38129: the retained ledgers is empty",
    );
    let r = run(&["scan", "--db", dbs, "--root", ACCOUNT_38129]);
    assert_contains(&one_error_line(&r, 2), "is not a root of this store");
    let r = run(&["scan", "--db", dbs]);
    assert_contains(
        &one_error_line(&r, 2),
        "the store has no imported state map",
    );
}

#[test]
fn sequences_name_ledgers_in_every_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = store(&dir);
    let dbs = s(&db);
    let r = run(&["verify", "--db", dbs, "--ledger", "40000"]);
    assert_contains(ok(&r), &format!("root {LEDGER_40000} (ledger 40000) ok"));
    let to = dir.path().join("copy");
    let r = run(&["sync", "--from", dbs, "--to", s(&to), "--ledger", "38129"]);
    assert_contains(ok(&r), &format!("root {LEDGER_38129} synced"));
    for cmd in [
        vec!["verify", "--db", dbs, "--ledger", "7"],
        vec!["sync", "--from", dbs, "--to", s(&to), "--ledger", "7"],
        vec!["get", "--db", dbs, "--ledger", "7", KEY_38129],
        vec!["prove", "--db", dbs, "--ledger", "7", "--key", KEY_38129],
    ] {
        let line = one_error_line(&run(&cmd), 2);
        assert_contains(
            &line,
            "no ledger with sequence 7 in the retained ledgers (2 ledgers, sequences 38129 to 40000)",
        );
    }
    // --root and --ledger together are a usage error.
    let r = run(&[
        "scan",
        "--db",
        dbs,
        "--ledger",
        "38129",
        "--root",
        LEDGER_38129,
    ]);
    one_error_line(&r, 2);
    let r = run(&["prove", "--db", dbs, "--key", KEY_38129]);
    assert_contains(&one_error_line(&r, 2), "with --db, give --root or --ledger");
    // A map root of another kind than asked.
    let r = run(&["scan", "--db", dbs, "--root", TX_38129, "--kind", "state"]);
    assert_contains(
        &one_error_line(&r, 2),
        &format!("{TX_38129} is the root of a tx map, not of a state map"),
    );
}

/// `import` holds the maps to the roots the file claims: a claimed
/// `account_hash` or `transaction_hash` that the entries do not hash to is
/// a negative answer naming both roots, and nothing is stored.
#[test]
fn import_refuses_a_file_whose_claimed_roots_differ_and_stores_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let wrong = "AB".repeat(32);
    for (field, computed) in [
        ("account_hash", ACCOUNT_38129),
        ("transaction_hash", TX_38129),
    ] {
        let mut v = ledger_38129_json();
        *string_at(&mut v, &format!("/ledger/{field}")) = wrong.clone();
        let file = temp_file(&dir, &format!("{field}.json"), v.to_string().as_bytes());
        let line = one_error_line(&run(&["import", s(&file), "--db", s(&db)]), 1);
        assert_contains(
            &line,
            &format!(
                "computed {field} {computed} differs from the file's {wrong}; nothing stored for this ledger"
            ),
        );
        if db.exists() {
            let store = LogStore::open_read_only(&db).expect("open");
            assert!(meta::retained(&store).expect("read").is_empty(), "{field}");
            assert!(!store
                .contains(&shamap::Hash256::from_hex(computed).expect("hex"))
                .expect("read"));
        }
    }
}
