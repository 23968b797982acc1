//! `ledger_data` pages of one ledger are merged before hashing.

use serde_json::{json, Value};

use crate::support::{assert_input_error, ledger_38129_json, shamap, temp_file};

/// Splits 38129's state into `ledger_data`-style pages (binary entries,
/// page-level `ledger_index`/`ledger_hash`, header fields in `ledger`).
fn pages(n: usize) -> Vec<Value> {
    let v = ledger_38129_json();
    let ledger = &v["ledger"];
    let state = ledger["accountState"]
        .as_array()
        .expect("state list")
        .clone();
    let mut header = ledger.clone();
    if let Some(o) = header.as_object_mut() {
        o.remove("accountState");
        o.remove("transactions");
    }
    let per_page = state.len().div_ceil(n);
    state
        .chunks(per_page)
        .enumerate()
        .map(|(i, chunk)| {
            let mut page = json!({
                "result": {
                    "ledger_index": 38129,
                    "ledger_hash": ledger["ledger_hash"],
                    "ledger": header,
                    "state": chunk,
                    "validated": true,
                }
            });
            if i + 1 < n {
                page["result"]["marker"] = chunk[chunk.len() - 1]["index"].clone();
            }
            page
        })
        .collect()
}

#[test]
fn pages_of_one_ledger_verify_together() {
    let dir = tempfile::tempdir().expect("temp dir");
    let paths: Vec<_> = pages(3)
        .iter()
        .enumerate()
        .map(|(i, p)| temp_file(&dir, &format!("page{i}.json"), p.to_string().as_bytes()))
        .collect();
    let mut args = vec![std::ffi::OsString::from("verify")];
    // Order of pages does not matter to the root hash.
    args.extend(paths.iter().rev().map(|p| p.clone().into_os_string()));
    let run = shamap(&args, None);
    assert_eq!(
        run.code,
        Some(0),
        "stdout: {}\nstderr: {}",
        run.stdout,
        run.stderr
    );
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{}", run.stdout);
    assert!(
        lines[0].contains("page2.json, ")
            && lines[0].contains("(261 state entries, no transaction list)")
    );
    assert_eq!(
        lines[1],
        "account_hash 2C23D15B6B549123FB351E4B5CDE81C564318EB845449CD43C3EA7953C4DB452 match"
    );
    assert_eq!(
        lines[2],
        "transaction_hash not computed (no transaction list)"
    );
    assert_eq!(
        lines[3],
        "ledger_hash E6DB7365949BF9814D76BCC730B01818EB9136A89DB224F3F9F5AAE4569D758E match"
    );
}

#[test]
fn a_missing_page_is_a_mismatch_flagged_incomplete() {
    let dir = tempfile::tempdir().expect("temp dir");
    let all = pages(3);
    let a = temp_file(&dir, "a.json", all[0].to_string().as_bytes());
    let b = temp_file(&dir, "b.json", all[1].to_string().as_bytes());
    let run = shamap(
        [std::ffi::OsStr::new("verify"), a.as_os_str(), b.as_os_str()],
        None,
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stdout.contains("incomplete: every page has a marker"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(" MISMATCH expected 2C23D15B"),
        "{}",
        run.stdout
    );
}

#[test]
fn the_same_page_twice_is_a_duplicate_key_in_the_second_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let first = pages(2).swap_remove(0);
    let a = temp_file(&dir, "a.json", first.to_string().as_bytes());
    let b = temp_file(&dir, "b.json", first.to_string().as_bytes());
    let run = shamap(
        [std::ffi::OsStr::new("verify"), a.as_os_str(), b.as_os_str()],
        None,
    );
    let line = assert_input_error(&run, &b.display().to_string());
    assert!(
        line.contains(": duplicate state key ") && line.ends_with(" at entry 0"),
        "{line}"
    );
}

#[test]
fn pages_of_different_ledgers_are_checked_separately() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut all = pages(2);
    all[1]["result"]["ledger_index"] = json!(38130);
    if let Some(o) = all[1]["result"].as_object_mut() {
        o.remove("ledger");
        o.remove("ledger_hash");
    }
    let a = temp_file(&dir, "a.json", all[0].to_string().as_bytes());
    let b = temp_file(&dir, "b.json", all[1].to_string().as_bytes());
    let run = shamap(
        [std::ffi::OsStr::new("verify"), a.as_os_str(), b.as_os_str()],
        None,
    );
    let headings: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("ledger "))
        .collect();
    assert_eq!(headings.len(), 2, "{}", run.stdout);
    assert!(
        headings[1].starts_with("ledger 38130 from "),
        "{}",
        headings[1]
    );
}
