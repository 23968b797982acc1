//! The rows Clio's ETL inserts, one way for every writer of this crate
//! (`clio load` and `clio repair`'s [`crate::etl::ClioWriter`], the tests'
//! [`crate::ClioLoader`]): Clio's insert statements (`Schema.hpp`:
//! `insertObject`, `insertDiff`, `insertSuccessor`, `insertLedgerHeader`,
//! `insertLedgerHash`, `insertLedgerTransaction`, `insertTransaction`),
//! prepared, the values of their rows, and the writing of a batch of rows
//! at most the URL's `inflight` at once. Which rows a ledger has is each
//! writer's own.

use futures::stream::{self, StreamExt, TryStreamExt};
use scylla::statement::prepared::PreparedStatement;
use scylla::value::CqlValue;
use shamap::xrpl::ledger::LedgerHeader;
use shamap::{Hash256, Key};

use crate::{ClioError, ClioHeader, Conn};

/// A row to write: its statement and values.
pub(crate) type Row<'a> = (&'a PreparedStatement, Vec<CqlValue>);

/// A `blob` value.
pub(crate) fn blob(b: &[u8]) -> CqlValue {
    CqlValue::Blob(b.to_vec())
}

/// A `bigint` value from a ledger sequence.
pub(crate) fn big(n: u32) -> CqlValue {
    CqlValue::BigInt(i64::from(n))
}

/// Clio's inserts into the core tables, prepared.
pub(crate) struct Inserts {
    object: PreparedStatement,
    diff: PreparedStatement,
    successor: PreparedStatement,
    header: PreparedStatement,
    ledger_hash: PreparedStatement,
    ledger_tx: PreparedStatement,
    tx: PreparedStatement,
}

impl Conn {
    /// Prepares `cql`; a failure names the database.
    pub(crate) fn prepared(&self, cql: String) -> Result<PreparedStatement, ClioError> {
        self.prepare(cql).map_err(|e| ClioError::Database {
            location: self.location.clone(),
            what: format!("cannot prepare a statement: {e}"),
        })
    }

    /// Writes `rows`, at most the URL's `inflight` at once; the rows
    /// written.
    pub(crate) fn write_rows<'a>(
        &self,
        rows: impl Iterator<Item = Row<'a>>,
    ) -> Result<u64, ClioError> {
        let mut n = 0u64;
        self.runtime.block_on(
            stream::iter(rows.inspect(|_| n += 1))
                .map(|(st, values)| async move {
                    self.session
                        .execute_unpaged(st, values)
                        .await
                        .map(|_| ())
                        .map_err(|e| self.fail("cannot write a row", e))
                })
                .buffer_unordered(self.opts.inflight)
                .try_collect::<()>(),
        )?;
        Ok(n)
    }
}

impl Inserts {
    /// Prepares the inserts on `conn`'s tables.
    pub(crate) fn prepare(conn: &Conn) -> Result<Inserts, ClioError> {
        let p = |table: &str, columns: &str| {
            let marks = vec!["?"; columns.split(',').count()].join(", ");
            conn.prepared(format!(
                "INSERT INTO {} ({columns}) VALUES ({marks})",
                conn.table(table)
            ))
        };
        Ok(Inserts {
            object: p("objects", "key, sequence, object")?,
            diff: p("diff", "seq, key")?,
            successor: p("successor", "key, seq, next")?,
            header: p("ledgers", "sequence, header")?,
            ledger_hash: p("ledger_hashes", "hash, sequence")?,
            ledger_tx: p("ledger_transactions", "ledger_sequence, hash")?,
            tx: p(
                "transactions",
                "hash, ledger_sequence, date, transaction, metadata",
            )?,
        })
    }

    /// The object row of `key` at `seq` (an empty object: deleted).
    pub(crate) fn object(&self, seq: u32, key: &Key, obj: &[u8]) -> Row<'_> {
        (&self.object, vec![blob(&key.0), big(seq), blob(obj)])
    }

    /// The diff row of `key` at `seq`.
    pub(crate) fn diff(&self, seq: u32, key: &Key) -> Row<'_> {
        (&self.diff, vec![big(seq), blob(&key.0)])
    }

    /// The successor row `key → next` at `seq`.
    pub(crate) fn successor(&self, seq: u32, key: &Key, next: &Key) -> Row<'_> {
        (&self.successor, vec![blob(&key.0), big(seq), blob(&next.0)])
    }

    /// A ledger's `ledgers` and `ledger_hashes` rows.
    pub(crate) fn header(&self, h: &LedgerHeader, hash: &Hash256) -> [Row<'_>; 2] {
        [
            (
                &self.header,
                vec![big(h.seq), CqlValue::Blob(ClioHeader::blob(h, hash))],
            ),
            (&self.ledger_hash, vec![blob(&hash.0), big(h.seq)]),
        ]
    }

    /// A transaction's `ledger_transactions` and `transactions` rows: its
    /// id, ledger, the ledger's close time, its blob and its metadata.
    pub(crate) fn transaction(
        &self,
        h: &LedgerHeader,
        id: &Hash256,
        tx: &[u8],
        meta: &[u8],
    ) -> [Row<'_>; 2] {
        [
            (&self.ledger_tx, vec![big(h.seq), blob(&id.0)]),
            (
                &self.tx,
                vec![
                    blob(&id.0),
                    big(h.seq),
                    CqlValue::BigInt(i64::from(h.close_time)),
                    blob(tx),
                    blob(meta),
                ],
            ),
        ]
    }
}
