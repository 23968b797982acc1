//! Real ledgers: every hash recomputed from the shipped dumps.

use shamap::xrpl::tx_with_meta_item;
use shamap::{Hash256, MapKind, ShaMap};
use shamap_ledger::dump::parse;

fn load(name: &str) -> shamap_ledger::dump::LedgerDump {
    let path = format!("{}/../../data/{name}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).expect("ledger file shipped in data/");
    parse(&bytes).expect("real ledger parses")
}

fn tx_root(dump: &shamap_ledger::dump::LedgerDump) -> Hash256 {
    let mut m = ShaMap::new(MapKind::TransactionWithMeta);
    for t in dump.transactions.as_ref().expect("transactions") {
        let (k, d) = tx_with_meta_item(&t.tx, &t.meta).expect("VL-encodable");
        m.insert(k, &d).expect("distinct tx ids");
    }
    m.check().expect("canonical");
    m.root_hash()
}

#[test]
fn mainnet_ledger_38129_state_tx_and_ledger_hashes_match() {
    let dump = load("ledger-38129.json");
    let state = dump.state.as_ref().expect("state");
    assert_eq!(state.len(), 261);
    let mut m = ShaMap::new(MapKind::AccountState);
    for e in state {
        m.insert(e.key, &e.data).expect("distinct keys");
    }
    m.check().expect("canonical");
    let account_hash = m.root_hash();
    assert_eq!(Some(account_hash), dump.header.account_hash);
    let transaction_hash = tx_root(&dump);
    assert_eq!(Some(transaction_hash), dump.header.transaction_hash);
    let header = dump.header.complete_header().expect("full header");
    assert_eq!(Some(header.hash()), dump.header.ledger_hash);
    assert_eq!(
        account_hash.to_hex(),
        "2C23D15B6B549123FB351E4B5CDE81C564318EB845449CD43C3EA7953C4DB452"
    );
    // Any order of insertion gives the same root.
    let mut rev = ShaMap::new(MapKind::AccountState);
    for e in state.iter().rev() {
        rev.insert(e.key, &e.data).expect("distinct");
    }
    assert_eq!(rev.root_hash(), account_hash);
}

#[test]
fn testnet_ledger_42089779_transaction_and_ledger_hashes_match() {
    let dump = load("ledger-testnet-42089779.json");
    assert_eq!(dump.transactions.as_ref().map(Vec::len), Some(10));
    let transaction_hash = tx_root(&dump);
    assert_eq!(Some(transaction_hash), dump.header.transaction_hash);
    assert_eq!(
        transaction_hash.to_hex(),
        "A9BB9AA12E16175C714677CB8A9557D29F3E506C7A1A92997CA57A0DCB3EBEE1"
    );
    let header = dump.header.complete_header().expect("full header");
    assert_eq!(
        header.hash().to_hex(),
        "B5DAF827112ABCA37CE03C01353F62B5F12514EC04A16FCA11A229C450DA9264"
    );
}

#[test]
fn a_changed_state_byte_changes_the_root() {
    let dump = load("ledger-38129.json");
    let mut m = ShaMap::new(MapKind::AccountState);
    for (i, e) in dump.state.as_ref().expect("state").iter().enumerate() {
        let mut d = e.data.clone();
        if i == 100 {
            d[5] ^= 1;
        }
        m.insert(e.key, &d).expect("distinct");
    }
    assert_ne!(Some(m.root_hash()), dump.header.account_hash);
}
