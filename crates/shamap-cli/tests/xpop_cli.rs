//! `shamap xpop verify` on the real XPOPs and on tampered ones; `shamap xpop
//! make` from a real ledger dump and from a NuDB store, with a generated
//! validator list and validations in the collector's layout; short quorums
//! and absent transactions refused with no file left.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use shamap::xrpl::transaction_id;
use shamap_auth::validation::Validation;
use shamap_auth::{KeyPair, ValidatorList};

use crate::data_files::json_files;
use crate::support::{data, history_38129, nudb_in, one_error_line, shamap};

const XAHAU_VL_KEY: &str = "ED74D4036C6591A4BDF9C54CEFA39B996A5DCE5F86D11FDA1874481CE9D5A1CDC1";

fn real_xpops() -> Vec<PathBuf> {
    json_files(&data("xpop-xahaud"))
}

#[test]
fn verify_prints_one_line_per_file_and_the_worst_status() {
    let files = real_xpops();
    let mut args: Vec<String> = vec![
        "xpop".into(),
        "verify".into(),
        "--vl-key".into(),
        XAHAU_VL_KEY.into(),
    ];
    args.extend(files.iter().map(|p| p.display().to_string()));
    let r = shamap(&args, None);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        r.stdout
            .lines()
            .filter(|l| l.contains(": valid: ledger "))
            .count(),
        24,
        "{}",
        r.stdout
    );
    // JSON: the same, one object per line.
    args.push("--json".into());
    let r = shamap(&args, None);
    assert_eq!(r.code, Some(0));
    for line in r.stdout.lines() {
        let v: Value = serde_json::from_str(line).expect("a JSON line");
        assert_eq!(v["valid"], true);
        assert!(v["transaction_hash"]
            .as_str()
            .is_some_and(|s| s.len() == 64));
        assert!(v["result"].as_str().is_some_and(|s| s.starts_with("te")));
    }
    // One tampered, one unreadable: status 2 (the worst), the others still printed.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut x: Value =
        serde_json::from_slice(&std::fs::read(&files[0]).expect("read")).expect("json");
    x["ledger"]["close"] = json!(x["ledger"]["close"].as_u64().expect("n") + 1);
    let bad = dir.path().join("tampered.json");
    std::fs::write(&bad, x.to_string()).expect("write");
    let r = shamap(
        [
            "xpop",
            "verify",
            "--vl-key",
            XAHAU_VL_KEY,
            files[1].to_str().expect("utf-8"),
            bad.to_str().expect("utf-8"),
        ],
        None,
    );
    assert_eq!(r.code, Some(1), "{}", r.stdout);
    assert!(
        r.stdout.contains("tampered.json: invalid: "),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains(": valid: "), "{}", r.stdout);
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "not json").expect("write");
    let r = shamap(
        [
            "xpop",
            "verify",
            "--vl-key",
            XAHAU_VL_KEY,
            bad.to_str().expect("utf-8"),
            junk.to_str().expect("utf-8"),
        ],
        None,
    );
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("junk.json: not JSON"), "{}", r.stderr);
    // A key that is not a key.
    let r = shamap(
        [
            "xpop",
            "verify",
            "--vl-key",
            "nope",
            files[0].to_str().expect("utf-8"),
        ],
        None,
    );
    assert!(one_error_line(&r, 2).contains("--vl-key"), "{}", r.stderr);
}

/// [`collector_dir`]'s files written into `out` itself; returns the
/// publisher key in hex.
pub fn collector(
    _dir: &Path,
    out: &Path,
    n: usize,
    voting: usize,
    hash: &shamap::Hash256,
    seq: u32,
) -> String {
    let (publisher, made) = collector_dir(out, n, voting, hash, seq);
    for e in std::fs::read_dir(&made).expect("made") {
        let p = e.expect("entry").path();
        std::fs::rename(&p, out.join(p.file_name().expect("name"))).expect("move");
    }
    std::fs::remove_dir(&made).expect("empty");
    publisher.public().to_hex()
}

/// A generated network: the list (`vl.json`) and every validator's
/// validation of `(hash, seq)` as stream messages, in the collector's layout.
fn collector_dir(
    dir: &Path,
    n: usize,
    voting: usize,
    hash: &shamap::Hash256,
    seq: u32,
) -> (KeyPair, PathBuf) {
    let publisher = KeyPair::ed25519([0x51; 32]);
    let signing = KeyPair::secp256k1([0x52; 32]).expect("key");
    let validators: Vec<(KeyPair, KeyPair)> = (0..n)
        .map(|i| {
            let mut a = [0x60; 32];
            a[1] = i as u8;
            let mut b = [0x70; 32];
            b[1] = i as u8;
            let master = if i % 2 == 0 {
                KeyPair::ed25519(a)
            } else {
                KeyPair::secp256k1(a).expect("key")
            };
            (master, KeyPair::secp256k1(b).expect("key"))
        })
        .collect();
    let out = dir.join("collected");
    std::fs::create_dir_all(&out).expect("mkdir");
    let vl = ValidatorList::make(&publisher, &signing, &validators, 1, 4_000_000_000);
    std::fs::write(out.join("vl.json"), vl.to_string()).expect("write");
    for (_, s) in validators.iter().take(voting) {
        let raw = Validation::make(s, hash, seq, 700_000_000);
        let msg = json!({
            "type": "validationReceived",
            "validation_public_key": s.public().to_base58(),
            "ledger_hash": hash.to_hex(),
            "ledger_index": seq.to_string(),
            "data": const_hex::encode_upper(raw),
        });
        std::fs::write(
            out.join(format!("validation_{}.json", s.public().to_base58())),
            msg.to_string(),
        )
        .expect("write");
    }
    (publisher, out)
}

fn ledger_of(file: &Path) -> (shamap::xrpl::LedgerHeader, Vec<Vec<u8>>) {
    let d = shamap_ledger::parse(&std::fs::read(file).expect("read")).expect("parse");
    let txs = d
        .transactions
        .expect("txs")
        .into_iter()
        .map(|t| t.tx)
        .collect();
    (d.header.complete_header().expect("header"), txs)
}

/// The real dump of ledger 90150378 with `voting` of 10 validators'
/// validations of its ledger collected under `dir`: the dump's path, its
/// header and transactions, the list publisher's key (hex) and the
/// validations' directory.
fn real_dump_collected(
    dir: &Path,
    voting: usize,
) -> (
    PathBuf,
    shamap::xrpl::LedgerHeader,
    Vec<Vec<u8>>,
    String,
    PathBuf,
) {
    let dump = data("ledger-full-90150378.json");
    let (header, txs) = ledger_of(&dump);
    let (publisher, collected) = collector_dir(dir, 10, voting, &header.hash(), header.seq);
    (dump, header, txs, publisher.public().to_hex(), collected)
}

#[test]
fn make_from_a_real_dump_in_both_forms_then_verify() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (dump, header, txs, key, collected) = real_dump_collected(dir.path(), 8);
    let tx = transaction_id(&txs[3]).to_hex();
    for form in ["tree", "list"] {
        let out = dir.path().join(format!("{form}.json"));
        let source = [dump.to_str().expect("utf-8"), "--form", form];
        make_ok(&source, &tx, &collected, &key, &out);
        let v = shamap(
            [
                "xpop",
                "verify",
                "--vl-key",
                &key,
                "--json",
                out.to_str().expect("utf-8"),
            ],
            None,
        );
        assert_eq!(v.code, Some(0), "{}", v.stdout);
        let j: Value = serde_json::from_str(v.stdout.trim()).expect("json");
        assert_eq!(j["transaction_hash"], tx.as_str());
        assert_eq!(j["ledger_index"], header.seq);
        assert_eq!(j["proof_form"], form);
        assert_eq!(j["votes"], 8);
    }
}

#[test]
fn make_refuses_short_quorums_and_absent_transactions_leaving_no_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (dump, _, txs, key, collected) = real_dump_collected(dir.path(), 7);
    let out = dir.path().join("x.json");
    let tx = transaction_id(&txs[0]).to_hex();
    let base = |tx: &str| -> Vec<String> {
        [
            "xpop",
            "make",
            dump.to_str().expect("utf-8"),
            "--tx",
            tx,
            "--validations",
            collected.to_str().expect("utf-8"),
            "--vl-key",
            &key,
            "--out",
            out.to_str().expect("utf-8"),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let r = shamap(base(&tx), None);
    assert!(one_error_line(&r, 1).contains("no quorum"), "{}", r.stderr);
    assert!(!out.exists());
    let r = shamap(base(&"AB".repeat(32)), None);
    assert!(
        one_error_line(&r, 1).contains("is not in ledger"),
        "{}",
        r.stderr
    );
    assert!(!out.exists());
    assert!(std::fs::read_dir(dir.path()).expect("dir").all(|e| !e
        .expect("e")
        .file_name()
        .to_string_lossy()
        .contains("tmp")));
}

/// Runs `shamap xpop make SOURCE... --tx TX --validations DIR --vl-key KEY
/// --out OUT` and asserts that it wrote the file.
pub(crate) fn make_ok(source: &[&str], tx: &str, validations: &Path, key: &str, out: &Path) {
    let mut args = vec!["xpop", "make"];
    args.extend_from_slice(source);
    let (v, o) = (
        validations.to_str().expect("utf-8"),
        out.to_str().expect("utf-8"),
    );
    args.extend_from_slice(&["--tx", tx, "--validations", v, "--vl-key", key, "--out", o]);
    let r = shamap(&args, None);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}

#[test]
fn make_from_a_nudb_store_equals_make_from_its_export() {
    let ls = history_38129(3, 11);
    let dir = tempfile::tempdir().expect("tempdir");
    let db = nudb_in(dir.path(), &ls);
    let last = ls.last().expect("one");
    let seq = last.header.seq;
    let (publisher, collected) = collector_dir(dir.path(), 5, 4, &last.hash(), seq);
    let key = publisher.public().to_hex();
    let (_, data) = last.tx.iter().next().expect("the ledger has a transaction");
    let (blob, _) = shamap::xrpl::tx::split_tx_with_meta(data).expect("leaf");
    let tx = transaction_id(blob).to_hex();
    let from_store = dir.path().join("store.json");
    let (db_s, root) = (db.to_str().expect("utf-8"), last.hash().to_hex());
    make_ok(
        &["--db", db_s, "--root", &root],
        &tx,
        &collected,
        &key,
        &from_store,
    );
    let export = dir.path().join("export.json");
    let out = export.to_str().expect("utf-8");
    let r = shamap(
        ["export", "--db", db_s, "--root", &root, "--out", out],
        None,
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let from_dump = dir.path().join("dump.json");
    make_ok(&[out], &tx, &collected, &key, &from_dump);
    assert_eq!(
        std::fs::read(&from_store).expect("read"),
        std::fs::read(&from_dump).expect("read")
    );
    let v = shamap(
        [
            "xpop",
            "verify",
            "--vl-key",
            &key,
            from_store.to_str().expect("utf-8"),
        ],
        None,
    );
    assert_eq!(v.code, Some(0), "{}", v.stdout);
    assert!(
        v.stdout.contains(&format!("valid: ledger {seq} ")),
        "{}",
        v.stdout
    );
}
