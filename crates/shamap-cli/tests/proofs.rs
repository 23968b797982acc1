//! `shamap prove` and `shamap check-proof` on the shipped ledger: round
//! trips for a state key and the transaction, tampering (status 1), garbage
//! (status 2), and absent keys.

use std::ffi::OsStr;
use std::path::Path;

use crate::support::{
    assert_contains, assert_ends_with, assert_input_error, assert_starts_with, ledger_38129, ok,
    shamap, temp_file, testnet_42089779, Run, ACCOUNT_38129, TX_38129,
};

const STATE_KEY: &str = "02CE52E3E46AD340B1C7900F86AFB959AE0C246916E3463905EDD61DE26FFFDD";
/// A key absent from 38129's state map.
const ABSENT_KEY: &str = "02CE52E3E46AD340B1C7900F86AFB959AE0C246916E3463905EDD61DE26FFFDE";

fn prove(file: &Path, key: &str, extra: &[&str]) -> Run {
    let mut args: Vec<&OsStr> = vec![OsStr::new("prove"), file.as_os_str(), OsStr::new(key)];
    args.extend(extra.iter().map(OsStr::new));
    shamap(args, None)
}

fn check(root: &str, key: &str, proof: &Path, extra: &[&str]) -> Run {
    let mut args: Vec<&OsStr> = ["check-proof", "--root", root, "--key", key]
        .into_iter()
        .chain(extra.iter().copied())
        .map(OsStr::new)
        .collect();
    args.push(proof.as_os_str());
    shamap(args, None)
}

fn json(run: &Run) -> serde_json::Value {
    serde_json::from_str(&run.stdout).expect("stdout is JSON")
}

/// The ID of 38129's only transaction.
fn tx_id_38129() -> String {
    let v = crate::support::ledger_38129_json();
    let blob = v
        .pointer("/ledger/transactions/0/tx_blob")
        .and_then(serde_json::Value::as_str)
        .expect("tx_blob");
    let bytes = shamap::hash::decode_hex(blob).expect("hex");
    shamap::xrpl::transaction_id(&bytes).to_hex()
}

#[test]
fn a_state_key_proof_round_trips() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = prove(&ledger_38129(), STATE_KEY, &[]);
    ok(&run);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    let v = json(&run);
    assert_eq!(v["kind"], "state");
    assert_eq!(v["key"], STATE_KEY);
    assert_eq!(v["root"], ACCOUNT_38129);
    assert_eq!(v["included"], true);
    // `--json` changes nothing.
    assert_eq!(
        prove(&ledger_38129(), STATE_KEY, &["--json"]).stdout,
        run.stdout
    );
    let proof = temp_file(&dir, "proof.json", run.stdout.as_bytes());
    let r = check(ACCOUNT_38129, STATE_KEY, &proof, &[]);
    assert_eq!(ok(&r), "included\n");
    assert!(r.stderr.is_empty());
    // Standard input works too, and --json carries the data.
    let via_stdin = shamap(
        [
            "check-proof",
            "--json",
            "--root",
            ACCOUNT_38129,
            "--key",
            STATE_KEY,
            "-",
        ],
        Some(run.stdout.as_bytes()),
    );
    assert_eq!(via_stdin.code, Some(0), "{}", via_stdin.stderr);
    let out = json(&via_stdin);
    assert_eq!(out["valid"], true);
    assert_eq!(out["result"], "included");
    let leaf = v["nodes"][0].as_str().expect("hex");
    let data = out["data"].as_str().expect("data");
    assert!(leaf.starts_with(data), "the leaf blob is data ‖ key ‖ 01");
}

#[test]
fn the_transaction_proof_round_trips() {
    let dir = tempfile::tempdir().expect("temp dir");
    let id = tx_id_38129();
    let run = prove(&ledger_38129(), &id, &["--kind", "tx"]);
    ok(&run);
    let v = json(&run);
    assert_eq!(v["kind"], "tx");
    assert_eq!(v["root"], TX_38129);
    assert_eq!(v["included"], true);
    let proof = temp_file(&dir, "tx.json", run.stdout.as_bytes());
    assert_eq!(ok(&check(TX_38129, &id, &proof, &[])), "included\n");
    // Against the state root it is invalid.
    let bad = check(ACCOUNT_38129, &id, &proof, &[]);
    assert_eq!(bad.code, Some(1));
    assert_starts_with(&bad.stdout, "invalid: the proof is for root ");
}

#[test]
fn every_testnet_transaction_round_trips() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = shamap_ledger::dump::parse(&std::fs::read(testnet_42089779()).expect("data"))
        .expect("parses");
    let root = d.header.transaction_hash.expect("claimed root").to_hex();
    for t in d.transactions.expect("transactions") {
        let id = shamap::xrpl::transaction_id(&t.tx).to_hex();
        let run = prove(&testnet_42089779(), &id, &["--kind", "tx"]);
        ok(&run);
        let proof = temp_file(&dir, "p.json", run.stdout.as_bytes());
        assert_eq!(ok(&check(&root, &id, &proof, &[])), "included\n");
    }
    // The testnet file has no state list.
    let run = prove(&testnet_42089779(), STATE_KEY, &[]);
    let line = assert_input_error(&run, &testnet_42089779().display().to_string());
    assert_ends_with(&line, "no state list to build the state map from");
}

#[test]
fn a_tampered_proof_is_invalid() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = prove(&ledger_38129(), STATE_KEY, &[]);
    let mut v = json(&run);
    let nodes = v["nodes"].as_array().expect("nodes").len();
    for (node, digit) in [(0, 10), (nodes - 1, 3), (1, 70)] {
        let mut t = v.clone();
        let s = t["nodes"][node].as_str().expect("hex").to_owned();
        let mut s = s.into_bytes();
        s[digit] = if s[digit] == b'0' { b'1' } else { b'0' };
        t["nodes"][node] = serde_json::Value::String(String::from_utf8(s).expect("ascii"));
        let proof = temp_file(&dir, "t.json", t.to_string().as_bytes());
        let bad = check(ACCOUNT_38129, STATE_KEY, &proof, &[]);
        assert_eq!(bad.code, Some(1), "{}", bad.stderr);
        assert!(bad.stdout.starts_with("invalid: "), "{}", bad.stdout);
        assert_eq!(bad.stdout.lines().count(), 1);
        assert!(bad.stderr.is_empty(), "{}", bad.stderr);
        let j = check(ACCOUNT_38129, STATE_KEY, &proof, &["--json"]);
        assert_eq!(j.code, Some(1));
        assert_eq!(json(&j)["valid"], false);
    }
    // A node dropped, an extra node, a claim that does not hold.
    let arr = v["nodes"].as_array_mut().expect("nodes");
    let leaf = arr.remove(0);
    let proof = temp_file(&dir, "short.json", v.to_string().as_bytes());
    let bad = check(ACCOUNT_38129, STATE_KEY, &proof, &[]);
    assert_eq!(bad.code, Some(1));
    assert!(bad.stdout.contains("lacks node"), "{}", bad.stdout);
    let arr = v["nodes"].as_array_mut().expect("nodes");
    arr.insert(0, leaf.clone());
    arr.insert(0, leaf);
    let proof = temp_file(&dir, "long.json", v.to_string().as_bytes());
    let bad = check(ACCOUNT_38129, STATE_KEY, &proof, &[]);
    assert_eq!(bad.code, Some(1));
    assert_contains(&bad.stdout, "follow the end of the path");
    // The inclusion proof presented for another (absent) key.
    let proof = temp_file(&dir, "good.json", run.stdout.as_bytes());
    let bad = check(ACCOUNT_38129, ABSENT_KEY, &proof, &[]);
    assert_eq!(bad.code, Some(1));
    assert_starts_with(&bad.stdout, "invalid: the proof is for key ");
}

#[test]
fn garbage_is_unreadable_input() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, bytes) in [
        ("text", &b"not json"[..]),
        ("empty", &b""[..]),
        ("number", &b"17"[..]),
        ("nonodes", &br#"{"kind": "state"}"#[..]),
        ("badhex", &br#"{"nodes": ["ABCX"]}"#[..]),
        ("odd", &br#"["ABC"]"#[..]),
        ("notstring", &br#"[12]"#[..]),
    ] {
        let path = temp_file(&dir, name, bytes);
        let run = check(ACCOUNT_38129, STATE_KEY, &path, &[]);
        assert_input_error(&run, &path.display().to_string());
    }
    let missing = dir.path().join("missing.json");
    let line = assert_input_error(
        &check(ACCOUNT_38129, STATE_KEY, &missing, &[]),
        &missing.display().to_string(),
    );
    assert!(line.contains("cannot read"), "{line}");
    // Bad hex on the command line: a usage error, status 2, one line.
    let path = temp_file(&dir, "any", b"[]");
    for (root, key) in [("00", STATE_KEY), (ACCOUNT_38129, "xyz")] {
        let run = check(root, key, &path, &[]);
        assert_eq!(run.code, Some(2), "{}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
        assert!(run.stdout.is_empty());
    }
    // Well-formed JSON of valid hex that is no node at all: invalid (1).
    let path = temp_file(&dir, "junk", br#"["0102030405"]"#);
    let run = check(ACCOUNT_38129, STATE_KEY, &path, &[]);
    assert_eq!(run.code, Some(1));
    assert_starts_with(&run.stdout, "invalid: node 0: ");
    // prove: garbage ledger file, bad key.
    let garbage = temp_file(&dir, "garbage.json", b"{\"ledger\": ");
    assert_input_error(
        &prove(&garbage, STATE_KEY, &[]),
        &garbage.display().to_string(),
    );
    let run = prove(&ledger_38129(), "12", &[]);
    assert_eq!(run.code, Some(2));
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
}

#[test]
fn an_absent_key_fails_unless_absent_ok_then_proves_absence() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = prove(&ledger_38129(), ABSENT_KEY, &[]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert_eq!(run.stderr.lines().count(), 1);
    assert_contains(&run.stderr, "is not in the state map");

    let run = prove(&ledger_38129(), ABSENT_KEY, &["--absent-ok"]);
    ok(&run);
    let v = json(&run);
    assert_eq!(v["included"], false);
    let proof = temp_file(&dir, "absent.json", run.stdout.as_bytes());
    assert_eq!(
        ok(&check(ACCOUNT_38129, ABSENT_KEY, &proof, &[])),
        "absent\n"
    );
    // That proof is not one of inclusion: it ends at another key's leaf
    // (the present key sharing 63 nibbles), which the claims reject.
    let mut claims = v.clone();
    claims["included"] = serde_json::Value::Bool(true);
    let proof = temp_file(&dir, "claims.json", claims.to_string().as_bytes());
    let bad = check(ACCOUNT_38129, ABSENT_KEY, &proof, &[]);
    assert_eq!(bad.code, Some(1));
    assert!(bad.stdout.contains("claims inclusion"), "{}", bad.stdout);
    // A bare array of the same nodes, checked for the present key next to
    // it, shows that key included: the path ends at its leaf.
    let bare = temp_file(&dir, "bare.json", v["nodes"].to_string().as_bytes());
    assert_eq!(
        ok(&check(ACCOUNT_38129, STATE_KEY, &bare, &[])),
        "included\n"
    );
}

#[test]
fn a_file_whose_entries_do_not_match_its_root_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut v = crate::support::ledger_38129_json();
    let data = crate::support::string_at(&mut v, "/ledger/accountState/7/data");
    let first = if data.starts_with('0') { "1" } else { "0" };
    data.replace_range(0..1, first);
    let path = temp_file(&dir, "changed.json", v.to_string().as_bytes());
    let line = assert_input_error(&prove(&path, STATE_KEY, &[]), &path.display().to_string());
    assert!(
        line.contains(&format!(
            "not the account_hash {ACCOUNT_38129} the file claims"
        )),
        "{line}"
    );
}

/// A state dump with one 5-byte leaf (rippled's minimum is 12 bytes; the
/// readers accept it, and so does hashing) beside a 20-byte one, under
/// different first nibbles, and no claimed root.
fn dump_with_a_short_leaf(dir: &tempfile::TempDir) -> std::path::PathBuf {
    let short = format!("1{}", "0".repeat(63));
    let long = format!("2{}", "0".repeat(63));
    let json = serde_json::json!({"ledger": {"ledger_index": 9, "accountState": [
        {"index": short, "data": "1100612200"},
        {"index": long, "data": "11006122000000002400000001250000000099AA"},
    ]}});
    temp_file(dir, "short.json", json.to_string().as_bytes())
}

/// `prove` refuses a key whose leaf (or, for a proof of absence, the leaf
/// its path ends at) is under 12 bytes: `check-proof` would reject any such
/// proof. Status 2, one line saying why; nothing on stdout.
#[test]
fn a_leaf_under_twelve_bytes_cannot_be_proven() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dump_with_a_short_leaf(&dir);
    let name = file.display().to_string();
    let short = format!("1{}", "0".repeat(63));
    let line = assert_input_error(&prove(&file, &short, &[]), &name);
    assert!(
        line.contains("5 bytes")
            && line.contains("minimum of 12")
            && line.contains("no valid proof"),
        "{line}"
    );
    // An absent key whose path ends at the short leaf.
    let near = format!("1{}1", "0".repeat(62));
    let line = assert_input_error(&prove(&file, &near, &["--absent-ok"]), &name);
    assert!(
        line.contains("5 bytes") && line.contains("no valid proof"),
        "{line}"
    );
    // The other key's proof is fine, and check-proof accepts it.
    let long = format!("2{}", "0".repeat(63));
    let run = prove(&file, &long, &[]);
    ok(&run);
    let root = json(&run)["root"].as_str().expect("root").to_owned();
    let proof = temp_file(&dir, "long.json", run.stdout.as_bytes());
    let checked = check(&root, &long, &proof, &[]);
    assert_eq!(
        (checked.code, checked.stdout.as_str()),
        (Some(0), "included\n")
    );
}

/// `prove --db DIR --root HASH KEY` gives the same proof JSON as `prove
/// FILE KEY`, by ledger hash and by account_hash; check-proof accepts it; an
/// absent key is status 1, an unknown root status 2.
#[test]
fn a_proof_from_a_store_is_the_files() {
    const LEDGER_38129: &str = "E6DB7365949BF9814D76BCC730B01818EB9136A89DB224F3F9F5AAE4569D758E";
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("db");
    let db_s = db.to_str().expect("path");
    let file = ledger_38129();
    let r = shamap(["import", file.to_str().expect("path"), "--db", db_s], None);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let from_file = prove(&file, STATE_KEY, &[]);
    assert_eq!(from_file.code, Some(0), "{}", from_file.stderr);
    for root in [LEDGER_38129, ACCOUNT_38129] {
        let r = shamap(
            ["prove", "--db", db_s, "--root", root, "--key", STATE_KEY],
            None,
        );
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        assert_eq!(r.stdout, from_file.stdout);
    }
    let proof = temp_file(&dir, "p.json", from_file.stdout.as_bytes());
    assert_eq!(check(ACCOUNT_38129, STATE_KEY, &proof, &[]).code, Some(0));
    let r = shamap(
        [
            "prove",
            "--db",
            db_s,
            "--root",
            LEDGER_38129,
            "--key",
            ABSENT_KEY,
        ],
        None,
    );
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(r.stderr.contains("is not in the state map"), "{}", r.stderr);
    let r = shamap(
        [
            "prove", "--db", db_s, "--root", STATE_KEY, "--key", STATE_KEY,
        ],
        None,
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
}
