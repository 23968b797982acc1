//! `verify --db` on a NuDB store: the whole-store audit.
//!
//! 1. The scan ([`super::scan`]): every record decoded and hashed, in
//!    parallel, the data files read once, sequentially.
//! 2. The ledgers: from `ledger.db` when there is one, else the headers
//!    the scan met; one ledger (`--root`, `--ledger`) skips the scan.
//! 3. Each ledger walked in sequence order ([`super::walk`]): its header
//!    (present, hashing to the ledger hash, agreeing with `ledger.db`),
//!    its state and transaction maps complete (every child present and
//!    whole), its `parent_hash` against the ledger before it when both
//!    are known. A subtree the last whole ledger's walk went through is
//!    not walked again: consecutive ledgers share most of their state
//!    map, so a history costs about its changes, not its ledgers × their
//!    size; the set kept is one ledger's inner nodes (bounded per ledger
//!    walked, not per record).
//!
//! The report names each damaged or missing node (key, data file, byte
//! offset) and the ledgers it breaks; every other ledger is whole.

use std::path::PathBuf;

use hashbrown::HashMap;
use shamap::xrpl::LedgerHeader;
use shamap::{Hash256, MapKind};

use super::budget::MemoryBudget;
use super::ledger_db::read_ledgers;
use super::ledgers::{find_header_by_seq, listed_in, ListedIn};
use super::scan::{scan, DamagedRecord, ScanReport};
use super::store::NudbStore;
use super::walk::{walk_map, NodeProblem, Scanned, Visited, WalkCounts, Walker};
use crate::error::StoreError;
use crate::findings::{DamagedNode, Only};
use crate::node::Node;
use crate::store::{NodeStore, NodeStoreExt};

/// Problems listed per ledger (more are counted).
pub const MAX_LEDGER_PROBLEMS: usize = 100;

/// How to audit.
#[derive(Clone, Debug, Default)]
pub struct AuditOptions {
    /// One ledger only (no scan of every record).
    pub only: Option<Only>,
    /// Worker threads of the scan (0: one per core).
    pub threads: usize,
    /// Bytes the audit's caches may hold ([`super::budget`]; none: the
    /// default, [`super::budget::DEFAULT_BUDGET`]).
    pub memory: Option<u64>,
}

/// One ledger's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerAudit {
    /// Its sequence (from its header or `ledger.db`).
    pub seq: Option<u32>,
    /// Its hash.
    pub hash: Hash256,
    /// Problems found (at most [`MAX_LEDGER_PROBLEMS`]).
    pub problems: Vec<NodeProblem>,
    /// Problems in all.
    pub problem_count: u64,
    /// Counts of its walk.
    pub counts: WalkCounts,
}

impl LedgerAudit {
    /// True when nothing is wrong with the ledger.
    pub fn is_whole(&self) -> bool {
        self.problem_count == 0
    }
}

/// The audit's report.
#[derive(Debug, Default)]
pub struct AuditReport {
    /// The scan (none when one ledger was walked alone).
    pub scan: Option<ScanReport>,
    /// Where the ledgers came from (`ledger.db`'s path, or the scan).
    pub ledgers_from: String,
    /// Each ledger walked, by sequence.
    pub ledgers: Vec<LedgerAudit>,
    /// Each damaged or missing node met by a walk, with the ledgers it
    /// breaks.
    pub nodes: Vec<DamagedNode>,
    /// What the reader noticed on the way: a commit under way read as the
    /// store before it, reads made again because the store moved.
    pub notes: Vec<String>,
}

impl AuditReport {
    /// True when the scan found no damage and every ledger is whole.
    pub fn is_whole(&self) -> bool {
        self.scan.as_ref().is_none_or(|s| s.damaged_count == 0)
            && self.ledgers.iter().all(LedgerAudit::is_whole)
    }

    /// Damaged records of the scan.
    pub fn damaged_records(&self) -> &[DamagedRecord] {
        self.scan.as_ref().map_or(&[], |s| &s.damaged)
    }
}

/// A ledger to walk: hash, sequence when known, `ledger.db`'s row.
struct Target {
    hash: Hash256,
    seq: Option<u32>,
    row: Option<super::ledger_db::LedgerRow>,
}

/// Reads of a store that moves under the audit before it gives up.
pub const MAX_READS: usize = 8;
/// How long the audit waits for a live store's writer before reading again
/// a ledger `ledger.db` names whose header is not yet in the data files
/// (NuDB commits about once a second).
pub const COMMIT_WAIT: std::time::Duration = std::time::Duration::from_millis(1500);

/// Audits `store` (see the module docs); `progress` gets the bytes of the
/// data files scanned so far.
///
/// On a live store (a rippled committing to it), each read works from one
/// view of the files ([`NudbStore::moved`]); when a read finds damage and
/// the files moved meanwhile, or finds only the newest ledgers' headers
/// missing and the files move within [`COMMIT_WAIT`], the damage may be
/// the writer's doing, so the store is opened again and read again, up to
/// [`MAX_READS`] times; damage found in a view that did not move is
/// reported. A store still moving on the last read is an error saying so.
pub fn audit(
    store: &NudbStore,
    opts: &AuditOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<AuditReport, StoreError> {
    let mut reopened: Option<NudbStore> = None;
    let mut notes = Vec::new();
    let mut last_move = String::new();
    for read in 1..=MAX_READS {
        let s = reopened.as_ref().unwrap_or(store);
        let outcome = audit_view(s, opts, progress);
        let whole = outcome.as_ref().is_ok_and(AuditReport::is_whole);
        let moved = if whole {
            None
        } else {
            s.moved().or_else(|| {
                let waits = outcome.as_ref().is_ok_and(only_newest_headers_missing);
                if waits {
                    std::thread::sleep(COMMIT_WAIT);
                    s.moved()
                } else {
                    None
                }
            })
        };
        match moved {
            None => {
                let mut report = outcome?;
                notes.extend(s.notes());
                report.notes = notes;
                return Ok(report);
            }
            Some(what) => {
                notes.push(format!(
                    "read {read}: the store changed while it was read ({what}); read again"
                ));
                last_move = what;
                s.wait_for_quiet(std::time::Duration::from_millis(200 * read as u64));
                reopened = Some(s.reopen()?);
            }
        }
    }
    Err(StoreError::backend(
        store.location(),
        format!(
            "the store changed while it was read, on each of {MAX_READS} reads (last: {last_move}): a writer is committing to it; audit again, or audit a copy of the store"
        ),
    ))
}

/// True when the only damage is ledgers whose headers are missing, each
/// newer than every ledger found whole: what a `ledger.db` written ahead of
/// the node store's next commit looks like.
fn only_newest_headers_missing(r: &AuditReport) -> bool {
    let newest_whole = r
        .ledgers
        .iter()
        .filter(|l| l.is_whole())
        .filter_map(|l| l.seq)
        .max();
    let broken: Vec<&LedgerAudit> = r.ledgers.iter().filter(|l| !l.is_whole()).collect();
    !broken.is_empty()
        && r.scan.as_ref().is_none_or(|s| s.damaged_count == 0)
        && broken.iter().all(|l| {
            l.seq.is_some_and(|s| newest_whole.is_none_or(|w| s > w))
                && l.problems
                    .iter()
                    .all(|p| p.key == l.hash && p.what.contains("header is missing"))
        })
}

/// One read of `store` in its current view.
fn audit_view(
    store: &NudbStore,
    opts: &AuditOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<AuditReport, StoreError> {
    let threads = if opts.threads == 0 {
        std::thread::available_parallelism().map_or(2, |n| n.get())
    } else {
        opts.threads
    };
    let memory = MemoryBudget::of(
        opts.memory.unwrap_or(super::budget::DEFAULT_BUDGET),
        threads.max(1),
    );
    let loc = store.location();
    let listed = listed_in(store);
    let rows = match listed {
        ListedIn::LedgerDb(p) => {
            let seq = match opts.only {
                Some(Only::Seq(s)) => Some(s),
                _ => None,
            };
            Some(read_ledgers(p, seq).map_err(|e| StoreError::backend(&loc, e))?)
        }
        ListedIn::DataFiles => None,
    };
    let scanned = if opts.only.is_none() {
        Some(scan(store, threads, &memory, progress)?)
    } else {
        None
    };
    let mut scanned = scanned;
    if let Some(s) = scanned.as_mut() {
        super::key_check::check_key_files(store, s, memory.kept_bucket_entries);
    }
    let mut report = AuditReport {
        ledgers_from: listed.describe(),
        ..AuditReport::default()
    };
    let targets: Vec<Target> = match (opts.only, &rows, &scanned) {
        (Some(Only::Hash(h)), rows, _) => {
            let row = rows
                .as_ref()
                .and_then(|r| r.iter().find(|r| r.hash == h).cloned());
            vec![Target {
                hash: h,
                seq: row.as_ref().map(|r| r.seq),
                row,
            }]
        }
        (Some(Only::Seq(s)), Some(rows), _) => {
            let row = rows.iter().find(|r| r.seq == s).cloned().ok_or_else(|| {
                StoreError::backend(
                    &loc,
                    format!("ledger {s} is not in {}", report.ledgers_from),
                )
            })?;
            vec![Target {
                hash: row.hash,
                seq: Some(s),
                row: Some(row),
            }]
        }
        (Some(Only::Seq(s)), None, _) => {
            let h = find_header_by_seq(store, s)?.ok_or_else(|| {
                StoreError::backend(
                    &loc,
                    format!(
                        "no ledger header of sequence {s} {}",
                        crate::error::facts::NO_HEADER_NO_LEDGER_DB
                    ),
                )
            })?;
            vec![Target {
                hash: h,
                seq: Some(s),
                row: None,
            }]
        }
        (None, Some(rows), _) => rows
            .iter()
            .map(|r| Target {
                hash: r.hash,
                seq: Some(r.seq),
                row: Some(r.clone()),
            })
            .collect(),
        (None, None, Some(s)) => s
            .headers
            .iter()
            .map(|h| Target {
                hash: h.hash,
                seq: Some(h.header.seq),
                row: None,
            })
            .collect(),
        (None, None, None) => Vec::new(),
    };
    let damaged_by_key: HashMap<Hash256, (usize, u64, String)> = scanned
        .as_ref()
        .map(|s| {
            let index = |f: &PathBuf| {
                store
                    .parts()
                    .iter()
                    .position(|p| &p.dat.path == f)
                    .unwrap_or(0)
            };
            s.damaged
                .iter()
                .filter_map(|d| {
                    d.key
                        .map(|k| (k, (index(&d.file), d.offset, d.what.clone())))
                })
                .collect()
        })
        .unwrap_or_default();
    let scanned_view = scanned.as_ref().map(|r| Scanned {
        report: r,
        damaged: damaged_by_key,
    });
    let mut walkers: Vec<Walker<'_>> = (0..threads.max(1))
        .map(|_| Walker::new(store, scanned_view.as_ref(), &memory))
        .collect();
    let total_counts = |ws: &[Walker<'_>]| {
        ws.iter().fold(WalkCounts::default(), |mut a, w| {
            a.inner += w.counts.inner;
            a.leaves += w.counts.leaves;
            a.skipped += w.counts.skipped;
            a.hashed += w.counts.hashed;
            a
        })
    };
    let mut whole_before = Visited::new();
    // Every header found at each sequence: a store may hold more than one
    // ledger of a sequence (rippled keeps ledgers it built that were not
    // validated); a parent link holds when it names one of them.
    let mut headers: HashMap<u32, Vec<Hash256>> = HashMap::new();
    let mut parents: Vec<(usize, u32, Hash256)> = Vec::new();
    for t in &targets {
        let mut problems = Vec::new();
        let counts_before = total_counts(&walkers);
        let header = ledger_header(store, t, &mut problems);
        let mut visited = Visited::new();
        if let Some(h) = &header {
            headers.entry(h.seq).or_default().push(t.hash);
            if h.seq > 0 {
                parents.push((report.ledgers.len(), h.seq - 1, h.parent_hash));
            }
            for (kind, root) in [
                (MapKind::AccountState, h.account_hash),
                (MapKind::TransactionWithMeta, h.transaction_hash),
            ] {
                walk_map(
                    &mut walkers,
                    kind,
                    root,
                    &whole_before,
                    &mut visited,
                    &mut problems,
                );
            }
        }
        let mut counts = total_counts(&walkers);
        counts.inner -= counts_before.inner;
        counts.leaves -= counts_before.leaves;
        counts.skipped -= counts_before.skipped;
        counts.hashed -= counts_before.hashed;
        if problems.is_empty() {
            whole_before = visited;
        }
        report.ledgers.push(LedgerAudit {
            seq: header.as_ref().map(|h| h.seq).or(t.seq),
            hash: t.hash,
            problem_count: problems.len() as u64,
            problems,
            counts,
        });
    }
    for (i, prev_seq, parent) in parents {
        if let Some(prev) = headers.get(&prev_seq) {
            if !prev.contains(&parent) {
                let prev = prev
                    .iter()
                    .map(Hash256::to_hex)
                    .collect::<Vec<_>>()
                    .join(", ");
                let l = &mut report.ledgers[i];
                l.problem_count += 1;
                l.problems.push(NodeProblem {
                    key: l.hash,
                    at: None,
                    what: format!(
                        "its parent_hash is {parent}, but ledger {prev_seq} found is {prev}"
                    ),
                });
            }
        }
    }
    let mut nodes: HashMap<Hash256, DamagedNode> = HashMap::new();
    for l in &mut report.ledgers {
        for p in &l.problems {
            let e = nodes.entry(p.key).or_insert_with(|| DamagedNode {
                key: p.key,
                at: p
                    .at
                    .map(|(i, off)| (store.parts()[i].dat.path.clone(), off)),
                what: p.what.clone(),
                ledgers: Vec::new(),
            });
            e.ledgers.push((l.seq, l.hash));
        }
        l.problems.truncate(MAX_LEDGER_PROBLEMS);
    }
    let mut nodes: Vec<DamagedNode> = nodes.into_values().collect();
    nodes.sort_by(|a, b| {
        a.ledgers
            .first()
            .cmp(&b.ledgers.first())
            .then(a.key.cmp(&b.key))
    });
    report.nodes = nodes;
    drop(walkers);
    drop(scanned_view);
    if let Some(s) = scanned.as_mut() {
        // The walk's caches, not part of the report.
        s.inner_cache = Default::default();
        s.kept_buckets = Vec::new();
        s.record_index = Default::default();
    }
    report.scan = scanned;
    Ok(report)
}

/// The header of `t`, checked: present, decoding and hashing to its key,
/// a ledger header, agreeing with its `ledger.db` row. Problems go to
/// `problems`.
fn ledger_header(
    store: &NudbStore,
    t: &Target,
    problems: &mut Vec<NodeProblem>,
) -> Option<LedgerHeader> {
    let mut problem = |what: String| {
        problems.push(NodeProblem {
            key: t.hash,
            at: store
                .locate(&t.hash)
                .ok()
                .flatten()
                .map(|(i, off, _)| (i, off)),
            what,
        })
    };
    let obj = match store.get(&t.hash) {
        Ok(Some(o)) => o,
        Ok(None) => {
            problem("the ledger header is missing from the store".to_owned());
            return None;
        }
        Err(e) => {
            problem(format!("the ledger header: {e}"));
            return None;
        }
    };
    let h = match obj.parse() {
        Ok(Node::Ledger(h)) => h,
        Ok(other) => {
            problem(format!("is {}, not a ledger header", other.describe()));
            return None;
        }
        Err(e) => {
            problem(format!("the ledger header: {e}"));
            return None;
        }
    };
    if let Some(r) = &t.row {
        let mut differs = Vec::new();
        if r.seq != h.seq {
            differs.push(format!("LedgerSeq {} (the header says {})", r.seq, h.seq));
        }
        if r.account_hash.is_some_and(|a| a != h.account_hash) {
            differs.push("AccountSetHash".to_owned());
        }
        if r.tx_hash.is_some_and(|a| a != h.transaction_hash) {
            differs.push("TransSetHash".to_owned());
        }
        if r.parent_hash.is_some_and(|a| a != h.parent_hash) {
            differs.push("PrevHash".to_owned());
        }
        if !differs.is_empty() {
            problem(format!(
                "ledger.db disagrees with the ledger header: {}",
                differs.join(", ")
            ));
        }
    }
    Some(h)
}
