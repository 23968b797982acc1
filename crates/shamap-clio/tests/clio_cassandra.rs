//! Clio verification against a real Cassandra (feature `cassandra`):
//! ledgers written into Clio's schema by `ClioLoader` (as Clio's ETL does),
//! then verified ledger by ledger. The cluster is named by
//! `SHAMAP_CASSANDRA` (`HOST:PORT`); without it each test says it skips and
//! passes. Each test uses a keyspace of its own, dropped when it passes.

use shamap::{Hash256, Key, MapKind, ShaMap};
use shamap_clio::{
    random_chain, read_verified, ChainShape, ClioReader, ClioVerifier, LedgerCheck, ReadOptions,
    ScanMode, StateRow, Tables,
};
use shamap_store::{BackedOptions, LogStore, MemStore, NodeStore};

use crate::cassandra_cluster::cluster_or_skip;
use crate::clio_ledgers::{ledger_38129, load, load_with, shape};
use crate::seed;

const ACCOUNT_38129: &str = "2C23D15B6B549123FB351E4B5CDE81C564318EB845449CD43C3EA7953C4DB452";
const LEDGER_38129: &str = "E6DB7365949BF9814D76BCC730B01818EB9136A89DB224F3F9F5AAE4569D758E";

fn url(host: &str, name: &str) -> String {
    format!("cassandra://{host}/clio_{name}_{}", std::process::id())
}

/// A node cache that holds everything: the verifications in memory.
fn in_memory() -> BackedOptions {
    BackedOptions {
        budget_bytes: usize::MAX / 8,
        ..BackedOptions::default()
    }
}

/// Verifies ledgers 1 to `last` (the first a full build), printing the
/// time of the first (since `t`) and of the others.
fn measure_verify(v: &mut ClioVerifier<'_, '_>, last: u32, t: std::time::Instant, label: &str) {
    v.prefetch_until(last);
    assert!(v.verify(1).expect("first").is_match());
    eprintln!(
        "MEASURE first ledger full build ({label}) {:?}",
        t.elapsed()
    );
    let t = std::time::Instant::now();
    for s in 2..=last {
        assert!(v.verify(s).expect("v").is_match());
    }
    eprintln!(
        "MEASURE {} following ledgers ({label}) {:?}",
        last - 1,
        t.elapsed()
    );
}

/// Verifies `from..=to` in memory; every check.
fn verify_range(reader: &ClioReader, from: u32, to: u32) -> Vec<LedgerCheck> {
    let store = MemStore::new();
    let opts = in_memory();
    let mut v = ClioVerifier::new(reader, &store, opts, false).expect("verifier");
    v.prefetch_until(to);
    (from..=to)
        .map(|s| v.verify(s).expect("verifies"))
        .collect()
}

#[test]
fn ledger_38129_loads_and_verifies() {
    let host = cluster_or_skip!();
    let u = url(&host, "l38129");
    let loader = load(&u, &[ledger_38129()]);
    let reader = ClioReader::open(&u).expect("open");
    assert_eq!(reader.range().expect("range"), Some((38129, 38129)));
    let checks = verify_range(&reader, 38129, 38129);
    let c = &checks[0];
    assert!(c.is_match(), "{c:?}");
    assert!(c.full_build);
    assert_eq!(c.state_entries, 261);
    assert_eq!(c.transactions, 1);
    assert_eq!(
        c.account_hash.0,
        Hash256::from_hex(ACCOUNT_38129).expect("hex")
    );
    assert_eq!(
        c.ledger_hash.1,
        Hash256::from_hex(LEDGER_38129).expect("hex")
    );
    loader.drop_keyspace().expect("drop");
}

/// A 220-ledger chain verifies from its start and from its middle, each
/// ledger's roots equal to the engine's (the generator's headers), and a
/// `--state` run resumes where the last one stopped.
#[test]
fn generated_chain_verifies_from_start_middle_and_resumes() {
    let host = cluster_or_skip!();
    let s = seed(2028);
    let shape = shape(1000, 220, 300, 9, 3);
    let chain = random_chain(s, shape);
    let u = url(&host, "chain");
    let loader = load(&u, &chain);
    let reader = ClioReader::open(&u).expect("open");
    assert_eq!(reader.range().expect("range"), Some((1000, 1219)));
    let all = verify_range(&reader, 1000, 1219);
    for (c, l) in all.iter().zip(&chain) {
        assert!(c.is_match(), "seed {s}: {c:?}");
        let h = l.header.expect("header");
        assert_eq!(c.account_hash.0, h.account_hash, "seed {s}");
    }
    assert!(all[1..]
        .iter()
        .all(|c| !c.full_build && c.parent_hash.is_some()));
    // The live keys after the last ledger are the loader's.
    let mid = verify_range(&reader, 1110, 1219);
    assert!(mid.iter().all(LedgerCheck::is_match), "seed {s}");
    assert!(mid[0].full_build);
    assert_eq!(
        mid.last().map(|c| c.state_entries),
        Some(loader.live().len() as u64)
    );

    // --state: verify 1000..=1099, then resume to the end.
    let dir = tempfile::tempdir().expect("temp dir");
    {
        let store = LogStore::open(dir.path()).expect("open state");
        let opts = BackedOptions::with_budget_mb(1).pruning();
        let mut v = ClioVerifier::new(&reader, &store, opts, true).expect("verifier");
        assert_eq!(v.last_verified(), None);
        // Read ahead past where this run stops: dropped unread.
        v.prefetch_until(1219);
        for seq in 1000..1100 {
            assert!(v.verify(seq).expect("verifies").is_match());
        }
    }
    {
        let store = LogStore::open(dir.path()).expect("reopen state");
        let rec = read_verified(&store).expect("record").expect("a record");
        assert_eq!(rec.seq, 1099);
        assert_eq!(rec.account_hash, chain[99].header.expect("h").account_hash);
        assert_eq!(rec.entries, all[99].state_entries);
        // Pruned as it went: the last state's nodes and its header, no more.
        let mut marked = hashbrown::HashSet::new();
        shamap_store::map::gc::mark(&store, &rec.account_hash, &mut marked).expect("whole");
        assert_eq!(store.usage().nodes, marked.len() as u64 + 1);
        assert!(store.contains(&rec.ledger_hash).expect("read"));
        let opts = BackedOptions::with_budget_mb(1).pruning();
        let mut v = ClioVerifier::new(&reader, &store, opts, true).expect("verifier");
        assert_eq!(v.last_verified(), Some(1099));
        let c = v.verify(1100).expect("verifies");
        assert!(c.is_match() && !c.full_build, "{c:?}");
        assert_eq!(c.state_entries, all[100].state_entries);
        // Not the next ledger: refused.
        assert!(v.verify(1150).is_err());
    }
    loader.drop_keyspace().expect("drop");
}

/// The state map is the engine's for the same entries (a cross-check of
/// the loader's rows against an independent build).
#[test]
fn state_after_a_chain_is_the_engines_map() {
    let host = cluster_or_skip!();
    let s = seed(77);
    let chain = random_chain(s, shape(5, 30, 100, 20, 2));
    let u = url(&host, "engine");
    let loader = load(&u, &chain);
    let reader = ClioReader::open(&u).expect("open");
    let store = MemStore::new();
    let mut v = ClioVerifier::new(&reader, &store, in_memory(), false).expect("verifier");
    for seq in 5..35 {
        assert!(v.verify(seq).expect("verify").is_match(), "seed {s}");
    }
    let mut engine = ShaMap::new(MapKind::AccountState);
    let mut n = 0;
    v.map()
        .for_each(&mut |k: &Key, d: &[u8]| {
            engine.insert(*k, d).expect("insert");
            n += 1;
            std::ops::ControlFlow::Continue(())
        })
        .expect("scan");
    assert_eq!(n, loader.live().len());
    assert_eq!(
        engine.root_hash(),
        chain.last().and_then(|l| l.header).expect("h").account_hash
    );
    loader.drop_keyspace().expect("drop");
}

/// A measurement, not run by default: verify a generated chain (in memory
/// and with a 16 MiB `--state`) and time the same rows read with the same
/// pipelining and nothing built (the read floor). Sizes from `M_OBJ`,
/// `M_LEDGERS`, `M_CHANGES` (default 20000, 100, 200):
/// `SHAMAP_CASSANDRA=127.0.0.1:9042 cargo test -p shamap-store --features
/// cassandra --test main clio_cassandra::measure -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement: run by hand with --ignored --nocapture"]
fn measure_verify_against_read_floor() {
    let host = std::env::var("SHAMAP_CASSANDRA").expect("env");
    let n: usize = std::env::var("M_OBJ")
        .map(|v| v.parse().expect("n"))
        .unwrap_or(20000);
    let ledgers: usize = std::env::var("M_LEDGERS")
        .map(|v| v.parse().expect("n"))
        .unwrap_or(100);
    let changes: usize = std::env::var("M_CHANGES")
        .map(|v| v.parse().expect("n"))
        .unwrap_or(200);
    let chain = random_chain(1, shape(1, ledgers, n, changes, 2));
    let u = url(&host, "measure");
    let t = std::time::Instant::now();
    let loader = load(&u, &chain);
    eprintln!("MEASURE load {:?}", t.elapsed());
    let reader = ClioReader::open(&u).expect("open");
    let last = ledgers as u32;
    let t = std::time::Instant::now();
    let store = MemStore::new();
    let mut v = ClioVerifier::new(&reader, &store, in_memory(), false).expect("v");
    measure_verify(&mut v, last, t, "memory");
    let t3 = std::time::Instant::now();
    assert!(v.audit().expect("audit").is_empty());
    eprintln!("MEASURE audit {:?}", t3.elapsed());
    let dir = tempfile::tempdir().expect("d");
    let store = LogStore::open(dir.path()).expect("log");
    let t = std::time::Instant::now();
    let mut v =
        ClioVerifier::new(&reader, &store, BackedOptions::with_budget_mb(16), true).expect("v");
    measure_verify(&mut v, last, t, "--state, 16 MiB");
    // Read floor: the same rows read with the same pipelining, nothing built.
    let f = shamap_clio::read_floor(&reader, 1, last).expect("floor");
    eprintln!("MEASURE floor {f:?}");
    loader.drop_keyspace().expect("drop");
}

/// A Clio keyspace on three nodes (replication 3, quorum) verified into a
/// `--state` store while node 1, the driver's first contact point, is
/// SIGKILLed part way: the run completes through the other replicas with
/// every ledger matching, or stops at a ledger with an error (unusable
/// data, never a mismatch); either way the state records only ledgers
/// that verified, and once the node is back a resumed run verifies the
/// rest. Run by `scripts/cassandra-faults.sh`.
#[test]
#[ignore = "needs a 3-node cluster: scripts/cassandra-faults.sh"]
fn clio_verify_through_a_node_kill() {
    let Ok(hosts) = std::env::var("SHAMAP_CASSANDRA_CLUSTER") else {
        eprintln!(
            "SKIPPED clio_verify_through_a_node_kill: SHAMAP_CASSANDRA_CLUSTER is not set \
             (run scripts/cassandra-faults.sh)"
        );
        return;
    };
    let s = seed(2031);
    let shape = shape(5000, 400, 3000, 40, 3);
    let chain = random_chain(s, shape);
    let u = format!(
        "cassandra://{hosts}/clio_faults_{}?replication=3&consistency=quorum",
        std::process::id()
    );
    // The cluster may still be settling after a restart: a coordinator
    // that has not yet seen every node refuses quorum for a few seconds.
    let start = std::time::Instant::now();
    let loader = loop {
        match std::panic::catch_unwind(|| load(&u, &chain)) {
            Ok(l) => break l,
            Err(_) if start.elapsed() < std::time::Duration::from_secs(90) => {
                std::thread::sleep(std::time::Duration::from_secs(3));
            }
            Err(p) => std::panic::resume_unwind(p),
        }
    };
    let last = 5000 + 399;
    let reader = ClioReader::open(&u).expect("open");
    let dir = tempfile::tempdir().expect("temp dir");
    let kill_at = 5000 + 150;
    let mut stopped = None;
    let mut killer = None;
    {
        let store = LogStore::open(dir.path()).expect("open state");
        let opts = BackedOptions::with_budget_mb(4).pruning();
        let mut v = ClioVerifier::new(&reader, &store, opts, true).expect("verifier");
        v.prefetch_until(last);
        for seq in 5000..=last {
            if seq == kill_at {
                killer = Some(std::thread::spawn(|| {
                    crate::cassandra_cluster::cluster_script(&["kill", "1"]);
                }));
            }
            match v.verify(seq) {
                Ok(c) => assert!(
                    c.is_match(),
                    "seed {s}: ledger {seq} with node 1 killed: {c:?}"
                ),
                Err(e) => {
                    eprintln!("FAULTS clio verify stopped at ledger {seq}: {e}");
                    stopped = Some(seq);
                    break;
                }
            }
        }
        killer.take().expect("killed").join().expect("killer");
        let rec = read_verified(&store).expect("record").expect("a record");
        let verified_to = stopped.map_or(last, |k| k - 1);
        assert_eq!(
            rec.seq, verified_to,
            "seed {s}: the state records what verified"
        );
        let h = chain[(verified_to - 5000) as usize].header.expect("header");
        assert_eq!(rec.account_hash, h.account_hash, "seed {s}");
        eprintln!(
            "FAULTS clio verify with node 1 SIGKILLed at ledger {kill_at}: {}",
            match stopped {
                None => format!("completed through the other replicas, {last} verified"),
                Some(k) => format!("stopped at {k} with an error, {} recorded", k - 1),
            }
        );
    }
    crate::cassandra_cluster::cluster_script(&["start", "--nodes", "3"]);
    if stopped.is_some() {
        let reader = ClioReader::open(&u).expect("reopen");
        let store = LogStore::open(dir.path()).expect("reopen state");
        let opts = BackedOptions::with_budget_mb(4).pruning();
        let mut v = ClioVerifier::new(&reader, &store, opts, true).expect("verifier");
        let from = v.last_verified().expect("resumes") + 1;
        v.prefetch_until(last);
        for seq in from..=last {
            let c = v.verify(seq).expect("verifies once node 1 is back");
            assert!(c.is_match(), "seed {s}: {c:?}");
        }
        eprintln!("FAULTS clio verify resumed at {from} after the restart: {last} verified");
    }
    loader.drop_keyspace().expect("drop");
}

/// A prefixed keyspace with Clio's whole schema: read with the prefix
/// (option or URL), every ledger verifies and the extra tables are named;
/// read without it, the error lists what is there.
#[test]
fn a_prefixed_full_schema_keyspace_reads_and_verifies() {
    let host = cluster_or_skip!();
    let chain = random_chain(seed(404), shape(7, 15, 60, 5, 2));
    let u = url(&host, "prefix");
    let loader = load_with(&u, "p9_", Tables::Full, &chain);
    assert_eq!(
        loader.table("objects"),
        format!("{}.p9_objects", u.rsplit('/').next().expect("ks"))
    );
    let opts = ReadOptions {
        table_prefix: Some("p9_".to_owned()),
        ..ReadOptions::default()
    };
    for reader in [
        ClioReader::open_with(&u, &opts).expect("open"),
        ClioReader::open(&format!("{u}?table_prefix=p9_")).expect("open"),
    ] {
        assert_eq!(reader.table_prefix(), "p9_");
        assert_eq!(reader.range().expect("range"), Some((7, 21)));
        assert_eq!(reader.not_checked().len(), 10);
        assert!(reader.not_checked().contains(&"p9_account_tx".to_owned()));
        assert!(reader
            .not_checked()
            .contains(&"p9_account_mptoken_issuance_transactions".to_owned()));
        assert!(verify_range(&reader, 7, 21)
            .iter()
            .all(LedgerCheck::is_match));
    }
    let e = ClioReader::open(&u).expect_err("no tables without the prefix");
    assert!(e.to_string().contains("p9_ledger_range"), "{e}");
    loader.drop_keyspace().expect("drop");
}

/// The live objects at `seq` as a scan lists them (deletions left out),
/// sorted.
fn live_by_scan(reader: &ClioReader, seq: u32) -> Vec<(Vec<u8>, i64, Vec<u8>)> {
    let mut rows = Vec::new();
    reader
        .scan_state(seq, true, false, &mut |r| {
            if let StateRow::Object(k, s, o) = r {
                if !o.is_empty() {
                    rows.push((k, s, o));
                }
            }
            Ok(())
        })
        .expect("scan");
    rows.sort();
    rows
}

/// Every scan mode lists the same live state at every ledger tried, each
/// key's newest row at or below it; a verification from the middle built
/// by each mode matches, and each audit finds a stray object row.
#[test]
fn every_scan_mode_lists_the_same_state() {
    let host = cluster_or_skip!();
    let s = seed(515);
    let chain = random_chain(s, shape(40, 25, 150, 12, 2));
    let u = url(&host, "scans");
    let loader = load(&u, &chain);
    let open = |scan: ScanMode| {
        ClioReader::open_with(
            &u,
            &ReadOptions {
                scan,
                ..ReadOptions::default()
            },
        )
        .expect("open")
    };
    let modes = [ScanMode::Partition, ScanMode::Objects, ScanMode::Successor];
    let readers: Vec<ClioReader> = modes.iter().map(|m| open(*m)).collect();
    for (r, m) in readers.iter().zip(modes) {
        assert_eq!(r.scan_mode(), m);
        assert_eq!(r.scan_note(), None);
    }
    // Cassandra runs the partition scan: auto takes it.
    assert_eq!(open(ScanMode::Auto).scan_mode(), ScanMode::Partition);
    for seq in [40, 41, 52, 64] {
        let want = live_by_scan(&readers[0], seq);
        assert!(!want.is_empty());
        for r in &readers[1..] {
            assert_eq!(
                live_by_scan(r, seq),
                want,
                "seed {s}, ledger {seq}, {:?}",
                r.scan_mode()
            );
        }
    }
    // The live keys at the end are the loader's.
    assert_eq!(live_by_scan(&readers[2], 64).len(), loader.live().len());
    for r in &readers {
        let checks = verify_range(r, 52, 64);
        assert!(checks[0].full_build);
        assert!(
            checks.iter().all(LedgerCheck::is_match),
            "seed {s}: {:?}",
            r.scan_mode()
        );
    }
    // A row written without its diff row, at ledger 60, of a key live then:
    // every mode's audit names it.
    let key = *loader.live().iter().next().expect("a live key");
    let hex: String = key.0.iter().map(|b| format!("{b:02x}")).collect();
    loader
        .execute(&format!(
            "INSERT INTO {} (key, sequence, object) VALUES (0x{hex}, 60, 0x0102)",
            loader.table("objects")
        ))
        .expect("stray row");
    for r in &readers {
        let store = MemStore::new();
        let opts = in_memory();
        let mut v = ClioVerifier::new(r, &store, opts, false).expect("verifier");
        v.prefetch_until(59);
        for seq in 50..=59 {
            assert!(v.verify(seq).expect("verify").is_match());
        }
        let _ = v.verify(60).expect("verify");
        let found = v.audit().expect("audit");
        assert!(
            found.iter().any(|f| f.key == key && f.seq == 60),
            "{:?}: {found:?}",
            r.scan_mode()
        );
    }
    loader.drop_keyspace().expect("drop");
}

/// Writes the `clio load` benchmark's source store (not run by default):
/// a generated chain (`M_OBJ` objects, `M_LEDGERS` ledgers of `M_CHANGES`
/// changes; default 100000, 100, 1000) as rippled's NuDB store with its
/// `ledger.db`, in `M_STORE` (`scripts/clio-load-bench.sh` runs it).
#[test]
#[ignore = "writes the load benchmark's store: run by scripts/clio-load-bench.sh"]
fn write_load_bench_store() {
    let dir = std::env::var("M_STORE").expect("M_STORE");
    let env = |k: &str, d: usize| std::env::var(k).map_or(d, |v| v.parse().expect("a number"));
    let chain = random_chain(
        1,
        ChainShape {
            first_seq: 1,
            ledgers: env("M_LEDGERS", 100),
            initial_objects: env("M_OBJ", 100_000),
            changes: env("M_CHANGES", 1000),
            max_transactions: 4,
        },
    );
    let ledgers = crate::clio_ledgers::nudb_ledgers(&chain);
    drop(chain);
    let db = crate::clio_ledgers::nudb_store(std::path::Path::new(&dir), &ledgers);
    eprintln!("wrote {} ledgers into {}", ledgers.len(), db.display());
}
