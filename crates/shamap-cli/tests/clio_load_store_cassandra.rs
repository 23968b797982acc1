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

use shamap_clio::{random_chain, table_rows, ChainShape, CORE_TABLES};
use shamap_nudb_writer::{write_ledger_db, write_ledgers, Ledger, NudbOptions};

use crate::cassandra_cluster::cluster_or_skip;
use crate::clio_ledgers::{load, nudb_ledgers, nudb_store, shape};
use crate::support::{assert_contains, one_error_line, shamap, Run};

pub fn url(host: &str, name: &str) -> String {
    format!("cassandra://{host}/cli_load_{name}_{}", std::process::id())
}

pub const SHAPE: ChainShape = shape(300, 40, 120, 10, 3);

/// A node log of `ledgers`, in `dir`.
pub fn node_log(dir: &Path, ledgers: &[Ledger]) -> PathBuf {
    let db = dir.join("log");
    import_all(
        &shamap_store::LogStore::open(&db).expect("node log"),
        ledgers,
    );
    db
}

/// Imports every ledger of `ledgers` into `store`.
fn import_all(store: &dyn shamap_store::NodeStore, ledgers: &[Ledger]) {
    for l in ledgers {
        shamap_store::import_ledger(
            store,
            &format!("ledger-{}", l.header.seq),
            Some(&l.state),
            Some(&l.tx),
            Some(&l.header),
            &mut |_| {},
        )
        .expect("import");
    }
}

/// `shamap clio SUB --from FROM --db DB EXTRA...`.
pub fn clio_from(sub: &str, from: &Path, db: &str, extra: &[&str]) -> Run {
    let mut args = vec![
        "clio",
        sub,
        "--from",
        from.to_str().expect("utf-8"),
        "--db",
        db,
    ];
    args.extend_from_slice(extra);
    shamap(args, None)
}

pub fn clio_load(from: &Path, db: &str, extra: &[&str]) -> Run {
    clio_from("load", from, db, extra)
}

/// `clio_load`, which must exit 0 and say each of `says`: its run.
fn load_ok(from: &Path, db: &str, extra: &[&str], says: &[&str]) -> Run {
    let r = clio_load(from, db, extra);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    for s in says {
        assert_contains(&r.stdout, s);
    }
    r
}

/// `clio_load`, which must be refused in one line, exit 2, saying each of
/// `says`.
fn load_refused(from: &Path, db: &str, extra: &[&str], says: &[&str]) {
    let e = one_error_line(&clio_load(from, db, extra), 2);
    for s in says {
        assert_contains(&e, s);
    }
}

/// `shamap clio verify --db DB [ARGS]`, which must exit 0: its run.
pub fn clio_verify_passes(db: &str, extra: &[&str]) -> Run {
    let mut args = vec!["clio", "verify", "--db", db];
    args.extend_from_slice(extra);
    let r = shamap(args, None);
    assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
    r
}

/// Drops the keyspace at `url` (what a test loaded into).
pub fn drop_keyspace(url: &str) {
    shamap_clio::ClioLoader::create_fresh(url)
        .expect("reconnect")
        .drop_keyspace()
        .expect("drop");
}

/// Every core table of `a` (prefix `pa`) equals `b`'s (prefix `pb`).
pub fn same_rows(a: &str, pa: &str, b: &str, pb: &str) {
    for t in CORE_TABLES {
        let ra = table_rows(a, Some(pa), t).expect("rows");
        let rb = table_rows(b, Some(pb), t).expect("rows");
        // (A one-ledger keyspace has no diff rows.)
        assert!(!ra.is_empty() || t == "diff", "{t}");
        assert_eq!(ra.len(), rb.len(), "table {t}");
        assert!(ra == rb, "table {t}: the rows differ");
    }
}

#[test]
fn load_from_nudb_and_node_log_equals_the_tests_loader_and_verifies() {
    let host = cluster_or_skip!();
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
    fn c(range: &str) -> [&str; 4] {
        ["--table-prefix", "c_", "--ledgers", range]
    }
    load_ok(
        &nudb,
        &u,
        &c("300..319"),
        &[
            "created Clio's schema in ",
            "wrote 20 ledgers (",
            " rows, ",
            "ledger_range 300..319 (was empty)",
        ],
    );
    load_ok(
        &nudb,
        &u,
        &c("310..339"),
        &[
            "wrote 20 ledgers (",
            " rows, ",
            "ledger_range 300..339 (was 300..319)",
        ],
    );
    load_ok(&nudb, &u, &c("320..330"), &["nothing to write"]);
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
    let r = clio_verify_passes(&u, &["--table-prefix", "c_"]);
    assert!(r.stdout.ends_with("all match\n"), "{}", r.stdout);
    // An account_tx row lost is found and written again by `clio repair`.
    let (seq, meta) = chain
        .iter()
        .skip(1)
        .find_map(|l| {
            l.transactions
                .first()
                .map(|(_, m)| (l.header.expect("h").seq, m.clone()))
        })
        .expect("a transaction after the first ledger");
    let (index, accounts) = shamap_clio::etl::meta::affected_accounts(&meta).expect("meta");
    let account = accounts.iter().next().expect("an account");
    let ks = u.rsplit('/').next().expect("ks");
    let account_hex: String = account.iter().map(|b| format!("{b:02x}")).collect();
    shamap_clio::ClioLoader::connect(&format!("{u}?table_prefix=c_"))
        .expect("connect")
        .execute(&format!(
            "DELETE FROM {ks}.c_account_tx WHERE account = 0x{account_hex} AND seq_idx = ({seq}, {index})"
        ))
        .expect("delete");
    let s = seq.to_string();
    let r = clio_from(
        "repair",
        &nudb,
        &u,
        &["--table-prefix", "c_", "--ledger", &s],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        r.stdout.lines().next(),
        Some(
            format!(
                "ledger {seq}: account_tx {} {seq}/{index}: missing, written",
                account_hex.to_uppercase()
            )
            .as_str()
        ),
        "{}",
        r.stdout
    );
    assert!(r.stdout.ends_with(": 1 row changed\n"), "{}", r.stdout);
    assert_eq!(
        table_rows(&u, Some("c_"), "account_tx")
            .expect("rows")
            .len(),
        want
    );

    // From the node log, in one run.
    let u2 = url(&host, "log");
    load_ok(
        &log,
        &format!("{u2}?table_prefix=n_"),
        &["--ledgers", "300..339"],
        &[],
    );
    same_rows(&u2, "n_", &reference, "");

    // Refusals, one line each: a gap, a start before the range, another
    // chain, a ledger the store does not have.
    load_refused(
        &nudb,
        &u,
        &c("341..345"),
        &["would leave a gap after the keyspace's range 300..339"],
    );
    for first in ["299", "340"] {
        load_refused(
            &nudb,
            &u,
            &c(&format!("{first}..345")),
            &[&format!(
                "ledger {first}: in the source store: no such ledger (it lists ledgers 300 to 339)"
            )],
        );
    }
    let other = random_chain(22, SHAPE);
    let other_dir = tempfile::tempdir().expect("tempdir");
    let other_db = nudb_store(other_dir.path(), &nudb_ledgers(&other));
    load_refused(
        &other_db,
        &u,
        &c("339..340"),
        &[
            "ledger 339: in the source store: its hash is ",
            "another chain",
        ],
    );
    // Back-filling: 320..335 first, then 300..339 around it. Ledger 320,
    // written whole as the first, keeps its every object and whole list
    // (extra rows at 320, which read the same); every other row is the
    // loader's.
    let u3 = url(&host, "back");
    load_ok(&nudb, &u3, &["--ledgers", "320..335"], &[]);
    load_refused(
        &nudb,
        &u3,
        &["--ledgers", "300..310"],
        &["would leave a gap before the keyspace's range 320..335: end at 319 at the earliest"],
    );
    load_ok(
        &nudb,
        &u3,
        &["--ledgers", "300..339"],
        &["wrote 24 ledgers (", "ledger_range 300..339 (was 320..335)"],
    );
    let r = clio_verify_passes(&u3, &[]);
    assert!(r.stdout.ends_with("all match\n"), "{}", r.stdout);
    for t in CORE_TABLES {
        let ours = table_rows(&u3, None, t).expect("rows");
        let theirs = table_rows(&reference, None, t).expect("rows");
        if t == "objects" || t == "successor" {
            let extra: Vec<&String> = ours.iter().filter(|r| !theirs.contains(r)).collect();
            assert!(
                theirs.iter().all(|r| ours.contains(r)),
                "table {t}: a row missing"
            );
            assert!(!extra.is_empty());
            assert!(
                extra.iter().all(|r| r.contains("Some(BigInt(320))")),
                "table {t}"
            );
        } else {
            assert!(ours == theirs, "table {t}: the rows differ");
        }
    }
    for k in [&u, &u2, &u3] {
        drop_keyspace(k);
    }
    loader.drop_keyspace().expect("drop");
}

/// A ledger whose state node is damaged in the store is refused in one
/// line naming it; the ledgers before it are written, nothing of it is, and
/// the range ends before it.
#[test]
fn a_ledger_that_does_not_verify_is_refused_and_nothing_of_it_written() {
    let host = cluster_or_skip!();
    let chain = random_chain(23, SHAPE);
    let ledgers = nudb_ledgers(&chain);
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("nudb");
    let written = write_ledgers(&db, NudbOptions::default(), &ledgers).expect("write");
    let headers: Vec<_> = ledgers.iter().map(|l| l.header).collect();
    write_ledger_db(&db.join("ledger.db"), &headers).expect("ledger.db");
    // A state node that ledger 310 adds (the first it adds: its root).
    let mut seen = std::collections::HashSet::new();
    for l in &ledgers[..10] {
        l.objects_new_to(&mut seen, &mut |_, _| {});
    }
    let bad = ledgers[10].state.root_hash();
    assert!(!seen.contains(&bad));
    let size = written.record(&bad.0).expect("a record").size;
    shamap_nudb_writer::faults::flip_value_byte(&written, &bad.0, size / 2).expect("flip");
    let u = url(&host, "damaged");
    let r = clio_load(&db, &u, &["--ledgers", "300..320"]);
    let e = one_error_line(&r, 2);
    assert!(
        e.starts_with("error: ledger 310: in the source store: "),
        "{e}"
    );
    let rows = |t: &str| table_rows(&u, None, t).expect("rows");
    assert_eq!(
        rows("ledger_range"),
        vec![
            "[Some(Boolean(false)), Some(BigInt(300))]",
            "[Some(Boolean(true)), Some(BigInt(309))]"
        ]
    );
    assert!(rows("ledgers").iter().all(|r| !r.contains("BigInt(310)")));
    assert!(rows("diff")
        .iter()
        .all(|r| !r.starts_with("[Some(BigInt(310))")));
    assert!(rows("ledger_transactions")
        .iter()
        .all(|r| !r.starts_with("[Some(BigInt(310))")));
    assert!(rows("objects")
        .iter()
        .all(|r| !r.contains("Some(BigInt(310))")));
    clio_verify_passes(&u, &[]);
    drop_keyspace(&u);
}

/// `clio load` SIGKILLed part way resumes: run again, it writes the ledger
/// it was in again and goes on; the keyspace then equals the tests'
/// loader's, row for row.
#[test]
fn a_load_killed_mid_way_resumes() {
    use std::process::{Command, Stdio};
    let host = cluster_or_skip!();
    let shape = shape(1000, 400, 300, 40, 4);
    let chain = random_chain(24, shape);
    let ledgers = nudb_ledgers(&chain);
    let dir = tempfile::tempdir().expect("tempdir");
    let nudb = nudb_store(dir.path(), &ledgers);
    let u = url(&host, "killed");
    let mut child = Command::new(env!("CARGO_BIN_EXE_shamap"))
        .args([
            "clio",
            "load",
            "--db",
            &u,
            "--table-prefix",
            "k_",
            "--ledgers",
            "1000..1399",
            "--from",
        ])
        .arg(&nudb)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start");
    // Killed once a few ledgers are in.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let mut last = 0;
    while last < 1020 {
        assert!(std::time::Instant::now() < deadline, "no progress");
        assert!(
            child.try_wait().expect("wait").is_none(),
            "finished before the kill"
        );
        std::thread::sleep(Duration::from_millis(20));
        last = table_rows(&u, Some("k_"), "ledger_range")
            .unwrap_or_default()
            .iter()
            .find_map(|r| {
                r.strip_prefix("[Some(Boolean(true)), Some(BigInt(")
                    .and_then(|x| x.strip_suffix("))]"))
                    .and_then(|x| x.parse().ok())
            })
            .unwrap_or(0);
    }
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    load_ok(
        &nudb,
        &u,
        &["--table-prefix", "k_", "--ledgers", "1000..1399"],
        &["ledger_range 1000..1399 (was 1000.."],
    );
    let reference = url(&host, "killedref");
    let loader = load(&reference, &chain);
    same_rows(&u, "k_", &reference, "");
    drop_keyspace(&u);
    loader.drop_keyspace().expect("drop");
}

/// A directory of ledger dumps as the source: the repository's ledger
/// 38129 loads into a new keyspace whose rows are the tests' loader's and
/// which verifies; a dump whose header does not match its maps is refused
/// in one line, nothing written.
#[test]
fn load_from_a_directory_of_ledger_dumps() {
    let host = cluster_or_skip!();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = crate::support::data("ledger-full-38129.json");
    std::fs::copy(&file, dir.path().join("38129.json")).expect("copy");
    let u = url(&host, "dumps");
    load_ok(
        dir.path(),
        &u,
        &["--ledgers", "38129"],
        &["wrote 1 ledger ("],
    );
    let reference = url(&host, "dumpsref");
    let loader = load(&reference, &[crate::clio_ledgers::ledger_38129()]);
    for t in CORE_TABLES.iter().filter(|t| **t != "successor") {
        let ours = table_rows(&u, None, t).expect("rows");
        assert!(
            ours == table_rows(&reference, None, t).expect("rows"),
            "table {t}"
        );
    }
    // The successor list is the loader's, plus Clio's book-base rows (the
    // loader leaves them out): each from a key whose last 8 bytes are zero
    // to the first live key after it, an order book's directory.
    let ours = table_rows(&u, None, "successor").expect("rows");
    let theirs = table_rows(&reference, None, "successor").expect("rows");
    assert!(theirs.iter().all(|r| ours.contains(r)));
    let objects: std::collections::BTreeMap<Vec<u8>, Vec<u8>> = crate::clio_ledgers::ledger_38129()
        .objects
        .into_iter()
        .map(|(k, v)| (k.0.to_vec(), v))
        .collect();
    let blobs = |row: &str| -> Vec<Vec<u8>> {
        row.split("Blob([")
            .skip(1)
            .map(|b| {
                b.split("])")
                    .next()
                    .expect("a blob")
                    .split(", ")
                    .map(|x| x.parse().expect("a byte"))
                    .collect()
            })
            .collect()
    };
    let extra: Vec<&String> = ours.iter().filter(|r| !theirs.contains(r)).collect();
    assert!(!extra.is_empty(), "ledger 38129 has order books");
    for row in extra {
        let b = blobs(row);
        let (key, next) = (&b[0], &b[1]);
        assert_eq!(&key[24..], &[0; 8], "{row}");
        assert_eq!(&next[..24], &key[..24], "{row}");
        let first_after = objects.range(key.clone()..).next().map(|(k, _)| k);
        assert_eq!(first_after, Some(next), "{row}");
        assert_eq!(
            &objects[next][..3],
            &[0x11, 0x00, 0x64],
            "a directory: {row}"
        );
    }
    let r = clio_verify_passes(&u, &[]);
    assert_contains(&r.stdout, "261 live keys re-read, all match");
    // A dump whose account_hash is not its state's.
    let text = std::fs::read_to_string(&file).expect("read");
    const ACCOUNT: &str = "2C23D15B6B549123FB351E4B5CDE81C564318EB845449CD43C3EA7953C4DB452";
    assert!(text.contains(ACCOUNT));
    let bad = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        bad.path().join("38129.json"),
        text.replace(ACCOUNT, &format!("{}0", &ACCOUNT[..63])),
    )
    .expect("write");
    let u2 = url(&host, "baddump");
    let e = one_error_line(&clio_load(bad.path(), &u2, &["--ledgers", "38129"]), 1);
    assert_contains(&e, "computed account_hash 2C23D15B");
    assert_contains(&e, "differs from the file's");
    drop_keyspace(&u);
    loader.drop_keyspace().expect("drop");
}

/// A Cassandra node store as the source: a short chain imported into one
/// loads into a Clio keyspace row for row as the tests' loader writes it.
#[test]
fn load_from_a_cassandra_node_store() {
    let host = cluster_or_skip!();
    let shape = shape(50, 8, 60, 6, 2);
    let chain = random_chain(26, shape);
    let ledgers = nudb_ledgers(&chain);
    let node_store = format!("cassandra://{host}/cli_load_nodes_{}", std::process::id());
    import_all(
        &*shamap_store::open(&node_store, shamap_store::Access::Create).expect("node store"),
        &ledgers,
    );
    let u = url(&host, "fromcass");
    load_ok(Path::new(&node_store), &u, &["--ledgers", "50..57"], &[]);
    let reference = url(&host, "fromcassref");
    let loader = load(&reference, &chain);
    same_rows(&u, "", &reference, "");
    for k in [&u, &node_store] {
        drop_keyspace(k);
    }
    loader.drop_keyspace().expect("drop");
}

/// Another writer moving `ledger_range` while `clio load` runs (a Clio
/// writing to the same keyspace) stops the load in one line at the next
/// ledger: the range is moved with Clio's own conditional update.
#[test]
fn a_range_moved_by_another_writer_stops_the_load() {
    use std::process::{Command, Stdio};
    let host = cluster_or_skip!();
    let shape = shape(1000, 400, 300, 40, 4);
    let chain = random_chain(27, shape);
    let dir = tempfile::tempdir().expect("tempdir");
    let nudb = nudb_store(dir.path(), &nudb_ledgers(&chain));
    let u = url(&host, "race");
    let child = Command::new(env!("CARGO_BIN_EXE_shamap"))
        .args([
            "clio",
            "load",
            "--db",
            &u,
            "--ledgers",
            "1000..1399",
            "--from",
        ])
        .arg(&nudb)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start");
    let last = || {
        table_rows(&u, None, "ledger_range")
            .unwrap_or_default()
            .iter()
            .find_map(|r| {
                r.strip_prefix("[Some(Boolean(true)), Some(BigInt(")
                    .and_then(|x| x.strip_suffix("))]"))
                    .and_then(|x| x.parse::<u32>().ok())
            })
            .unwrap_or(0)
    };
    // One session polls and one moves the range, both opened as soon as the
    // load has created the tables (a session opened later, on a busy
    // machine, let the load finish first).
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let (reader, writer) = loop {
        if let (Ok(r), Ok(w)) = (
            shamap_clio::ClioReader::open(&u),
            shamap_clio::ClioLoader::connect(&u),
        ) {
            break (r, w);
        }
        assert!(std::time::Instant::now() < deadline, "no tables");
        std::thread::sleep(Duration::from_millis(20));
    };
    while reader.range().ok().flatten().map_or(0, |(_, l)| l) < 1002 {
        assert!(std::time::Instant::now() < deadline, "no progress");
        std::thread::sleep(Duration::from_millis(2));
    }
    // Moved as Clio moves it: a lightweight transaction on the range it
    // read (a plain write beside the load's transactions may be ordered
    // before them and lost), again until it lands.
    let ks = u.rsplit('/').next().expect("ks");
    loop {
        let now = reader.range().ok().flatten().map_or(0, |(_, l)| l);
        if now == 5000 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the range never moved"
        );
        writer
            .execute(&format!(
                "UPDATE {ks}.ledger_range SET sequence = 5000 WHERE is_latest = true \
                 IF sequence = {now}"
            ))
            .expect("move the range");
    }
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert_contains(&e, "another writer moved it");
    assert_eq!(last(), 5000, "left as the other writer set it");
    drop((reader, writer));
    drop_keyspace(&u);
}
