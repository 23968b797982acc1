//! Helpers: seeds, the shipped ledgers, and running the Python reader.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use shamap_nudb_writer::Written;

/// The seed of a randomized test: `SHAMAP_SEED` when set, else random.
pub fn seed() -> u64 {
    std::env::var("SHAMAP_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random)
}

/// A file of the repository's `data/`.
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data")
        .join(name)
}

/// The shipped ledger dumps with state (`data/ledger-*.json`).
pub fn shipped_ledgers() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(data(""))
        .expect("data/")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("ledger-") && n.ends_with(".json"))
        })
        .collect();
    v.sort();
    v
}

fn reader() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/nudb_read.py")
}

/// Runs the Python reader on `dir`: its exit status, stdout and stderr.
pub fn python(args: &[&str]) -> (bool, String, String) {
    let out = Command::new("python3")
        .arg(reader())
        .args(args)
        .output()
        .expect("python3 runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The Python reader's report on `dir`; panics when it fails.
pub fn python_report(dir: &Path) -> Value {
    let (ok, out, err) = python(&[dir.to_str().expect("utf-8 path")]);
    assert!(ok, "nudb_read.py {} failed: {err}", dir.display());
    serde_json::from_str(&out).expect("the reader prints JSON")
}

/// The Python reader's failure message on `dir`; panics when it succeeds.
pub fn python_refuses(dir: &Path) -> String {
    let (ok, _, err) = python(&[dir.to_str().expect("utf-8 path")]);
    assert!(
        !ok,
        "nudb_read.py {} accepted a damaged store",
        dir.display()
    );
    err
}

/// Checks the Python reader's report against what was written: the same
/// records at the same offsets with the same codec types, the same spill
/// records and buckets, every value hashing to its key, every key found
/// through its bucket at its record, as many bucket entries as records.
pub fn agrees(w: &Written, report: &Value) {
    let ctx = w.dir.display();
    assert_eq!(report["problems"], Value::Array(vec![]), "{ctx}");
    assert_eq!(report["buckets"].as_u64(), Some(w.buckets), "{ctx}");
    let recs = report["records"].as_array().expect("records");
    assert_eq!(recs.len(), w.records.len(), "{ctx}: record count");
    for (r, p) in w.records.iter().zip(recs) {
        let key = const_hex(&r.key);
        assert_eq!(p["key"].as_str(), Some(key.as_str()), "{ctx}");
        assert_eq!(p["offset"].as_u64(), Some(r.offset), "{ctx}: {key}");
        assert_eq!(p["size"].as_u64(), Some(r.size), "{ctx}: {key}");
        if let Some(t) = r.codec {
            assert_eq!(p["codec"].as_u64(), Some(t as u64), "{ctx}: {key}");
        }
        assert_eq!(p["hash_ok"], Value::Bool(true), "{ctx}: {key}: {p}");
        assert_eq!(p["value_ok"], Value::Bool(true), "{ctx}: {key}: {p}");
        assert_eq!(p["found_at"].as_u64(), Some(r.offset), "{ctx}: {key}");
    }
    let spills: Vec<u64> = report["spills"]
        .as_array()
        .expect("spills")
        .iter()
        .filter_map(Value::as_u64)
        .collect();
    assert_eq!(spills, w.spills, "{ctx}: spill records");
    assert_eq!(
        report["bucket_entries"].as_u64(),
        Some(w.records.len() as u64),
        "{ctx}: bucket entries"
    );
    let dat = std::fs::metadata(w.path("nudb.dat"))
        .expect("nudb.dat")
        .len();
    let key = std::fs::metadata(w.path("nudb.key"))
        .expect("nudb.key")
        .len();
    assert_eq!((dat, key), (w.dat_len, w.key_len), "{ctx}: file sizes");
    assert_eq!(
        key,
        (w.buckets + 1) * u64::from(w.headers.block_size),
        "{ctx}"
    );
}

/// Upper-case hex.
pub fn const_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

/// The record of `key` in a Python report.
pub fn record<'a>(report: &'a Value, key: &[u8]) -> &'a Value {
    let hex = const_hex(key);
    report["records"]
        .as_array()
        .expect("records")
        .iter()
        .find(|r| r["key"].as_str() == Some(hex.as_str()))
        .unwrap_or_else(|| panic!("no record {hex}"))
}
