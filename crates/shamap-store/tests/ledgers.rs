//! The shipped real ledgers: import, read back, header stored by hash.

use shamap::xrpl::tx_with_meta_item;
use shamap::xrpl::LedgerHeader;
use shamap::{Hash256, MapKind, ShaMap, Snapshot};
use shamap_ledger::dump;
use shamap_store::{
    import_ledger, inner_codec, meta, root_kind, verify_all, MemStore, Node, NodeStore,
    NodeStoreExt, NodeType, RootKind, StoredMap,
};

use crate::support::data;

const ACCOUNT_38129: &str = "2C23D15B6B549123FB351E4B5CDE81C564318EB845449CD43C3EA7953C4DB452";
const TX_38129: &str = "DB83BF807416C5B3499A73130F843CF615AB8E797D79FE7D330ADF1BFA93951A";
pub(crate) const LEDGER_38129: &str =
    "E6DB7365949BF9814D76BCC730B01818EB9136A89DB224F3F9F5AAE4569D758E";

/// The shipped ledger 38129: its state and transaction maps, hashed, and
/// its header with their roots.
pub(crate) fn ledger_38129() -> (Snapshot, Snapshot, LedgerHeader) {
    let bytes = std::fs::read(data("ledger-38129.json")).expect("shipped ledger");
    let d = dump::parse(&bytes).expect("parses");
    let mut state = ShaMap::new(MapKind::AccountState);
    for e in d.state.as_deref().expect("state") {
        state.insert(e.key, &e.data).expect("insert");
    }
    let mut tx = ShaMap::new(MapKind::TransactionWithMeta);
    for t in d.transactions.as_deref().expect("txs") {
        let (k, v) = tx_with_meta_item(&t.tx, &t.meta).expect("tx");
        tx.insert(k, &v).expect("insert");
    }
    let (s, t) = (state.snapshot(), tx.snapshot());
    let header = d
        .header
        .header_with_roots(Some(s.root_hash()), Some(t.root_hash()))
        .expect("complete header");
    (s, t, header)
}

/// A header that names other roots than the maps given is refused, naming
/// the root that differs (the state root first), and nothing is stored.
#[test]
fn a_header_naming_other_roots_is_refused_and_nothing_is_stored() {
    let (s, t, header) = ledger_38129();
    let other = Hash256([7; 32]);
    for (wrong, differs) in [
        (
            LedgerHeader {
                account_hash: other,
                ..header
            },
            "another account_hash",
        ),
        (
            LedgerHeader {
                transaction_hash: other,
                ..header
            },
            "another transaction_hash",
        ),
        (
            LedgerHeader {
                account_hash: other,
                transaction_hash: other,
                ..header
            },
            "another account_hash",
        ),
    ] {
        let store = MemStore::new();
        let e = import_ledger(&store, "l", Some(&s), Some(&t), Some(&wrong), &mut |_| {})
            .expect_err("the header names other roots");
        let line = e.to_string();
        assert!(line.contains(differs), "{line}");
        assert!(line.contains(&wrong.hash().to_hex()), "{line}");
        assert_eq!(crate::support::count(&store), 0, "{line}");
        assert!(meta::retained(&store).expect("meta").is_empty());
    }
}

#[test]
fn ledger_38129_imports_with_rippled_hashes() {
    let (s, t, header) = ledger_38129();
    let store = MemStore::new();
    let r = import_ledger(
        &store,
        "ledger 38129",
        Some(&s),
        Some(&t),
        Some(&header),
        &mut |_| {},
    )
    .expect("import");
    assert_eq!(r.account_hash.to_hex(), ACCOUNT_38129);
    assert_eq!(r.transaction_hash.to_hex(), TX_38129);
    assert_eq!(
        r.ledger_hash.map(|h| h.to_hex()).as_deref(),
        Some(LEDGER_38129)
    );

    let ledger = Hash256::from_hex(LEDGER_38129).expect("hex");
    let obj = store.load(&ledger).expect("header stored");
    assert_eq!(obj.node_type(), Some(NodeType::Ledger));
    assert_eq!(obj.value().len(), 9 + 4 + 118);
    assert_eq!(&obj.value()[..9], &[0, 0, 0, 0, 0, 0, 0, 0, 1]);
    assert_eq!(obj.parse().expect("parses"), Node::Ledger(header));
    assert_eq!(
        root_kind(&store, &ledger).expect("kind"),
        RootKind::Ledger(header)
    );
    assert_eq!(
        root_kind(&store, &t.root_hash()).expect("kind"),
        RootKind::Map(MapKind::TransactionWithMeta)
    );
    let report = verify_all(&store, &ledger).expect("verifies");
    assert_eq!(report.headers, 1);
    assert_eq!(report.leaves, 262);
    assert_eq!(
        meta::latest(&store).expect("meta").map(|r| r.hash),
        Some(ledger)
    );

    let sm = StoredMap::open(&store, s.root_hash(), MapKind::AccountState).expect("open");
    for (k, v) in s.iter() {
        assert_eq!(sm.get(k).expect("read").as_deref(), Some(v));
    }
    // Inner nodes take less room in the sparse inner encoding.
    let (mut plain, mut small) = (0usize, 0usize);
    store
        .for_each_value(&mut |_, v| {
            if let Some(n) = inner_codec::inner_len(v) {
                plain += v.len();
                small += n;
            }
            std::ops::ControlFlow::Continue(())
        })
        .expect("iterate");
    assert!(small * 2 < plain, "{small} vs {plain}");
    // Importing again writes nothing new.
    let again = import_ledger(
        &store,
        "again",
        Some(&s),
        Some(&t),
        Some(&header),
        &mut |_| {},
    )
    .expect("import");
    assert_eq!(again.stats.written, 0);
    assert_eq!(meta::retained(&store).expect("meta").len(), 1);
}
