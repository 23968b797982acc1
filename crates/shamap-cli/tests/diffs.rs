//! `shamap diff` between the shipped ledger and altered copies of it.

use crate::support::{
    assert_ends_with, assert_input_error, ledger_38129, ledger_38129_json, shamap, string_at,
    temp_file,
};

/// A copy of 38129 with entry 100's data changed and entry 5 removed;
/// returns (path, modified key, removed key, new data of the modified key).
fn altered(dir: &tempfile::TempDir) -> (std::path::PathBuf, String, String, String) {
    let mut v = ledger_38129_json();
    let modified = string_at(&mut v, "/ledger/accountState/100/index").clone();
    let data = string_at(&mut v, "/ledger/accountState/100/data");
    let last = data.len() - 1;
    let digit = if data.ends_with('0') { "1" } else { "0" };
    data.replace_range(last.., digit);
    let new_data = data.clone();
    let state = v
        .pointer_mut("/ledger/accountState")
        .and_then(serde_json::Value::as_array_mut)
        .expect("state list");
    let removed = state.remove(5)["index"].as_str().expect("index").to_owned();
    let path = temp_file(dir, "altered.json", v.to_string().as_bytes());
    (path, modified, removed, new_data)
}

#[test]
fn one_modified_and_one_removed_entry_are_listed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (path, modified, removed, new_data) = altered(&dir);
    let run = shamap(
        [
            std::ffi::OsStr::new("diff"),
            ledger_38129().as_os_str(),
            path.as_os_str(),
        ],
        None,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    let mut want = vec![
        format!("modified {}", modified.to_uppercase()),
        format!("removed {}", removed.to_uppercase()),
    ];
    want.sort_by(|a, b| a.split(' ').nth(1).cmp(&b.split(' ').nth(1)));
    want.push("2 differences: 0 added, 1 removed, 1 modified".to_owned());
    assert_eq!(run.stdout.lines().collect::<Vec<_>>(), want);

    // The other way round the removal is an addition.
    let back = shamap(
        [
            std::ffi::OsStr::new("diff"),
            std::ffi::OsStr::new("--json"),
            path.as_os_str(),
            ledger_38129().as_os_str(),
        ],
        None,
    );
    assert_eq!(back.code, Some(0), "{}", back.stderr);
    let v: serde_json::Value = serde_json::from_str(&back.stdout).expect("JSON");
    assert_eq!(v["kind"], "state");
    assert_eq!(v["added"], 1);
    assert_eq!(v["removed"], 0);
    assert_eq!(v["modified"], 1);
    assert_eq!(v["left"]["entries"], 260);
    assert_eq!(v["right"]["entries"], 261);
    assert_eq!(
        v["right"]["root"],
        "2C23D15B6B549123FB351E4B5CDE81C564318EB845449CD43C3EA7953C4DB452"
    );
    let diffs = v["differences"].as_array().expect("list");
    assert_eq!(diffs.len(), 2);
    let m = diffs
        .iter()
        .find(|d| d["change"] == "modified")
        .expect("modified entry");
    assert_eq!(m["key"], modified.to_uppercase());
    assert_eq!(m["left"], new_data.to_uppercase());
    assert_ne!(m["right"], m["left"]);
    let a = diffs
        .iter()
        .find(|d| d["change"] == "added")
        .expect("added entry");
    assert_eq!(a["key"], removed.to_uppercase());
    assert_eq!(a["left"], serde_json::Value::Null);
    assert!(a["right"].is_string());
}

#[test]
fn identical_ledgers_have_no_differences_in_either_map() {
    for kind in ["state", "tx"] {
        let f = ledger_38129();
        let run = shamap(
            [
                std::ffi::OsStr::new("diff"),
                std::ffi::OsStr::new("--kind"),
                std::ffi::OsStr::new(kind),
                f.as_os_str(),
                f.as_os_str(),
            ],
            None,
        );
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        assert_eq!(
            run.stdout,
            "0 differences: 0 added, 0 removed, 0 modified\n"
        );
    }
}

#[test]
fn more_than_max_differences_is_status_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (path, ..) = altered(&dir);
    let run = shamap(
        [
            std::ffi::OsStr::new("diff"),
            std::ffi::OsStr::new("--max"),
            std::ffi::OsStr::new("1"),
            ledger_38129().as_os_str(),
            path.as_os_str(),
        ],
        None,
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stdout.is_empty());
    assert_eq!(
        run.stderr,
        "error: more than 1 differences (raise --max to see them)\n"
    );
}

#[test]
fn bad_input_is_status_two() {
    let dir = tempfile::tempdir().expect("temp dir");
    let garbage = temp_file(&dir, "g.json", b"[1, 2");
    let run = shamap(
        [
            std::ffi::OsStr::new("diff"),
            ledger_38129().as_os_str(),
            garbage.as_os_str(),
        ],
        None,
    );
    assert_input_error(&run, &garbage.display().to_string());
    // A ledger without a transaction list cannot give a transaction map.
    let no_tx = temp_file(
        &dir,
        "state-only.json",
        br#"{"ledger_index": 1, "accountState": []}"#,
    );
    let run = shamap(
        [
            std::ffi::OsStr::new("diff"),
            std::ffi::OsStr::new("--kind"),
            std::ffi::OsStr::new("tx"),
            no_tx.as_os_str(),
            ledger_38129().as_os_str(),
        ],
        None,
    );
    let line = assert_input_error(&run, &no_tx.display().to_string());
    assert_ends_with(
        &line,
        "no transaction list to build the transaction map from",
    );
    let run = shamap(["diff", "-", "-"], Some(b"{}"));
    assert_eq!(run.code, Some(2));
    assert_eq!(run.stderr.lines().count(), 1);
}
