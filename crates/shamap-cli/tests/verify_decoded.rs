//! Decoded-JSON ledgers (a `ledger` response without `"binary": true`):
//! the xrpl.js fixture `ledger-full-38129.json` verifies with the known
//! hashes, a changed value is a mismatch (status 1), a field the XRPL
//! definitions do not know, a value rippled does not accept or a repeated
//! key is one error line naming the file, the entry and the field (status
//! 2), and every command that reads dumps reads them.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{
    assert_contains, assert_input_error, data, import, json_input_error, ledger_38129,
    ledger_38129_json, shamap, temp_json, verify_file, verify_input_error, ACCOUNT_38129,
    LEDGER_38129, TX_38129,
};

const TX_ID: &str = "3B1A4E1C9BB6A7208EB146BCDB86ECEA6068ED01466D933528CA2B4C64F753EF";

fn decoded_38129() -> PathBuf {
    data("ledger-full-38129.json")
}

/// The decoded fixture as a JSON value, to be altered by a test.
fn decoded_json() -> Value {
    let bytes = std::fs::read(decoded_38129()).expect("data file is readable");
    serde_json::from_slice(&bytes).expect("data file is JSON")
}

/// The `index` of state entry `i` of the fixture.
fn index(v: &Value, i: usize) -> String {
    v["accountState"][i]["index"]
        .as_str()
        .expect("index")
        .to_owned()
}

#[test]
fn decoded_fixture_verifies_with_the_known_hashes() {
    let run = verify_file(&decoded_38129());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    let file = decoded_38129().display().to_string();
    assert_eq!(
        run.stdout,
        format!(
            "ledger 38129 from {file} (261 state entries, 1 transaction)\n\
             account_hash {ACCOUNT_38129} match\n\
             transaction_hash {TX_38129} match\n\
             ledger_hash {LEDGER_38129} match\n"
        )
    );
}

#[test]
fn a_changed_balance_is_a_mismatch() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut v = decoded_json();
    assert_eq!(v["accountState"][0]["Balance"], "370000000");
    v["accountState"][0]["Balance"] = "370000001".into();
    let run = verify_file(&temp_json(&dir, "balance.json", &v));
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines[1].starts_with("account_hash ")
            && lines[1].ends_with(&format!(" MISMATCH expected {ACCOUNT_38129}")),
        "{}",
        lines[1]
    );
    assert_eq!(lines[2], format!("transaction_hash {TX_38129} match"));
    assert!(
        lines[3].ends_with(&format!(" MISMATCH expected {LEDGER_38129}")),
        "{}",
        lines[3]
    );
}

#[test]
fn an_unknown_field_is_an_input_error_naming_file_entry_and_field() {
    let dir = tempfile::tempdir().expect("temp dir");
    let not_a_field = "is not a serialized field in the XRPL codec's definitions \
                       (xrpl-rust 1.3.0), so it would be left out of the hash";

    let mut v = decoded_json();
    v["accountState"][3]["Balanse"] = "1".into();
    assert_eq!(
        json_input_error(&dir, "unknown.json", &v),
        format!(
            "accountState entry 3: index {}: field \"Balanse\" {not_a_field}",
            index(&v, 3)
        )
    );

    // Nested in the transaction's metadata.
    let mut v = decoded_json();
    v["transactions"][0]["metaData"]["AffectedNodes"][1]["ModifiedNode"]["FinalFields"]["Bogus"] =
        "1".into();
    let line = json_input_error(&dir, "unknown-meta.json", &v);
    assert!(
        line.ends_with(&format!(
            "transactions entry 0: transaction {TX_ID}: field \
             \"metaData.AffectedNodes[1].ModifiedNode.FinalFields.Bogus\" {not_a_field}"
        )),
        "{line}"
    );
}

#[test]
fn a_bad_value_is_an_input_error_naming_entry_and_field() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (i, field, bad, why) in [
        (0, "Account", "0xNOTHEX", "is not a classic address"),
        (
            1,
            "Balance",
            "100000000000000001",
            "is more than 100000000000000000, rippled's largest amount of XRP drops",
        ),
        (2, "RootIndex", "XYZ", "is not 64 hex digits"),
    ] {
        let mut v = decoded_json();
        v["accountState"][i][field] = bad.into();
        let expected = format!(
            "accountState entry {i}: index {}: field \"{field}\" has a value \
             rippled does not accept (\"{bad}\"): {why}",
            index(&v, i)
        );
        assert_eq!(
            json_input_error(&dir, &format!("bad-{field}.json"), &v),
            expected
        );
    }
}

/// Values outside rippled's range of issued amounts, and currency codes
/// rippled does not read, name the entry and field; the edges of the
/// range and rippled's other ISO characters are read (and, changed from
/// the ledger's values, are mismatches: status 1, not 2).
#[test]
fn issued_amounts_are_read_over_rippleds_range_and_refused_outside_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let v = decoded_json();
    let i = v["accountState"]
        .as_array()
        .expect("state")
        .iter()
        .position(|e| e["LedgerEntryType"] == "RippleState")
        .expect("a RippleState in 38129");
    let limit = |value: &str, currency: &str| {
        let mut v = decoded_json();
        v["accountState"][i]["HighLimit"]["value"] = value.into();
        v["accountState"][i]["HighLimit"]["currency"] = currency.into();
        v
    };
    let cur = v["accountState"][i]["HighLimit"]["currency"]
        .as_str()
        .expect("currency")
        .to_owned();
    for (value, currency) in [
        ("9999999999999999e80", cur.as_str()),
        ("-1000000000000000e-96", cur.as_str()),
        ("0.00000000000001234567890123456", cur.as_str()),
        ("1", "*G*"),
    ] {
        let path = temp_json(&dir, "in-range.json", &limit(value, currency));
        let run = verify_file(&path);
        assert_eq!(run.code, Some(1), "{value} {currency}: {}", run.stderr);
        assert!(run.stdout.contains("account_hash "), "{}", run.stdout);
    }
    for (value, currency, why) in [
        (
            "1e97",
            cur.as_str(),
            "is outside rippled's range for an issued amount (a 16-digit mantissa with an \
             exponent of -96 to 80)",
        ),
        (
            "12345678901234567",
            cur.as_str(),
            "has more than 16 significant digits, more than an issued amount holds",
        ),
    ] {
        let line = json_input_error(&dir, "out-of-range.json", &limit(value, currency));
        assert!(
            line.ends_with(&format!(
                "field \"HighLimit.value\" has a value rippled does not accept (\"{value}\"): {why}"
            )),
            "{line}"
        );
    }
    let line = json_input_error(&dir, "currency.json", &limit("1", "U.D"));
    assert_contains(
        &line,
        "field \"HighLimit.currency\" has a value rippled does not accept (\"U.D\")",
    );
}

/// A memo of 10 MB of text is refused in one line, quickly; one of 200 KB
/// is encoded (its transaction then no longer has the ledger's hash).
#[test]
fn long_memos_are_read_in_linear_time() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (bytes, expected) in [
        (
            200 * 1024,
            "\"hash\" is not the ID of the transaction as encoded",
        ),
        (
            5 * 1024 * 1024,
            "field \"Memos[0].Memo.MemoData\" is 5242880 bytes long, more than the 918744 \
             a serialized field can hold",
        ),
    ] {
        let mut v = decoded_json();
        v["transactions"][0]["Memos"] =
            serde_json::json!([{"Memo": {"MemoData": "AB".repeat(bytes)}}]);
        let path = temp_json(&dir, "memo.json", &v);
        let start = std::time::Instant::now();
        let run = verify_file(&path);
        let took = start.elapsed();
        let line = assert_input_error(&run, &path.display().to_string());
        assert!(line.contains(expected), "{line}");
        // A debug build on a shared machine: far above the ~1.7 s measured.
        assert!(took.as_secs() < 20, "{bytes} bytes took {took:?}");
    }
}

/// A key repeated in one object is refused, naming the file, the entry and
/// the key, wherever the object is.
#[test]
fn a_duplicate_key_is_an_input_error_naming_file_entry_and_key() {
    let dir = tempfile::tempdir().expect("temp dir");
    let text = std::fs::read_to_string(decoded_38129()).expect("data file is readable");
    let v = decoded_json();
    // The first state entry's first key, repeated with another value.
    let first_state = text.find("\"accountState\"").expect("accountState");
    let at = first_state + text[first_state..].find('{').expect("an entry") + 1;
    let doubled = format!("{}\"Flags\": 1, {}", &text[..at], &text[at..]);
    let path = dir.path().join("dup.json");
    std::fs::write(&path, doubled).expect("temp file is writable");
    let line = verify_input_error(&path);
    assert_eq!(
        line,
        format!(
            "error: {}: accountState entry 0: duplicate key \"Flags\" in the object at \
             accountState[0]: each key of a JSON object must appear once",
            path.display()
        )
    );
    assert!(v["accountState"][0].get("Flags").is_some());
    // Deep in a transaction's metadata.
    let meta = text.find("\"FinalFields\"").expect("FinalFields");
    let at = meta + text[meta..].find('{').expect("an object") + 1;
    let doubled = format!("{}\"Flags\": 0, \"Flags\": 0, {}", &text[..at], &text[at..]);
    std::fs::write(&path, doubled).expect("temp file is writable");
    let line = verify_input_error(&path);
    assert_contains(&line, ": transactions entry 0: duplicate key \"Flags\" in the object at transactions[0].metaData.AffectedNodes[");
}

#[test]
fn a_wrong_transaction_hash_is_an_input_error_naming_the_transaction() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut v = decoded_json();
    let wrong = "AB".repeat(32);
    v["transactions"][0]["hash"] = wrong.clone().into();
    assert_eq!(
        json_input_error(&dir, "hash.json", &v),
        format!(
            "transactions entry 0: transaction {wrong}: \"hash\" is not the ID of \
             the transaction as encoded, which is {TX_ID}"
        )
    );
}

/// State entries alternately binary (from `ledger-38129.json`) and decoded,
/// the transaction binary: the same ledger.
#[test]
fn a_file_mixing_binary_and_decoded_entries_verifies() {
    let dir = tempfile::tempdir().expect("temp dir");
    let binary = ledger_38129_json();
    let mut v = decoded_json();
    let by_index = |i: &str| -> Value {
        binary["ledger"]["accountState"]
            .as_array()
            .expect("state")
            .iter()
            .find(|e| e["index"] == i)
            .cloned()
            .expect("the same key in the binary dump")
    };
    for i in (0..261).step_by(2) {
        let key = index(&v, i);
        v["accountState"][i] = by_index(&key);
    }
    v["transactions"][0] = binary["ledger"]["transactions"][0].clone();
    let run = verify_file(&temp_json(&dir, "mixed.json", &v));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_contains(&run.stdout, &format!("ledger_hash {LEDGER_38129} match"));
}

/// `stats`, `prove`, `diff` and `import` read decoded JSON as `verify` does:
/// the same answers as on the binary dump of the same ledger.
#[test]
fn every_command_reads_decoded_json() {
    let (dec, bin) = (decoded_38129(), ledger_38129());
    let run = shamap([OsStr::new("diff"), bin.as_os_str(), dec.as_os_str()], None);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "0 differences: 0 added, 0 removed, 0 modified\n"
    );

    let key = index(&decoded_json(), 7);
    let proof = |f: &Path| {
        let run = shamap([OsStr::new("prove"), f.as_os_str(), OsStr::new(&key)], None);
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        run.stdout
    };
    assert_eq!(proof(&dec), proof(&bin));

    let stats = |f: &Path| {
        let run = shamap(
            [
                OsStr::new("stats"),
                f.as_os_str(),
                OsStr::new("--json"),
                OsStr::new("--no-timing"),
            ],
            None,
        );
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        let mut v: Value = serde_json::from_str(&run.stdout).expect("stats JSON");
        // The input's name and the build time are what differ, and the
        // memory figures: large leaves come from the system allocator,
        // whose padding depends on the heap's state, not on the input.
        strip_strings_containing(&mut v, "ledger-");
        if let Some(o) = v.as_object_mut() {
            for k in ["timing", "bytes", "models", "advisor"] {
                o.remove(k);
            }
        }
        v
    };
    let (s_dec, s_bin) = (stats(&dec), stats(&bin));
    assert_eq!(s_dec["root_hash"], ACCOUNT_38129);
    assert!(s_dec == s_bin, "stats differ:\n{s_dec}\n{s_bin}");

    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("db");
    import(&[&dec], &db);
    let run = shamap(
        [
            OsStr::new("verify"),
            OsStr::new("--db"),
            db.as_os_str(),
            OsStr::new("--root"),
            OsStr::new(LEDGER_38129),
        ],
        None,
    );
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
}

/// Replaces every string of `v` that contains `needle` by `""`.
fn strip_strings_containing(v: &mut Value, needle: &str) {
    match v {
        Value::String(s) if s.contains(needle) => s.clear(),
        Value::Array(a) => a
            .iter_mut()
            .for_each(|x| strip_strings_containing(x, needle)),
        Value::Object(o) => o
            .values_mut()
            .for_each(|x| strip_strings_containing(x, needle)),
        _ => {}
    }
}
