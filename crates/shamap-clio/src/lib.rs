//! Clio's Cassandra data model: reading it
//! ([`ClioReader`]), writing ledgers into it the way Clio's ETL does, for
//! tests ([`ClioLoader`]), and verifying it ledger by ledger against the
//! hashes in its headers ([`ClioVerifier`]).
//!
//! Clio (XRPLF/clio, the XRP Ledger's API server) keeps ledgers in a flat,
//! unauthenticated form; the tables used here, as created by Clio's
//! `src/data/cassandra/Schema.hpp` and described in `src/data/README.md`:
//!
//! ```text
//! ledgers             (sequence bigint PRIMARY KEY, header blob)       -- rippled's 118-byte header ‖ 32-byte ledger hash
//! ledger_hashes       (hash blob PRIMARY KEY, sequence bigint)
//! ledger_range        (is_latest boolean PRIMARY KEY, sequence bigint) -- false: first, true: last
//! objects             (key blob, sequence bigint, object blob, PRIMARY KEY (key, sequence))
//!                     WITH CLUSTERING ORDER BY (sequence DESC)        -- empty object: deleted at that sequence
//! diff                (seq bigint, key blob, PRIMARY KEY (seq, key))   -- the keys a ledger changed
//! successor           (key blob, seq bigint, next blob, PRIMARY KEY (key, seq))
//!                     -- the live keys at sequence n as a linked list from 00…00 to FF…FF:
//!                     -- next(k) = the newest row of k at or below n
//! ledger_transactions (ledger_sequence bigint, hash blob, PRIMARY KEY (ledger_sequence, hash))
//! transactions        (hash blob PRIMARY KEY, ledger_sequence bigint, date bigint,
//!                      transaction blob, metadata blob)
//! ```
//!
//! Every failure is one line: [`ClioError`] names the database, the ledger
//! and, where there is one, the key.

use std::sync::Arc;

use scylla::client::session::Session;
use scylla::deserialize::row::DeserializeRow;
use scylla::serialize::row::SerializeRow;
use scylla::statement::prepared::PreparedStatement;
use shamap::xrpl::ledger::{LedgerHeader, LEDGER_HEADER_LEN};
use shamap::{Hash256, Key};

use shamap_store::CassandraOptions;
use shamap_store::StoreError;

/// A row type query results are read as (for any frame's lifetimes).
pub(crate) trait RowOf: for<'f, 'm> DeserializeRow<'f, 'm> {}
impl<R: for<'f, 'm> DeserializeRow<'f, 'm>> RowOf for R {}

mod build;
#[cfg(feature = "test-chain")]
mod chain;
pub mod etl;
mod floor;
mod loader;
mod reader;
pub mod report;
mod rows;
mod run;
mod schema;
mod verify;

#[cfg(feature = "test-chain")]
pub use chain::{metadata, random_chain, ChainShape};
pub use etl::{
    insert_floor, load, repair, ClioWriter, LedgerLoaded, LoadOptions, LoadReport, RepairReport,
    RowChange,
};
pub use floor::{read_floor, ReadFloor};
pub use loader::{ClioLedger, ClioLoader};
pub use reader::{
    Background, ClioReader, LedgerRows, Prefetch, ReadOptions, ScanMode, StateRow, TxRow,
    SCAN_RANGES,
};
pub use run::{ledgers_wanted, ClioRun, StatePolicy, Stop};
pub use schema::Tables;
pub use verify::{
    read_verified, record_verified, AuditFinding, ClioVerifier, LedgerCheck, Pair, Problem,
    Verified, PREFETCH_LEDGERS, STATE_ROOT_NAME, VERIFIED_RECORD,
};

/// The head of Clio's successor list (`data::firstKey`).
pub const FIRST_KEY: Key = Key([0; 32]);
/// The tail of Clio's successor list (`data::lastKey`).
pub const LAST_KEY: Key = Key([0xFF; 32]);
/// Length of a `ledgers.header` blob: the header, then the ledger hash.
pub const HEADER_BLOB_LEN: usize = LEDGER_HEADER_LEN + 32;

/// What went wrong while reading, loading or verifying a Clio database.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClioError {
    /// The database cannot be used: unreachable, no such keyspace, no
    /// Clio tables, a query that failed or timed out.
    #[error("{location}: {what}")]
    Database {
        /// `cassandra://HOST:PORT/KEYSPACE`.
        location: String,
        /// What failed, one line.
        what: String,
    },
    /// A row that verification needs is missing or malformed (a header,
    /// a transaction, a ledger of the range): the ledger cannot be checked.
    #[error("ledger {seq}: {what}")]
    Unusable {
        /// The ledger.
        seq: u32,
        /// What is missing or malformed, naming the key or hash.
        what: String,
    },
    /// The scratch files a full build sorts the scanned state through.
    #[error("scratch files in {dir}: {what}")]
    Scratch {
        /// Their directory.
        dir: String,
        /// What failed, with the system's error.
        what: String,
    },
    /// The node store holding the verified state (`--state`).
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ClioError {
    fn unusable(seq: u32, what: impl Into<String>) -> ClioError {
        ClioError::Unusable {
            seq,
            what: what.into(),
        }
    }
}

/// A `ledgers.header` blob split: the header's fields and the ledger hash
/// stored after them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClioHeader {
    /// The header's fields.
    pub header: LedgerHeader,
    /// The hash Clio stored after them.
    pub stored_hash: Hash256,
}

impl ClioHeader {
    /// Splits a header blob; `None` unless it is [`HEADER_BLOB_LEN`] bytes.
    pub fn parse(blob: &[u8]) -> Option<ClioHeader> {
        if blob.len() != HEADER_BLOB_LEN {
            return None;
        }
        Some(ClioHeader {
            header: LedgerHeader::deserialize(&blob[..LEDGER_HEADER_LEN])?,
            stored_hash: Hash256::from_slice(&blob[LEDGER_HEADER_LEN..])?,
        })
    }

    /// The blob Clio stores: the serialized header, then `hash`.
    pub fn blob(header: &LedgerHeader, hash: &Hash256) -> Vec<u8> {
        let mut b = header.serialize().to_vec();
        b.extend_from_slice(&hash.0);
        b
    }
}

/// A key from a blob column; `None` unless 32 bytes.
fn key_of(blob: &[u8]) -> Option<Key> {
    let a: [u8; 32] = blob.try_into().ok()?;
    Some(Key(a))
}

/// One line from a driver error (some span lines).
fn one_line(e: impl std::fmt::Display) -> String {
    e.to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The tables `clio verify` reads and checks, as Clio names them without
/// a prefix.
pub const CORE_TABLES: [&str; 8] = [
    "ledgers",
    "ledger_hashes",
    "ledger_range",
    "objects",
    "diff",
    "successor",
    "ledger_transactions",
    "transactions",
];

/// Every table Clio's schema may hold, without a prefix: the core tables,
/// `account_tx`, the NFT and MPT index tables and the bookkeeping of
/// Clio's migrator and cluster (release 2.6), and the two MPT history
/// tables of Clio's development branch (see [`Tables::Full`]).
pub const CLIO_TABLES: [&str; 18] = with_core_tables([
    "account_tx",
    "nf_tokens",
    "issuer_nf_tokens_v2",
    "nf_token_uris",
    "nf_token_transactions",
    "mptoken_issuance_transactions",
    "account_mptoken_issuance_transactions",
    "mp_token_holders",
    "migrator_status",
    "nodes_chat",
]);

/// The 8 core tables followed by the 10 others of [`CLIO_TABLES`].
const fn with_core_tables(rest: [&'static str; 10]) -> [&'static str; 18] {
    let mut all = [""; 18];
    let mut i = 0;
    while i < CORE_TABLES.len() {
        all[i] = CORE_TABLES[i];
        i += 1;
    }
    while i < all.len() {
        all[i] = rest[i - CORE_TABLES.len()];
        i += 1;
    }
    all
}

/// Splits the `table_prefix=P` option off a `cassandra://` URL (the node
/// store's options do not know it): the URL without it, and the prefix.
/// `prefix` (`--table-prefix`) is used when the URL has none; both given
/// and different is an error. A prefix must be letters, digits and `_`
/// (a Cassandra table name is at most 48 of them: the prefix is refused
/// when it leaves no room for the longest table name of Clio 2.6, 27
/// characters; the development branch's two MPT history tables leave 11,
/// and are not created under a longer prefix).
pub fn split_table_prefix(url: &str, prefix: Option<&str>) -> Result<(String, String), String> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut kept = Vec::new();
    let mut in_url = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("table_prefix", v)) => in_url = Some(v.to_owned()),
            _ => kept.push(pair),
        }
    }
    let prefix = match (in_url, prefix) {
        (Some(u), Some(p)) if u != p => {
            return Err(format!(
                "the URL says table_prefix={u} but --table-prefix says '{p}'"
            ))
        }
        (Some(u), _) => u,
        (None, Some(p)) => p.to_owned(),
        (None, None) => String::new(),
    };
    let longest = schema::longest_2_6_name();
    let most = schema::MAX_TABLE_NAME;
    if !prefix
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(format!(
            "table prefix '{prefix}': only letters, digits and _ can begin a Cassandra table name"
        ));
    }
    if prefix.len() + longest > most {
        return Err(format!(
            "table prefix '{prefix}' is {} characters: Cassandra's {most}-character table names leave {} for a prefix",
            prefix.len(),
            most - longest
        ));
    }
    let url = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((url, prefix))
}

/// A session on a cluster and the runtime it runs on.
struct Conn {
    opts: CassandraOptions,
    location: String,
    /// Clio's `table_prefix` (empty: none).
    prefix: String,
    runtime: tokio::runtime::Runtime,
    session: Arc<Session>,
}

impl Conn {
    /// Connects to the cluster a `cassandra://` URL names (the keyspace
    /// is not checked here); the table prefix from the URL's
    /// `table_prefix=` or `prefix` ([`split_table_prefix`]).
    fn connect(url: &str, prefix: Option<&str>) -> Result<Conn, ClioError> {
        let (plain, prefix) =
            split_table_prefix(url, prefix).map_err(|what| ClioError::Database {
                location: url.to_owned(),
                what,
            })?;
        let opts = CassandraOptions::from_url(&plain).map_err(|e| ClioError::Database {
            location: url.to_owned(),
            what: e,
        })?;
        let location = opts.location();
        let fail = |what: String| ClioError::Database {
            location: location.clone(),
            what,
        };
        let (runtime, session) = opts.connect("shamap-clio").map_err(|e| fail(one_line(e)))?;
        Ok(Conn {
            opts,
            location,
            prefix,
            runtime,
            session: Arc::new(session),
        })
    }

    /// Clio's name of table `name`: `keyspace.<prefix><name>`
    /// (`qualifiedTableName` in Clio's `Schema.hpp`).
    fn table(&self, name: &str) -> String {
        format!("{}.{}{name}", self.keyspace(), self.prefix)
    }

    /// The names of the keyspace's tables.
    fn tables(&self) -> Result<Vec<String>, ClioError> {
        let mut names: Vec<String> = self
            .select_as::<_, (String,)>(
                "cannot read the schema",
                "SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?",
                (self.keyspace(),),
            )?
            .into_iter()
            .map(|(n,)| n)
            .collect();
        names.sort();
        Ok(names)
    }

    /// Checks that the keyspace holds Clio's core tables under the prefix;
    /// returns the keyspace's other tables under the prefix (Clio's index
    /// and bookkeeping tables, which `clio verify` does not check). When
    /// core tables are missing, the one-line error names them and lists
    /// the tables found whose name ends in a Clio table's name, so that a
    /// forgotten or wrong prefix shows.
    fn check_tables(&self) -> Result<Vec<String>, ClioError> {
        let found = self.tables()?;
        let ours = |t: &str| found.iter().any(|f| *f == format!("{}{t}", self.prefix));
        let missing: Vec<String> = CORE_TABLES
            .iter()
            .filter(|t| !ours(t))
            .map(|t| format!("{}{t}", self.prefix))
            .collect();
        if missing.is_empty() {
            return Ok(found
                .into_iter()
                .filter(|f| {
                    f.strip_prefix(self.prefix.as_str())
                        .is_some_and(|rest| !CORE_TABLES.contains(&rest))
                })
                .collect());
        }
        let similar: Vec<&String> = found
            .iter()
            .filter(|f| CLIO_TABLES.iter().any(|t| f.ends_with(t)))
            .collect();
        let with = if self.prefix.is_empty() {
            "no table prefix".to_owned()
        } else {
            format!("table prefix '{}'", self.prefix)
        };
        let whole = missing.len() == CORE_TABLES.len();
        let mut what = if whole {
            format!(
                "not a Clio database: keyspace '{}' has none of Clio's tables with {with}",
                self.keyspace()
            )
        } else {
            format!(
                "not a Clio database: keyspace '{}' lacks table{} {} ({with})",
                self.keyspace(),
                if missing.len() == 1 { "" } else { "s" },
                missing.join(", ")
            )
        };
        if similar.is_empty() {
            what.push_str("; no table there ends in a Clio table's name");
        } else {
            what.push_str(&format!(
                "; tables there that end in a Clio table's name: {} (is --table-prefix right?)",
                similar
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Err(ClioError::Database {
            location: self.location.clone(),
            what,
        })
    }

    fn keyspace(&self) -> &str {
        &self.opts.keyspace
    }

    fn fail(&self, what: &str, e: impl std::fmt::Display) -> ClioError {
        ClioError::Database {
            location: self.location.clone(),
            what: format!("{what}: {}", one_line(e)),
        }
    }

    /// True when the keyspace exists.
    fn keyspace_exists(&self) -> Result<bool, ClioError> {
        let found = self.select_as::<_, (String,)>(
            "cannot read the schema",
            "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?",
            (self.keyspace(),),
        )?;
        Ok(!found.is_empty())
    }

    /// Prepares `cql` (idempotent, the URL's consistency and timeout).
    fn prepare(&self, cql: String) -> Result<PreparedStatement, String> {
        let mut s = self
            .runtime
            .block_on(self.session.prepare(cql))
            .map_err(one_line)?;
        s.set_is_idempotent(true);
        s.set_request_timeout(Some(self.opts.request_timeout));
        Ok(s)
    }

    /// Runs `cql` with `values`, page by page: its rows (a failure says
    /// it could not run it).
    fn select<V: SerializeRow, R: RowOf>(&self, cql: &str, values: V) -> Result<Vec<R>, ClioError> {
        self.select_as(&format!("cannot run '{cql}'"), cql, values)
    }

    /// [`Conn::select`], a failure saying `what`.
    fn select_as<V: SerializeRow, R: RowOf>(
        &self,
        what: &str,
        cql: &str,
        values: V,
    ) -> Result<Vec<R>, ClioError> {
        use futures::StreamExt;
        self.runtime
            .block_on(async {
                let mut rows = self
                    .session
                    .query_iter(cql.to_owned(), values)
                    .await?
                    .rows_stream::<R>()?;
                let mut out = Vec::new();
                while let Some(r) = rows.next().await {
                    out.push(r?);
                }
                Ok::<_, Box<dyn std::error::Error + Send + Sync>>(out)
            })
            .map_err(|e| self.fail(what, e))
    }

    /// Runs prepared `st` with `values` (one page): its rows (a failure
    /// saying `what`).
    fn select_prepared<V: SerializeRow, R: RowOf>(
        &self,
        what: &str,
        st: &PreparedStatement,
        values: V,
    ) -> Result<Vec<R>, ClioError> {
        self.runtime
            .block_on(async {
                let r = self.session.execute_unpaged(st, values).await?;
                Ok::<_, Box<dyn std::error::Error + Send + Sync>>(
                    r.into_rows_result()?
                        .rows::<R>()?
                        .collect::<Result<Vec<_>, _>>()?,
                )
            })
            .map_err(|e| self.fail(what, e))
    }

    /// Runs one CQL statement without values.
    fn execute(&self, cql: &str) -> Result<(), ClioError> {
        self.runtime
            .block_on(self.session.query_unpaged(cql, ()))
            .map(|_| ())
            .map_err(|e| self.fail(&format!("cannot run '{cql}'"), e))
    }
}

/// Every row of table `name` of the keyspace `url` names (prefixed as the
/// URL's `table_prefix=` or `prefix` says), each as one line (its columns'
/// values in the table's order), sorted: for tests that compare keyspaces.
pub fn table_rows(url: &str, prefix: Option<&str>, name: &str) -> Result<Vec<String>, ClioError> {
    let conn = Conn::connect(url, prefix)?;
    let table = conn.table(name);
    let mut out: Vec<String> = conn
        .select_as::<_, scylla::value::Row>(
            &format!("cannot read table {table}"),
            &format!("SELECT * FROM {table}"),
            (),
        )?
        .into_iter()
        .map(|r| format!("{:?}", r.columns))
        .collect();
    out.sort();
    Ok(out)
}

/// The definition of table `name` as the cluster holds it, for tests that
/// check a schema: one line per column, `KIND POSITION NAME TYPE ORDER`
/// (`kind` is `partition_key`, `clustering` or `regular`; `order` is the
/// clustering order or `none`), sorted, and last `ttl N`, the table's
/// default time to live.
pub fn table_columns(
    url: &str,
    prefix: Option<&str>,
    name: &str,
) -> Result<Vec<String>, ClioError> {
    let conn = Conn::connect(url, prefix)?;
    let what = format!("cannot read the definition of {}", conn.table(name));
    let at = (conn.keyspace().to_owned(), format!("{}{name}", conn.prefix));
    let mut lines: Vec<String> = conn
        .select_as::<_, (String, i32, String, String, String)>(
            &what,
            "SELECT kind, position, column_name, type, clustering_order \
             FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ?",
            &at,
        )?
        .into_iter()
        .map(|(kind, position, column, ty, order)| {
            format!("{kind} {position} {column} {ty} {order}")
        })
        .collect();
    lines.sort();
    let ttl = conn.select_as::<_, (i32,)>(
        &what,
        "SELECT default_time_to_live FROM system_schema.tables \
         WHERE keyspace_name = ? AND table_name = ?",
        &at,
    )?;
    lines.extend(ttl.into_iter().map(|(t,)| format!("ttl {t}")));
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_blob_round_trips_and_refuses_other_lengths() {
        let bytes: Vec<u8> = (0..LEDGER_HEADER_LEN as u8).rev().collect();
        let h = LedgerHeader::deserialize(&bytes).expect("a header");
        let blob = ClioHeader::blob(&h, &h.hash());
        assert_eq!(blob.len(), HEADER_BLOB_LEN);
        assert_eq!(
            ClioHeader::parse(&blob),
            Some(ClioHeader {
                header: h,
                stored_hash: h.hash()
            })
        );
        assert_eq!(ClioHeader::parse(&blob[..LEDGER_HEADER_LEN]), None);
        assert_eq!(key_of(&[0; 31]), None);
    }

    #[test]
    fn a_prefix_may_be_as_long_as_clio_26_allows() {
        let url = "cassandra://h/ks";
        let p27 = "p".repeat(27);
        assert_eq!(
            split_table_prefix(url, Some(&p27)),
            Ok((url.to_owned(), p27.clone()))
        );
        let p28 = format!("{p27}x");
        assert_eq!(
            split_table_prefix(url, Some(&p28)),
            Err(format!(
                "table prefix '{p28}' is 28 characters: Cassandra's 48-character table names leave 27 for a prefix"
            ))
        );
    }
}
