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
//! against the next live key in the map.
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
//! ledger, so a later run resumes after it; or on a [`crate::MemStore`]
//! with a budget that never spills, in memory only.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Bound::{Excluded, Unbounded};
use std::ops::ControlFlow;

use shamap::xrpl::ledger::LedgerHeader;
use shamap::xrpl::tx::tx_with_meta_item;
use shamap::{Hash256, Key, MapKind, ShaMap};

use crate::backed::{BackedMap, BackedOptions};
use crate::error::StoreError;
use crate::node::NodeObject;
use crate::store::{Batch, NodeStore};

use super::build::{Cursor, ObjectRow, Scratch};
use super::reader::{Background, ClioReader, LedgerRows, Prefetch};
use super::{key_of, ClioError, ClioHeader, FIRST_KEY, LAST_KEY};

/// The metadata record of the last verified ledger in a `--state` store.
pub const VERIFIED_RECORD: &str = "clio_verified";
/// The retained-root name the verified state is committed under.
pub const STATE_ROOT_NAME: &str = "clio";
/// Ledgers whose rows are read ahead of the one being verified.
pub const PREFETCH_LEDGERS: usize = 4;
/// Most disagreements of a full build's successor list reported one by
/// one; the rest are counted in one more.
const MAX_LIST_PROBLEMS: usize = 1000;

/// The last ledger a `--state` store verified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    /// Its sequence.
    pub seq: u32,
    /// Its ledger hash.
    pub ledger_hash: Hash256,
    /// Its state map's root (committed under [`STATE_ROOT_NAME`]).
    pub account_hash: Hash256,
    /// Live entries in that state.
    pub entries: u64,
    /// The Clio keyspace it was read from.
    pub keyspace: String,
}

impl Verified {
    fn encode(&self) -> Vec<u8> {
        let mut v = self.seq.to_be_bytes().to_vec();
        v.extend_from_slice(&self.ledger_hash.0);
        v.extend_from_slice(&self.account_hash.0);
        v.extend_from_slice(&self.entries.to_be_bytes());
        v.extend_from_slice(self.keyspace.as_bytes());
        v
    }

    fn decode(b: &[u8]) -> Option<Verified> {
        if b.len() < 76 {
            return None;
        }
        Some(Verified {
            seq: u32::from_be_bytes(b[..4].try_into().ok()?),
            ledger_hash: Hash256::from_slice(&b[4..36])?,
            account_hash: Hash256::from_slice(&b[36..68])?,
            entries: u64::from_be_bytes(b[68..76].try_into().ok()?),
            keyspace: String::from_utf8(b[76..].to_vec()).ok()?,
        })
    }
}

/// The last verified ledger recorded in `store`, if any.
pub fn read_verified(store: &dyn NodeStore) -> Result<Option<Verified>, StoreError> {
    let Some(b) = store.get_meta(VERIFIED_RECORD)? else {
        return Ok(None);
    };
    Verified::decode(&b)
        .map(Some)
        .ok_or_else(|| StoreError::BadMeta {
            location: store.location(),
            name: VERIFIED_RECORD.to_owned(),
            reason: format!("{} bytes that do not decode", b.len()),
        })
}

/// Commits `map` under [`STATE_ROOT_NAME`] and records `v`, with the
/// ledger's header as a node (so the ledger hash names the verified state
/// map for readers of the store: `get`, `prove --db`), all in one atomic,
/// durable batch: after a crash the store holds both or neither. The map's
/// root must be `v`'s account hash. `replaced_header`: the previous
/// ledger's header, deleted in the same batch, for a map that prunes
/// ([`BackedOptions::prune_replaced`]: the state it names is gone).
pub fn record_verified(
    map: &mut BackedMap<'_>,
    store: &dyn NodeStore,
    v: &Verified,
    header: &LedgerHeader,
    replaced_header: Option<Hash256>,
) -> Result<(), StoreError> {
    let root = map.root_hash();
    if root != v.account_hash {
        return Err(StoreError::BadMeta {
            location: store.location(),
            name: VERIFIED_RECORD.to_owned(),
            reason: format!(
                "the map's root {root} is not the verified account_hash {}",
                v.account_hash
            ),
        });
    }
    let mut batch = Batch::new();
    if let Some(old) = replaced_header {
        batch.delete_node(old);
    }
    batch.put_node(NodeObject::ledger(header));
    batch.put_meta(VERIFIED_RECORD, v.encode());
    map.commit_with(STATE_ROOT_NAME, batch)?;
    Ok(())
}

/// A disagreement inside Clio's data, at one key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The key (or transaction hash) it is about.
    pub key: Key,
    /// What is wrong, one line.
    pub what: String,
}

/// A row the final audit ([`ClioVerifier::audit`]) found at odds with the
/// verified state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditFinding {
    /// The ledger of the stray row (as stored).
    pub seq: i64,
    /// The key.
    pub key: Key,
    /// What is wrong, one line.
    pub what: String,
}

/// A computed value and the one the data claims.
pub type Pair = (Hash256, Hash256);

/// The result of checking one ledger.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerCheck {
    /// The ledger.
    pub seq: u32,
    /// True when the state was built whole from the successor list.
    pub full_build: bool,
    /// Live state entries after the ledger.
    pub state_entries: u64,
    /// The ledger's `diff` keys, sorted (empty after a full build).
    pub diff_keys: Vec<Key>,
    /// Transactions in the ledger.
    pub transactions: usize,
    /// Computed state root, header's `account_hash`.
    pub account_hash: Pair,
    /// Computed transaction root, header's `transaction_hash`.
    pub transaction_hash: Pair,
    /// Hash of the header's fields, the hash stored after them.
    pub ledger_hash: Pair,
    /// The header's `parent_hash`, and the previous ledger's hash (when
    /// the previous ledger was verified in this run or recorded).
    pub parent_hash: Option<Pair>,
    /// Disagreements inside Clio's data, by key.
    pub problems: Vec<Problem>,
}

impl LedgerCheck {
    /// True when every value matched and there is no problem.
    pub fn is_match(&self) -> bool {
        let same = |p: &Pair| p.0 == p.1;
        same(&self.account_hash)
            && same(&self.transaction_hash)
            && same(&self.ledger_hash)
            && self.parent_hash.as_ref().is_none_or(same)
            && self.problems.is_empty()
    }
}

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
    /// [`crate::MemStore`] and a budget that never spills). With `opts`
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

    /// After the last ledger of a run, reads every key's newest object at
    /// or below the last verified ledger (a scan of `objects`, as a full
    /// build's) and compares them, in key order, with the verified state:
    /// an object row written without its `diff` row (which the
    /// ledger-by-ledger pass cannot see, since it reads only diff keys)
    /// differs here, whether its key is in the state or not. Each finding
    /// names the ledger of the stray row and the key.
    pub fn audit(&self) -> Result<Vec<AuditFinding>, ClioError> {
        let Some((seq, _)) = self.prev else {
            return Ok(Vec::new());
        };
        let (mut rows, _) = {
            let mut scratch = Scratch::new(None)?;
            self.reader
                .scan_state(seq, true, false, &mut |row| scratch.push(row))?;
            scratch.finish()?
        };
        let mut findings = Vec::new();
        let stray = |o: ObjectRow, findings: &mut Vec<AuditFinding>| {
            if !o.object.is_empty() {
                findings.push(AuditFinding {
                    seq: o.seq,
                    key: o.key,
                    what: format!(
                        "an object written at ledger {} that no diff row lists: the key is not live in the verified state at ledger {seq}",
                        o.seq
                    ),
                });
            }
        };
        let mut failed = None;
        let mut compare = |key: &Key, data: &[u8]| -> Result<(), ClioError> {
            while let Some(o) = rows.peek()? {
                if o.key >= *key {
                    break;
                }
                if let Some(o) = rows.next_row()? {
                    stray(o, &mut findings);
                }
            }
            let row = match rows.peek()? {
                Some(o) if o.key == *key => rows.next_row()?,
                _ => None,
            };
            let (at, what) = match row {
                Some(o) if o.object == data => return Ok(()),
                Some(o) if o.object.is_empty() => (
                    o.seq,
                    format!("a deletion written at ledger {} that no diff row lists (the verified state at ledger {seq} holds the key)", o.seq),
                ),
                Some(o) => (
                    o.seq,
                    format!("an object written at ledger {} that no diff row lists: it differs from the verified state at ledger {seq}", o.seq),
                ),
                None => (
                    i64::from(seq),
                    format!("live in the verified state at ledger {seq} but has no object row"),
                ),
            };
            findings.push(AuditFinding {
                seq: at,
                key: *key,
                what,
            });
            Ok(())
        };
        self.map.for_each(&mut |k, d| match compare(k, d) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                failed = Some(e);
                ControlFlow::Break(())
            }
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        while let Some(o) = rows.next_row()? {
            stray(o, &mut findings);
        }
        findings.sort_by_key(|f| (f.seq, f.key));
        Ok(findings)
    }

    /// Builds the state at `seq` whole: scans `objects` and `successor`
    /// (see `build`), then walks the successor list from `00…00` as a merge
    /// of the sorted successor rows and objects, inserting each listed
    /// key's object in key order. The problems come in key order: a listed
    /// key without a live object, then where the walk stopped (a key
    /// without a successor row, a successor that is not a key or not above
    /// it); when there is no other, each live object the list left out.
    fn build_full(&mut self, seq: u32, problems: &mut Vec<Problem>) -> Result<(), ClioError> {
        let (mut objects, mut edges) = {
            let mut scratch = Scratch::new(None)?;
            self.reader
                .scan_state(seq, true, true, &mut |row| scratch.push(row))?;
            scratch.finish()?
        };
        // Live objects the walk passed over: the first few, and a count.
        let mut unlisted: Vec<(Key, i64)> = Vec::new();
        let mut more_unlisted = 0u64;
        let mut pass_over =
            |objects: &mut Cursor<ObjectRow>, until: Option<&Key>| -> Result<(), ClioError> {
                while let Some(o) = objects.peek()? {
                    if until.is_some_and(|u| o.key >= *u) {
                        break;
                    }
                    if let Some(o) = objects.next_row()? {
                        if !o.object.is_empty() {
                            if unlisted.len() < MAX_LIST_PROBLEMS {
                                unlisted.push((o.key, o.seq));
                            } else {
                                more_unlisted += 1;
                            }
                        }
                    }
                }
                Ok(())
            };
        let mut more = 0u64;
        let mut key = FIRST_KEY;
        let stop = loop {
            while edges.peek()?.is_some_and(|e| e.key < key) {
                edges.next_row()?;
            }
            let next = match edges.peek()? {
                Some(e) if e.key == key => edges.next_row()?.map(|e| e.next).unwrap_or_default(),
                _ => {
                    break Some(format!(
                        "the successor list stops here: no successor row at or below ledger {seq}"
                    ))
                }
            };
            let Some(next) = key_of(&next) else {
                break Some(format!("its successor is {} bytes, not a key", next.len()));
            };
            if next <= key {
                break Some(format!(
                    "the successor list is out of order: its successor {next} is not above it"
                ));
            }
            if next == LAST_KEY {
                break None;
            }
            pass_over(&mut objects, Some(&next))?;
            let row = match objects.peek()? {
                Some(o) if o.key == next => objects.next_row()?,
                _ => None,
            };
            let what = match row {
                Some(o) if !o.object.is_empty() => {
                    self.map.upsert(next, &o.object)?;
                    self.entries += 1;
                    None
                }
                Some(o) => Some(format!(
                    "in the successor list at ledger {seq} but deleted (at ledger {})",
                    o.seq
                )),
                None => Some(format!(
                    "in the successor list at ledger {seq} but has no object at or below it"
                )),
            };
            if let Some(what) = what {
                if problems.len() < MAX_LIST_PROBLEMS {
                    problems.push(Problem { key: next, what });
                } else {
                    more += 1;
                }
            }
            key = next;
        };
        if more > 0 {
            problems.push(Problem {
                key,
                what: format!(
                    "and {more} more listed keys at ledger {seq} without a live object, not named here"
                ),
            });
        }
        if let Some(what) = stop {
            problems.push(Problem { key, what });
        }
        pass_over(&mut objects, None)?;
        // A walk that stopped leaves out what follows: only a whole list
        // is judged on what it leaves out.
        if problems.is_empty() {
            for (key, s) in &unlisted {
                problems.push(Problem {
                    key: *key,
                    what: format!(
                        "live at ledger {seq} (its object is of ledger {s}) but missing from the successor list"
                    ),
                });
            }
            if more_unlisted > 0 {
                if let Some((key, _)) = unlisted.last() {
                    problems.push(Problem {
                        key: *key,
                        what: format!(
                            "and {more_unlisted} more live keys after it missing from the successor list, not named here"
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// The next live key after `key` in the map, or [`LAST_KEY`].
    /// Sorts ledger `seq`'s diff against the state before it: the changes
    /// to make, and the successor rows the ledger must have written with
    /// the next live key each must name. Each created key's row names the
    /// next live key after it; the row of the live key before each created
    /// or deleted key names the next live key after that one. Both are
    /// found in the state before the ledger, skipping the keys it deletes
    /// and adding the keys it creates, so that the rows can be read while
    /// the changes are made.
    fn plan_diff(
        &self,
        seq: u32,
        keys: &[Key],
        objects: Vec<Option<(i64, Vec<u8>)>>,
        problems: &mut Vec<Problem>,
    ) -> Result<DiffPlan, ClioError> {
        let mut changes = Vec::with_capacity(keys.len());
        let (mut created, mut deleted) = (BTreeSet::new(), BTreeSet::new());
        for (key, obj) in keys.iter().zip(objects) {
            match obj {
                None => problems.push(Problem {
                    key: *key,
                    what: format!("in the diff of ledger {seq} but has no object at or below it"),
                }),
                Some((s, _)) if s != i64::from(seq) => problems.push(Problem {
                    key: *key,
                    what: format!(
                        "in the diff of ledger {seq} but its newest object is from ledger {s}"
                    ),
                }),
                Some((_, data)) if data.is_empty() => {
                    if self.map.contains(key)? {
                        deleted.insert(*key);
                        changes.push(Change::Delete(*key));
                    } else {
                        problems.push(Problem {
                            key: *key,
                            what: format!("deleted at ledger {seq} but was not live"),
                        });
                    }
                }
                Some((_, data)) => {
                    if !self.map.contains(key)? {
                        created.insert(*key);
                    }
                    changes.push(Change::Put(*key, data));
                }
            }
        }
        let live = Live {
            map: &self.map,
            created: &created,
            deleted: &deleted,
        };
        let mut successors = BTreeMap::new();
        for k in &created {
            let next = live.after(k)?;
            successors.insert(*k, next);
            successors.insert(live.before(k)?, *k);
        }
        for k in &deleted {
            successors.insert(live.before(k)?, live.after(k)?);
        }
        Ok(DiffPlan {
            changes,
            successors,
        })
    }

    /// Plans ledger `seq`'s diff (rows `diff`, their keys and objects)
    /// against the state map as it is, and starts reading its successor
    /// rows.
    fn plan_diff_now(
        &self,
        seq: u32,
        diff: &[Vec<u8>],
        keys: &[Key],
        objects: Vec<Option<(i64, Vec<u8>)>>,
    ) -> Result<PlannedDiff, ClioError> {
        if let Some(raw) = diff.iter().find(|raw| key_of(raw).is_none()) {
            return Err(ClioError::unusable(
                seq,
                format!("a diff row's key is {} bytes, not 32", raw.len()),
            ));
        }
        let mut problems = Vec::new();
        let plan = self.plan_diff(seq, keys, objects, &mut problems)?;
        // Which successor rows, and what each must name, follow from the
        // state before the ledger and its diff: they are read while the
        // diff is applied and the root rehashed.
        let asked = plan.successors.keys().copied().collect();
        let successors = self.reader.successors_later(asked, seq);
        Ok(PlannedDiff {
            plan,
            problems,
            successors,
        })
    }

    /// After ledger `seq`'s changes: when the next ledger is to be read
    /// ahead, takes its rows and plans its diff against the state as it now
    /// is (the next ledger's state before), so that its successor rows are
    /// read while this ledger is hashed, checked and committed. If this
    /// ledger does not match, the plan is never used.
    fn plan_next(&mut self, seq: u32) {
        let Some(next) = seq
            .checked_add(1)
            .filter(|n| self.horizon.is_some_and(|h| *n <= h))
        else {
            return;
        };
        // A read error is left for the next ledger's turn, which reads
        // again and reports it.
        let Ok(mut rows) = self.rows(next, true) else {
            return;
        };
        // The rows just read, and those read ahead since, are heap the
        // cache leaves free before planning loads nodes into it.
        self.map.probe_heap();
        let objects = std::mem::take(&mut rows.objects);
        let plan = self.plan_diff_now(next, &rows.diff, &rows.keys, objects);
        self.planned = Some(Planned {
            seq: next,
            rows,
            plan,
        });
    }

    /// Makes a diff's changes to the state map.
    fn apply_changes(&mut self, changes: Vec<Change>) -> Result<(), ClioError> {
        for change in changes {
            match change {
                Change::Put(key, data) => {
                    if self.map.upsert(key, &data)? {
                        self.entries += 1;
                    }
                }
                Change::Delete(key) => {
                    if self.map.remove(&key)? {
                        self.entries -= 1;
                    }
                }
            }
        }
        Ok(())
    }
}

/// A diff's changes and the successor rows it must have written
/// ([`ClioVerifier::plan_diff`]).
struct DiffPlan {
    changes: Vec<Change>,
    /// Key → the next live key its successor row must name.
    successors: BTreeMap<Key, Key>,
}

/// One change of a diff to the state map.
enum Change {
    /// Created or modified.
    Put(Key, Vec<u8>),
    Delete(Key),
}

/// The live keys after a ledger, seen from the state map before it and
/// the keys the ledger creates and deletes.
struct Live<'a, 'm> {
    map: &'a BackedMap<'m>,
    created: &'a BTreeSet<Key>,
    deleted: &'a BTreeSet<Key>,
}

impl Live<'_, '_> {
    /// The first live key after `key`, or the list's tail.
    fn after(&self, key: &Key) -> Result<Key, StoreError> {
        let mut kept = self.map.next_after(key)?.map(|(k, _)| k);
        while let Some(k) = kept.filter(|k| self.deleted.contains(k)) {
            kept = self.map.next_after(&k)?.map(|(k, _)| k);
        }
        let made = self
            .created
            .range((Excluded(*key), Unbounded))
            .next()
            .copied();
        Ok(match (kept, made) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).unwrap_or(LAST_KEY),
        })
    }

    /// The last live key before `key`, or the list's head.
    fn before(&self, key: &Key) -> Result<Key, StoreError> {
        let mut kept = self.map.last_before(key)?.map(|(k, _)| k);
        while let Some(k) = kept.filter(|k| self.deleted.contains(k)) {
            kept = self.map.last_before(&k)?.map(|(k, _)| k);
        }
        let made = self.created.range(..*key).next_back().copied();
        Ok(match (kept, made) {
            (Some(a), Some(b)) => a.max(b),
            (a, b) => a.or(b).unwrap_or(FIRST_KEY),
        })
    }
}

/// Compares the successor rows `found` (in the order of `want`'s keys)
/// with the next live key each must name.
fn check_successors(
    seq: u32,
    want: &BTreeMap<Key, Key>,
    found: Vec<Option<Vec<u8>>>,
    problems: &mut Vec<Problem>,
) {
    for ((key, expected), got) in want.iter().zip(found) {
        match got.as_deref().map(key_of) {
            Some(Some(n)) if n == *expected => {}
            Some(Some(n)) => problems.push(Problem {
                key: *key,
                what: format!(
                    "its successor at ledger {seq} is {n}, but the next live key is {expected}"
                ),
            }),
            Some(None) => problems.push(Problem {
                key: *key,
                what: format!("its successor at ledger {seq} is not a 32-byte key"),
            }),
            None => problems.push(Problem {
                key: *key,
                what: format!(
                    "no successor row at or below ledger {seq} (the next live key is {expected})"
                ),
            }),
        }
    }
}

/// Builds ledger `seq`'s transaction map from the rows of `hashes`; its
/// root and size.
fn tx_map(
    seq: u32,
    hashes: &[Hash256],
    rows: Vec<Option<super::TxRow>>,
    problems: &mut Vec<Problem>,
) -> Result<(Hash256, usize), ClioError> {
    let mut map = ShaMap::new(MapKind::TransactionWithMeta);
    for (hash, row) in hashes.iter().zip(rows) {
        let row = row.ok_or_else(|| {
            ClioError::unusable(
                seq,
                format!(
                    "transaction {hash}: in ledger_transactions but no row in table transactions"
                ),
            )
        })?;
        if row.ledger_sequence != i64::from(seq) {
            problems.push(Problem {
                key: Key(hash.0),
                what: format!(
                    "transaction listed in ledger {seq} but its row says ledger {}",
                    row.ledger_sequence
                ),
            });
        }
        let (key, data) = tx_with_meta_item(&row.transaction, &row.metadata)
            .map_err(|e| ClioError::unusable(seq, format!("transaction {hash}: {e}")))?;
        if key.0 != hash.0 {
            problems.push(Problem {
                key: Key(hash.0),
                what: format!("transaction stored under this hash hashes to {key}"),
            });
        }
        if let Err(e) = map.insert(key, &data) {
            problems.push(Problem {
                key,
                what: format!("transaction cannot go into the map: {e}"),
            });
        }
    }
    Ok((map.root_hash(), hashes.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// The live keys around each created and deleted key, found from the
    /// state before a ledger ([`Live`]), are those of the state after it
    /// (a `BTreeSet` oracle), including the list's head and tail, runs of
    /// deleted neighbours and created keys side by side; keys drawn from a
    /// small space so that neighbours collide.
    #[test]
    fn live_keys_from_the_state_before_match_the_state_after() {
        for seed in 0..40u64 {
            let mut rng = SmallRng::seed_from_u64(seed);
            let store = crate::MemStore::new();
            let mut map = BackedMap::open(
                &store,
                Hash256::ZERO,
                MapKind::AccountState,
                BackedOptions::default(),
            )
            .expect("open");
            let key = |rng: &mut SmallRng| {
                let mut k = [0u8; 32];
                k[0] = rng.gen_range(1..=254);
                k[1] = rng.gen_range(0..4);
                Key(k)
            };
            let mut before = BTreeSet::new();
            for _ in 0..rng.gen_range(0..120) {
                let k = key(&mut rng);
                map.upsert(k, &[1]).expect("upsert");
                before.insert(k);
            }
            let (mut created, mut deleted) = (BTreeSet::new(), BTreeSet::new());
            for _ in 0..rng.gen_range(0..60) {
                let k = key(&mut rng);
                if before.contains(&k) {
                    deleted.insert(k);
                } else {
                    created.insert(k);
                }
            }
            let after: BTreeSet<Key> = before
                .difference(&deleted)
                .chain(&created)
                .copied()
                .collect();
            let live = Live {
                map: &map,
                created: &created,
                deleted: &deleted,
            };
            for k in created.iter().chain(&deleted) {
                let next = after
                    .range((Excluded(*k), Unbounded))
                    .next()
                    .copied()
                    .unwrap_or(LAST_KEY);
                let prev = after.range(..*k).next_back().copied().unwrap_or(FIRST_KEY);
                assert_eq!(
                    live.after(k).expect("after"),
                    next,
                    "seed {seed}, after {k}"
                );
                assert_eq!(
                    live.before(k).expect("before"),
                    prev,
                    "seed {seed}, before {k}"
                );
            }
        }
    }

    #[test]
    fn verified_record_round_trips() {
        let v = Verified {
            seq: 77,
            ledger_hash: Hash256([1; 32]),
            account_hash: Hash256([2; 32]),
            entries: 1234,
            keyspace: "clio_ks".to_owned(),
        };
        assert_eq!(Verified::decode(&v.encode()), Some(v));
        assert_eq!(Verified::decode(&[0; 75]), None);
    }
}
