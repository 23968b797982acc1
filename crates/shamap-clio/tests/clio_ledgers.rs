//! The Clio ledgers the Clio tests load into a cluster. Shared by the Clio
//! crate's and the CLI's tests (the CLI's include this file by path).

use std::path::{Path, PathBuf};

use shamap::{MapKind, ShaMap};
use shamap_nudb_writer::{write_ledger_db, write_ledgers, Ledger, NudbOptions};

use shamap_clio::{ChainShape, ClioLedger, ClioLoader, Tables};
use shamap_ledger::dump;

/// The shape of a generated chain: its first ledger's sequence, how many
/// ledgers, the first ledger's objects, the keys changed in each next one,
/// and the most transactions of a ledger.
pub const fn shape(
    first_seq: u32,
    ledgers: usize,
    initial_objects: usize,
    changes: usize,
    max_transactions: usize,
) -> ChainShape {
    ChainShape {
        first_seq,
        ledgers,
        initial_objects,
        changes,
        max_transactions,
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

/// The chain's ledgers as the NuDB test writer takes them: header and both
/// maps, the state built up change by change.
pub fn nudb_ledgers(chain: &[ClioLedger]) -> Vec<Ledger> {
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
pub fn nudb_store(dir: &Path, ledgers: &[Ledger]) -> PathBuf {
    let db = dir.join("nudb");
    write_ledgers(&db, NudbOptions::default(), ledgers).expect("write");
    let headers: Vec<_> = ledgers.iter().map(|l| l.header).collect();
    write_ledger_db(&db.join("ledger.db"), &headers).expect("ledger.db");
    db
}
