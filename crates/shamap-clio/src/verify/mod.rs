//! Verifying a Clio database ledger by ledger.
//!
//! The first ledger of a run is built whole: the state at its sequence is
//! read by token-range scans of `objects` and `successor` (each key's
//! newest rows at or below it), put in key order through scratch files
//! (`build`), and the successor list is walked from `00…00` to `FF…FF` as
//! a merge of the sorted successor rows with the sorted objects: each
//! listed key's object goes into the state map, in key order. Each following
//! ledger applies only its `diff` keys (their objects at that sequence;
//! empty = removed) and rehashes. The transaction map is built from
//! `ledger_transactions` and `transactions` (rippled's tx+meta leaves). The
//! header's `account_hash` and `transaction_hash` are compared with the
//! computed roots, its stored ledger hash with the hash of its fields, and
//! its `parent_hash` with the previous ledger's hash.
//!
//! Clio's own bookkeeping is checked on the way, each disagreement a
//! [`Problem`] naming the key: a listed key without a live object, a list
//! that stops or goes back, a live object the list leaves out, a diff key
//! whose newest object is not of that ledger, and, after each ledger's
//! changes, the successor rows around every created and deleted key
//! against the next live key in the map, and the `ledger_hashes` row of
//! each ledger's hash (it must name the ledger).
//!
//! Reads are pipelined: given the last ledger of the run
//! ([`ClioVerifier::prefetch_until`]), the rows of the next
//! [`PREFETCH_LEDGERS`] ledgers (header, diff, transaction list, the diff
//! keys' objects, the transactions) are read in the background while a
//! ledger is applied, hashed and recorded. A ledger's successor rows are
//! read one ledger early: which rows, and the next live key each must
//! name, follow from the state before the ledger and the keys it creates
//! and deletes, so as soon as a ledger's changes are applied the next
//! ledger's diff is planned against the new state and its successor rows
//! are read while this ledger is hashed, checked and committed.
//!
//! The state map is a [`BackedMap`]: on a node log (`--state`), committed
//! after each ledger that matched, with [`VERIFIED_RECORD`] naming the
//! ledger, so a later run resumes after it; or on a [`shamap_store::MemStore`]
//! with a budget that never spills, in memory only.

use std::collections::VecDeque;

use shamap::{Hash256, Key, MapKind};

use shamap_store::NodeStore;
use shamap_store::{BackedMap, BackedOptions};

use crate::reader::{Background, ClioReader, LedgerRows, Prefetch};
use crate::{ClioError, ClioHeader};

mod audit;
mod check;
mod diff_plan;
mod full_build;
mod record;
mod tx_map;

pub use check::{AuditFinding, LedgerCheck, Pair, Problem};
use diff_plan::{check_successors, DiffPlan};
pub use record::{read_verified, record_verified, Verified, STATE_ROOT_NAME, VERIFIED_RECORD};
use tx_map::tx_map;

/// Ledgers whose rows are read ahead of the one being verified.
pub const PREFETCH_LEDGERS: usize = 4;
/// Most disagreements of a full build's successor list reported one by
/// one; the rest are counted in one more.
const MAX_LIST_PROBLEMS: usize = 1000;

/// Verifies consecutive ledgers of one Clio keyspace.
pub struct ClioVerifier<'r, 's> {
    reader: &'r ClioReader,
    store: &'s dyn NodeStore,
    map: BackedMap<'s>,
    persist: bool,
    /// The store keeps the last verified ledger only (the map prunes).
    last_only: bool,
    /// The last ledger that matched: sequence and hash.
    prev: Option<(u32, Hash256)>,
    entries: u64,
    /// Set once a ledger did not match: the map holds unverified changes.
    spent: bool,
    /// Ledgers being read ahead, in order.
    ahead: VecDeque<Prefetch>,
    /// The last ledger to read ahead.
    horizon: Option<u32>,
    /// The next ledger's rows, and its diff planned against the state
    /// after the last one applied ([`ClioVerifier::plan_next`]).
    planned: Option<Planned>,
}

/// A ledger's rows taken ahead, with its diff planned and its successor
/// rows being read ([`ClioVerifier::plan_next`]).
struct Planned {
    seq: u32,
    /// Its rows, `objects` moved into the plan.
    rows: LedgerRows,
    /// The plan, or the error planning met (reported in the ledger's turn).
    plan: Result<PlannedDiff, ClioError>,
}

/// A diff planned ahead: the plan, the disagreements found on the way,
/// and its successor rows being read.
struct PlannedDiff {
    plan: DiffPlan,
    problems: Vec<Problem>,
    successors: Background<Vec<Option<Vec<u8>>>>,
}

impl std::fmt::Debug for ClioVerifier<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClioVerifier")
            .field("reader", &self.reader)
            .field("prev", &self.prev)
            .finish_non_exhaustive()
    }
}

impl<'r, 's> ClioVerifier<'r, 's> {
    /// A verifier whose state lives in `store` under `opts`' budget. With
    /// `persist`, it resumes after the ledger [`VERIFIED_RECORD`] names
    /// (refusing a record of another keyspace) and records each ledger
    /// that matches; without, the map stays in memory (give a
    /// [`shamap_store::MemStore`] and a budget that never spills). With `opts`
    /// pruning ([`BackedOptions::prune_replaced`]), the store keeps only
    /// the last verified ledger: its state and its header.
    pub fn new(
        reader: &'r ClioReader,
        store: &'s dyn NodeStore,
        opts: BackedOptions,
        persist: bool,
    ) -> Result<ClioVerifier<'r, 's>, ClioError> {
        let resume = if persist { read_verified(store)? } else { None };
        if let Some(v) = &resume {
            if v.keyspace != reader.keyspace() {
                return Err(ClioError::Database {
                    location: store.location(),
                    what: format!(
                        "this state was verified from keyspace '{}', not '{}'",
                        v.keyspace,
                        reader.keyspace()
                    ),
                });
            }
        }
        let root = resume.as_ref().map_or(Hash256::ZERO, |v| v.account_hash);
        let map = BackedMap::open(store, root, MapKind::AccountState, opts)?;
        let entries = resume.as_ref().map_or(0, |v| v.entries);
        Ok(ClioVerifier {
            reader,
            store,
            map,
            persist,
            last_only: opts.prune_replaced,
            prev: resume.map(|v| (v.seq, v.ledger_hash)),
            entries,
            spent: false,
            ahead: VecDeque::new(),
            horizon: None,
            planned: None,
        })
    }

    /// Reads ahead up to ledger `last`: while a ledger is verified, the
    /// rows of the next [`PREFETCH_LEDGERS`] (at most `last`) are read in
    /// the background. Raise it as the run grows (`--follow`).
    pub fn prefetch_until(&mut self, last: u32) {
        self.horizon = Some(last);
    }

    /// Ledger `seq`'s rows: read ahead, or read now.
    fn rows(&mut self, seq: u32, with_objects: bool) -> Result<LedgerRows, ClioError> {
        while self.ahead.front().is_some_and(|p| p.seq() < seq) {
            self.ahead.pop_front();
        }
        let rows = match self.ahead.pop_front() {
            Some(p) if p.seq() == seq && with_objects => self.reader.take(p)?,
            _ => {
                self.ahead.clear();
                self.read_ahead(seq);
                self.reader.fetch(seq, with_objects)?
            }
        };
        self.read_ahead(seq);
        Ok(rows)
    }

    /// Starts reading the ledgers after `seq` up to the horizon, keeping
    /// [`PREFETCH_LEDGERS`] in flight.
    fn read_ahead(&mut self, seq: u32) {
        let Some(last) = self.horizon else { return };
        let mut next = self
            .ahead
            .back()
            .map_or(seq.checked_add(1), |p| p.seq().checked_add(1));
        while self.ahead.len() < PREFETCH_LEDGERS {
            match next {
                Some(n) if n <= last => {
                    self.ahead.push_back(self.reader.prefetch(n));
                    next = n.checked_add(1);
                }
                _ => break,
            }
        }
    }

    /// The last ledger verified (in this run, or recorded by an earlier one).
    pub fn last_verified(&self) -> Option<u32> {
        self.prev.map(|(s, _)| s)
    }

    /// Live entries in the state map.
    pub fn map_entries(&self) -> u64 {
        self.entries
    }

    /// The state map (after the last ledger checked).
    pub fn map(&self) -> &BackedMap<'s> {
        &self.map
    }

    /// Checks ledger `seq`: built whole when it is the first of the run,
    /// otherwise it must follow the last verified ledger. A ledger that
    /// matches is recorded (with `persist`); after one that does not, the
    /// verifier refuses to go on (its map holds unverified changes).
    pub fn verify(&mut self, seq: u32) -> Result<LedgerCheck, ClioError> {
        if self.spent {
            return Err(ClioError::unusable(
                seq,
                "the previous ledger did not verify: its successors cannot be checked",
            ));
        }
        let full_build = self.prev.is_none();
        let follows = self
            .prev
            .is_some_and(|(p, _)| p.checked_add(1) == Some(seq));
        let (rows, planned) = match self.planned.take() {
            Some(p) if p.seq == seq && follows => (p.rows, Some(p.plan)),
            _ => (self.rows(seq, !full_build)?, None),
        };
        let blob = rows.header.ok_or_else(|| {
            ClioError::unusable(
                seq,
                "no row in table ledgers (a ledger missing from the range)",
            )
        })?;
        let h = ClioHeader::parse(&blob).ok_or_else(|| {
            ClioError::unusable(
                seq,
                format!(
                    "its header row is {} bytes, not {} (118-byte header and 32-byte hash)",
                    blob.len(),
                    super::HEADER_BLOB_LEN
                ),
            )
        })?;
        if h.header.seq != seq {
            return Err(ClioError::unusable(
                seq,
                format!("its header row holds ledger {}", h.header.seq),
            ));
        }
        let mut problems = Vec::new();
        // (A stored hash that is not the header's is reported as such.)
        let hash_row = (h.header.hash() == h.stored_hash)
            .then(|| hash_row_problem(seq, rows.hash_seq))
            .flatten();
        if let Some(what) = hash_row {
            problems.push(Problem {
                key: Key(h.stored_hash.0),
                what,
            });
        }
        let mut hashes = Vec::new();
        for raw in &rows.tx_hashes {
            let h = Hash256::from_slice(raw).ok_or_else(|| {
                ClioError::unusable(
                    seq,
                    format!("a ledger_transactions hash is {} bytes, not 32", raw.len()),
                )
            })?;
            hashes.push(h);
        }
        let tx_rows = rows.transactions;
        let mut successors = None;
        let diff_keys = match self.prev {
            None => {
                self.build_full(seq, &mut problems)?;
                self.plan_next(seq);
                Vec::new()
            }
            Some((p, _)) if p.checked_add(1) == Some(seq) => {
                let planned = match planned {
                    Some(p) => p?,
                    None => self.plan_diff_now(seq, &rows.diff, &rows.keys, rows.objects)?,
                };
                problems.extend(planned.problems);
                successors = Some((planned.successors, planned.plan.successors));
                self.apply_changes(planned.plan.changes)?;
                // The next ledger's successor rows are read from here on,
                // beside this ledger's hashing and commit.
                self.plan_next(seq);
                rows.keys
            }
            Some((p, _)) => {
                return Err(ClioError::unusable(
                    seq,
                    format!("not the ledger after the last verified one ({p})"),
                ))
            }
        };
        let (tx_root, transactions) = tx_map(seq, &hashes, tx_rows, &mut problems)?;
        let account_root = self.map.root_hash();
        if let Some((read, want)) = successors {
            let found = self.reader.wait(read)?;
            check_successors(seq, &want, found, &mut problems);
        }
        let check = LedgerCheck {
            seq,
            full_build,
            state_entries: self.entries,
            diff_keys,
            transactions,
            account_hash: (account_root, h.header.account_hash),
            transaction_hash: (tx_root, h.header.transaction_hash),
            ledger_hash: (h.header.hash(), h.stored_hash),
            parent_hash: self.prev.map(|(_, ph)| (h.header.parent_hash, ph)),
            problems,
        };
        if check.is_match() {
            if self.persist {
                record_verified(
                    &mut self.map,
                    self.store,
                    &Verified {
                        seq,
                        ledger_hash: h.stored_hash,
                        account_hash: check.account_hash.0,
                        entries: self.entries,
                        keyspace: self.reader.keyspace().to_owned(),
                    },
                    &h.header,
                    self.prev.filter(|_| self.last_only).map(|(_, hash)| hash),
                )?;
            }
            self.prev = Some((seq, h.stored_hash));
        } else {
            self.spent = true;
        }
        Ok(check)
    }
}

/// What is wrong with ledger `seq`'s `ledger_hashes` row (the sequence it
/// maps the ledger's stored hash to), if anything.
fn hash_row_problem(seq: u32, hash_seq: Option<i64>) -> Option<String> {
    match hash_seq {
        Some(s) if s == i64::from(seq) => None,
        Some(s) => Some(format!(
            "ledger_hashes maps the ledger's hash to ledger {s}, not {seq}"
        )),
        None => Some("no ledger_hashes row for the ledger's hash".to_owned()),
    }
}
