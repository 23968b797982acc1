//! `shamap export`: a stored ledger written as rippled's binary `ledger`
//! response. Every ledger of `data/` that has state, and generated
//! histories, go through import → export → verify, and the export holds
//! exactly the entries of the input; damaged stores stop it with one line
//! and leave no file.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shamap::xrpl::tx::transaction_id;
use shamap::Hash256;
use shamap_ledger::dump::{self, LedgerDump};
use shamap_store::{LogStore, Node, NodeObject, NodeStore, NodeStoreExt as _};

use crate::support::{
    assert_contains, assert_ends_with, assert_starts_with, data, import, ledger_38129, ok,
    one_error_line, shamap, Run, LEDGER_38129,
};

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A ledger's contents as sets: state `(key, data)` and transactions
/// `(tx, meta)`, in hex.
type Contents = (BTreeSet<(String, String)>, BTreeSet<(String, String)>);

fn contents(d: &LedgerDump) -> Contents {
    let hex = shamap::hash::encode_hex_upper;
    let state = d
        .state
        .iter()
        .flatten()
        .map(|e| (e.key.to_hex(), hex(&e.data)))
        .collect();
    let txs = d
        .transactions
        .iter()
        .flatten()
        .map(|t| (hex(&t.tx), hex(&t.meta)))
        .collect();
    (state, txs)
}

fn parse(path: &Path) -> LedgerDump {
    dump::parse(&std::fs::read(path).expect("readable")).expect("parses")
}

/// The `ledger_hash <HEX> stored` of an import report.
fn stored_ledger_hash(report: &str) -> String {
    report
        .lines()
        .find_map(|l| l.strip_prefix("ledger_hash ")?.strip_suffix(" stored"))
        .unwrap_or_else(|| panic!("no ledger hash stored: {report}"))
        .to_owned()
}

/// `shamap export --db DB ARGS…`.
fn export(db: &Path, args: &[&str]) -> Run {
    let mut all = vec!["export", "--db", s(db)];
    all.extend_from_slice(args);
    shamap(all, None)
}

/// `export` of `hash` from `db` into `out`, which must succeed.
fn export_to(db: &Path, hash: &str, out: &Path) {
    let r = export(db, &["--root", hash, "--out", s(out)]);
    assert_eq!(ok(&r), "", "export with --out prints nothing");
}

/// `verify FILE` reports the three hashes matching.
fn assert_verifies(file: &Path) {
    let r = shamap(["verify", s(file)], None);
    let out = ok(&r);
    for what in ["account_hash", "transaction_hash", "ledger_hash"] {
        assert!(
            out.lines()
                .any(|l| l.trim_start().starts_with(what) && l.contains("match")),
            "{what} does not match in {file:?}: {out}"
        );
    }
    assert_eq!(out.matches("match").count(), 3, "{out}");
}

/// The files of `data/` whose ledger has state entries and a full header.
fn ledgers_with_state() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(data(""))
        .expect("data/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .filter(|p| {
            let d = parse(p);
            d.state.as_ref().is_some_and(|s| !s.is_empty())
        })
        .collect();
    files.sort();
    files
}

#[test]
fn every_ledger_with_state_round_trips_through_a_node_log() {
    let files = ledgers_with_state();
    assert!(files.len() >= 3, "{files:?}");
    for file in files {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("db");
        let hash = stored_ledger_hash(&import(&[&file], &db));
        let out = dir.path().join("export.json");
        export_to(&db, &hash, &out);
        assert_verifies(&out);
        let (input, exported) = (parse(&file), parse(&out));
        assert_eq!(contents(&exported), contents(&input), "{file:?}");
        assert_eq!(
            exported.header.ledger_hash.map(|h| h.to_hex()),
            Some(hash.clone())
        );
        // The export imports again as the same ledger.
        let db2 = dir.path().join("db2");
        assert_eq!(stored_ledger_hash(&import(&[&out], &db2)), hash);
    }
}

#[test]
fn the_response_has_rippleds_binary_shape() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    import(&[ledger_38129()], &db);
    let r = export(&db, &["--root", LEDGER_38129]);
    let text = ok(&r);
    assert_starts_with(
        text,
        "{\"result\":{\"ledger\":{\"accountState\":[\n{\"hash\":\"",
    );
    assert_contains(text, "\n],\"closed\":true,\"ledger_data\":\"000094F1");
    assert_ends_with(
        text,
        &format!("\n]}},\"ledger_hash\":\"{LEDGER_38129}\",\"ledger_index\":38129,\"status\":\"success\",\"validated\":false}}}}\n"),
    );
    let v: serde_json::Value = serde_json::from_str(text).expect("JSON");
    let ledger = &v["result"]["ledger"];
    let mut keys: Vec<&str> = ledger
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["accountState", "closed", "ledger_data", "transactions"]
    );
    let state = ledger["accountState"].as_array().expect("array");
    assert_eq!(state.len(), 261);
    // In key order, each `hash` and `tx_blob`, upper-case hex.
    let indexes: Vec<&str> = state
        .iter()
        .map(|e| e["hash"].as_str().expect("hash"))
        .collect();
    let mut sorted = indexes.clone();
    sorted.sort_unstable();
    assert_eq!(indexes, sorted);
    for e in state {
        let o = e.as_object().expect("entry");
        assert_eq!(o.len(), 2, "{e}");
        let blob = o["tx_blob"].as_str().expect("tx_blob");
        assert!(!blob.bytes().any(|b| b.is_ascii_lowercase()), "{blob}");
    }
    let txs = ledger["transactions"].as_array().expect("array");
    assert_eq!(txs.len(), 1);
    let t = txs[0].as_object().expect("tx");
    let mut tkeys: Vec<&str> = t.keys().map(String::as_str).collect();
    tkeys.sort_unstable();
    assert_eq!(tkeys, ["meta", "tx_blob"]);
    assert_eq!(
        ledger["ledger_data"].as_str().map(str::len),
        Some(236),
        "118 bytes"
    );

    // API v2: each transaction carries its ID as `hash`, its metadata as
    // `meta_blob`.
    let r = export(&db, &["--root", LEDGER_38129, "--api-version", "2"]);
    let v: serde_json::Value = serde_json::from_str(ok(&r)).expect("JSON");
    let t = &v["result"]["ledger"]["transactions"][0];
    let blob = shamap::hash::decode_hex(t["tx_blob"].as_str().expect("blob")).expect("hex");
    assert_eq!(
        t["hash"].as_str(),
        Some(transaction_id(&blob).to_hex().as_str())
    );
    assert!(t["meta_blob"].is_string() && t.get("meta").is_none(), "{t}");
    let out = dir.path().join("v2.json");
    std::fs::write(&out, ok(&r)).expect("write");
    assert_verifies(&out);
}

#[test]
fn a_ledger_is_found_by_its_sequence() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    import(&[ledger_38129()], &db);
    let by_hash = export(&db, &["--root", LEDGER_38129]);
    let by_seq = export(&db, &["--ledger", "38129"]);
    assert_eq!(ok(&by_seq), ok(&by_hash));
    let r = export(&db, &["--ledger", "38130"]);
    let line = one_error_line(&r, 2);
    assert_contains(
        &line,
        "no ledger with sequence 38130 in the retained ledgers (1 ledgers, sequences 38129 to 38129)",
    );
    assert!(r.stdout.is_empty());
}

/// `len` random bytes.
fn bytes(rng: &mut SmallRng, len: usize) -> Vec<u8> {
    let mut b = vec![0; len];
    rng.fill(&mut b[..]);
    b
}

fn seed() -> u64 {
    std::env::var("SHAMAP_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        })
}

/// A binary `ledger` response with header fields (no roots: `import`
/// computes them), `state` and `txs`.
fn ledger_json(
    seq: u32,
    parent: &str,
    state: &std::collections::BTreeMap<[u8; 32], Vec<u8>>,
    txs: &[(Vec<u8>, Vec<u8>)],
) -> String {
    let hex = shamap::hash::encode_hex_upper;
    let state: Vec<String> = state
        .iter()
        .map(|(k, d)| format!("{{\"hash\":\"{}\",\"tx_blob\":\"{}\"}}", hex(k), hex(d)))
        .collect();
    let txs: Vec<String> = txs
        .iter()
        .map(|(t, m)| format!("{{\"tx_blob\":\"{}\",\"meta\":\"{}\"}}", hex(t), hex(m)))
        .collect();
    format!(
        "{{\"ledger\":{{\"ledger_index\":\"{seq}\",\"total_coins\":\"99999999999999999\",\"parent_hash\":\"{parent}\",\
         \"parent_close_time\":{},\"close_time\":{},\"close_time_resolution\":10,\"close_flags\":0,\
         \"accountState\":[{}],\"transactions\":[{}]}}}}",
        seq * 10,
        seq * 10 + 10,
        state.join(","),
        txs.join(",")
    )
}

#[test]
fn generated_histories_round_trip() {
    let seed = seed();
    let mut rng = SmallRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let mut state = std::collections::BTreeMap::new();
    let mut parent = "0".repeat(64);
    let mut ledgers = Vec::new();
    for seq in 100..100 + 4 {
        // Ledgers share most of their state: a few changes each.
        for _ in 0..rng.gen_range(1..=300) {
            let len = rng.gen_range(12..112);
            state.insert(rng.gen::<[u8; 32]>(), bytes(&mut rng, len));
        }
        for _ in 0..rng.gen_range(0..20) {
            if state.is_empty() {
                break;
            }
            let i = rng.gen_range(0..state.len());
            if let Some(k) = state.keys().nth(i).copied() {
                state.remove(&k);
            }
        }
        // Some ledgers have no transactions (a zero transaction_hash).
        let txs: Vec<(Vec<u8>, Vec<u8>)> = (0..rng.gen_range(0..3) * rng.gen_range(0..30))
            .map(|_| {
                let (t, m) = (rng.gen_range(20..320), rng.gen_range(10..910));
                (bytes(&mut rng, t), bytes(&mut rng, m))
            })
            .collect();
        let file = dir.path().join(format!("ledger-{seq}.json"));
        std::fs::write(&file, ledger_json(seq, &parent, &state, &txs)).expect("write");
        parent = stored_ledger_hash(&import(&[&file], &db));
        ledgers.push((seq, file, parent.clone()));
    }
    for (seq, file, hash) in &ledgers {
        let out = dir.path().join(format!("export-{seq}.json"));
        let r = export(&db, &["--ledger", &seq.to_string(), "--out", s(&out)]);
        ok(&r);
        assert_verifies(&out);
        let exported = parse(&out);
        assert_eq!(
            contents(&exported),
            contents(&parse(file)),
            "seed {seed}, ledger {seq}"
        );
        assert_eq!(
            exported.header.ledger_hash.map(|h| h.to_hex()).as_ref(),
            Some(hash),
            "seed {seed}"
        );
    }
}

/// The hash of a state leaf of the store in `db` near the middle of the
/// key order, and the number of state leaves before it.
fn a_middle_state_leaf(db: &Path) -> (Hash256, usize) {
    let store = LogStore::open(db).expect("open");
    let mut leaves = Vec::new();
    store
        .for_each_value(&mut |h, v| {
            let obj = NodeObject::decode(h, v.to_vec()).expect("decodes");
            if let Ok(Node::Leaf {
                kind: shamap::MapKind::AccountState,
                key,
                ..
            }) = obj.parse()
            {
                leaves.push((key, h));
            }
            std::ops::ControlFlow::Continue(())
        })
        .expect("iterate");
    leaves.sort();
    let i = leaves.len() / 2;
    (leaves[i].1, i)
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_node_missing_mid_walk_stops_the_export_and_leaves_no_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    import(&[ledger_38129()], &db);
    let (leaf, before) = a_middle_state_leaf(&db);
    assert!(before > 10);
    {
        let store = LogStore::open(&db).expect("open to write");
        store.delete(&[leaf]).expect("delete");
    }
    let outdir = dir.path().join("out");
    std::fs::create_dir(&outdir).expect("mkdir");
    let out = outdir.join("ledger.json");
    std::fs::write(&out, "old").expect("an older file");
    let r = export(&db, &["--root", LEDGER_38129, "--out", s(&out)]);
    let line = one_error_line(&r, 2);
    assert_contains(&line, &format!("node {leaf} at nibble path"));
    assert_contains(&line, "missing from the store");
    assert!(r.stdout.is_empty());
    // The older file is left as it was; no temporary file stays.
    assert_eq!(std::fs::read_to_string(&out).expect("kept"), "old");
    assert_eq!(names(&outdir), ["ledger.json"]);
    // To standard output: what came before the damage, then the error.
    let r = export(&db, &["--root", LEDGER_38129]);
    one_error_line(&r, 2);
    assert_eq!(r.stdout.matches("\"tx_blob\"").count(), before);
}

#[test]
fn hashes_that_name_no_ledger_are_one_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    import(&[ledger_38129()], &db);
    let out = dir.path().join("x.json");
    let unknown = "AB".repeat(32);
    let account = "2C23D15B6B549123FB351E4B5CDE81C564318EB845449CD43C3EA7953C4DB452";
    for (root, says) in [
        (
            unknown.as_str(),
            format!("nothing is stored under {unknown}"),
        ),
        (
            account,
            format!("{account} is the root of a state map, not a ledger hash"),
        ),
        ("XYZ", "root 'XYZ'".to_owned()),
    ] {
        let r = export(&db, &["--root", root, "--out", s(&out)]);
        assert_contains(&one_error_line(&r, 2), &says);
        assert!(!out.exists());
    }
    assert_eq!(names(dir.path()), ["db"]);
    // A store that is not there.
    let r = export(&dir.path().join("none"), &["--ledger", "1"]);
    one_error_line(&r, 2);
}
