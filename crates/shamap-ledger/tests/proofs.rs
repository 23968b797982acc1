//! Transactions of the real ledgers in `data/`, read by the dump reader,
//! proven in their ledgers with the engine's proof verification.

use shamap::verify::{verify_tx_in_ledger, ProofError, TxInLedgerProof};
use shamap::xrpl::{transaction_id, tx_with_meta_item};
use shamap::{Hash256, Key, MapKind, ShaMap};
use shamap_ledger::dump;

/// Proves every transaction of a ledger dump and checks it against the
/// dump's ledger hash.
fn prove_every_transaction(file: &str, expect_txs: usize) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/");
    let bytes = std::fs::read(format!("{path}{file}")).expect("shipped data");
    let d = dump::parse(&bytes).expect("parses");
    let header = d.header.complete_header().expect("full header");
    let ledger_hash = d.header.ledger_hash.expect("claimed ledger hash");
    assert_eq!(header.hash(), ledger_hash);
    let txs = d.transactions.expect("transactions");
    assert_eq!(txs.len(), expect_txs);
    let mut map = ShaMap::new(MapKind::TransactionWithMeta);
    for t in &txs {
        let (k, data) = tx_with_meta_item(&t.tx, &t.meta).expect("small blobs");
        map.insert(k, &data).expect("new");
    }
    assert_eq!(map.root_hash(), header.transaction_hash);
    for t in &txs {
        let id = Key::from(transaction_id(&t.tx));
        let proof = TxInLedgerProof {
            header,
            tx_path: map.proof_path(&id).nodes,
        };
        assert_eq!(
            verify_tx_in_ledger(&ledger_hash, &id, &proof),
            Ok((t.tx.clone(), t.meta.clone()))
        );
        // Another ledger hash, a changed header, a flipped byte: rejected.
        assert!(matches!(
            verify_tx_in_ledger(&Hash256([7; 32]), &id, &proof),
            Err(ProofError::HeaderMismatch { .. })
        ));
        let mut changed = proof.clone();
        changed.header.close_time += 1;
        assert!(matches!(
            verify_tx_in_ledger(&ledger_hash, &id, &changed),
            Err(ProofError::HeaderMismatch { .. })
        ));
        let mut flipped = proof.clone();
        let last = flipped.tx_path[0].len() - 40;
        flipped.tx_path[0][last] ^= 1;
        assert!(verify_tx_in_ledger(&ledger_hash, &id, &flipped).is_err());
    }
    // A transaction that is not in the ledger.
    let absent = Key([0xAB; 32]);
    let proof = TxInLedgerProof {
        header,
        tx_path: map.proof_path(&absent).nodes,
    };
    assert_eq!(
        verify_tx_in_ledger(&ledger_hash, &absent, &proof),
        Err(ProofError::NotIncluded { key: absent })
    );
}

#[test]
fn every_transaction_of_mainnet_ledger_38129_is_proven_in_its_ledger() {
    prove_every_transaction("ledger-38129.json", 1);
}

#[test]
fn every_transaction_of_testnet_ledger_42089779_is_proven_in_its_ledger() {
    prove_every_transaction("ledger-testnet-42089779.json", 10);
}
