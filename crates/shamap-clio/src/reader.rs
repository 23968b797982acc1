//! Reading Clio's tables with the queries Clio itself uses
//! (`src/data/cassandra/Schema.hpp`: `selectObject`, `selectSuccessor`,
//! `selectDiff`, ...), the per-key ones pipelined: at most the URL's
//! `inflight` requests at once over everything the reader has in flight
//! (one semaphore), results in order.
//!
//! Two kinds of bulk read besides:
//! - [`ClioReader::scan_state`]: the whole state at a sequence, for a
//!   first ledger's build, as token-range scans of `objects` (each key's
//!   newest row at or below it: Clio's ledger-page query) and `successor`
//!   (every row at or below it), [`SCAN_RANGES`] ranges per table, a few
//!   scans of each table in flight;
//! - [`ClioReader::prefetch`]: a following ledger's rows (header, diff,
//!   transaction list, then the diff keys' objects and the transactions)
//!   read in the background on the reader's runtime while the caller works
//!   on an earlier ledger, taken with [`ClioReader::take`].

use std::sync::Arc;

use futures::stream::{self, StreamExt, TryStreamExt};
use scylla::client::session::Session;
use scylla::serialize::row::SerializeRow;
use scylla::statement::prepared::PreparedStatement;
use shamap::{Hash256, Key};
use tokio::sync::Semaphore;

use std::collections::VecDeque;

use super::{key_of, ClioError, Conn, RowOf, FIRST_KEY, LAST_KEY};

mod scan;
use scan::choose_scan;
pub use scan::ScanMode;

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

/// A row of a state scan ([`ClioReader::scan_state`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StateRow {
    /// A key's newest `objects` row at or below the sequence: key (as
    /// stored), its sequence, the object (empty: deleted).
    Object(Vec<u8>, i64, Vec<u8>),
    /// A `successor` row at or below the sequence: key (as stored), its
    /// sequence, `next` (as stored). A key may have several.
    Successor(Vec<u8>, i64, Vec<u8>),
}

/// Token ranges each table is split into for a state scan.
pub const SCAN_RANGES: usize = 256;
/// Most range scans of one table in flight at once.
const SCAN_CONCURRENCY: usize = 4;

/// Rows a scan asks for per page.
const SCAN_PAGE: i32 = 2000;

/// The rows of one ledger, read together ([`ClioReader::fetch`]).
#[derive(Clone, Debug, Default)]
pub struct LedgerRows {
    /// The ledger.
    pub seq: u32,
    /// Its `ledgers.header` blob, if there is a row.
    pub header: Option<Vec<u8>>,
    /// Its `diff` keys as stored (a key of another length than 32 bytes is
    /// the caller's to refuse).
    pub diff: Vec<Vec<u8>>,
    /// Its `ledger_transactions` hashes as stored.
    pub tx_hashes: Vec<Vec<u8>>,
    /// The `ledger_hashes` row of the hash stored in its header row: the
    /// sequence it maps that hash to (`None`: no row, or no header row of
    /// the right length to take a hash from).
    pub hash_seq: Option<i64>,
    /// The 32-byte diff keys, sorted, without repeats: the keys of
    /// `objects` (empty when the fetch read no objects).
    pub keys: Vec<Key>,
    /// For each of `keys`, its newest `objects` row at or below the ledger
    /// (`(sequence, object)`, empty object: deleted), or `None`; empty
    /// when the fetch read no objects.
    pub objects: Vec<Option<(i64, Vec<u8>)>>,
    /// True when `keys` and `objects` were read.
    pub with_objects: bool,
    /// For each 32-byte hash of `tx_hashes` (in order, the others left
    /// out), its `transactions` row, or `None`.
    pub transactions: Vec<Option<TxRow>>,
}

impl LedgerRows {
    /// The 32-byte diff keys, sorted, without repeats.
    pub fn diff_keys(diff: &[Vec<u8>]) -> Vec<Key> {
        let mut keys: Vec<Key> = diff.iter().filter_map(|b| key_of(b)).collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// The 32-byte transaction hashes, in order.
    pub fn hashes(raw: &[Vec<u8>]) -> Vec<Hash256> {
        raw.iter().filter_map(|b| Hash256::from_slice(b)).collect()
    }
}

/// Rows being read in the background: a task on the reader's runtime
/// whose requests share the reader's `inflight` bound. Dropped before it
/// is waited for (a run that stopped), it reads no further.
#[derive(Debug)]
pub struct Background<T> {
    /// What is read, for an error ("ledger 7's rows").
    what: String,
    task: tokio::task::JoinHandle<Result<T, ClioError>>,
}

impl<T> Drop for Background<T> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A ledger's rows being read in the background ([`ClioReader::prefetch`]).
#[derive(Debug)]
pub struct Prefetch {
    seq: u32,
    rows: Background<LedgerRows>,
}

impl Prefetch {
    /// The ledger.
    pub fn seq(&self) -> u32 {
        self.seq
    }
}

struct Statements {
    range: PreparedStatement,
    header: PreparedStatement,
    hash_seq: PreparedStatement,
    diff: PreparedStatement,
    object: PreparedStatement,
    successor: PreparedStatement,
    ledger_txs: PreparedStatement,
    tx: PreparedStatement,
    /// The ledger-page scans with `PER PARTITION LIMIT` / `ALLOW
    /// FILTERING` ([`ScanMode::Partition`] only).
    partition: Option<PartitionScans>,
    /// Every row of a token range of `objects`, unfiltered.
    all_objects_range: PreparedStatement,
    /// Every row of a token range of `successor`, unfiltered.
    all_successors_range: PreparedStatement,
}

struct PartitionScans {
    objects_range: PreparedStatement,
    successors_range: PreparedStatement,
}

/// What the reader's queries share, also with background reads.
struct Shared {
    session: Arc<Session>,
    st: Statements,
    location: String,
    inflight: usize,
    /// One permit per request in flight, over all the reader's reads.
    permits: Semaphore,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl Shared {
    fn fail(&self, what: &str, e: impl std::fmt::Display) -> ClioError {
        ClioError::Database {
            location: self.location.clone(),
            what: format!("{what}: {}", super::one_line(e)),
        }
    }

    /// Runs `st` with `values` as one request (a permit held meanwhile),
    /// returning its first row.
    async fn first_row<V: SerializeRow, R: RowOf>(
        &self,
        st: &PreparedStatement,
        values: V,
    ) -> Result<Option<R>, BoxError> {
        let _permit = self.permits.acquire().await?;
        let r = self.session.execute_unpaged(st, values).await?;
        Ok(r.into_rows_result()?.maybe_first_row::<R>()?)
    }

    async fn header(&self, seq: u32) -> Result<Option<Vec<u8>>, ClioError> {
        self.first_row::<_, (Option<Vec<u8>>,)>(&self.st.header, (seq_i64(seq),))
            .await
            .map(|r| r.and_then(|(h,)| h))
            .map_err(|e| self.fail(&format!("cannot read the header of ledger {seq}"), e))
    }

    /// Ledger `seq`'s header row, and the sequence `ledger_hashes` maps the
    /// hash stored in it to.
    async fn header_and_hash_seq(
        &self,
        seq: u32,
    ) -> Result<(Option<Vec<u8>>, Option<i64>), ClioError> {
        let header = self.header(seq).await?;
        let Some(hash) = header
            .as_deref()
            .filter(|b| b.len() == crate::HEADER_BLOB_LEN)
            .map(|b| b[crate::HEADER_BLOB_LEN - 32..].to_vec())
        else {
            return Ok((header, None));
        };
        let row = self
            .first_row::<_, (Option<i64>,)>(&self.st.hash_seq, (hash,))
            .await
            .map_err(|e| {
                self.fail(
                    &format!("cannot read the ledger_hashes row of ledger {seq}"),
                    e,
                )
            })?;
        Ok((header, row.and_then(|(s,)| s)))
    }

    async fn diff(&self, seq: u32) -> Result<Vec<Vec<u8>>, ClioError> {
        self.blobs(&self.st.diff, seq, "the diff").await
    }

    async fn tx_hashes(&self, seq: u32) -> Result<Vec<Vec<u8>>, ClioError> {
        self.blobs(&self.st.ledger_txs, seq, "the transaction list")
            .await
    }

    /// The blobs `st` reads for ledger `seq`; an error names them as `what`
    /// (`cannot read WHAT of ledger SEQ`).
    async fn blobs(
        &self,
        st: &PreparedStatement,
        seq: u32,
        what: &str,
    ) -> Result<Vec<Vec<u8>>, ClioError> {
        async {
            let _permit = self.permits.acquire().await?;
            let mut out = Vec::new();
            let mut pages = self
                .session
                .execute_iter(st.clone(), (seq_i64(seq),))
                .await?
                .rows_stream::<(Option<Vec<u8>>,)>()?;
            while let Some(row) = pages.next().await {
                if let (Some(b),) = row? {
                    out.push(b);
                }
            }
            Ok::<_, BoxError>(out)
        }
        .await
        .map_err(|e| self.fail(&format!("cannot read {what} of ledger {seq}"), e))
    }

    #[allow(clippy::type_complexity)]
    async fn objects(
        &self,
        keys: &[Key],
        seq: u32,
    ) -> Result<Vec<Option<(i64, Vec<u8>)>>, ClioError> {
        stream::iter(keys.iter().copied())
            .map(|key: Key| async move {
                self.first_row::<_, (Option<Vec<u8>>, i64)>(
                    &self.st.object,
                    (&key.0[..], seq_i64(seq)),
                )
                .await
                .map(|row| row.map(|(o, s)| (s, o.unwrap_or_default())))
                .map_err(|e| self.fail(&format!("cannot read object {key} at ledger {seq}"), e))
            })
            .buffered(self.inflight)
            .try_collect()
            .await
    }

    async fn successors(&self, keys: &[Key], seq: u32) -> Result<Vec<Option<Vec<u8>>>, ClioError> {
        stream::iter(keys.iter().copied())
            .map(|key: Key| async move {
                self.first_row::<_, (Option<Vec<u8>>,)>(
                    &self.st.successor,
                    (&key.0[..], seq_i64(seq)),
                )
                .await
                .map(|row| row.and_then(|(n,)| n))
                .map_err(|e| {
                    self.fail(
                        &format!("cannot read the successor of {key} at ledger {seq}"),
                        e,
                    )
                })
            })
            .buffered(self.inflight)
            .try_collect()
            .await
    }

    async fn transactions(&self, hashes: &[Hash256]) -> Result<Vec<Option<TxRow>>, ClioError> {
        stream::iter(hashes.iter().copied())
            .map(|hash: Hash256| async move {
                self.first_row::<_, (Option<Vec<u8>>, Option<Vec<u8>>, Option<i64>)>(
                    &self.st.tx,
                    (&hash.0[..],),
                )
                .await
                .map(|row| {
                    row.map(|(t, m, s)| TxRow {
                        ledger_sequence: s.unwrap_or(-1),
                        transaction: t.unwrap_or_default(),
                        metadata: m.unwrap_or_default(),
                    })
                })
                .map_err(|e| self.fail(&format!("cannot read transaction {hash}"), e))
            })
            .buffered(self.inflight)
            .try_collect()
            .await
    }

    /// Ledger `seq`'s header, diff and transaction list together; then,
    /// together, the diff keys' objects (`with_objects`) and the
    /// transactions.
    async fn fetch(&self, seq: u32, with_objects: bool) -> Result<LedgerRows, ClioError> {
        let ((header, hash_seq), diff, tx_hashes) = futures::try_join!(
            self.header_and_hash_seq(seq),
            self.diff(seq),
            self.tx_hashes(seq)
        )?;
        let keys = if with_objects {
            LedgerRows::diff_keys(&diff)
        } else {
            Vec::new()
        };
        let hashes = LedgerRows::hashes(&tx_hashes);
        let (objects, transactions) =
            futures::try_join!(self.objects(&keys, seq), self.transactions(&hashes))?;
        Ok(LedgerRows {
            seq,
            header,
            diff,
            tx_hashes,
            hash_seq,
            keys,
            objects,
            with_objects,
            transactions,
        })
    }

    /// The rows of one token range `(lo, hi]` of a state scan: with the
    /// partition scans, the server's filtered rows; without, every row of
    /// the range, filtered here (each key's newest `objects` row at or
    /// below `seq`: a partition's rows come newest first; every
    /// `successor` row at or below it).
    fn scan_range(
        self: &Arc<Self>,
        objects: bool,
        lo: i64,
        hi: i64,
        seq: u32,
    ) -> futures::stream::BoxStream<'static, Result<StateRow, BoxError>> {
        let sh = Arc::clone(self);
        stream::once(async move {
            let at = seq_i64(seq);
            let pager = match &sh.st.partition {
                Some(p) => {
                    let st = if objects {
                        &p.objects_range
                    } else {
                        &p.successors_range
                    };
                    sh.session.execute_iter(st.clone(), (lo, hi, at)).await?
                }
                None => {
                    let st = if objects {
                        &sh.st.all_objects_range
                    } else {
                        &sh.st.all_successors_range
                    };
                    sh.session.execute_iter(st.clone(), (lo, hi)).await?
                }
            };
            let filtered = sh.st.partition.is_none();
            let mut last: Option<Vec<u8>> = None;
            let rows = pager
                .rows_stream::<(Vec<u8>, i64, Option<Vec<u8>>)>()?
                .try_filter_map(move |(k, s, v)| {
                    let keep = if !filtered {
                        true
                    } else if s > at {
                        false
                    } else if objects {
                        // The first row at or below `seq` of each key.
                        if last.as_deref() == Some(&k[..]) {
                            false
                        } else {
                            last = Some(k.clone());
                            true
                        }
                    } else {
                        true
                    };
                    let row = keep.then(|| {
                        let v = v.unwrap_or_default();
                        if objects {
                            StateRow::Object(k, s, v)
                        } else {
                            StateRow::Successor(k, s, v)
                        }
                    });
                    futures::future::ready(Ok(row))
                })
                .map_err(BoxError::from);
            Ok::<_, BoxError>(rows)
        })
        .try_flatten()
        .boxed()
    }

    /// The next hop of the successor list at `seq` from `key`: `next` of
    /// the newest `successor` row of `key` at or below it.
    async fn hop(&self, key: &Key, seq: u32) -> Result<Option<Vec<u8>>, BoxError> {
        Ok(self
            .first_row::<_, (Option<Vec<u8>>,)>(&self.st.successor, (&key.0[..], seq_i64(seq)))
            .await?
            .and_then(|(n,)| n))
    }
}

/// A connection to a Clio keyspace, read-only.
pub struct ClioReader {
    conn: Conn,
    sh: Arc<Shared>,
    not_checked: Vec<String>,
    /// The scan in use (never `Auto`).
    scan: ScanMode,
    /// Why `Auto` did not pick `Partition`.
    scan_note: Option<String>,
}

/// How [`ClioReader::open_with`] reads a keyspace.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Clio's `table_prefix` (`--table-prefix`); `None`: the URL's
    /// `table_prefix=`, else none.
    pub table_prefix: Option<String>,
    /// How a whole state is listed (`--scan`).
    pub scan: ScanMode,
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
        ClioReader::open_with(url, &ReadOptions::default())
    }

    /// [`ClioReader::open`] with options: the table prefix (else the URL's
    /// `table_prefix=`).
    pub fn open_with(url: &str, opts: &ReadOptions) -> Result<ClioReader, ClioError> {
        let conn = Conn::connect(url, opts.table_prefix.as_deref())?;
        let ks = conn.keyspace().to_owned();
        if !conn.keyspace_exists()? {
            return Err(ClioError::Database {
                location: conn.location.clone(),
                what: format!("keyspace '{ks}' does not exist"),
            });
        }
        let not_checked = conn.check_tables()?;
        let t = |name: &str| conn.table(name);
        let (t_ledger_range, t_ledgers, t_diff, t_objects) =
            (t("ledger_range"), t("ledgers"), t("diff"), t("objects"));
        let t_ledger_hashes = t("ledger_hashes");
        let (t_successor, t_ledger_transactions, t_transactions) =
            (t("successor"), t("ledger_transactions"), t("transactions"));
        let p = |table: &str, cql: String| {
            conn.prepare(cql).map_err(|e| ClioError::Database {
                location: conn.location.clone(),
                what: format!("not a Clio database: cannot query table '{table}': {e}"),
            })
        };
        // The columns of `table`'s rows in one token range, read in pages.
        let token_range = |table: &str, columns: &str| {
            let cql = format!(
                "SELECT {columns} FROM {} WHERE token(key) > ? AND token(key) <= ?",
                t(table)
            );
            let mut s = p(table, cql)?;
            s.set_page_size(SCAN_PAGE);
            Ok::<_, ClioError>(s)
        };
        let mut st = Statements {
            range: p(
                "ledger_range",
                format!("SELECT is_latest, sequence FROM {t_ledger_range}"),
            )?,
            header: p(
                "ledgers",
                format!("SELECT header FROM {t_ledgers} WHERE sequence = ?"),
            )?,
            hash_seq: p(
                "ledger_hashes",
                format!("SELECT sequence FROM {t_ledger_hashes} WHERE hash = ?"),
            )?,
            diff: p("diff", format!("SELECT key FROM {t_diff} WHERE seq = ?"))?,
            object: p(
                "objects",
                format!(
                    "SELECT object, sequence FROM {t_objects} WHERE key = ? AND sequence <= ? \
                     ORDER BY sequence DESC LIMIT 1"
                ),
            )?,
            successor: p(
                "successor",
                format!(
                    "SELECT next FROM {t_successor} WHERE key = ? AND seq <= ? \
                     ORDER BY seq DESC LIMIT 1"
                ),
            )?,
            ledger_txs: p(
                "ledger_transactions",
                format!("SELECT hash FROM {t_ledger_transactions} WHERE ledger_sequence = ?"),
            )?,
            tx: p(
                "transactions",
                format!(
                    "SELECT transaction, metadata, ledger_sequence FROM {t_transactions} \
                     WHERE hash = ?"
                ),
            )?,
            partition: None,
            all_objects_range: token_range("objects", "key, sequence, object")?,
            all_successors_range: token_range("successor", "key, seq, next")?,
        };
        // The partition scans: prepared, and run once over an empty token
        // range, so that a server that refuses them says so now.
        let partition = || -> Result<PartitionScans, String> {
            let mut scans = Vec::new();
            for cql in [
                format!(
                    "SELECT key, sequence, object FROM {t_objects} \
                     WHERE token(key) > ? AND token(key) <= ? AND sequence <= ? \
                     PER PARTITION LIMIT 1 ALLOW FILTERING"
                ),
                format!(
                    "SELECT key, seq, next FROM {t_successor} \
                     WHERE token(key) > ? AND token(key) <= ? AND seq <= ? ALLOW FILTERING"
                ),
            ] {
                let mut st = conn.prepare(cql)?;
                st.set_page_size(SCAN_PAGE);
                conn.runtime
                    .block_on(conn.session.execute_unpaged(&st, (0i64, 0i64, 0i64)))
                    .map_err(super::one_line)?;
                scans.push(st);
            }
            let successors_range = scans.pop().ok_or("no statement")?;
            let objects_range = scans.pop().ok_or("no statement")?;
            Ok(PartitionScans {
                objects_range,
                successors_range,
            })
        };
        let (mode, partition, scan_note) =
            choose_scan(opts.scan, partition).map_err(|what| ClioError::Database {
                location: conn.location.clone(),
                what,
            })?;
        st.partition = partition;
        let sh = Arc::new(Shared {
            session: Arc::clone(&conn.session),
            st,
            location: conn.location.clone(),
            inflight: conn.opts.inflight,
            permits: Semaphore::new(conn.opts.inflight),
        });
        Ok(ClioReader {
            conn,
            sh,
            not_checked,
            scan: mode,
            scan_note,
        })
    }

    /// How a whole state is listed: the `--scan` asked for, or what
    /// `auto` chose (never [`ScanMode::Auto`]).
    pub fn scan_mode(&self) -> ScanMode {
        self.scan
    }

    /// Why `auto` did not choose the partition scan, when it did not.
    pub fn scan_note(&self) -> Option<&str> {
        self.scan_note.as_deref()
    }

    /// The keyspace's tables under the prefix that `clio verify` does not
    /// check (Clio's `account_tx`, NFT and MPT index tables, its
    /// migrator's and cluster's bookkeeping), by name.
    pub fn not_checked(&self) -> &[String] {
        &self.not_checked
    }

    /// The table prefix (empty: none).
    pub fn table_prefix(&self) -> &str {
        &self.conn.prefix
    }

    /// `cassandra://HOST:PORT/KEYSPACE`.
    pub fn location(&self) -> &str {
        &self.conn.location
    }

    /// The keyspace.
    pub fn keyspace(&self) -> &str {
        self.conn.keyspace()
    }

    /// Most requests in flight (the URL's `inflight`).
    pub fn inflight(&self) -> usize {
        self.sh.inflight
    }

    fn block_on<T>(&self, f: impl std::future::Future<Output = T>) -> T {
        self.conn.runtime.block_on(f)
    }

    /// `(first, last)` of table `ledger_range`, or `None` when it is empty.
    pub fn range(&self) -> Result<Option<(u32, u32)>, ClioError> {
        let what = "cannot read table ledger_range";
        let rows: Vec<(Option<bool>, Option<i64>)> = self
            .block_on(async {
                let _permit = self.sh.permits.acquire().await?;
                let r = self
                    .sh
                    .session
                    .execute_unpaged(&self.sh.st.range, ())
                    .await?;
                Ok::<_, BoxError>(
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

    /// Ledger `seq`'s rows: header, diff keys and transaction list
    /// together, then (`with_objects`) the diff keys' objects and the
    /// transactions together: two round trips.
    pub fn fetch(&self, seq: u32, with_objects: bool) -> Result<LedgerRows, ClioError> {
        self.block_on(self.sh.fetch(seq, with_objects))
    }

    /// Starts [`ClioReader::fetch`] of ledger `seq` (with objects) in the
    /// background; its requests share the reader's `inflight` bound.
    pub fn prefetch(&self, seq: u32) -> Prefetch {
        let sh = Arc::clone(&self.sh);
        Prefetch {
            seq,
            rows: self.background(format!("ledger {seq}'s rows"), async move {
                sh.fetch(seq, true).await
            }),
        }
    }

    /// Waits for a prefetch's rows.
    pub fn take(&self, p: Prefetch) -> Result<LedgerRows, ClioError> {
        self.wait(p.rows)
    }

    /// Starts [`ClioReader::successors`] in the background.
    pub fn successors_later(&self, keys: Vec<Key>, seq: u32) -> Background<Vec<Option<Vec<u8>>>> {
        let sh = Arc::clone(&self.sh);
        self.background(format!("the successor rows of ledger {seq}"), async move {
            sh.successors(&keys, seq).await
        })
    }

    /// Waits for a background read.
    pub fn wait<T>(&self, mut b: Background<T>) -> Result<T, ClioError> {
        self.block_on(&mut b.task).map_err(|e| {
            self.conn
                .fail(&format!("reading {} in the background failed", b.what), e)
        })?
    }

    fn background<T: Send + 'static>(
        &self,
        what: String,
        f: impl std::future::Future<Output = Result<T, ClioError>> + Send + 'static,
    ) -> Background<T> {
        Background {
            what,
            task: self.conn.runtime.spawn(f),
        }
    }

    /// For each key, its newest `objects` row at or below `seq`:
    /// `(sequence, object)` (an empty object is a deletion), or `None`
    /// (what the anchors of `clio verify` read skip lists with).
    #[allow(clippy::type_complexity)]
    pub fn objects(
        &self,
        keys: &[Key],
        seq: u32,
    ) -> Result<Vec<Option<(i64, Vec<u8>)>>, ClioError> {
        self.block_on(self.sh.objects(keys, seq))
    }

    /// For each key, `next` of its newest `successor` row at or below
    /// `seq`, or `None`.
    pub fn successors(&self, keys: &[Key], seq: u32) -> Result<Vec<Option<Vec<u8>>>, ClioError> {
        self.block_on(self.sh.successors(keys, seq))
    }
}
