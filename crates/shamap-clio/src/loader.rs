//! Writing ledgers into Clio's schema, for tests and benchmarks: the rows
//! Clio's ETL writes, in the same shape.
//!
//! Followed (XRPLF/clio, `develop`):
//! - the tables: `src/data/cassandra/Schema.hpp` (`createSchema`), created
//!   here with the same columns, keys and clustering orders;
//! - the first ledger: `src/etl/impl/LedgerLoader.hpp` (`loadInitialLedger`):
//!   the header (`writeLedger`: `ledgers` and `ledger_hashes`), the
//!   transactions, every object at that sequence (no `diff` rows: Clio writes
//!   `diff` only once a range exists, `CassandraBackend::doWriteLedgerObject`),
//!   and the whole successor list from `00…00` through every key to `FF…FF`;
//! - each following ledger: `src/etl/impl/Transformer.hpp` (`buildNextLedger`
//!   with `updateCache` when rippled sends no neighbours): each changed
//!   object at the new sequence (empty blob for a deletion) with its `diff`
//!   row; then, with the live-key set already updated, for each created key
//!   `k`: `pred(k) → k` and `k → succ(k)`; for each deleted key `k`:
//!   `pred(k) → succ(k)` (modified keys write nothing); `ledger_range`'s
//!   `is_latest = true` row set to the new sequence (`finishWrites`).
//!
//! Left out, since verification does not read them: `account_tx`, the NFT
//! tables, the "book base" successor rows Clio adds for offer directories,
//! and the lightweight transaction (`IF sequence IN (?, null)`) Clio uses to
//! move `ledger_range` (a plain update here).
//!
//! The insert statements and the values of their rows are `rows.rs`'s,
//! shared with `clio load`'s writer; which rows each ledger has (objects,
//! `diff`, the successor list) is derived here on its own, so that the
//! tests comparing the two keyspaces compare two derivations.

use std::collections::BTreeSet;

use scylla::statement::prepared::PreparedStatement;
use scylla::value::CqlValue;
use shamap::xrpl::ledger::LedgerHeader;
use shamap::xrpl::tx::transaction_id;
use shamap::Key;

use super::rows::{big, Inserts, Row};
use super::schema::{self, Tables};
use super::{ClioError, Conn, FIRST_KEY, LAST_KEY};

/// One ledger to load: its header (whose `account_hash` and
/// `transaction_hash` the caller has filled in), its objects and its
/// transactions.
#[derive(Clone, Debug, Default)]
pub struct ClioLedger {
    /// The header; its hash is computed when written.
    pub header: Option<LedgerHeader>,
    /// For the first ledger, every object; for a following one, each
    /// changed key with its new object, or an empty one for a deletion.
    pub objects: Vec<(Key, Vec<u8>)>,
    /// `(transaction, metadata)` blobs.
    pub transactions: Vec<(Vec<u8>, Vec<u8>)>,
}

struct Statements {
    ins: Inserts,
    /// A plain update (see the module's doc).
    range: PreparedStatement,
}

/// Writes ledgers into a Clio keyspace (created with Clio's tables).
pub struct ClioLoader {
    conn: Conn,
    st: Statements,
    /// The live keys after the last ledger written (Clio's cache).
    live: BTreeSet<Key>,
    last: Option<u32>,
}

impl std::fmt::Debug for ClioLoader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClioLoader")
            .field("location", &self.conn.location)
            .field("last", &self.last)
            .finish_non_exhaustive()
    }
}

impl ClioLoader {
    /// Creates the keyspace the URL names (replication from the URL's
    /// `replication`, default 1) with Clio's tables, dropping it first if
    /// it exists.
    pub fn create_fresh(url: &str) -> Result<ClioLoader, ClioError> {
        ClioLoader::create_fresh_with(url, None, Tables::Core)
    }

    /// [`ClioLoader::create_fresh`] with a table prefix (else the URL's
    /// `table_prefix=`), creating `tables`.
    pub fn create_fresh_with(
        url: &str,
        table_prefix: Option<&str>,
        tables: Tables,
    ) -> Result<ClioLoader, ClioError> {
        let conn = Conn::connect(url, table_prefix)?;
        conn.execute(&format!("DROP KEYSPACE IF EXISTS {}", conn.keyspace()))?;
        schema::create(&conn, tables)?;
        ClioLoader::with_conn(conn)
    }

    /// Prepares the statements on `conn`.
    fn with_conn(conn: Conn) -> Result<ClioLoader, ClioError> {
        let st = Statements {
            ins: Inserts::prepare(&conn)?,
            range: conn.prepared(format!(
                "UPDATE {} SET sequence = ? WHERE is_latest = ?",
                conn.table("ledger_range")
            ))?,
        };
        Ok(ClioLoader {
            conn,
            st,
            live: BTreeSet::new(),
            last: None,
        })
    }

    /// A loader of an existing keyspace, for tests that damage it: its
    /// statements are prepared (the core tables must exist); it knows no
    /// live keys, so it loads no ledgers after what is there.
    pub fn connect(url: &str) -> Result<ClioLoader, ClioError> {
        let conn = Conn::connect(url, None)?;
        conn.check_tables()?;
        ClioLoader::with_conn(conn)
    }

    /// `cassandra://HOST:PORT/KEYSPACE`.
    pub fn location(&self) -> &str {
        &self.conn.location
    }

    /// The live keys after the last ledger written.
    pub fn live(&self) -> &BTreeSet<Key> {
        &self.live
    }

    /// Writes `rows`, at most `inflight` at once.
    fn write_all(&self, rows: Vec<Row<'_>>) -> Result<(), ClioError> {
        self.conn.write_rows(rows.into_iter()).map(|_| ())
    }

    /// The header and transaction rows of a ledger.
    fn header_and_txs<'a>(
        &'a self,
        header: &LedgerHeader,
        txs: &[(Vec<u8>, Vec<u8>)],
        rows: &mut Vec<Row<'a>>,
    ) {
        rows.extend(self.st.ins.header(header, &header.hash()));
        for (tx, meta) in txs {
            rows.extend(
                self.st
                    .ins
                    .transaction(header, &transaction_id(tx), tx, meta),
            );
        }
    }

    /// Writes the first ledger: header, transactions, every object, the
    /// whole successor list, and the range (first = last = its sequence).
    pub fn load_initial(&mut self, ledger: &ClioLedger) -> Result<(), ClioError> {
        let header = ledger
            .header
            .ok_or_else(|| ClioError::unusable(0, "a ledger to load needs a header"))?;
        let seq = header.seq;
        let mut rows = Vec::new();
        self.header_and_txs(&header, &ledger.transactions, &mut rows);
        let mut live = BTreeSet::new();
        for (key, obj) in &ledger.objects {
            if obj.is_empty() || !live.insert(*key) {
                return Err(ClioError::unusable(
                    seq,
                    format!("object {key}: empty or given twice in a first ledger"),
                ));
            }
            rows.push(self.st.ins.object(seq, key, obj));
        }
        let mut prev = FIRST_KEY;
        for key in live.iter().chain(std::iter::once(&LAST_KEY)) {
            rows.push(self.st.ins.successor(seq, &prev, key));
            prev = *key;
        }
        self.write_all(rows)?;
        self.write_all(vec![
            (&self.st.range, vec![big(seq), CqlValue::Boolean(false)]),
            (&self.st.range, vec![big(seq), CqlValue::Boolean(true)]),
        ])?;
        self.live = live;
        self.last = Some(seq);
        Ok(())
    }

    /// Writes the ledger after the last one: header, transactions, each
    /// changed object with its `diff` row, the successor updates, then
    /// moves the range's end.
    pub fn load_next(&mut self, ledger: &ClioLedger) -> Result<(), ClioError> {
        let header = ledger
            .header
            .ok_or_else(|| ClioError::unusable(0, "a ledger to load needs a header"))?;
        let seq = header.seq;
        if self.last.map(|l| l + 1) != Some(seq) {
            return Err(ClioError::unusable(
                seq,
                format!("not the ledger after the last one loaded ({:?})", self.last),
            ));
        }
        let mut rows = Vec::new();
        self.header_and_txs(&header, &ledger.transactions, &mut rows);
        // (key, created) for the keys whose successors change.
        let mut linked: Vec<(Key, bool)> = Vec::new();
        let mut live = self.live.clone();
        for (key, obj) in &ledger.objects {
            let was = live.contains(key);
            if obj.is_empty() {
                if !live.remove(key) {
                    return Err(ClioError::unusable(
                        seq,
                        format!("object {key}: deleted but not live"),
                    ));
                }
                linked.push((*key, false));
            } else if !was {
                live.insert(*key);
                linked.push((*key, true));
            }
            rows.push(self.st.ins.object(seq, key, obj));
            rows.push(self.st.ins.diff(seq, key));
        }
        for (key, created) in linked {
            let pred = live.range(..key).next_back().copied().unwrap_or(FIRST_KEY);
            let succ = live
                .range((std::ops::Bound::Excluded(key), std::ops::Bound::Unbounded))
                .next()
                .copied()
                .unwrap_or(LAST_KEY);
            if created {
                rows.push(self.st.ins.successor(seq, &pred, &key));
                rows.push(self.st.ins.successor(seq, &key, &succ));
            } else {
                rows.push(self.st.ins.successor(seq, &pred, &succ));
            }
        }
        self.write_all(rows)?;
        self.write_all(vec![(
            &self.st.range,
            vec![big(seq), CqlValue::Boolean(true)],
        )])?;
        self.live = live;
        self.last = Some(seq);
        Ok(())
    }

    /// Runs one CQL statement as any client of the cluster could: for
    /// tests that damage the data.
    pub fn execute(&self, cql: &str) -> Result<(), ClioError> {
        self.conn.execute(cql)
    }

    /// Clio's name of table `name` (`keyspace.<prefix><name>`).
    pub fn table(&self, name: &str) -> String {
        self.conn.table(name)
    }

    /// Drops the keyspace.
    pub fn drop_keyspace(self) -> Result<(), ClioError> {
        self.conn
            .execute(&format!("DROP KEYSPACE IF EXISTS {}", self.conn.keyspace()))
    }
}
