//! The shipped real ledgers verify, in text and JSON, from files and stdin.

use crate::support::{
    assert_contains, assert_starts_with, ledger_38129, ledger_headings, ok, on_both_ledgers,
    shamap, testnet_42089779, ACCOUNT_38129, LEDGER_38129, LEDGER_TESTNET, TX_38129, TX_TESTNET,
};

fn lines(s: &str) -> Vec<&str> {
    s.lines().collect()
}

#[test]
fn mainnet_38129_matches_all_three_hashes() {
    let path = ledger_38129();
    let run = shamap([std::ffi::OsStr::new("verify"), path.as_os_str()], None);
    ok(&run);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    let out = lines(&run.stdout);
    assert_eq!(out.len(), 4, "{}", run.stdout);
    assert!(out[0].starts_with("ledger 38129 from "), "{}", out[0]);
    assert!(
        out[0].ends_with("ledger-38129.json (261 state entries, 1 transaction)"),
        "{}",
        out[0]
    );
    assert_eq!(out[1], format!("account_hash {ACCOUNT_38129} match"));
    assert_eq!(out[2], format!("transaction_hash {TX_38129} match"));
    assert_eq!(out[3], format!("ledger_hash {LEDGER_38129} match"));
}

#[test]
fn testnet_42089779_matches_transactions_and_ledger_hash() {
    let path = testnet_42089779();
    let run = shamap([std::ffi::OsStr::new("verify"), path.as_os_str()], None);
    ok(&run);
    let out = lines(&run.stdout);
    assert!(out[0].starts_with("ledger 42089779 from "), "{}", out[0]);
    assert_eq!(out[1], "account_hash not computed (no state entries)");
    assert_eq!(out[2], format!("transaction_hash {TX_TESTNET} match"));
    assert_eq!(out[3], format!("ledger_hash {LEDGER_TESTNET} match"));
}

#[test]
fn several_files_give_one_section_each() {
    let run = on_both_ledgers(&["verify"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(ledger_headings(&run.stdout).len(), 2, "{}", run.stdout);
}

#[test]
fn stdin_is_read_for_dash() {
    let bytes = std::fs::read(ledger_38129()).expect("data file is readable");
    let run = shamap(["verify", "-"], Some(&bytes));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_starts_with(&run.stdout, "ledger 38129 from <stdin> ");
    assert_contains(&run.stdout, &format!("ledger_hash {LEDGER_38129} match"));
}

#[test]
fn json_output_parses_and_reports_matches() {
    let run = on_both_ledgers(&["verify", "--json"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("stdout is JSON");
    assert_eq!(v["ok"], true);
    assert_eq!(v["checked"], 5);
    assert_eq!(v["mismatches"], 0);
    let l = &v["ledgers"][0];
    assert_eq!(l["ledger_index"], 38129);
    assert_eq!(l["state_entries"], 261);
    assert_eq!(l["account_hash"]["computed"], ACCOUNT_38129);
    assert_eq!(l["account_hash"]["expected"], ACCOUNT_38129);
    assert_eq!(l["account_hash"]["status"], "match");
    assert_eq!(l["ledger_hash"]["status"], "match");
    let t = &v["ledgers"][1];
    assert_eq!(t["account_hash"]["status"], "not_computed");
    assert_eq!(t["account_hash"]["reason"], "no state entries");
    assert_eq!(t["transaction_hash"]["computed"], TX_TESTNET);
    assert_eq!(t["ledger_hash"]["computed"], LEDGER_TESTNET);
}

#[test]
fn version_and_help_exit_zero() {
    let v = shamap(["--version"], None);
    assert_eq!(v.code, Some(0));
    assert!(v.stdout.starts_with("shamap "), "{}", v.stdout);
    let h = shamap(["--help"], None);
    assert_eq!(h.code, Some(0));
    assert!(h.stdout.contains("verify"), "{}", h.stdout);
    let vh = shamap(["verify", "--help"], None);
    assert_eq!(vh.code, Some(0));
    assert!(vh.stdout.contains("--json"), "{}", vh.stdout);
}
