//! The store subcommands: import, get, info, verify --db, sync, gc, and
//! what a damaged store does to them.

use std::path::{Path, PathBuf};

use crate::support::{
    import_both, ledger_38129, one_error_line, shamap, Run, ACCOUNT_38129, KEY_38129, LEDGER_38129,
    TX_TESTNET,
};

/// The start of the data of `KEY_38129`.
const DATA_START: &str = "1100612200000000240000000125";

/// A temporary directory (removed on drop) with a store `db` holding
/// ledger 38129 and testnet ledger 42089779, and the store's path.
fn store_with_both() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    import_both(&db);
    (dir, db)
}

fn run(args: &[&str]) -> Run {
    shamap(args, None)
}

#[test]
fn import_get_info_verify_sync_and_gc_work_together() {
    let (dir, db) = store_with_both();
    let dbs = db.to_str().expect("utf-8");

    // The default root is the newest imported state map.
    let r = run(&["get", "--db", dbs, KEY_38129]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.starts_with(DATA_START), "{}", r.stdout);
    let r = run(&["get", "--db", dbs, "--root", LEDGER_38129, KEY_38129]);
    assert!(r.stdout.starts_with(DATA_START));
    let absent = "1".repeat(64);
    one_error_line(&run(&["get", "--db", dbs, &absent]), 1);

    let r = run(&["info", "--db", dbs]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("retained roots: 2"), "{}", r.stdout);
    assert!(r.stdout.contains("261 state leaves"), "{}", r.stdout);
    assert!(r.stdout.contains("bytes on disk"), "{}", r.stdout);

    let r = run(&["verify", "--db", dbs]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // The log's line, then one per retained root.
    assert_eq!(r.stdout.lines().count(), 3, "{}", r.stdout);
    assert!(
        r.stdout.starts_with("log: ")
            && r.stdout
                .lines()
                .next()
                .is_some_and(|l| l.ends_with(", whole")),
        "{}",
        r.stdout
    );
    let r = run(&["verify", "--db", dbs, "--root", LEDGER_38129]);
    assert!(r.stdout.contains("409 nodes"), "{}", r.stdout);

    let copy = dir.path().join("copy");
    let cs = copy.to_str().expect("utf-8");
    let r = run(&["sync", "--from", dbs, "--to", cs, "--root", LEDGER_38129]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("408 nodes copied"), "{}", r.stdout);
    let r = run(&["get", "--db", cs, KEY_38129]);
    assert!(r.stdout.starts_with(DATA_START), "{}", r.stderr);
    assert_eq!(run(&["verify", "--db", cs]).code, Some(0));

    let r = run(&["gc", "--db", dbs, "--keep", TX_TESTNET]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("deleted 409 of 420"), "{}", r.stdout);
    one_error_line(&run(&["verify", "--db", dbs, "--root", LEDGER_38129]), 2);
    assert_eq!(run(&["verify", "--db", dbs]).code, Some(0));
    // A kept root that is not there: refused, nothing deleted.
    let e = one_error_line(
        &run(&[
            "gc",
            "--db",
            cs,
            "--keep",
            &format!("{LEDGER_38129},{absent}"),
        ]),
        2,
    );
    assert!(e.contains("nothing deleted"), "{e}");
    assert_eq!(
        run(&["verify", "--db", cs, "--root", LEDGER_38129]).code,
        Some(0)
    );
}

#[test]
fn verify_keeps_reading_files_and_refuses_mixed_use() {
    let a = ledger_38129();
    let r = run(&["verify", a.to_str().expect("path")]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = run(&["verify", "--db", "x", a.to_str().expect("path")]);
    one_error_line(&r, 2);
    one_error_line(&run(&["verify", "--root", LEDGER_38129]), 2);
    let e = one_error_line(&run(&["get", "--db", "/nonexistent/store", KEY_38129]), 2);
    assert!(e.contains("/nonexistent/store"), "{e}");
}

#[test]
fn a_damaged_store_gives_one_error_line_and_loses_nothing() {
    let (_dir, db) = store_with_both();
    let dbs = db.to_str().expect("utf-8");
    // Flip one byte in the middle of the node log.
    let journal = db.join(shamap_store::backend::log_store::LOG_FILE);
    let good = std::fs::read(&journal).expect("read");
    let mut bad = good.clone();
    let at = bad.len() / 2;
    bad[at] ^= 0x20;
    std::fs::write(&journal, &bad).expect("write");
    // The import closed cleanly and left an index checkpoint: openings read
    // no batch below it, and `verify`, which reads every node, finds it.
    let r = run(&["verify", "--db", dbs]);
    let e = one_error_line(&r, 2);
    assert!(e.contains(dbs) && e.contains("damaged in 1 place"), "{e}");
    // The report names the byte's batch and the roots it affects.
    assert!(r.stdout.contains("log DAMAGED at byte"), "{}", r.stdout);
    assert!(r.stdout.contains("DAMAGED: "), "{}", r.stdout);
    // Without the checkpoint (as after a crash) every opening scans the
    // log, and refuses it.
    let checkpoint = db.join(shamap_store::backend::log_store::checkpoint::CHECKPOINT_FILE);
    std::fs::remove_file(&checkpoint).expect("a checkpoint was left");
    for args in [
        vec!["verify", "--db", dbs],
        vec!["get", "--db", dbs, KEY_38129],
        vec!["info", "--db", dbs],
        vec!["gc", "--db", dbs, "--keep", LEDGER_38129],
    ] {
        let e = one_error_line(&run(&args), 2);
        assert!(e.contains(dbs), "{e}");
    }
    // Nothing was rewritten or truncated: undoing the flip restores it all.
    assert_eq!(std::fs::read(&journal).expect("read"), bad);
    std::fs::write(&journal, &good).expect("write");
    let r = run(&["verify", "--db", dbs]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.lines().count(), 3);
}

/// `apply` through a backed map (tiny budget: every node loaded, evicted,
/// spilled) gives the root an in-memory map gets from the same changes;
/// `scan` and `get` read it back; a bad change file commits nothing.
#[test]
fn apply_and_scan_match_an_in_memory_map() {
    use shamap::{Key, MapKind, ShaMap};
    let (dir, db) = store_with_both();
    let dbs = db.to_str().expect("utf-8");

    let d =
        shamap_ledger::dump::parse(&std::fs::read(ledger_38129()).expect("data")).expect("parses");
    let mut mem = ShaMap::new(MapKind::AccountState);
    for e in d.state.as_deref().expect("state") {
        mem.insert(e.key, &e.data).expect("insert");
    }
    let keys: Vec<Key> = d
        .state
        .as_deref()
        .expect("state")
        .iter()
        .map(|e| e.key)
        .collect();
    let mut changes = String::from("# changes\n");
    for (i, k) in keys.iter().enumerate().step_by(3) {
        if i % 2 == 0 {
            changes.push_str(&format!("del {k}\n"));
            mem.remove(k).expect("present");
        } else {
            // Data of rippled's 12-byte minimum (3 bytes, then 9 zeros).
            changes.push_str(&format!(
                "set {k} {:02X}{:04X}{}\n",
                i % 256,
                i,
                "00".repeat(9)
            ));
            let mut data = vec![(i % 256) as u8, (i >> 8) as u8, i as u8];
            data.resize(12, 0);
            mem.upsert(*k, &data).expect("upsert");
        }
    }
    let mut fresh = keys[0];
    fresh.0[31] ^= 0x5A;
    changes.push_str(&format!("set {fresh} ABCDEF{}\n\n", "00".repeat(9)));
    let mut data = vec![0xAB, 0xCD, 0xEF];
    data.resize(12, 0);
    mem.upsert(fresh, &data).expect("upsert");
    let expected = mem.root_hash();
    let file = dir.path().join("changes.txt");
    std::fs::write(&file, &changes).expect("write");

    let r = run(&[
        "apply",
        "--db",
        dbs,
        "--root",
        ACCOUNT_38129,
        "--cache-mb",
        "0",
        "--name",
        "edited",
        file.to_str().expect("path"),
        "--json",
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    assert_eq!(v["root"], expected.to_string(), "{}", r.stdout);
    assert!(v["cache"]["loads"].as_u64().expect("loads") > 0);

    // `CMD --db DB --root EXPECTED LAST`.
    let root = expected.to_string();
    let at_expected = |cmd: &str, last: &str| run(&[cmd, "--db", dbs, "--root", &root, last]);
    let r = at_expected("scan", "--json");
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    assert_eq!(v["items"].as_u64(), Some(mem.len() as u64));
    let r = at_expected("get", &fresh.to_string());
    assert_eq!(r.stdout.trim(), "ABCDEF000000000000000000", "{}", r.stderr);
    let r = at_expected("get", &keys[0].to_string());
    assert_eq!(r.code, Some(1), "deleted key: {}", r.stdout);

    // A bad line: one error naming file and line, nothing committed.
    let ok12 = "00".repeat(12);
    std::fs::write(&file, format!("set {fresh} {ok12}\nset {fresh} 0G\n")).expect("write");
    let r = run(&[
        "apply",
        "--db",
        dbs,
        "--name",
        "bad",
        file.to_str().expect("path"),
    ]);
    let e = one_error_line(&r, 2);
    assert!(e.contains("changes.txt:2"), "{e}");
    let r = run(&["info", "--db", dbs, "--json"]);
    assert!(!r.stdout.contains("\"bad\""), "{}", r.stdout);
}

/// Builds a store (the default, a node log) holding `n` entries of 256
/// bytes (keys from `i`) and returns its root.
fn budget_store(dir: &Path, n: u32) -> shamap::Hash256 {
    use shamap::{MapKind, ShaMap};
    let mut map = ShaMap::new(MapKind::AccountState);
    let mut data = vec![0u8; 256];
    for i in 0..n {
        data[..4].copy_from_slice(&i.to_be_bytes());
        map.insert(budget_key(i), &data).expect("fresh key");
    }
    let snap = map.snapshot();
    let store = shamap_store::LogStore::open(dir).expect("create");
    shamap_store::import_ledger(&store, "budget", Some(&snap), None, None, &mut |_| {})
        .expect("import");
    snap.root_hash()
}

fn budget_key(i: u32) -> shamap::Key {
    shamap::Key::from(shamap::xrpl::sha512_half(&[b"budget", &i.to_be_bytes()]))
}

/// `CMD --db DB --root ROOT --cache-mb 1 --json [EXTRA]`, which must
/// succeed: its peak RSS and its report.
fn with_1mib_budget(cmd: &str, db: &str, root: &str, extra: &[&str]) -> (u64, serde_json::Value) {
    let mut args = vec![cmd, "--db", db, "--root", root, "--cache-mb", "1", "--json"];
    args.extend_from_slice(extra);
    let r = run(&args);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    let peak = v["peak_rss_bytes"].as_u64().expect("Linux reports VmHWM");
    (peak, v)
}

/// Peak RSS of `scan` and of `apply` (10,000 updates) with a 1 MiB budget.
fn scan_and_apply_rss(db: &Path, root: &str, n: u32, work: &Path) -> (u64, u64) {
    let db = db.to_str().expect("utf-8");
    let (scan, v) = with_1mib_budget("scan", db, root, &[]);
    assert_eq!(v["items"].as_u64(), Some(u64::from(n)));
    let changes: String = (0..10_000u32)
        .map(|i| {
            format!(
                "set {} {:08X}{}\n",
                budget_key(i * 7 % n),
                i,
                "00".repeat(8)
            )
        })
        .collect();
    let file = work.join(format!("changes-{n}.txt"));
    std::fs::write(&file, changes).expect("write");
    let (apply, v) = with_1mib_budget("apply", db, root, &[file.to_str().expect("path")]);
    assert!(v["cache"]["spills"].as_u64().expect("spills") > 0, "{v}");
    assert!(
        v["cache"]["cache_peak_bytes"].as_u64().expect("peak") <= 1 << 20,
        "{v}"
    );
    (scan, apply)
}

/// Memory budget: with a 1 MiB budget, `scan` and `apply` on a state four
/// times larger peak at almost the same RSS (beyond the budget, the node
/// log's index: 8–18 bytes per stored node), and scans stay near the RSS of
/// scanning a 261-entry ledger plus the budget and the index.
#[test]
fn scan_and_apply_stay_within_the_budget_on_a_state_far_larger() {
    use shamap_store::NodeStore;
    let (dir, tiny) = store_with_both();
    let tiny = tiny.to_str().expect("utf-8");
    let (tiny_rss, _) = with_1mib_budget("scan", tiny, ACCOUNT_38129, &[]);

    let mut rows = Vec::new();
    for n in [40_000u32, 160_000] {
        let db = dir.path().join(format!("db{n}"));
        let root = budget_store(&db, n).to_string();
        let bytes = shamap_store::LogStore::open(&db)
            .expect("open")
            .disk_bytes()
            .expect("size");
        let (scan, apply) = scan_and_apply_rss(&db, &root, n, dir.path());
        eprintln!("{n} entries, {bytes} B on disk: peak RSS scan {scan}, apply {apply} (tiny scan {tiny_rss})");
        rows.push((bytes, scan, apply));
    }
    let (small, big) = (rows[0], rows[1]);
    // Four times the entries: at least three times the bytes on disk (an
    // import into an empty store writes each node once, inner nodes in the
    // sparse inner encoding: about 165 B per entry).
    assert!(
        big.0 > 3 * small.0 && big.0 > 20 << 20,
        "the big state is over three times larger, and over 20 MiB: {rows:?}"
    );
    assert!(
        big.1 <= small.1 + (6 << 20),
        "scan RSS grew with the state: {rows:?}"
    );
    // Scan: the budget, fjall's 8 MiB block cache, pinned filters and index.
    assert!(
        big.1 <= tiny_rss + (1 << 20) + (20 << 20),
        "scan peak {rows:?}, tiny {tiny_rss}"
    );
    // Apply also writes: the store's write buffers and (on fjall) its
    // compactions' buffers come on top; they level off, and 56 MiB bounds
    // them with room (measured: a 1M-entry fjall store peaked at 56 MiB
    // with 20k changes).
    assert!(
        big.2 <= tiny_rss + (1 << 20) + (56 << 20),
        "apply peak {rows:?}, tiny {tiny_rss}"
    );
}
