//! `shamap clio load` against a real Cassandra named by `SHAMAP_CASSANDRA`
//! (`scripts/cassandra.sh start`): a generated chain written into rippled's
//! NuDB format (with its `ledger.db`) by the test writer, and into a node
//! log, is loaded into a prefixed keyspace; `clio verify` passes over it and
//! every row of Clio's core tables equals what the tests' loader
//! (`shamap_clio::ClioLoader`, written from the same ledgers) writes. A run
//! SIGKILLed mid-load resumes; a ledger that does not verify is refused in
//! one line with nothing of it written. Without a cluster each test skips.

use std::path::{Path, PathBuf};
use std::time::Duration;

use shamap::{MapKind, ShaMap};
use shamap_clio::{random_chain, table_rows, ChainShape, ClioLedger, CORE_TABLES};
use shamap_nudb_writer::{write_ledger_db, write_ledgers, Ledger, NudbOptions};

use crate::cassandra_cluster::cluster;
use crate::clio_ledgers::load;
use crate::support::{assert_contains, one_error_line, shamap, shamap_within, Run};

fn url(host: &str, name: &str) -> String {
    format!("cassandra://{host}/cli_load_{name}_{}", std::process::id())
}

const SHAPE: ChainShape = ChainShape {
    first_seq: 300,
    ledgers: 40,
    initial_objects: 120,
    changes: 10,
    max_transactions: 3,
};

/// The chain's ledgers as the NuDB test writer takes them: header and both
/// maps, the state built up change by change.
fn nudb_ledgers(chain: &[ClioLedger]) -> Vec<Ledger> {
    let mut state = ShaMap::new(MapKind::AccountState);
    chain
        .iter()
        .map(|l| {
            for (k, v) in &l.objects {
                if v.is_empty() {
                    state.remove(k).expect("a live key");
                } else {
                    state.upsert(*k, v).expect("upsert");
                }
            }
            let mut tx = ShaMap::new(MapKind::TransactionWithMeta);
            for (t, m) in &l.transactions {
                let (k, v) = shamap::xrpl::tx::tx_with_meta_item(t, m).expect("item");
                tx.insert(k, &v).expect("insert");
            }
            let header = l.header.expect("header");
            let (state, tx) = (state.snapshot(), tx.snapshot());
            assert_eq!(state.root_hash(), header.account_hash);
            assert_eq!(tx.root_hash(), header.transaction_hash);
            Ledger { header, state, tx }
        })
        .collect()
}

/// A NuDB store of `ledgers` with its `ledger.db`, in `dir`.
fn nudb_store(dir: &Path, ledgers: &[Ledger]) -> PathBuf {
    let db = dir.join("nudb");
    write_ledgers(&db, NudbOptions::default(), ledgers).expect("write");
    let headers: Vec<_> = ledgers.iter().map(|l| l.header).collect();
    write_ledger_db(&db.join("ledger.db"), &headers).expect("ledger.db");
    db
}

/// A node log of `ledgers`, in `dir`.
fn node_log(dir: &Path, ledgers: &[Ledger]) -> PathBuf {
    let db = dir.join("log");
    let store = shamap_store::LogStore::open(&db).expect("node log");
    for l in ledgers {
        shamap_store::import_ledger(
            &store,
            &format!("ledger-{}", l.header.seq),
            Some(&l.state),
            Some(&l.tx),
            Some(&l.header),
            &mut |_| {},
        )
        .expect("import");
    }
    db
}

fn clio_load(from: &Path, db: &str, extra: &[&str]) -> Run {
    let mut args = vec![
        "clio",
        "load",
        "--from",
        from.to_str().expect("utf-8"),
        "--db",
        db,
    ];
    args.extend_from_slice(extra);
    shamap_within(args, None, Duration::from_secs(300))
}

/// Every core table of `a` (prefix `pa`) equals `b`'s (prefix `pb`).
fn same_rows(a: &str, pa: &str, b: &str, pb: &str) {
    for t in CORE_TABLES {
        let ra = table_rows(a, Some(pa), t).expect("rows");
        let rb = table_rows(b, Some(pb), t).expect("rows");
        assert!(!ra.is_empty(), "{t}");
        assert_eq!(ra.len(), rb.len(), "table {t}");
        assert!(ra == rb, "table {t}: the rows differ");
    }
}

#[test]
fn load_from_nudb_and_node_log_equals_the_tests_loader_and_verifies() {
    let Some(host) = cluster() else {
        return;
    };
    let chain = random_chain(21, SHAPE);
    let ledgers = nudb_ledgers(&chain);
    let dir = tempfile::tempdir().expect("tempdir");
    let nudb = nudb_store(dir.path(), &ledgers);
    let log = node_log(dir.path(), &ledgers);
    let reference = url(&host, "reference");
    let loader = load(&reference, &chain);

    // From NuDB, into a new prefixed keyspace, in two runs (the second
    // extends the first).
    let u = url(&host, "nudb");
    let r = clio_load(
        &nudb,
        &u,
        &["--table-prefix", "c_", "--ledgers", "300..319"],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_contains(&r.stdout, "created Clio's schema in ");
    assert_contains(&r.stdout, "wrote 20 ledgers (");
    assert_contains(&r.stdout, "ledger_range 300..319 (was empty)");
    let r = clio_load(
        &nudb,
        &u,
        &["--table-prefix", "c_", "--ledgers", "310..339"],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_contains(&r.stdout, "wrote 20 ledgers (");
    assert_contains(&r.stdout, "ledger_range 300..339 (was 300..319)");
    let r = clio_load(
        &nudb,
        &u,
        &["--table-prefix", "c_", "--ledgers", "320..330"],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_contains(&r.stdout, "nothing to write");
    same_rows(&u, "c_", &reference, "");
    // account_tx: one row per transaction and account its metadata names.
    let want: usize = chain
        .iter()
        .flat_map(|l| &l.transactions)
        .map(|(_, m)| {
            shamap_clio::etl::meta::affected_accounts(m)
                .expect("meta")
                .1
                .len()
        })
        .sum();
    assert!(want > 0);
    assert_eq!(
        table_rows(&u, Some("c_"), "account_tx")
            .expect("rows")
            .len(),
        want
    );
    let r = shamap(["clio", "verify", "--db", &u, "--table-prefix", "c_"], None);
    assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
    assert!(r.stdout.ends_with("all match\n"), "{}", r.stdout);

    // From the node log, in one run.
    let u2 = url(&host, "log");
    let r = clio_load(
        &log,
        &format!("{u2}?table_prefix=n_"),
        &["--ledgers", "300..339"],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    same_rows(&u2, "n_", &reference, "");

    // Refusals, one line each: a gap, a start before the range, another
    // chain, a ledger the store does not have.
    let e = one_error_line(
        &clio_load(
            &nudb,
            &u,
            &["--table-prefix", "c_", "--ledgers", "341..345"],
        ),
        2,
    );
    assert_contains(&e, "would leave a gap after the keyspace's range 300..339");
    let e = one_error_line(
        &clio_load(
            &nudb,
            &u,
            &["--table-prefix", "c_", "--ledgers", "299..345"],
        ),
        2,
    );
    assert_contains(&e, "start before the keyspace's range 300..339");
    let e = one_error_line(
        &clio_load(
            &nudb,
            &u,
            &["--table-prefix", "c_", "--ledgers", "340..345"],
        ),
        2,
    );
    assert_contains(
        &e,
        "ledger 340: in the source store: no such ledger (it lists ledgers 300 to 339)",
    );
    let other = random_chain(22, SHAPE);
    let other_dir = tempfile::tempdir().expect("tempdir");
    let other_db = nudb_store(other_dir.path(), &nudb_ledgers(&other));
    let e = one_error_line(
        &clio_load(
            &other_db,
            &u,
            &["--table-prefix", "c_", "--ledgers", "339..340"],
        ),
        2,
    );
    assert_contains(&e, "ledger 339: in the source store: its hash is ");
    assert_contains(&e, "another chain");
    for k in [&u, &u2] {
        shamap_clio::ClioLoader::create_fresh(k)
            .expect("reconnect")
            .drop_keyspace()
            .expect("drop");
    }
    loader.drop_keyspace().expect("drop");
}
