//! Writing Clio's rows from verified ledgers (`shamap clio load`): a Clio
//! keyspace seeded, or extended, from ledgers a node store holds, each
//! read and verified ([`Source`]) before any of its rows is written
//! ([`ClioWriter`]), `ledger_range` moved last.
//!
//! - A keyspace without Clio's tables (or no keyspace) gets Clio's whole
//!   schema ([`crate::Tables::Full`]); the first ledger is written whole
//!   (every object at its sequence, no `diff` rows, the whole successor
//!   list with its book bases), then `ledger_range` = (first, first).
//! - A keyspace with a range `F..L` is extended contiguously at either
//!   end: after `L` (the next ledger must be `L + 1`, a gap is refused; the
//!   store's ledger `L` must be the keyspace's, same hash, and its state
//!   gives the live keys to go on from), or before `F` (the ledgers up to
//!   `F - 1` written without moving the range, the first of them whole;
//!   then ledger `F`, written whole as the range's first, gets its `diff`
//!   and deletion rows; then the range's first moves). Ledgers wanted
//!   inside `F..L` are there already (skipped).
//! - Each following ledger: header and hash, transactions, their
//!   `ledger_transactions` and `account_tx` rows, each changed object
//!   (empty: deleted) with its `diff` row, the successor rows around each
//!   created and deleted key and the book bases whose first directory
//!   moved; then `ledger_range`'s last = the ledger. A kill leaves the
//!   range at the last ledger whose rows are all written: a later run
//!   writes the ledger after it again (the same rows) and goes on, so each
//!   ledger enters the range once, complete.
//!
//! Reading runs on a thread of its own, a few ledgers ahead of writing.

pub mod meta;
mod repair;
mod source;
mod spool;
mod writer;

use std::sync::mpsc::sync_channel;

use shamap_store::NodeStore;

pub use repair::{repair, RepairReport, RowChange};
pub use source::{Source, SourceLedger, SourceTx};
pub use writer::ClioWriter;

use spool::Spool;

use crate::schema::{self, Tables};
use crate::{ClioError, Conn, CORE_TABLES};

/// Ledgers read ahead of the one being written.
const READ_AHEAD: usize = 4;
/// Objects of a first ledger written per batch.
const OBJECT_BATCH: usize = 20_000;

/// How [`load`] writes.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// Clio's `table_prefix` (else the URL's `table_prefix=`).
    pub table_prefix: Option<String>,
}

/// One ledger written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerLoaded {
    /// The ledger.
    pub seq: u32,
    /// Written whole (a first ledger).
    pub full: bool,
    /// Objects written (a first ledger's all, a following ledger's changes).
    pub objects: u64,
    /// Objects in its state.
    pub state_entries: u64,
    /// Transactions.
    pub transactions: u64,
    /// Rows written in all.
    pub rows: u64,
}

/// What a [`load`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// `cassandra://HOST:PORT/KEYSPACE`.
    pub location: String,
    /// Clio's schema was created.
    pub created_schema: bool,
    /// The time creating it took (a one-time cost, apart from the rows).
    pub schema_time: std::time::Duration,
    /// `ledger_range` before.
    pub range_before: Option<(u32, u32)>,
    /// `ledger_range` after.
    pub range_after: Option<(u32, u32)>,
    /// Ledgers written.
    pub written: u64,
    /// Rows written.
    pub rows: u64,
}

/// Connects, creating Clio's schema where the keyspace has none of its
/// tables (and no table that looks like one under another prefix).
fn connect(
    url: &str,
    opts: &LoadOptions,
) -> Result<(Conn, Option<std::time::Duration>), ClioError> {
    let conn = Conn::connect(url, opts.table_prefix.as_deref())?;
    let tables = if conn.keyspace_exists()? {
        conn.tables()?
    } else {
        Vec::new()
    };
    let core = CORE_TABLES
        .iter()
        .filter(|t| tables.contains(&format!("{}{t}", conn.prefix)))
        .count();
    let look_alike = tables
        .iter()
        .any(|t| crate::CLIO_TABLES.iter().any(|c| t.ends_with(c)));
    if core == 0 && !look_alike {
        let t = std::time::Instant::now();
        schema::create(&conn, Tables::Full)?;
        return Ok((conn, Some(t.elapsed())));
    }
    conn.check_tables()?;
    Ok((conn, None))
}

/// Writes ledgers `from..=to` of `store` into the Clio keyspace `url`
/// names (see the module's doc); `progress` sees each ledger written.
pub fn load(
    store: &dyn NodeStore,
    url: &str,
    opts: &LoadOptions,
    from: u32,
    to: u32,
    progress: &mut dyn FnMut(&LedgerLoaded),
) -> Result<LoadReport, ClioError> {
    if from > to {
        return Err(ClioError::Database {
            location: url.to_owned(),
            what: format!("--ledgers {from}..{to}: the first is after the last"),
        });
    }
    let mut source = Source::new(store)?;
    let (conn, created_schema) = connect(url, opts)?;
    let w = ClioWriter::new(conn)?;
    let range_before = w.range()?;
    let mut report = LoadReport {
        location: w.location().to_owned(),
        created_schema: created_schema.is_some(),
        schema_time: created_schema.unwrap_or_default(),
        range_before,
        range_after: range_before,
        ..LoadReport::default()
    };
    let refuse = |what: String| ClioError::Database {
        location: w.location().to_owned(),
        what,
    };
    let Some((f, l)) = range_before else {
        write_span(
            &w,
            &mut source,
            from,
            to,
            Moves::Range,
            &mut report,
            progress,
        )?;
        return Ok(report);
    };
    if from > l.saturating_add(1) {
        return Err(refuse(format!(
            "ledgers {from}..{to} would leave a gap after the keyspace's range {f}..{l}: start at {} at the latest",
            l.saturating_add(1)
        )));
    }
    if from < f {
        if to < f - 1 {
            return Err(refuse(format!(
                "ledgers {from}..{to} would leave a gap before the keyspace's range {f}..{l}: end at {} at the earliest",
                f - 1
            )));
        }
        back_fill(&w, &mut source, from, f, l, &mut report, progress)?;
    }
    if to > l {
        let written = w.header(l)?.ok_or_else(|| {
            ClioError::unusable(l, "the last ledger of ledger_range has no header row")
        })?;
        let mut source = Source::new(store)?;
        source.resume_after(l, written.stored_hash)?;
        write_span(
            &w,
            &mut source,
            l + 1,
            to,
            Moves::Range,
            &mut report,
            progress,
        )?;
    }
    Ok(report)
}

/// Whether [`write_span`] moves `ledger_range` after each ledger.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Moves {
    /// Yes: each ledger enters the range once its rows are written.
    Range,
    /// No: the ledgers are before the range, which moves once at the end.
    Nothing,
}

/// Ledgers `from..=to` of `source` written: the first one whole when the
/// source has read nothing yet, the others as following ledgers, read on a
/// thread of their own a few ledgers ahead.
fn write_span(
    w: &ClioWriter,
    source: &mut Source<'_>,
    from: u32,
    to: u32,
    moves: Moves,
    report: &mut LoadReport,
    progress: &mut dyn FnMut(&LedgerLoaded),
) -> Result<(), ClioError> {
    let mut next = from;
    if !source.has_read() {
        // The first ledger: verified whole (its objects kept in a scratch
        // file meanwhile, so that the state is read once), then written.
        let mut spool = Spool::new()?;
        let l = source.read_with(next, &mut |k, d| spool.push(k, d))?;
        let mut rows = w.write(w.ledger_rows(&l).into_iter())?;
        let objects = spool.len;
        spool.each_batch(OBJECT_BATCH, &mut |batch| {
            rows += w.write(batch.iter().map(|(k, d)| w.object_row(next, k, d)))?;
            Ok(())
        })?;
        if moves == Moves::Range {
            w.move_range(false, next, next)?;
            w.move_range(true, next, next.saturating_sub(1))?;
            report.range_after = Some((next, next));
        }
        report.written += 1;
        report.rows += rows;
        progress(&LedgerLoaded {
            seq: next,
            full: true,
            objects,
            state_entries: l.state_entries,
            transactions: l.transactions.len() as u64,
            rows,
        });
        next += 1;
    }
    if next > to {
        return Ok(());
    }
    let first = report.range_after.map(|(f, _)| f).unwrap_or(next);
    std::thread::scope(|scope| {
        let (tx, rx) = sync_channel::<Result<SourceLedger, ClioError>>(READ_AHEAD);
        let reader = scope.spawn(move || {
            for seq in next..=to {
                let l = source.read(seq);
                let failed = l.is_err();
                if tx.send(l).is_err() || failed {
                    break;
                }
            }
        });
        let mut result = Ok(());
        for l in rx.iter() {
            let l = match l {
                Ok(l) => l,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            };
            let seq = l.header.seq;
            let rows = match w.write(w.ledger_rows(&l).into_iter()) {
                Ok(n) => n,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            };
            if moves == Moves::Range {
                if let Err(e) = w.move_range(true, seq, seq - 1) {
                    result = Err(e);
                    break;
                }
                report.range_after = Some((first, seq));
            }
            report.written += 1;
            report.rows += rows;
            progress(&LedgerLoaded {
                seq,
                full: false,
                objects: l.changes.len() as u64,
                state_entries: l.state_entries,
                transactions: l.transactions.len() as u64,
                rows,
            });
        }
        drop(rx);
        let _ = reader.join();
        result
    })
}

/// Ledgers `from..f-1` written before a keyspace's range `f..l`: the
/// store's ledger `f` must be the keyspace's; the ledgers are written
/// (`from` whole) without moving the range; then ledger `f`, which was
/// written whole as the range's first, gets what a following ledger has
/// besides: its `diff` rows and the deletion rows of the keys ledger
/// `f - 1` had and `f` has not (its other rows are what a following
/// ledger's are, or more: every object and the whole successor list at
/// `f`, which read the same); and only then the range's first becomes
/// `from`. A run killed before that leaves the range as it was, and is run
/// again (the same rows).
fn back_fill(
    w: &ClioWriter,
    source: &mut Source<'_>,
    from: u32,
    f: u32,
    l: u32,
    report: &mut LoadReport,
    progress: &mut dyn FnMut(&LedgerLoaded),
) -> Result<(), ClioError> {
    let written = w.header(f)?.ok_or_else(|| {
        ClioError::unusable(f, "the first ledger of ledger_range has no header row")
    })?;
    let (_, hash) = source.header(f)?;
    if hash != written.stored_hash {
        return Err(ClioError::Unusable {
            seq: f,
            what: format!(
                "in the source store: its hash is {hash}, but the keyspace's ledger {f} is {}: another chain",
                written.stored_hash
            ),
        });
    }
    write_span(w, source, from, f - 1, Moves::Nothing, report, progress)?;
    // Ledger f as a following ledger: its diff and deletion rows.
    let lf = source.read(f)?;
    let rows = w.write(
        lf.changes
            .iter()
            .flat_map(|(k, obj)| [w.object_row(f, k, obj), w.diff_row(f, k)].into_iter()),
    )?;
    w.move_range(false, from, f)?;
    let _ = l;
    report.rows += rows;
    report.range_after = Some((from, l));
    Ok(())
}

/// The floor [`load`]'s time is measured against: the rows `load` would
/// write for ledgers `from..=to` of `store` into a new keyspace (read and
/// computed first, untimed, held in memory), then written alone with the
/// same prepared statements at the same concurrency, `ledger_range` last,
/// timed. Returns the rows and the time writing them took.
pub fn insert_floor(
    store: &dyn NodeStore,
    url: &str,
    opts: &LoadOptions,
    from: u32,
    to: u32,
) -> Result<(u64, std::time::Duration), ClioError> {
    let mut source = Source::new(store)?;
    let (conn, _) = connect(url, opts)?;
    let w = ClioWriter::new(conn)?;
    let mut ledgers = Vec::new();
    let mut first_objects = Vec::new();
    for seq in from..=to {
        let l = source.read(seq)?;
        if seq == from {
            source.each_object(&l.header, &mut |k, d| {
                first_objects.push((*k, d.to_vec()));
                Ok(())
            })?;
        }
        ledgers.push(l);
    }
    let t = std::time::Instant::now();
    let mut rows = 0;
    for l in &ledgers {
        let seq = l.header.seq;
        rows += w.write(w.ledger_rows(l).into_iter())?;
        if seq == from {
            for chunk in first_objects.chunks(OBJECT_BATCH) {
                rows += w.write(chunk.iter().map(|(k, d)| w.object_row(seq, k, d)))?;
            }
        }
        if seq == from {
            w.move_range(false, seq, seq)?;
        }
        w.move_range(true, seq, seq.saturating_sub(1))?;
    }
    Ok((rows, t.elapsed()))
}
