//! Generated ledger chains for tests and benchmarks of Clio verification:
//! a first ledger of random objects, then ledgers each of a random mix of
//! creates, modifies and deletes and a few transactions, headers chained
//! (each `parent_hash` the previous ledger's hash). The roots in the
//! headers come from the in-memory engine ([`ShaMap`]), independently of
//! the backed map the verifier uses.

use std::collections::HashSet;

use shamap::xrpl::ledger::LedgerHeader;
use shamap::xrpl::tx::tx_with_meta_item;
use shamap::{Hash256, Key, MapKind, ShaMap};

use super::loader::ClioLedger;

/// SplitMix64: a small, seedable, well-mixed generator (test data only).
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// `min` to `min + spread - 1` random bytes.
    fn bytes(&mut self, min: usize, spread: usize) -> Vec<u8> {
        let n = min + self.below(spread);
        (0..n).map(|_| self.next() as u8).collect()
    }

    fn key(&mut self) -> Key {
        let mut k = [0u8; 32];
        for c in k.chunks_mut(8) {
            c.copy_from_slice(&self.next().to_be_bytes());
        }
        Key(k)
    }
}

/// The shape of a generated chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainShape {
    /// The first ledger's sequence.
    pub first_seq: u32,
    /// Ledgers in all, the first included.
    pub ledgers: usize,
    /// Objects of the first ledger.
    pub initial_objects: usize,
    /// Changed keys per following ledger (creates, modifies and deletes).
    pub changes: usize,
    /// Most transactions per ledger.
    pub max_transactions: usize,
}

/// A chain of `shape.ledgers` ledgers from `seed`, ready for
/// [`super::ClioLoader::load_initial`] (the first) and
/// [`super::ClioLoader::load_next`] (the others).
pub fn random_chain(seed: u64, shape: ChainShape) -> Vec<ClioLedger> {
    let mut rng = Mix(seed);
    let mut state = ShaMap::new(MapKind::AccountState);
    let mut live: Vec<Key> = Vec::new();
    let mut out = Vec::with_capacity(shape.ledgers);
    let mut parent = Hash256::ZERO;
    for i in 0..shape.ledgers {
        let seq = shape.first_seq + i as u32;
        let mut objects = Vec::new();
        if i == 0 {
            for _ in 0..shape.initial_objects {
                let k = rng.key();
                let v = rng.bytes(12, 100);
                if state.upsert(k, &v).unwrap_or(false) {
                    live.push(k);
                    objects.push((k, v));
                }
            }
        } else {
            let mut touched = HashSet::new();
            for _ in 0..shape.changes {
                match rng.below(3) {
                    // create
                    0 => {
                        let k = rng.key();
                        let v = rng.bytes(12, 100);
                        if touched.insert(k) && state.upsert(k, &v).unwrap_or(false) {
                            live.push(k);
                            objects.push((k, v));
                        }
                    }
                    // modify
                    1 if !live.is_empty() => {
                        let k = live[rng.below(live.len())];
                        let v = rng.bytes(12, 100);
                        if touched.insert(k) && state.upsert(k, &v).is_ok() {
                            objects.push((k, v));
                        }
                    }
                    // delete (keeping a few objects)
                    _ if live.len() > 4 => {
                        let at = rng.below(live.len());
                        let k = live[at];
                        if touched.insert(k) && state.remove(&k).is_ok() {
                            live.swap_remove(at);
                            objects.push((k, Vec::new()));
                        }
                    }
                    _ => {}
                }
            }
        }
        let mut txs = ShaMap::new(MapKind::TransactionWithMeta);
        let mut transactions = Vec::new();
        for i in 0..rng.below(shape.max_transactions + 1) {
            let tx = rng.bytes(40, 200);
            let meta = metadata(i as u32, &rng.bytes(20, 200));
            if let Ok((k, data)) = tx_with_meta_item(&tx, &meta) {
                if txs.insert(k, &data).is_ok() {
                    transactions.push((tx, meta));
                }
            }
        }
        let close = 800_000_000 + seq * 4;
        let header = LedgerHeader {
            seq,
            total_coins: 99_999_999_999_000_000 - u64::from(seq),
            parent_hash: parent,
            transaction_hash: txs.root_hash(),
            account_hash: state.root_hash(),
            parent_close_time: close - 4,
            close_time: close,
            close_time_resolution: 10,
            close_flags: 0,
        };
        parent = header.hash();
        out.push(ClioLedger {
            header: Some(header),
            objects,
            transactions,
        });
    }
    out
}

/// Well-formed transaction metadata (rippled's serialization): the
/// `TransactionIndex`, a `ModifiedNode` of an `AccountRoot` per 20 bytes of
/// `accounts` (at most 3) whose `FinalFields` hold that `Account`, and the
/// result `tesSUCCESS`; so that Clio's ETL, which reads the affected
/// accounts from the metadata, can write the chain's `account_tx` rows.
pub fn metadata(index: u32, accounts: &[u8]) -> Vec<u8> {
    let mut m = vec![0x20, 0x1C];
    m.extend_from_slice(&index.to_be_bytes());
    m.push(0xF8);
    for a in accounts.chunks_exact(20).take(3) {
        m.extend_from_slice(&[0xE5, 0x11, 0x00, 0x61, 0xE7, 0x81, 0x14]);
        m.extend_from_slice(a);
        m.extend_from_slice(&[0xE1, 0xE1]);
    }
    m.extend_from_slice(&[0xF1, 0x03, 0x10, 0x00]);
    m
}
