//! The Cassandra cluster of the tests that need one, and the Clio ledgers
//! they load into it. Shared by the store's and the CLI's tests (the CLI's
//! include this file by path).

use std::path::Path;

use shamap_ledger::dump;
use shamap_store::clio::{ClioLedger, ClioLoader};

/// The cluster's `HOST:PORT`, or `None` (with a line saying the calling test
/// skips) when `SHAMAP_CASSANDRA` is not set. The test is named by its
/// thread, which the test harness names after it.
pub fn cluster() -> Option<String> {
    match std::env::var("SHAMAP_CASSANDRA") {
        Ok(v) if !v.trim().is_empty() => Some(v.trim().to_owned()),
        _ => {
            let thread = std::thread::current();
            let test = thread
                .name()
                .and_then(|n| n.rsplit("::").next())
                .unwrap_or("this test");
            eprintln!(
                "SKIPPED {test}: SHAMAP_CASSANDRA is not set (start a node with \
                 `scripts/cassandra.sh start` and set SHAMAP_CASSANDRA=127.0.0.1:9042)"
            );
            None
        }
    }
}

/// Ledger 38129 of the repository (state, transaction and header) as a
/// first ledger to load.
pub fn ledger_38129() -> ClioLedger {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/ledger-full-38129.json");
    let bytes = std::fs::read(path).expect("read ledger 38129");
    let d = dump::parse(&bytes).expect("parse ledger 38129");
    let header = d.header.complete_header().expect("a complete header");
    ClioLedger {
        header: Some(header),
        objects: d
            .state
            .expect("state")
            .into_iter()
            .map(|e| (e.key, e.data))
            .collect(),
        transactions: d
            .transactions
            .expect("transactions")
            .into_iter()
            .map(|t| (t.tx, t.meta))
            .collect(),
    }
}

/// Loads `chain` into a fresh keyspace.
pub fn load(url: &str, chain: &[ClioLedger]) -> ClioLoader {
    let mut l = ClioLoader::create_fresh(url).expect("create the keyspace");
    l.load_initial(&chain[0]).expect("first ledger");
    for x in &chain[1..] {
        l.load_next(x).expect("next ledger");
    }
    l
}
