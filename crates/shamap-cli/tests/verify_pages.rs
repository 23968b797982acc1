//! `ledger_data` pages of one ledger are merged before hashing.

use serde_json::{json, Value};

use crate::support::{
    assert_input_error, ledger_38129_json, ledger_headings, ok, shamap, temp_file,
};

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
    ok(&run);
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

/// Writes pages `which` of a 3-page split of 38129 into `dir`.
fn page_files(dir: &tempfile::TempDir, which: &[usize]) -> Vec<std::path::PathBuf> {
    let all = pages(3);
    which
        .iter()
        .map(|&i| temp_file(dir, &format!("page{i}.json"), all[i].to_string().as_bytes()))
        .collect()
}

fn args(cmd: &[&str], files: &[std::path::PathBuf]) -> Vec<std::ffi::OsString> {
    cmd.iter()
        .map(std::ffi::OsString::from)
        .chain(files.iter().map(|f| f.clone().into_os_string()))
        .collect()
}

/// A ledger whose pages all end with a marker (the last page is missing)
/// is refused by every command that reads dumps: status 2, one line naming
/// the files and saying the ledger continues past them.
#[test]
fn a_ledger_whose_last_page_is_missing_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("db");
    let db = db.to_str().expect("UTF-8 path");
    let first = page_files(&dir, &[0]);
    let name = first[0].display().to_string();
    let key = pages(3)[0]["result"]["state"][0]["index"]
        .as_str()
        .expect("key")
        .to_owned();
    let one_page: [&[&str]; 5] = [
        &["verify"],
        &["stats", "--no-timing"],
        &["import", "--db", db],
        &["prove", "--absent-ok"],
        &["diff", "--kind", "state"],
    ];
    for cmd in one_page {
        let mut a = args(cmd, &first);
        if cmd[0] == "prove" {
            a.push(key.clone().into());
        }
        if cmd[0] == "diff" {
            a.push(crate::support::ledger_38129().into_os_string());
        }
        let line = assert_input_error(&shamap(&a, None), &name);
        assert!(
            line.contains("ledger 38129 continues past this page")
                && line.contains("give every page"),
            "{cmd:?}: {line}"
        );
    }
    // Two pages of three, both with a marker: both named.
    let two = page_files(&dir, &[1, 0]);
    for cmd in [
        &["verify"][..],
        &["stats", "--no-timing"],
        &["import", "--db", db],
    ] {
        let run = shamap(args(cmd, &two), None);
        assert_eq!(run.code, Some(2), "{cmd:?}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{cmd:?}: {}", run.stdout);
        assert_eq!(run.stderr.lines().count(), 1, "{cmd:?}: {}", run.stderr);
        let names = format!("error: {}, {}: ", two[0].display(), two[1].display());
        assert!(
            run.stderr.starts_with(&names)
                && run
                    .stderr
                    .contains("ledger 38129 continues past these pages")
                && run.stderr.contains("give every page"),
            "{cmd:?}: {}",
            run.stderr
        );
    }
    // With the last page, in any order, all is well.
    let all = page_files(&dir, &[2, 0, 1]);
    for cmd in [&["stats", "--no-timing"][..], &["import", "--db", db]] {
        let run = shamap(args(cmd, &all), None);
        assert_eq!(run.code, Some(0), "{cmd:?}: {}", run.stderr);
    }
}

#[test]
fn the_same_page_twice_is_a_duplicate_key_in_the_second_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    // The last page (no marker), so that the ledger is whole but for the
    // repeat.
    let first = pages(2).swap_remove(1);
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
    // Each ledger whole: no page of 38129 is missing.
    if let Some(o) = all[0]["result"].as_object_mut() {
        o.remove("marker");
    }
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
    let headings = ledger_headings(&run.stdout);
    assert_eq!(headings.len(), 2, "{}", run.stdout);
    assert!(
        headings[1].starts_with("ledger 38130 from "),
        "{}",
        headings[1]
    );
}
