//! The store subcommands on a Cassandra keyspace (`--db cassandra://...`),
//! against a real Cassandra named by `SHAMAP_CASSANDRA` (`HOST:PORT`;
//! `scripts/cassandra.sh start` starts one at 127.0.0.1:9042). Without it
//! the tests that need one say that they skip and why, and pass; CI sets it.

use std::time::Duration;

use shamap_store::Access;
use shamap_store::CassandraStore;

use crate::cassandra_cluster::cluster_or_skip;
use crate::support::{
    import_both, ok, one_error_line, shamap, shamap_within, Run, KEY_38129, LEDGER_38129,
    TX_TESTNET,
};

/// The start of the data of `KEY_38129`.
const DATA_START: &str = "1100612200000000240000000125";

/// A keyspace URL of this run, emptied first if a previous run left it.
fn fresh_url(host: &str, name: &str) -> String {
    let url = format!("cassandra://{host}/cli_{name}_{}", std::process::id());
    if let Ok(old) = CassandraStore::open_url(&url, Access::Write) {
        old.drop_keyspace().expect("drop a leftover keyspace");
    }
    url
}

fn drop_keyspace(url: &str) {
    CassandraStore::open_url(url, Access::Write)
        .and_then(CassandraStore::drop_keyspace)
        .expect("drop the keyspace");
}

fn run(args: &[&str]) -> Run {
    shamap(args, None)
}

#[test]
fn import_verify_get_info_scan_sync_apply_and_gc_on_cassandra() {
    let host = cluster_or_skip!();
    let url = fresh_url(&host, "main");
    import_both(&url);

    let r = run(&["verify", "--db", &url]);
    assert_eq!(ok(&r).lines().count(), 2, "{}", r.stdout);
    let r = run(&["verify", "--db", &url, "--root", LEDGER_38129]);
    assert!(ok(&r).contains("409 nodes"), "{}", r.stdout);

    let r = run(&["get", "--db", &url, KEY_38129]);
    assert!(ok(&r).starts_with(DATA_START), "{}", r.stdout);
    let r = run(&["get", "--db", &url, "--root", LEDGER_38129, KEY_38129]);
    assert!(ok(&r).starts_with(DATA_START), "{}", r.stdout);
    one_error_line(&run(&["get", "--db", &url, &"1".repeat(64)]), 1);

    let r = run(&["info", "--db", &url]);
    let info = ok(&r);
    assert!(info.contains(&format!("store {url}")), "{info}");
    assert!(info.contains("retained roots: 2"), "{info}");
    assert!(info.contains("261 state leaves"), "{info}");

    let r = run(&[
        "scan",
        "--db",
        &url,
        "--root",
        LEDGER_38129,
        "--cache-mb",
        "1",
    ]);
    assert!(ok(&r).contains("261"), "{}", r.stdout);

    // Cassandra → fjall → another keyspace: both directions of sync.
    let dir = tempfile::tempdir().expect("tempdir");
    let copy = dir.path().join("copy");
    let cs = copy.to_str().expect("utf-8");
    let r = run(&["sync", "--from", &url, "--to", cs, "--root", LEDGER_38129]);
    assert!(ok(&r).contains("408 nodes copied"), "{}", r.stdout);
    ok(&run(&["verify", "--db", cs, "--root", LEDGER_38129]));
    let back = fresh_url(&host, "back");
    let r = run(&["sync", "--from", cs, "--to", &back, "--root", LEDGER_38129]);
    assert!(ok(&r).contains("408 nodes copied"), "{}", r.stdout);
    let r = run(&["get", "--db", &back, KEY_38129]);
    assert!(ok(&r).starts_with(DATA_START), "{}", r.stdout);
    ok(&run(&["verify", "--db", &back]));

    // apply commits through a backed map: the same root as on fjall.
    let changes = dir.path().join("changes.txt");
    std::fs::write(
        &changes,
        format!("set {KEY_38129} AABBCC000000000000000000\ndel 02CE52E3E46AD340B1C7900F86AFB959AE0C246916E3463905EDD61DE26FFFDD\n"),
    )
    .expect("write");
    let ch = changes.to_str().expect("utf-8");
    let on_cassandra = run(&[
        "apply",
        "--db",
        &back,
        "--root",
        LEDGER_38129,
        "--cache-mb",
        "1",
        ch,
    ]);
    let on_fjall = run(&[
        "apply",
        "--db",
        cs,
        "--root",
        LEDGER_38129,
        "--cache-mb",
        "1",
        ch,
    ]);
    let root_line = |r: &Run| {
        ok(r)
            .lines()
            .find(|l| l.starts_with("root "))
            .map(str::to_owned)
            .expect("a root line")
    };
    assert_eq!(root_line(&on_cassandra), root_line(&on_fjall));
    let r = run(&["get", "--db", &back, KEY_38129]);
    assert!(ok(&r).starts_with("AABBCC"), "{}", r.stdout);
    ok(&run(&["verify", "--db", &back]));

    // gc keeps the testnet ledger's transaction map only.
    let r = run(&["gc", "--db", &url, "--keep", TX_TESTNET]);
    assert!(ok(&r).contains("deleted 409 of 420"), "{}", r.stdout);
    one_error_line(&run(&["verify", "--db", &url, "--root", LEDGER_38129]), 2);
    ok(&run(&["verify", "--db", &url]));
    drop_keyspace(&url);
    drop_keyspace(&back);
}

#[test]
fn a_bad_cassandra_db_is_one_error_line() {
    // Nothing listens on port 1: refused at once, whether or not a
    // cluster runs.
    let r = shamap_within(
        ["info", "--db", "cassandra://127.0.0.1:1/ks"],
        None,
        Duration::from_secs(60),
    );
    let e = one_error_line(&r, 2);
    assert!(
        e.contains("cassandra://127.0.0.1:1/ks") && e.contains("cannot connect"),
        "{e}"
    );
    for (url, says) in [
        ("cassandra://127.0.0.1:9042", "no keyspace"),
        ("cassandra://127.0.0.1:9042/Upper", "keyspace 'Upper'"),
        (
            "cassandra://127.0.0.1:9042/ks?consistency=most",
            "consistency 'most'",
        ),
    ] {
        let e = one_error_line(&run(&["verify", "--db", url]), 2);
        assert!(e.contains(says), "{e}");
    }
    // A missing keyspace (the rest of the test) needs a cluster.
    let host = cluster_or_skip!();
    let url = format!(
        "cassandra://{host}/cli_never_imported_{}",
        std::process::id()
    );
    for cmd in ["info", "verify", "get", "gc"] {
        let mut args = vec![cmd, "--db", &url];
        match cmd {
            "get" => args.push(KEY_38129),
            "gc" => args.extend(["--keep", LEDGER_38129]),
            _ => {}
        }
        let e = one_error_line(&run(&args), 2);
        assert!(e.contains("does not exist"), "{e}");
    }
}
