//! The Clio ledgers the Clio tests load into a cluster. Shared by the Clio
//! crate's and the CLI's tests (the CLI's include this file by path).

use std::path::Path;

use shamap_clio::{ClioLedger, ClioLoader, Tables};
use shamap_ledger::dump;

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

/// Loads `chain` into a fresh keyspace with table prefix `prefix` and
/// `tables` of Clio's schema.
pub fn load_with(url: &str, prefix: &str, tables: Tables, chain: &[ClioLedger]) -> ClioLoader {
    let mut l = ClioLoader::create_fresh_with(url, Some(prefix), tables).expect("create");
    l.load_initial(&chain[0]).expect("first ledger");
    for x in &chain[1..] {
        l.load_next(x).expect("next ledger");
    }
    l
}
