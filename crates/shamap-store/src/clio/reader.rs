//! Reading Clio's tables with the queries Clio itself uses
//! (`src/data/cassandra/Schema.hpp`: `selectObject`, `selectSuccessor`,
//! `selectDiff`, ...), the per-key ones pipelined: at most the URL's
//! `inflight` requests at once, results in order.

use futures::stream::{self, StreamExt, TryStreamExt};
use scylla::statement::prepared::PreparedStatement;
use shamap::{Hash256, Key};

use super::{ClioError, Conn};

/// A row of table `transactions`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxRow {
    /// The ledger the row says the transaction is in.
    pub ledger_sequence: i64,
    /// The serialized transaction.
    pub transaction: Vec<u8>,
    /// The serialized metadata.
    pub metadata: Vec<u8>,
}

/// A callback of [`ClioReader::scan_objects`]: key, sequence, object.
pub type ScanRow<'a> = dyn FnMut(&[u8], i64, &[u8]) + 'a;

struct Statements {
    range: PreparedStatement,
    header: PreparedStatement,
    diff: PreparedStatement,
    object: PreparedStatement,
    successor: PreparedStatement,
    ledger_txs: PreparedStatement,
    tx: PreparedStatement,
    scan_objects: PreparedStatement,
}

/// A connection to a Clio keyspace, read-only.
pub struct ClioReader {
    conn: Conn,
    st: Statements,
}

impl std::fmt::Debug for ClioReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClioReader")
            .field("location", &self.conn.location)
            .finish_non_exhaustive()
    }
}

fn seq_i64(seq: u32) -> i64 {
    i64::from(seq)
}

impl ClioReader {
    /// Connects to `cassandra://HOST[:PORT][,HOST...]/KEYSPACE[?...]` and
    /// prepares the queries; a keyspace that does not exist, or lacks one
    /// of Clio's tables, is an error saying so.
    pub fn open(url: &str) -> Result<ClioReader, ClioError> {
        let conn = Conn::connect(url)?;
        let ks = conn.keyspace().to_owned();
        if !conn.keyspace_exists()? {
            return Err(ClioError::Database {
                location: conn.location.clone(),
                what: format!("keyspace '{ks}' does not exist"),
            });
        }
        let p = |table: &str, cql: String| {
            conn.prepare(cql).map_err(|e| ClioError::Database {
                location: conn.location.clone(),
                what: format!("not a Clio database: cannot query table '{table}': {e}"),
            })
        };
        let st = Statements {
            range: p(
                "ledger_range",
                format!("SELECT is_latest, sequence FROM {ks}.ledger_range"),
            )?,
            header: p(
                "ledgers",
                format!("SELECT header FROM {ks}.ledgers WHERE sequence = ?"),
            )?,
            diff: p("diff", format!("SELECT key FROM {ks}.diff WHERE seq = ?"))?,
            object: p(
                "objects",
                format!(
                    "SELECT object, sequence FROM {ks}.objects WHERE key = ? AND sequence <= ? \
                     ORDER BY sequence DESC LIMIT 1"
                ),
            )?,
            successor: p(
                "successor",
                format!(
                    "SELECT next FROM {ks}.successor WHERE key = ? AND seq <= ? \
                     ORDER BY seq DESC LIMIT 1"
                ),
            )?,
            ledger_txs: p(
                "ledger_transactions",
                format!("SELECT hash FROM {ks}.ledger_transactions WHERE ledger_sequence = ?"),
            )?,
            tx: p(
                "transactions",
                format!(
                    "SELECT transaction, metadata, ledger_sequence FROM {ks}.transactions \
                     WHERE hash = ?"
                ),
            )?,
            scan_objects: p(
                "objects",
                format!(
                    "SELECT key, sequence, object FROM {ks}.objects WHERE sequence <= ? \
                     PER PARTITION LIMIT 1 ALLOW FILTERING"
                ),
            )?,
        };
        Ok(ClioReader { conn, st })
    }

    /// `cassandra://HOST:PORT/KEYSPACE`.
    pub fn location(&self) -> &str {
        &self.conn.location
    }

    /// The keyspace.
    pub fn keyspace(&self) -> &str {
        self.conn.keyspace()
    }

    /// `(first, last)` of table `ledger_range`, or `None` when it is empty.
    pub fn range(&self) -> Result<Option<(u32, u32)>, ClioError> {
        let what = "cannot read table ledger_range";
        let rows: Vec<(Option<bool>, Option<i64>)> = self
            .conn
            .runtime
            .block_on(async {
                let r = self
                    .conn
                    .session
                    .execute_unpaged(&self.st.range, ())
                    .await?;
                Ok::<_, Box<dyn std::error::Error + Send + Sync>>(
                    r.into_rows_result()?
                        .rows::<(Option<bool>, Option<i64>)>()?
                        .collect::<Result<Vec<_>, _>>()?,
                )
            })
            .map_err(|e| self.conn.fail(what, e))?;
        let get = |latest: bool| {
            rows.iter()
                .find(|(l, _)| *l == Some(latest))
                .and_then(|(_, s)| *s)
        };
        match (get(false), get(true)) {
            (None, None) => Ok(None),
            (Some(a), Some(b)) => {
                let a = u32::try_from(a);
                let b = u32::try_from(b);
                match (a, b) {
                    (Ok(a), Ok(b)) if a <= b => Ok(Some((a, b))),
                    _ => Err(self.conn.fail(
                        what,
                        "the first and last sequences are not an ascending pair of ledger numbers",
                    )),
                }
            }
            _ => Err(self.conn.fail(
                what,
                "only one of its two rows (is_latest false and true) is there",
            )),
        }
    }

    /// The header blob of ledger `seq`, if there is a row.
    pub fn header(&self, seq: u32) -> Result<Option<Vec<u8>>, ClioError> {
        self.conn.runtime.block_on(self.header_async(seq))
    }

    async fn header_async(&self, seq: u32) -> Result<Option<Vec<u8>>, ClioError> {
        let what = format!("cannot read the header of ledger {seq}");
        async {
            let r = self
                .conn
                .session
                .execute_unpaged(&self.st.header, (seq_i64(seq),))
                .await?;
            let row = r
                .into_rows_result()?
                .maybe_first_row::<(Option<Vec<u8>>,)>()?;
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(row.and_then(|(h,)| h))
        }
        .await
        .map_err(|e| self.conn.fail(&what, e))
    }

    /// The keys of ledger `seq`'s `diff` rows (as stored: a key of another
    /// length than 32 bytes is the caller's to refuse).
    pub fn diff(&self, seq: u32) -> Result<Vec<Vec<u8>>, ClioError> {
        self.conn.runtime.block_on(self.diff_async(seq))
    }

    async fn diff_async(&self, seq: u32) -> Result<Vec<Vec<u8>>, ClioError> {
        self.blobs(
            &self.st.diff,
            seq,
            &format!("cannot read the diff of ledger {seq}"),
        )
        .await
    }

    /// The transaction hashes of ledger `seq` (`ledger_transactions`).
    pub fn tx_hashes(&self, seq: u32) -> Result<Vec<Vec<u8>>, ClioError> {
        self.conn.runtime.block_on(self.tx_hashes_async(seq))
    }

    async fn tx_hashes_async(&self, seq: u32) -> Result<Vec<Vec<u8>>, ClioError> {
        self.blobs(
            &self.st.ledger_txs,
            seq,
            &format!("cannot read the transaction list of ledger {seq}"),
        )
        .await
    }

    /// Ledger `seq`'s header, diff keys and transaction hashes, the three
    /// queries in flight together.
    #[allow(clippy::type_complexity)]
    pub fn ledger_rows(
        &self,
        seq: u32,
    ) -> Result<(Option<Vec<u8>>, Vec<Vec<u8>>, Vec<Vec<u8>>), ClioError> {
        self.conn.runtime.block_on(async {
            futures::try_join!(
                self.header_async(seq),
                self.diff_async(seq),
                self.tx_hashes_async(seq)
            )
        })
    }

    async fn blobs(
        &self,
        st: &PreparedStatement,
        seq: u32,
        what: &str,
    ) -> Result<Vec<Vec<u8>>, ClioError> {
        async {
            let mut out = Vec::new();
            let mut pages = self
                .conn
                .session
                .execute_iter(st.clone(), (seq_i64(seq),))
                .await?
                .rows_stream::<(Option<Vec<u8>>,)>()?;
            while let Some(row) = pages.next().await {
                if let (Some(b),) = row? {
                    out.push(b);
                }
            }
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(out)
        }
        .await
        .map_err(|e| self.conn.fail(what, e))
    }

    /// For each key, its newest `objects` row at or below `seq`:
    /// `(sequence, object)` (an empty object is a deletion), or `None`.
    #[allow(clippy::type_complexity)]
    pub fn objects(
        &self,
        keys: &[Key],
        seq: u32,
    ) -> Result<Vec<Option<(i64, Vec<u8>)>>, ClioError> {
        self.conn.runtime.block_on(self.objects_async(keys, seq))
    }

    /// [`ClioReader::objects`] and [`ClioReader::transactions`] together,
    /// both pipelined at once.
    #[allow(clippy::type_complexity)]
    pub fn objects_and_transactions(
        &self,
        keys: &[Key],
        seq: u32,
        hashes: &[Hash256],
    ) -> Result<(Vec<Option<(i64, Vec<u8>)>>, Vec<Option<TxRow>>), ClioError> {
        self.conn.runtime.block_on(async {
            futures::try_join!(
                self.objects_async(keys, seq),
                self.transactions_async(hashes)
            )
        })
    }

    #[allow(clippy::type_complexity)]
    async fn objects_async(
        &self,
        keys: &[Key],
        seq: u32,
    ) -> Result<Vec<Option<(i64, Vec<u8>)>>, ClioError> {
        let st = &self.st.object;
        stream::iter(keys)
            .map(|key| async move {
                let what = || format!("cannot read object {key} at ledger {seq}");
                let r = self
                    .conn
                    .session
                    .execute_unpaged(st, (&key.0[..], seq_i64(seq)))
                    .await
                    .map_err(|e| self.conn.fail(&what(), e))?;
                let row = r
                    .into_rows_result()
                    .map_err(|e| self.conn.fail(&what(), e))?
                    .maybe_first_row::<(Option<Vec<u8>>, i64)>()
                    .map_err(|e| self.conn.fail(&what(), e))?;
                Ok::<_, ClioError>(row.map(|(o, s)| (s, o.unwrap_or_default())))
            })
            .buffered(self.conn.opts.inflight)
            .try_collect()
            .await
    }

    /// For each key, `next` of its newest `successor` row at or below
    /// `seq`, or `None`.
    pub fn successors(&self, keys: &[Key], seq: u32) -> Result<Vec<Option<Vec<u8>>>, ClioError> {
        let st = &self.st.successor;
        self.conn.runtime.block_on(
            stream::iter(keys)
                .map(|key| async move {
                    let what = || format!("cannot read the successor of {key} at ledger {seq}");
                    let r = self
                        .conn
                        .session
                        .execute_unpaged(st, (&key.0[..], seq_i64(seq)))
                        .await
                        .map_err(|e| self.conn.fail(&what(), e))?;
                    let row = r
                        .into_rows_result()
                        .map_err(|e| self.conn.fail(&what(), e))?
                        .maybe_first_row::<(Option<Vec<u8>>,)>()
                        .map_err(|e| self.conn.fail(&what(), e))?;
                    Ok::<_, ClioError>(row.and_then(|(n,)| n))
                })
                .buffered(self.conn.opts.inflight)
                .try_collect(),
        )
    }

    /// Every key's newest `objects` row at or below `seq`, as `f(key,
    /// sequence, object)`, by a paged scan of the whole table (Clio's own
    /// ledger-page query without the token bound): as many rows as keys
    /// ever written. Used only to name what a full build cannot.
    pub fn scan_objects(&self, seq: u32, f: &mut ScanRow<'_>) -> Result<(), ClioError> {
        let what = format!("cannot scan table objects at ledger {seq}");
        self.conn
            .runtime
            .block_on(async {
                let mut rows = self
                    .conn
                    .session
                    .execute_iter(self.st.scan_objects.clone(), (seq_i64(seq),))
                    .await?
                    .rows_stream::<(Vec<u8>, i64, Option<Vec<u8>>)>()?;
                while let Some(row) = rows.next().await {
                    let (key, s, obj) = row?;
                    f(&key, s, obj.as_deref().unwrap_or_default());
                }
                Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
            })
            .map_err(|e| self.conn.fail(&what, e))
    }

    /// For each hash, its `transactions` row, or `None`.
    pub fn transactions(&self, hashes: &[Hash256]) -> Result<Vec<Option<TxRow>>, ClioError> {
        self.conn.runtime.block_on(self.transactions_async(hashes))
    }

    async fn transactions_async(
        &self,
        hashes: &[Hash256],
    ) -> Result<Vec<Option<TxRow>>, ClioError> {
        let st = &self.st.tx;
        stream::iter(hashes)
            .map(|hash| async move {
                let what = || format!("cannot read transaction {hash}");
                let r = self
                    .conn
                    .session
                    .execute_unpaged(st, (&hash.0[..],))
                    .await
                    .map_err(|e| self.conn.fail(&what(), e))?;
                let row = r
                    .into_rows_result()
                    .map_err(|e| self.conn.fail(&what(), e))?
                    .maybe_first_row::<(Option<Vec<u8>>, Option<Vec<u8>>, Option<i64>)>()
                    .map_err(|e| self.conn.fail(&what(), e))?;
                Ok::<_, ClioError>(row.map(|(t, m, s)| TxRow {
                    ledger_sequence: s.unwrap_or(-1),
                    transaction: t.unwrap_or_default(),
                    metadata: m.unwrap_or_default(),
                }))
            })
            .buffered(self.conn.opts.inflight)
            .try_collect()
            .await
    }
}
