//! `shamap stats` on the shipped real ledgers: the counted shape equals an
//! independent computation (the oracle crate), in text and JSON.

use std::ffi::OsStr;

use serde_json::Value;

use crate::support::{
    assert_contains, assert_starts_with, ledger_38129, ledger_38129_json, shamap, testnet_42089779,
    Run, ACCOUNT_38129, TX_TESTNET,
};

/// Runs `shamap stats ARGS...` and asserts a clean success.
fn stats(args: &[&OsStr]) -> Run {
    let run = shamap(
        std::iter::once(OsStr::new("stats")).chain(args.iter().copied()),
        None,
    );
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    run
}

fn stats_json(args: &[&OsStr]) -> Value {
    let mut all = args.to_vec();
    all.push(OsStr::new("--json"));
    serde_json::from_str(&stats(&all).stdout).expect("stdout is JSON")
}

/// The state keys of ledger 38129, read from the JSON directly.
fn keys_38129() -> Vec<[u8; 32]> {
    let v = ledger_38129_json();
    v["ledger"]["accountState"]
        .as_array()
        .expect("accountState list")
        .iter()
        .map(|e| {
            let hex = e["index"].as_str().expect("index is a string");
            shamap::Key::from_hex(hex).expect("index is a key").0
        })
        .collect()
}

fn u64s(v: &Value) -> Vec<u64> {
    v.as_array()
        .expect("an array")
        .iter()
        .map(|x| x.as_u64().expect("a count"))
        .collect()
}

#[test]
fn ledger_38129_child_histogram_equals_the_oracles() {
    let path = ledger_38129();
    let v = stats_json(&[path.as_os_str(), OsStr::new("--no-timing")]);
    let keys = keys_38129();
    let expected = shamap_oracle::child_count_histogram(&keys);
    assert_eq!(u64s(&v["child_histogram"]), expected.to_vec());

    let mut depths = vec![0u64; 65];
    for (_, d) in shamap_oracle::leaf_depths(&keys) {
        depths[d] += 1;
    }
    assert_eq!(u64s(&v["depth_histogram"]), depths);
    assert_eq!(v["inner_nodes"], expected.iter().sum::<u64>());
}

#[test]
fn ledger_38129_json_has_the_documented_fields() {
    let path = ledger_38129();
    let v = stats_json(&[path.as_os_str()]);
    assert_eq!(v["entries"], 261);
    assert_eq!(v["leaf_nodes"], 261);
    assert_eq!(v["kind"], "state");
    assert_eq!(v["root_hash"], ACCOUNT_38129);
    assert_eq!(v["classes"], serde_json::json!([2, 3, 4, 6, 9, 12, 16]));
    assert_eq!(v["input"]["type"], "dump");
    assert_eq!(v["input"]["ledger_index"], 38129);
    assert_eq!(v["child_histogram"].as_array().map(Vec::len), Some(17));
    assert_eq!(v["depth_histogram"].as_array().map(Vec::len), Some(65));

    let b = &v["bytes"];
    let parts = [
        "inner_hashes",
        "child_slots_used",
        "child_slots_unused",
        "leaf_hashes",
        "leaf_keys",
        "leaf_data",
        "leaf_padding",
        "pool_slack",
        "other",
    ];
    let sum: u64 = parts.iter().map(|p| b[p].as_u64().expect(p)).sum();
    assert_eq!(b["total"].as_u64(), Some(sum));
    let overhead = b["overhead_per_entry"].as_f64().expect("overhead");
    let expected =
        (sum - b["leaf_keys"].as_u64().unwrap_or(0) - b["leaf_data"].as_u64().unwrap_or(0)) as f64
            / 261.0;
    assert!((overhead - expected).abs() < 1e-9);
    assert_eq!(v["data"]["total_bytes"], b["leaf_data"]);

    // Entry types: 137 AccountRoots of 87 bytes each.
    let types = v["data"]["by_type"]
        .as_array()
        .expect("state map has types");
    let account = types
        .iter()
        .find(|t| t["type"] == "0x0061")
        .expect("AccountRoot present");
    assert_eq!(account["name"], "AccountRoot");
    assert_eq!(account["entries"], 137);
    assert_eq!(account["bytes"], 137 * 87);

    for model in ["dense", "rippled"] {
        let m = &v["models"][model];
        assert!(m["overhead_per_entry"].as_f64().expect(model) > 0.0);
        assert!(m["ratio_to_ours"].as_f64().is_some());
    }
    assert!(v["models"]["rippled"]["overhead_per_entry"].as_f64() > Some(64.0));

    let a = &v["advisor"];
    assert_eq!(a["best"].as_array().map(Vec::len), Some(6));
    assert_eq!(a["current"]["classes"], v["classes"]);
    assert_eq!(a["dense"]["slots_vs_dense"], 1.0);
    let slots =
        b["child_slots_used"].as_u64().unwrap_or(0) + b["child_slots_unused"].as_u64().unwrap_or(0);
    assert_eq!(a["current"]["slots"].as_u64().map(|s| 8 * s), Some(slots));

    let h = &v["timing"]["hashing"];
    assert_eq!(h["leaf_hashes"], 261);
    assert_eq!(h["inner_hashes"], v["inner_nodes"]);
    assert!(h["root_seconds"].as_f64() > Some(0.0));
    assert!(v["timing"]["build_seconds"].as_f64().is_some());
}

#[test]
fn ledger_38129_text_report_has_every_section() {
    let path = ledger_38129();
    let out = stats(&[path.as_os_str()]).stdout;
    assert_starts_with(&out, "account-state map of 261 entries from ");
    assert_contains(&out, &format!("\nroot_hash {ACCOUNT_38129}\n"));
    for heading in [
        "\nNodes (counted)\n",
        "\nChildren per inner node (counted)\n",
        "\nLeaf depth (counted)\n",
        "\nLeaf data (counted)\n",
        "\nMemory (counted by the engine)\n",
        "\nSame tree, other layouts",
        "\nSize-class advisor",
        "\nTime\n",
    ] {
        assert!(out.contains(heading), "missing {heading:?} in\n{out}");
    }
    let account = out
        .lines()
        .find(|l| l.trim_start().starts_with("AccountRoot"))
        .expect("an AccountRoot row");
    let cells: Vec<&str> = account.split_whitespace().collect();
    assert_eq!(cells[..4], ["AccountRoot", "0x0061", "137", "11,919"]);
    assert!(out.contains("inside the hash function (floor)"), "{out}");
}

#[test]
fn transaction_kinds_build_the_transaction_maps() {
    let path = testnet_42089779();
    // No state list: the transaction map is the default.
    let v = stats_json(&[path.as_os_str(), OsStr::new("--no-timing")]);
    assert_eq!(v["kind"], "tx");
    assert_eq!(v["root_hash"], TX_TESTNET);
    assert_eq!(v["entries"], 10);
    assert_eq!(v["data"]["by_type"], Value::Null);

    let set = stats_json(&[
        path.as_os_str(),
        OsStr::new("--kind"),
        OsStr::new("txset"),
        OsStr::new("--no-timing"),
    ]);
    assert_eq!(set["kind"], "txset");
    assert_eq!(set["entries"], 10);
    // Same keys (transaction IDs), so the same shape; other leaf hashes.
    assert_eq!(set["child_histogram"], v["child_histogram"]);
    assert_ne!(set["root_hash"], v["root_hash"]);
    assert!(set["data"]["total_bytes"].as_u64() < v["data"]["total_bytes"].as_u64());
}

/// `stats --json` against [`shamap_ledger::map_stats`] on the maps the
/// Python module's `read_ledger` builds ([`shamap_ledger::verify`]), the
/// report its `stats()` renders: equal in every field but the build time
/// (which the test nulls). Fails if the command's report or its own build
/// drifts from what the Python module reports for the same file.
#[test]
fn stats_json_equals_the_shared_report_pythons_stats_gives() {
    use shamap_ledger::map_stats::{dump_input, MapStats};
    use shamap_ledger::verify::{state_map, tx_map};

    let path = ledger_38129();
    let bytes = std::fs::read(&path).expect("read the ledger");
    let dump = shamap_ledger::parse(&bytes).expect("a ledger dump");
    let state = dump.state.as_deref().expect("state entries");
    let txs = dump.transactions.as_deref().expect("transactions");
    let input = dump_input(&[path.display().to_string()], dump.header.ledger_index);
    for (kind, mut map) in [
        ("state", state_map(state).expect("state map")),
        ("tx", tx_map(txs).expect("tx map")),
    ] {
        let mut want = stats_json(&[
            path.as_os_str(),
            OsStr::new("--no-timing"),
            OsStr::new("--kind"),
            OsStr::new(kind),
        ]);
        assert!(want["timing"]["build_seconds"].as_f64().is_some());
        want["timing"]["build_seconds"] = Value::Null;
        let shared = MapStats::of_map(&mut map).to_json(input.clone(), None, None);
        // Through the same printing and parsing as the command's output.
        let text = serde_json::to_string_pretty(&shared).expect("render");
        let got: Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(got, want, "{kind}");
    }
}
