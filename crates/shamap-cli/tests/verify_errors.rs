//! Changed data is a mismatch (status 1); broken input is one error line
//! (status 2), never a panic.

use crate::support::{
    assert_contains, assert_ends_with, assert_input_error, assert_starts_with, json_input_error,
    ledger_38129_json, shamap, string_at, temp_file, temp_json, verify_file, verify_input_error,
};

/// Replaces the hex digit at `pos` by a different valid digit.
fn flip_digit(s: &mut String, pos: usize) {
    let new = if &s[pos..=pos] == "0" { "1" } else { "0" };
    s.replace_range(pos..=pos, new);
}

#[test]
fn one_changed_state_byte_is_a_mismatch() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut v = ledger_38129_json();
    flip_digit(string_at(&mut v, "/ledger/accountState/100/data"), 20);
    let path = temp_json(&dir, "changed.json", &v);
    let run = verify_file(&path);
    assert_eq!(
        run.code,
        Some(1),
        "stdout: {}\nstderr: {}",
        run.stdout,
        run.stderr
    );
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines[1].starts_with("account_hash ")
            && lines[1].ends_with(" MISMATCH expected 2C23D15B6B549123FB351E4B5CDE81C564318EB845449CD43C3EA7953C4DB452"),
        "{}",
        lines[1]
    );
    assert!(lines[2].ends_with(" match"), "{}", lines[2]);
    assert!(
        lines[3].starts_with("ledger_hash ") && lines[3].contains(" MISMATCH expected E6DB7365"),
        "{}",
        lines[3]
    );

    let json = shamap(
        [
            std::ffi::OsStr::new("verify"),
            std::ffi::OsStr::new("--json"),
            path.as_os_str(),
        ],
        None,
    );
    assert_eq!(json.code, Some(1));
    let out: serde_json::Value = serde_json::from_str(&json.stdout).expect("stdout is JSON");
    assert_eq!(out["ok"], false);
    assert_eq!(out["mismatches"], 2);
    assert_eq!(out["ledgers"][0]["account_hash"]["status"], "mismatch");
}

#[test]
fn one_changed_transaction_byte_is_a_mismatch() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut v = ledger_38129_json();
    flip_digit(string_at(&mut v, "/ledger/transactions/0/meta"), 30);
    let run = verify_file(&temp_json(&dir, "tx.json", &v));
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stdout.contains("\ntransaction_hash ")
            && run.stdout.contains(" MISMATCH expected DB83BF80")
    );
}

#[test]
fn truncated_file_is_an_input_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bytes = ledger_38129_json().to_string();
    let path = temp_file(&dir, "cut.json", &bytes.as_bytes()[..bytes.len() / 3]);
    let line = verify_input_error(&path);
    assert!(line.contains("invalid JSON at line 1 column "), "{line}");
}

#[test]
fn bad_hex_digit_names_entry_position_and_field() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut v = ledger_38129_json();
    string_at(&mut v, "/ledger/accountState/17/data").replace_range(5..6, "G");
    assert_eq!(
        json_input_error(&dir, "badhex.json", &v),
        "accountState entry 17: bad hex digit at position 5 in \"data\""
    );
}

#[test]
fn wrong_key_length_is_an_input_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut v = ledger_38129_json();
    string_at(&mut v, "/ledger/accountState/3/index").truncate(62);
    assert_ends_with(
        &json_input_error(&dir, "short.json", &v),
        "accountState entry 3: index is 31 bytes, expected 32",
    );
}

#[test]
fn duplicate_state_key_is_an_input_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut v = ledger_38129_json();
    let state = v
        .pointer_mut("/ledger/accountState")
        .and_then(serde_json::Value::as_array_mut)
        .expect("state list");
    let copy = state[5].clone();
    state.push(copy);
    let line = json_input_error(&dir, "dup.json", &v);
    assert_starts_with(&line, "duplicate state key ");
    assert_ends_with(&line, " at entry 261");
}

#[test]
fn non_json_and_empty_files_are_input_errors() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, bytes) in [
        ("text.json", &b"this is not JSON\n"[..]),
        ("empty.json", &b""[..]),
        ("binary.json", &[0xFF, 0x00, 0x7B, 0x22][..]),
        ("array.json", &b"[]"[..]),
        ("nothing.json", &b"{}"[..]),
        (
            "error.json",
            &br#"{"result": {"error": "lgrNotFound", "status": "error"}}"#[..],
        ),
        // Decoded JSON is read now (tests/verify_decoded.rs); this entry
        // fails on its one-byte index.
        (
            "decoded-short-index.json",
            &br#"{"state": [{"index": "AB", "LedgerEntryType": "AccountRoot"}]}"#[..],
        ),
    ] {
        let path = temp_file(&dir, name, bytes);
        verify_input_error(&path);
    }
    let empty = assert_input_error(&shamap(["verify", "-"], Some(b"")), "<stdin>");
    assert_eq!(empty, "error: <stdin>: empty input");
}

#[test]
fn missing_file_is_an_input_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("absent.json");
    let line = verify_input_error(&path);
    assert!(line.contains("cannot read"), "{line}");
}

/// `--json` with one unusable file: the error line on stderr, and the
/// same line under `errors` of the JSON object on stdout.
#[test]
fn json_mode_errors_go_to_stderr_and_under_errors() {
    let run = shamap(["verify", "--json", "-"], Some(b"{\"ledger\": "));
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    let errors: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(errors.len(), 1, "{}", run.stderr);
    let line = errors[0].strip_prefix("error: ").expect("an error line");
    assert!(line.starts_with("<stdin>: invalid JSON"), "{line}");
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("stdout is JSON");
    assert_eq!(v["ok"], false);
    assert_eq!(v["checked"], 0);
    assert_eq!(v["ledgers"].as_array().map(Vec::len), Some(0));
    assert_eq!(v["errors"], serde_json::json!([line]));
}

#[test]
fn nothing_to_check_is_not_success() {
    let run = shamap(
        ["verify", "-"],
        Some(br#"{"ledger_index": 5, "transactions": []}"#),
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_contains(&run.stdout, "transaction_hash 0000");
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
}

#[test]
fn usage_errors_exit_two_without_panic() {
    for args in [&["verify"][..], &["frobnicate"][..], &[][..]] {
        let run = shamap(args, None);
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
        assert!(!run.stderr.contains("panicked"));
    }
}

/// With several files, a bad one does not hide the others' results: each
/// good ledger's lines on stdout, one error line per bad file on stderr, and
/// the worst status wins (2 over 1 over 0).
#[test]
fn a_bad_file_beside_good_ones_is_reported_with_their_results() {
    let dir = tempfile::tempdir().expect("temp dir");
    let good = crate::support::ledger_38129();
    let bad = temp_file(&dir, "bad.json", b"{not json");
    let mut changed = ledger_38129_json();
    flip_digit(string_at(&mut changed, "/ledger/accountState/100/data"), 20);
    let changed = temp_json(&dir, "changed.json", &changed);
    let verify = |files: &[&std::path::Path], json: bool| {
        let mut a = vec![std::ffi::OsStr::new("verify")];
        if json {
            a.push(std::ffi::OsStr::new("--json"));
        }
        a.extend(files.iter().map(|f| f.as_os_str()));
        shamap(a, None)
    };
    for files in [[good.as_path(), &bad], [&bad, good.as_path()]] {
        let run = verify(&files, false);
        assert_eq!(run.code, Some(2), "{}", run.stderr);
        let lines: Vec<&str> = run.stdout.lines().collect();
        assert_eq!(lines.len(), 4, "{}", run.stdout);
        assert!(lines[0].starts_with("ledger 38129 from "), "{}", lines[0]);
        assert!(
            lines[1..].iter().all(|l| l.ends_with(" match")),
            "{}",
            run.stdout
        );
        let errors: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(errors.len(), 1, "{}", run.stderr);
        assert!(
            errors[0].starts_with(&format!("error: {}: invalid JSON", bad.display())),
            "{}",
            errors[0]
        );
    }
    // A mismatch and a bad file: 2, and the mismatch is still printed.
    let run = verify(&[&changed, &bad, good.as_path()], false);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert_eq!(
        run.stdout.matches(" MISMATCH ").count(),
        2,
        "{}",
        run.stdout
    );
    assert_eq!(
        run.stdout.matches("ledger 38129 from ").count(),
        2,
        "{}",
        run.stdout
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    // JSON: the good ledgers, "ok": false, the error lines.
    let run = verify(&[good.as_path(), &bad], true);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("stdout is JSON");
    assert_eq!(v["ok"], false);
    assert_eq!(v["checked"], 3);
    assert_eq!(v["ledgers"].as_array().map(Vec::len), Some(1));
    let errors = v["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0]
            .as_str()
            .is_some_and(|e| e.starts_with(&format!("{}: invalid JSON", bad.display()))),
        "{errors:?}"
    );
    // Only bad files: nothing on stdout, one line each.
    let bad2 = temp_file(&dir, "bad2.json", b"[]");
    let run = verify(&[&bad, &bad2], false);
    assert_eq!(run.code, Some(2));
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert_eq!(run.stderr.lines().count(), 2, "{}", run.stderr);
}

/// Every help text names both inputs `verify` reads (binary and decoded
/// JSON), and every store argument's help is the one description (it
/// names a node log, NuDB and Cassandra).
#[test]
fn help_texts_name_binary_and_decoded_input_and_every_store() {
    for args in [
        &["verify", "--help"][..],
        &["import", "--help"],
        &["prove", "--help"],
    ] {
        let run = shamap(args, None);
        assert_eq!(run.code, Some(0), "{args:?}");
        let text = &run.stdout;
        assert!(
            text.contains("binary"),
            "{args:?} names binary input:\n{text}"
        );
        assert!(
            text.contains("decoded"),
            "{args:?} names decoded input:\n{text}"
        );
    }
    for args in [
        &["verify", "--help"][..],
        &["import", "--help"],
        &["get", "--help"],
        &["info", "--help"],
        &["sync", "--help"],
        &["export", "--help"],
        &["diff", "--help"],
        &["gc", "--help"],
    ] {
        let run = shamap(args, None);
        assert_eq!(run.code, Some(0), "{args:?}");
        let text = &run.stdout;
        for word in ["node log", "NuDB", "cassandra://"] {
            assert!(
                text.contains(word),
                "{args:?}: the store help names {word}:\n{text}"
            );
        }
    }
}
