//! The rows of a verified ledger, written as Clio's ETL writes them, with
//! Clio's insert statements (`Schema.hpp`: `insertObject`, `insertDiff`,
//! `insertSuccessor`, `insertTransaction`, `insertLedgerTransaction`,
//! `insertAccountTx`, `insertLedgerHeader`, `insertLedgerHash`), prepared,
//! at most the URL's `inflight` at once; `ledger_range` moved only once
//! every row of the ledger is acknowledged, with Clio's own conditional
//! update (`updateLedgerRange`).

use scylla::statement::prepared::PreparedStatement;
use scylla::value::CqlValue;
use shamap::Key;

use super::source::SourceLedger;
use crate::rows::{big, blob, Inserts, Row};
use crate::{ClioError, ClioHeader, Conn};

pub(crate) struct Statements {
    ins: Inserts,
    /// `None` when the keyspace has no `account_tx` table (a keyspace of
    /// the core tables only, as the tests' loader makes).
    account_tx: Option<PreparedStatement>,
    range: PreparedStatement,
    read_range: PreparedStatement,
    read_header: PreparedStatement,
}

/// Writes Clio's rows into one keyspace.
pub struct ClioWriter {
    pub(crate) conn: Conn,
    st: Statements,
}

impl ClioWriter {
    /// Prepares the statements on `conn` (whose tables exist).
    pub(crate) fn new(conn: Conn) -> Result<ClioWriter, ClioError> {
        let has_account_tx = conn
            .tables()?
            .contains(&format!("{}account_tx", conn.prefix));
        let t = |name: &str| conn.table(name);
        let p = |cql: String| conn.prepared(cql);
        let st = Statements {
            ins: Inserts::prepare(&conn)?,
            account_tx: if has_account_tx {
                Some(p(format!(
                    "INSERT INTO {} (account, seq_idx, hash) VALUES (?, ?, ?)",
                    t("account_tx")
                ))?)
            } else {
                None
            },
            range: p(format!(
                "UPDATE {} SET sequence = ? WHERE is_latest = ? IF sequence IN (?, null)",
                t("ledger_range")
            ))?,
            read_range: p(format!(
                "SELECT is_latest, sequence FROM {}",
                t("ledger_range")
            ))?,
            read_header: p(format!(
                "SELECT header FROM {} WHERE sequence = ?",
                t("ledgers")
            ))?,
        };
        Ok(ClioWriter { conn, st })
    }

    /// True when the keyspace has an `account_tx` table (written).
    pub fn has_account_tx(&self) -> bool {
        self.st.account_tx.is_some()
    }

    /// `cassandra://HOST:PORT/KEYSPACE`.
    pub fn location(&self) -> &str {
        &self.conn.location
    }

    /// `ledger_range`: `(first, last)`, or `None` when empty (or when only
    /// its first-ledger row is there: a first ledger's write stopped
    /// before its last row, which the next run writes again).
    pub fn range(&self) -> Result<Option<(u32, u32)>, ClioError> {
        let what = "cannot read table ledger_range";
        let rows: Vec<(Option<bool>, Option<i64>)> =
            self.conn.select_prepared(what, &self.st.read_range, ())?;
        let get = |l: bool| {
            rows.iter()
                .find(|(x, _)| *x == Some(l))
                .and_then(|(_, s)| *s)
        };
        match (get(false), get(true)) {
            (None, None) => Ok(None),
            (Some(a), Some(b)) => match (u32::try_from(a), u32::try_from(b)) {
                (Ok(a), Ok(b)) if a <= b => Ok(Some((a, b))),
                _ => Err(self
                    .conn
                    .fail(what, "not an ascending pair of ledger numbers")),
            },
            // The first ledger's write stopped between its two rows: no
            // ledger is complete yet.
            (Some(_), None) => Ok(None),
            (None, Some(_)) => Err(self.conn.fail(
                what,
                "its is_latest row is there without its first-ledger row",
            )),
        }
    }

    /// The header row of ledger `seq`, parsed.
    pub fn header(&self, seq: u32) -> Result<Option<ClioHeader>, ClioError> {
        let what = format!("cannot read the header of ledger {seq}");
        let blob: Option<Vec<u8>> = self
            .conn
            .select_prepared::<_, (Option<Vec<u8>>,)>(
                &what,
                &self.st.read_header,
                (i64::from(seq),),
            )?
            .into_iter()
            .next()
            .and_then(|(b,)| b);
        match blob {
            None => Ok(None),
            Some(b) => ClioHeader::parse(&b)
                .map(Some)
                .ok_or_else(|| ClioError::unusable(seq, "its header row is malformed")),
        }
    }

    /// Writes `rows`, at most `inflight` at once; the rows written.
    pub(crate) fn write<'a>(
        &'a self,
        rows: impl Iterator<Item = Row<'a>>,
    ) -> Result<u64, ClioError> {
        self.conn.write_rows(rows)
    }

    /// The object row of `key` at `seq` (an empty object: deleted).
    pub(crate) fn object_row<'a>(&'a self, seq: u32, key: &Key, obj: &[u8]) -> Row<'a> {
        self.st.ins.object(seq, key, obj)
    }

    /// The diff row of `key` at `seq`.
    pub(crate) fn diff_row<'a>(&'a self, seq: u32, key: &Key) -> Row<'a> {
        self.st.ins.diff(seq, key)
    }

    /// Every row of ledger `l` but its objects when it is a first ledger
    /// (streamed by the caller): header, hash, transactions, their
    /// `ledger_transactions` and `account_tx` rows, a following ledger's
    /// objects and `diff` rows, and the successor rows.
    pub(crate) fn ledger_rows<'a>(&'a self, l: &SourceLedger) -> Vec<Row<'a>> {
        let seq = l.header.seq;
        let ins = &self.st.ins;
        let mut rows: Vec<Row<'a>> = ins.header(&l.header, &l.hash).into();
        for t in &l.transactions {
            rows.extend(ins.transaction(&l.header, &t.id, &t.tx, &t.meta));
            let Some(account_tx) = &self.st.account_tx else {
                continue;
            };
            for a in &t.accounts {
                rows.push((
                    account_tx,
                    vec![
                        blob(a),
                        CqlValue::Tuple(vec![
                            Some(big(seq)),
                            Some(CqlValue::BigInt(i64::from(t.index))),
                        ]),
                        blob(&t.id.0),
                    ],
                ));
            }
        }
        for (k, obj) in &l.changes {
            rows.push(ins.object(seq, k, obj));
            if !l.full {
                rows.push(ins.diff(seq, k));
            }
        }
        for (k, next) in &l.successors {
            rows.push(ins.successor(seq, k, next));
        }
        rows
    }

    /// Moves one end of `ledger_range` to `seq` as Clio's writer does, with
    /// a lightweight transaction (`IF sequence IN (expected, null)`): the
    /// last ledger only from `seq - 1` (or an empty range), the first
    /// from `expected`. Another writer having moved it (a Clio running on
    /// the keyspace) is an error, and nothing is changed.
    pub(crate) fn move_range(
        &self,
        latest: bool,
        seq: u32,
        expected: u32,
    ) -> Result<(), ClioError> {
        let end = if latest { "last" } else { "first" };
        let what = format!("cannot set ledger_range's {end} ledger to {seq}");
        let applied = self
            .conn
            .runtime
            .block_on(async {
                let r = self
                    .conn
                    .session
                    .execute_unpaged(
                        &self.st.range,
                        (i64::from(seq), latest, i64::from(expected)),
                    )
                    .await?;
                // `[applied]` first; when not applied, the current value too.
                let row = r
                    .into_rows_result()?
                    .rows::<scylla::value::Row>()?
                    .next()
                    .ok_or("no result row")??;
                let applied = matches!(row.columns.first(), Some(Some(CqlValue::Boolean(true))));
                Ok::<_, Box<dyn std::error::Error + Send + Sync>>(applied)
            })
            .map_err(|e| self.conn.fail(&what, e))?;
        if applied {
            Ok(())
        } else {
            Err(self.conn.fail(
                &what,
                format!(
                    "another writer moved it (it is no longer {expected} or empty): is a Clio writing to this keyspace?"
                ),
            ))
        }
    }
}
