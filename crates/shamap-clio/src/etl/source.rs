//! Ledgers read from a node store and verified before any of their rows
//! is written: the store's reads check every node against its hash (so a
//! map read from a header's root is that header's map, and a node missing
//! or damaged is an error), the header is the one stored under the ledger
//! hash the store lists for its sequence, and each ledger's `parent_hash`
//! must be the hash of the ledger before it.
//!
//! A first ledger's state is read whole (its keys kept: the live-key set
//! that Clio's cache is); each following ledger's changes are the
//! differences between its state map and the previous one's, which skip
//! equal subtrees. From the live-key set before and after, the successor
//! rows Clio's ETL writes (see [`crate::ClioLoader`]'s sources) and its
//! "book base" rows (Clio's `LedgerLoader` and `Transformer::updateCache`).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound::{Excluded, Unbounded};
use std::ops::ControlFlow;

use shamap::xrpl::ledger::LedgerHeader;
use shamap::xrpl::tx::{split_tx_with_meta, transaction_id};
use shamap::{Hash256, Key, MapKind};
use shamap_store::map::ledger;
use shamap_store::{diff_stored, NodeStore, StoredMap};

use super::meta::{affected_accounts, book_base, is_book_dir, AccountId};
use crate::{ClioError, FIRST_KEY, LAST_KEY};

/// What [`Source::each_object`] calls with each object.
pub type ObjectVisitor<'a> = dyn FnMut(&Key, &[u8]) -> Result<(), ClioError> + 'a;

/// A transaction of a source ledger.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceTx {
    /// Its ID (its key in the transaction map).
    pub id: Hash256,
    /// The serialized transaction.
    pub tx: Vec<u8>,
    /// The serialized metadata.
    pub meta: Vec<u8>,
    /// Its index in the ledger (the metadata's `TransactionIndex`).
    pub index: u32,
    /// The accounts it affects (`account_tx`).
    pub accounts: BTreeSet<AccountId>,
}

/// A verified ledger's rows to write.
#[derive(Clone, Debug)]
pub struct SourceLedger {
    /// The header.
    pub header: LedgerHeader,
    /// Its hash.
    pub hash: Hash256,
    /// For a following ledger, each changed key with its new object (empty:
    /// deleted); for a first ledger, empty: its objects are given as they
    /// are read ([`Source::read_with`]), or read again from the store
    /// ([`Source::each_object`]).
    pub changes: Vec<(Key, Vec<u8>)>,
    /// True for a first ledger (no `diff` rows, the whole successor list).
    pub full: bool,
    /// Objects in the state after it.
    pub state_entries: u64,
    /// `successor` rows `(key, next)`: the list's changes, and book bases.
    pub successors: Vec<(Key, Key)>,
    /// The transactions, in map order.
    pub transactions: Vec<SourceTx>,
}

/// Reads and verifies consecutive ledgers of a store.
pub struct Source<'s> {
    store: &'s dyn NodeStore,
    /// The store's ledgers by sequence.
    by_seq: BTreeMap<u32, Vec<Hash256>>,
    /// Live keys after the last ledger read.
    live: BTreeSet<Key>,
    /// The last ledger read: its header and hash.
    prev: Option<(LedgerHeader, Hash256)>,
}

fn source_error(seq: u32, e: impl std::fmt::Display) -> ClioError {
    ClioError::Unusable {
        seq,
        what: format!("in the source store: {e}"),
    }
}

impl<'s> Source<'s> {
    /// The store's ledgers, listed once.
    pub fn new(store: &'s dyn NodeStore) -> Result<Source<'s>, ClioError> {
        let list = ledger::ledgers(store)?;
        let mut by_seq: BTreeMap<u32, Vec<Hash256>> = BTreeMap::new();
        for (s, h) in list.ledgers {
            by_seq.entry(s).or_default().push(h);
        }
        Ok(Source {
            store,
            by_seq,
            live: BTreeSet::new(),
            prev: None,
        })
    }

    /// True once a ledger has been read (or the source resumed).
    pub fn has_read(&self) -> bool {
        self.prev.is_some()
    }

    /// The first and last sequences the store lists.
    pub fn span(&self) -> Option<(u32, u32)> {
        Some((
            *self.by_seq.keys().next()?,
            *self.by_seq.keys().next_back()?,
        ))
    }

    /// Ledger `seq`'s header and hash: the one ledger the store lists
    /// for it, its header read under its hash (verified) and saying `seq`.
    pub fn header(&self, seq: u32) -> Result<(LedgerHeader, Hash256), ClioError> {
        let hash = match self.by_seq.get(&seq).map(Vec::as_slice) {
            Some([h]) => *h,
            Some(many) => {
                return Err(source_error(
                    seq,
                    format!(
                        "{} ledgers have this sequence (a fork kept in the store)",
                        many.len()
                    ),
                ))
            }
            None => {
                let span = match self.span() {
                    Some((a, b)) => format!("it lists ledgers {a} to {b}"),
                    None => "it lists no ledgers".to_owned(),
                };
                return Err(source_error(seq, format!("no such ledger ({span})")));
            }
        };
        let h = ledger::header(self.store, &hash)
            .map_err(|e| source_error(seq, e))?
            .ok_or_else(|| source_error(seq, format!("no ledger header stored under {hash}")))?;
        if h.seq != seq {
            return Err(source_error(
                seq,
                format!("the header stored under {hash} is of ledger {}", h.seq),
            ));
        }
        Ok((h, hash))
    }

    /// Continues after ledger `seq`, already written with hash
    /// `written_hash`: the store's ledger `seq` must be that ledger; its
    /// state's keys become the live set.
    pub fn resume_after(&mut self, seq: u32, written_hash: Hash256) -> Result<(), ClioError> {
        let (h, hash) = self.header(seq)?;
        if hash != written_hash {
            return Err(source_error(
                seq,
                format!("its hash is {hash}, but the keyspace's ledger {seq} is {written_hash}: another chain"),
            ));
        }
        let mut live = BTreeSet::new();
        self.each_object(&h, &mut |k, _| {
            live.insert(*k);
            Ok(())
        })?;
        self.live = live;
        self.prev = Some((h, hash));
        Ok(())
    }

    /// Continues after the store's ledger `seq` (whatever a keyspace holds
    /// for it): its state's keys become the live set.
    pub fn start_after(&mut self, seq: u32) -> Result<(), ClioError> {
        let (_, hash) = self.header(seq)?;
        self.resume_after(seq, hash)
    }

    /// True when `k` is live after the last ledger read.
    pub fn is_live(&self, k: &Key) -> bool {
        self.live.contains(k)
    }

    /// The first live key after `k` (else `FF…FF`) after the last ledger
    /// read.
    pub fn next_live(&self, k: &Key) -> Key {
        self.live
            .range((Excluded(*k), Unbounded))
            .next()
            .copied()
            .unwrap_or(LAST_KEY)
    }

    /// Every object of `header`'s state map, in key order, to `f` (each
    /// node read verified).
    pub fn each_object(
        &self,
        header: &LedgerHeader,
        f: &mut ObjectVisitor<'_>,
    ) -> Result<(), ClioError> {
        let seq = header.seq;
        let map = StoredMap::open(self.store, header.account_hash, MapKind::AccountState)
            .map_err(|e| source_error(seq, e))?;
        for item in map.iter() {
            let (k, d) = item.map_err(|e| source_error(seq, e))?;
            f(&k, &d)?;
        }
        Ok(())
    }

    /// The transactions of `header`'s transaction map, each checked (its
    /// key is its ID) and its metadata read for `account_tx`.
    fn transactions(&self, header: &LedgerHeader) -> Result<Vec<SourceTx>, ClioError> {
        let seq = header.seq;
        let map = StoredMap::open(
            self.store,
            header.transaction_hash,
            MapKind::TransactionWithMeta,
        )
        .map_err(|e| source_error(seq, e))?;
        let mut out = Vec::new();
        for item in map.iter() {
            let (k, d) = item.map_err(|e| source_error(seq, e))?;
            let (tx, meta) = split_tx_with_meta(&d)
                .map_err(|e| source_error(seq, format!("transaction {k}: {e}")))?;
            let id = transaction_id(tx);
            if id.0 != k.0 {
                return Err(source_error(
                    seq,
                    format!("the transaction under key {k} has ID {id}"),
                ));
            }
            let (index, accounts) = affected_accounts(meta)
                .map_err(|e| source_error(seq, format!("transaction {id}'s metadata: {e}")))?;
            out.push(SourceTx {
                id,
                tx: tx.to_vec(),
                meta: meta.to_vec(),
                index,
                accounts,
            });
        }
        out.sort_by_key(|t| t.index);
        Ok(out)
    }

    /// Reads and verifies ledger `seq`: the first one whole (its objects
    /// read here, to check them and keep their keys), or the ledger after
    /// the last one read.
    pub fn read(&mut self, seq: u32) -> Result<SourceLedger, ClioError> {
        self.read_with(seq, &mut |_, _| Ok(()))
    }

    /// [`Source::read`], giving a first ledger's objects to `objects` as
    /// they are read (none of them verified until the whole ledger is:
    /// whatever `objects` keeps waits for this to return `Ok`).
    pub fn read_with(
        &mut self,
        seq: u32,
        objects: &mut ObjectVisitor<'_>,
    ) -> Result<SourceLedger, ClioError> {
        let (header, hash) = self.header(seq)?;
        let transactions = self.transactions(&header)?;
        let Some((prev, prev_hash)) = self.prev else {
            // A first ledger: the whole list, and the book bases whose
            // successor is the book's first directory.
            let mut live = BTreeSet::new();
            let mut successors = Vec::new();
            let mut last = FIRST_KEY;
            self.each_object(&header, &mut |k, d| {
                objects(k, d)?;
                successors.push((last, *k));
                if is_book_dir(d) {
                    let base = book_base(k);
                    if base != *k && last < base {
                        successors.push((base, *k));
                    }
                }
                live.insert(*k);
                last = *k;
                Ok(())
            })?;
            successors.push((last, LAST_KEY));
            let state_entries = live.len() as u64;
            self.live = live;
            self.prev = Some((header, hash));
            return Ok(SourceLedger {
                header,
                hash,
                changes: Vec::new(),
                full: true,
                state_entries,
                successors,
                transactions,
            });
        };
        if prev.seq.checked_add(1) != Some(seq) {
            return Err(source_error(
                seq,
                format!("not the ledger after the last one read ({})", prev.seq),
            ));
        }
        if header.parent_hash != prev_hash {
            return Err(ClioError::Unusable {
                seq,
                what: format!(
                    "its parent_hash {} is not the hash of ledger {} ({prev_hash}): the source's ledgers do not chain",
                    header.parent_hash, prev.seq
                ),
            });
        }
        let old = StoredMap::open(self.store, prev.account_hash, MapKind::AccountState)
            .map_err(|e| source_error(seq, e))?;
        let new = StoredMap::open(self.store, header.account_hash, MapKind::AccountState)
            .map_err(|e| source_error(seq, e))?;
        let mut diffs = Vec::new();
        diff_stored(&old, &new, &mut |d| {
            diffs.push(d);
            ControlFlow::Continue(())
        })
        .map_err(|e| source_error(seq, e))?;
        // Created and deleted keys (a modified key leaves the list as it
        // is), and the book bases whose first directory changes.
        let mut linked: Vec<(Key, bool)> = Vec::new();
        let mut bases = BTreeSet::new();
        for d in &diffs {
            let (created, deleted) = (d.left.is_none(), d.right.is_none());
            if !(created || deleted) {
                continue;
            }
            let was = if deleted { &d.left } else { &d.right };
            if was.as_deref().is_some_and(is_book_dir) {
                let base = book_base(&d.key);
                let first = self.live.range((Excluded(base), Unbounded)).next().copied();
                let moved = match first {
                    Some(f) => (deleted && d.key == f) || (created && d.key < f),
                    None => created,
                };
                if moved {
                    bases.insert(base);
                }
            }
            linked.push((d.key, created));
        }
        for (k, created) in &linked {
            if *created {
                self.live.insert(*k);
            } else {
                self.live.remove(k);
            }
        }
        let pred = |k: &Key| {
            self.live
                .range(..*k)
                .next_back()
                .copied()
                .unwrap_or(FIRST_KEY)
        };
        let succ = |k: &Key| {
            self.live
                .range((Excluded(*k), Unbounded))
                .next()
                .copied()
                .unwrap_or(LAST_KEY)
        };
        let mut successors = Vec::new();
        for (k, created) in &linked {
            if *created {
                successors.push((pred(k), *k));
                successors.push((*k, succ(k)));
            } else {
                successors.push((pred(k), succ(k)));
            }
        }
        for base in bases {
            successors.push((base, succ(&base)));
        }
        let changes = diffs
            .into_iter()
            .map(|d| (d.key, d.right.unwrap_or_default()))
            .collect();
        self.prev = Some((header, hash));
        Ok(SourceLedger {
            header,
            hash,
            changes,
            full: false,
            state_entries: self.live.len() as u64,
            successors,
            transactions,
        })
    }
}
