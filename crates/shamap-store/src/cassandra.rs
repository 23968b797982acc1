//! The Apache Cassandra (or ScyllaDB) backend (feature `cassandra`): nodes
//! under their hash in table `nodes`, the metadata records in table `meta`,
//! of one keyspace, through the scylla CQL driver.
//!
//! ```text
//! CREATE TABLE <ks>.nodes (hash blob PRIMARY KEY, value blob)  -- rippled's value format
//! CREATE TABLE <ks>.meta  (name text PRIMARY KEY, value blob)  -- crate::meta's records
//! ```
//!
//! Cassandra has no transaction over several partitions, so a [`Batch`]
//! is not applied atomically. It is applied in an order that keeps every
//! reader safe instead (see [`NodeStore::write`] and docs/design.md):
//! every node put of the batch, at most `inflight` in flight, each
//! acknowledged at the configured consistency; then its node deletes
//! (only garbage collection issues them, in batches of their own); then,
//! only once all of those are acknowledged, its metadata changes, one
//! after another, in order. A commit's `retained` record is therefore
//! written only after every node it reaches is on a quorum of replicas: a
//! crash or a lost node leaves at worst nodes that no root reaches, which
//! [`crate::gc()`] removes, never a retained root whose nodes are missing.
//!
//! The [`NodeStore`] trait is synchronous: the store owns a small tokio
//! runtime and blocks on it. Every request has a client-side timeout and
//! connecting has one too, so no call waits without bound; every failure is
//! a one-line [`StoreError::Backend`] naming the store
//! (`cassandra://HOST:PORT/KEYSPACE`) and what was being done.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::{self, StreamExt, TryStreamExt};
use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::policies::timestamp_generator::MonotonicTimestampGenerator;
use scylla::response::{PagingState, PagingStateResponse};
use scylla::statement::prepared::PreparedStatement;
use shamap::Hash256;

use crate::error::StoreError;
use crate::meta;
use crate::store::{Batch, NodeStore, Op};

/// The CQL port when a URL names none.
pub const DEFAULT_PORT: u16 = 9042;
/// Requests in flight per batch when a URL says nothing.
pub const DEFAULT_INFLIGHT: usize = 128;
/// The most requests in flight a URL may ask for.
pub const MAX_INFLIGHT: usize = 4096;
/// The replication factor of a keyspace created when a URL says nothing.
pub const DEFAULT_REPLICATION: u32 = 1;
/// Token ranges a full scan ([`NodeStore::for_each_value`]) is split into.
const SCAN_RANGES: u32 = 16;
/// Rows per page of a scan.
const SCAN_PAGE_ROWS: i32 = 2000;

/// The consistency level of every read and write (CQL's names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Consistency {
    /// `ONE`
    One,
    /// `TWO`
    Two,
    /// `THREE`
    Three,
    /// `QUORUM`
    Quorum,
    /// `ALL`
    All,
    /// `LOCAL_QUORUM`, the default: a majority of the replicas in the
    /// coordinator's data center.
    LocalQuorum,
    /// `EACH_QUORUM`
    EachQuorum,
    /// `LOCAL_ONE`
    LocalOne,
}

impl Consistency {
    const ALL: [(Consistency, &'static str); 8] = [
        (Consistency::One, "one"),
        (Consistency::Two, "two"),
        (Consistency::Three, "three"),
        (Consistency::Quorum, "quorum"),
        (Consistency::All, "all"),
        (Consistency::LocalQuorum, "local_quorum"),
        (Consistency::EachQuorum, "each_quorum"),
        (Consistency::LocalOne, "local_one"),
    ];

    /// Parses a CQL consistency name, in any case (`local_quorum`, `QUORUM`, ...).
    pub fn parse(s: &str) -> Option<Consistency> {
        let s = s.to_ascii_lowercase();
        Consistency::ALL
            .iter()
            .find(|(_, name)| *name == s)
            .map(|(c, _)| *c)
    }

    /// The CQL name, upper case.
    pub fn name(self) -> String {
        Consistency::ALL
            .iter()
            .find(|(c, _)| *c == self)
            .map_or("?", |(_, n)| n)
            .to_ascii_uppercase()
    }

    pub(crate) fn driver(self) -> scylla::statement::Consistency {
        use scylla::statement::Consistency as C;
        match self {
            Consistency::One => C::One,
            Consistency::Two => C::Two,
            Consistency::Three => C::Three,
            Consistency::Quorum => C::Quorum,
            Consistency::All => C::All,
            Consistency::LocalQuorum => C::LocalQuorum,
            Consistency::EachQuorum => C::EachQuorum,
            Consistency::LocalOne => C::LocalOne,
        }
    }
}

/// Where the store is and how to use it: parsed from
/// `cassandra://HOST[:PORT][,HOST[:PORT]...]/KEYSPACE[?consistency=C&replication=N&inflight=N]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CassandraOptions {
    /// Contact points, `host:port` (the driver discovers the other nodes).
    pub hosts: Vec<String>,
    /// The keyspace holding tables `nodes` and `meta`.
    pub keyspace: String,
    /// Consistency of every read and write (default `LOCAL_QUORUM`).
    pub consistency: Consistency,
    /// Replication factor of the keyspace when this store creates it
    /// (`NetworkTopologyStrategy`, that many replicas in every data
    /// center); an existing keyspace keeps its own.
    pub replication: u32,
    /// Most writes in flight at once within a batch.
    pub inflight: usize,
    /// Client-side timeout of each request.
    pub request_timeout: Duration,
    /// Timeout of each connection attempt.
    pub connect_timeout: Duration,
}

impl CassandraOptions {
    /// The URL scheme.
    pub const SCHEME: &'static str = "cassandra://";

    /// True when `s` is meant as a Cassandra URL (starts with the scheme).
    pub fn is_url(s: &str) -> bool {
        s.starts_with(CassandraOptions::SCHEME)
    }

    /// Parses a `cassandra://` URL; the error says what is wrong with it.
    pub fn from_url(url: &str) -> Result<CassandraOptions, String> {
        let rest = url
            .strip_prefix(CassandraOptions::SCHEME)
            .ok_or_else(|| format!("not a {}HOST[:PORT]/KEYSPACE URL", Self::SCHEME))?;
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (hosts, keyspace) = path
            .split_once('/')
            .ok_or("no keyspace (the form is cassandra://HOST[:PORT]/KEYSPACE)")?;
        let hosts = hosts
            .split(',')
            .map(parse_host)
            .collect::<Result<Vec<_>, _>>()?;
        check_keyspace(keyspace)?;
        let mut opts = CassandraOptions {
            hosts,
            keyspace: keyspace.to_owned(),
            consistency: Consistency::LocalQuorum,
            replication: DEFAULT_REPLICATION,
            inflight: DEFAULT_INFLIGHT,
            request_timeout: Duration::from_secs(15),
            connect_timeout: Duration::from_secs(5),
        };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair
                .split_once('=')
                .ok_or_else(|| format!("option '{pair}' has no value (name=value)"))?;
            match k {
                "consistency" => {
                    opts.consistency = Consistency::parse(v).ok_or_else(|| {
                        format!("consistency '{v}': not one of one, two, three, quorum, all, local_quorum, each_quorum, local_one")
                    })?;
                }
                "replication" => {
                    opts.replication = v
                        .parse()
                        .ok()
                        .filter(|n| (1..=100).contains(n))
                        .ok_or_else(|| format!("replication '{v}': not a number from 1 to 100"))?;
                }
                "inflight" => {
                    opts.inflight = v
                        .parse()
                        .ok()
                        .filter(|n| (1..=MAX_INFLIGHT).contains(n))
                        .ok_or_else(|| {
                            format!("inflight '{v}': not a number from 1 to {MAX_INFLIGHT}")
                        })?;
                }
                "timeout_ms" => {
                    let ms: u64 = v
                        .parse()
                        .ok()
                        .filter(|n| (1..=600_000).contains(n))
                        .ok_or_else(|| {
                            format!("timeout_ms '{v}': not a number from 1 to 600000")
                        })?;
                    opts.request_timeout = Duration::from_millis(ms);
                }
                other => {
                    return Err(format!(
                        "unknown option '{other}' (known: consistency, replication, inflight, timeout_ms)"
                    ))
                }
            }
        }
        Ok(opts)
    }

    /// The store's name in messages: `cassandra://HOST:PORT/KEYSPACE`.
    pub fn location(&self) -> String {
        format!(
            "{}{}/{}",
            CassandraOptions::SCHEME,
            self.hosts.join(","),
            self.keyspace
        )
    }
}

/// `host[:port]` with the default port added; an IPv6 address goes in
/// brackets (`[::1]:9042`).
fn parse_host(s: &str) -> Result<String, String> {
    if s.is_empty() {
        return Err("no host (the form is cassandra://HOST[:PORT]/KEYSPACE)".to_owned());
    }
    let (host, port) = if let Some(v6) = s.strip_prefix('[') {
        let (addr, tail) = v6
            .split_once(']')
            .ok_or_else(|| format!("host '{s}': no closing ']'"))?;
        (format!("[{addr}]"), tail.strip_prefix(':'))
    } else {
        match s.split_once(':') {
            Some((h, p)) => (h.to_owned(), Some(p)),
            None => (s.to_owned(), None),
        }
    };
    let port = match port {
        None => DEFAULT_PORT,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("host '{s}': port '{p}' is not a number from 1 to 65535"))?,
    };
    Ok(format!("{host}:{port}"))
}

/// A keyspace name this store accepts: a lower-case letter, then lower-case
/// letters, digits or `_`, at most 48 in all (Cassandra's limit; upper case
/// is refused because CQL folds unquoted names to lower case).
fn check_keyspace(ks: &str) -> Result<(), String> {
    let ok = !ks.is_empty()
        && ks.len() <= 48
        && ks.as_bytes()[0].is_ascii_lowercase()
        && ks
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "keyspace '{ks}': use a lower-case letter, then lower-case letters, digits or '_' (at most 48)"
        ))
    }
}

/// How [`CassandraStore::open`] treats the keyspace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opening {
    /// Creates the keyspace and tables when missing (import, sync's target).
    Create,
    /// The keyspace must exist; writes allowed.
    Existing,
    /// The keyspace must exist; writes refused, and an empty store does not
    /// get its format version recorded.
    ReadOnly,
}

/// A row of table `nodes`: hash and value.
type Row = (Vec<u8>, Vec<u8>);

/// The prepared statements.
struct Statements {
    get_node: PreparedStatement,
    has_node: PreparedStatement,
    put_node: PreparedStatement,
    delete_node: PreparedStatement,
    scan_nodes: PreparedStatement,
    get_meta: PreparedStatement,
    put_meta: PreparedStatement,
    delete_meta: PreparedStatement,
}

/// A node store in a Cassandra keyspace. See the module documentation for
/// the layout and the order of writes.
pub struct CassandraStore {
    opts: CassandraOptions,
    location: String,
    runtime: tokio::runtime::Runtime,
    session: Arc<Session>,
    statements: Arc<Statements>,
    read_only: bool,
}

impl std::fmt::Debug for CassandraStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CassandraStore")
            .field("location", &self.location)
            .field("consistency", &self.opts.consistency)
            .field("inflight", &self.opts.inflight)
            .finish_non_exhaustive()
    }
}

/// One line from a driver error (some span lines).
fn one_line(e: impl std::fmt::Display) -> String {
    e.to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

impl CassandraStore {
    /// Opens the store the URL names ([`CassandraOptions::from_url`]).
    pub fn open_url(url: &str, opening: Opening) -> Result<CassandraStore, StoreError> {
        let opts = CassandraOptions::from_url(url).map_err(|e| StoreError::backend(url, e))?;
        CassandraStore::open(opts, opening)
    }

    /// Connects, creates the keyspace and tables if `opening` says so,
    /// prepares the statements and checks (or records) the format version.
    pub fn open(opts: CassandraOptions, opening: Opening) -> Result<CassandraStore, StoreError> {
        let location = opts.location();
        let fail = |what: &str, e: &dyn std::fmt::Display| {
            StoreError::backend(location.clone(), format!("{what}: {}", one_line(e)))
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("shamap-cassandra")
            .enable_all()
            .build()
            .map_err(|e| fail("cannot start the driver's runtime", &e))?;
        let profile = ExecutionProfile::builder()
            .consistency(opts.consistency.driver())
            .request_timeout(Some(opts.request_timeout))
            .build();
        let builder = SessionBuilder::new()
            .known_nodes(&opts.hosts)
            .connection_timeout(opts.connect_timeout)
            .hostname_resolution_timeout(Some(opts.connect_timeout))
            .metadata_request_serverside_timeout(opts.request_timeout)
            .metadata_request_clientside_timeout(opts.request_timeout)
            .schema_agreement_timeout(Duration::from_secs(60))
            .timestamp_generator(Arc::new(MonotonicTimestampGenerator::new()))
            .keyspaces_to_fetch([opts.keyspace.clone()])
            .default_execution_profile_handle(profile.into_handle());
        // The driver's own timeouts bound each attempt; this bounds them all.
        let limit = opts.connect_timeout * 3 + opts.request_timeout;
        let session = runtime
            .block_on(async { tokio::time::timeout(limit, builder.build()).await })
            .map_err(|_| {
                fail(
                    &format!("cannot connect to {}", opts.hosts.join(",")),
                    &format!("no answer in {} s", limit.as_secs()),
                )
            })?
            .map_err(|e| fail(&format!("cannot connect to {}", opts.hosts.join(",")), &e))?;
        let session = Arc::new(session);
        let ks = opts.keyspace.clone();
        let statements = runtime.block_on(async {
            let exists = keyspace_exists(&session, &ks)
                .await
                .map_err(|e| fail("cannot read the schema", &e))?;
            match (exists, opening) {
                (false, Opening::Create) => {
                    let cql = format!(
                        "CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = \
                         {{'class': 'NetworkTopologyStrategy', 'replication_factor': {}}}",
                        opts.replication
                    );
                    session
                        .query_unpaged(cql, ())
                        .await
                        .map_err(|e| fail("cannot create the keyspace", &e))?;
                }
                (false, _) => {
                    return Err(fail(
                        "no store here",
                        &format!("keyspace '{ks}' does not exist (import into it first)"),
                    ))
                }
                (true, _) => {}
            }
            if opening != Opening::ReadOnly {
                for cql in [
                    format!(
                        "CREATE TABLE IF NOT EXISTS {ks}.nodes (hash blob PRIMARY KEY, value blob)"
                    ),
                    format!(
                        "CREATE TABLE IF NOT EXISTS {ks}.meta (name text PRIMARY KEY, value blob)"
                    ),
                ] {
                    session
                        .query_unpaged(cql, ())
                        .await
                        .map_err(|e| fail("cannot create the tables", &e))?;
                }
            }
            prepare(&session, &ks, &opts).await.map_err(|e| {
                fail(
                    "cannot prepare statements (are tables nodes and meta there?)",
                    &e,
                )
            })
        })?;
        let store = CassandraStore {
            read_only: opening == Opening::ReadOnly,
            opts,
            location,
            runtime,
            session,
            statements: Arc::new(statements),
        };
        if store.read_only {
            meta::check_format_read_only(&store)?;
        } else {
            meta::check_format(&store)?;
        }
        Ok(store)
    }

    /// The options the store was opened with.
    pub fn options(&self) -> &CassandraOptions {
        &self.opts
    }

    /// Stores `value` under `hash` without any check, like any other
    /// client of the cluster could: for tests of how readers treat damaged
    /// stores.
    pub fn insert_raw(&self, hash: Hash256, value: Vec<u8>) -> Result<(), StoreError> {
        let key = hash.0.to_vec();
        self.runtime
            .block_on(
                self.session
                    .execute_unpaged(&self.statements.put_node, (key, value)),
            )
            .map(|_| ())
            .map_err(|e| self.fail(&format!("cannot write node {hash}"), e))
    }

    /// Drops the keyspace and everything in it (for tests and benchmarks).
    pub fn drop_keyspace(self) -> Result<(), StoreError> {
        let cql = format!("DROP KEYSPACE IF EXISTS {}", self.opts.keyspace);
        self.runtime
            .block_on(self.session.query_unpaged(cql, ()))
            .map(|_| ())
            .map_err(|e| self.fail("cannot drop the keyspace", e))
    }

    fn fail(&self, what: &str, e: impl std::fmt::Display) -> StoreError {
        StoreError::backend(self.location.clone(), format!("{what}: {}", one_line(e)))
    }

    /// True when a row is stored under `hash`.
    async fn has_node(&self, hash: &Hash256) -> Result<bool, StoreError> {
        let what = || format!("cannot look up node {hash}");
        let rows = self
            .session
            .execute_unpaged(&self.statements.has_node, (&hash.0[..],))
            .await
            .map_err(|e| self.fail(&what(), e))?
            .into_rows_result()
            .map_err(|e| self.fail(&what(), e))?;
        Ok(rows.rows_num() > 0)
    }

    /// The value under `hash` (a row whose value is null is no value).
    async fn read_node(&self, hash: &Hash256) -> Result<Option<Vec<u8>>, StoreError> {
        let what = || format!("cannot read node {hash}");
        let rows = self
            .session
            .execute_unpaged(&self.statements.get_node, (&hash.0[..],))
            .await
            .map_err(|e| self.fail(&what(), e))?
            .into_rows_result()
            .map_err(|e| self.fail(&what(), e))?;
        let row = rows
            .maybe_first_row::<(Option<Vec<u8>>,)>()
            .map_err(|e| self.fail(&what(), e))?;
        Ok(row.and_then(|(v,)| v))
    }

    fn writable(&self) -> Result<(), StoreError> {
        if self.read_only {
            return Err(StoreError::backend(
                self.location.clone(),
                "opened read-only: writes refused",
            ));
        }
        Ok(())
    }

    /// One page of rows of token range `(lo, hi]`, and where the next
    /// page starts.
    fn scan_page(
        &self,
        lo: i64,
        hi: i64,
        paging: PagingState,
    ) -> Result<(Vec<Row>, PagingStateResponse), StoreError> {
        self.runtime.block_on(async {
            let (result, next) = self
                .session
                .execute_single_page(&self.statements.scan_nodes, (lo, hi), paging)
                .await
                .map_err(|e| self.fail("cannot scan nodes", e))?;
            let rows = result
                .into_rows_result()
                .map_err(|e| self.fail("cannot scan nodes", e))?;
            let rows = rows
                .rows::<Row>()
                .map_err(|e| self.fail("cannot scan nodes", e))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| self.fail("cannot scan nodes", e))?;
            Ok((rows, next))
        })
    }
}

/// True when keyspace `ks` exists.
async fn keyspace_exists(session: &Session, ks: &str) -> Result<bool, String> {
    let rows = session
        .query_unpaged(
            "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?",
            (ks,),
        )
        .await
        .map_err(|e| e.to_string())?
        .into_rows_result()
        .map_err(|e| e.to_string())?;
    Ok(rows.rows_num() > 0)
}

async fn prepare(
    session: &Session,
    ks: &str,
    opts: &CassandraOptions,
) -> Result<Statements, String> {
    let p = |cql: String| async move {
        let mut s = session.prepare(cql).await.map_err(|e| e.to_string())?;
        // Every statement may be retried: puts of a node are of the same
        // bytes, deletes and metadata puts are last-write-wins.
        s.set_is_idempotent(true);
        s.set_consistency(opts.consistency.driver());
        s.set_request_timeout(Some(opts.request_timeout));
        Ok::<_, String>(s)
    };
    let mut scan_nodes = p(format!(
        "SELECT hash, value FROM {ks}.nodes WHERE token(hash) > ? AND token(hash) <= ?"
    ))
    .await?;
    scan_nodes.set_page_size(SCAN_PAGE_ROWS);
    Ok(Statements {
        get_node: p(format!("SELECT value FROM {ks}.nodes WHERE hash = ?")).await?,
        has_node: p(format!("SELECT hash FROM {ks}.nodes WHERE hash = ?")).await?,
        put_node: p(format!(
            "INSERT INTO {ks}.nodes (hash, value) VALUES (?, ?)"
        ))
        .await?,
        delete_node: p(format!("DELETE FROM {ks}.nodes WHERE hash = ?")).await?,
        scan_nodes,
        get_meta: p(format!("SELECT value FROM {ks}.meta WHERE name = ?")).await?,
        put_meta: p(format!("INSERT INTO {ks}.meta (name, value) VALUES (?, ?)")).await?,
        delete_meta: p(format!("DELETE FROM {ks}.meta WHERE name = ?")).await?,
    })
}

/// The `(lo, hi]` bounds of [`SCAN_RANGES`] token ranges covering the
/// Murmur3 ring (no key has token `i64::MIN`: Cassandra maps it to
/// `i64::MAX`).
fn token_ranges() -> Vec<(i64, i64)> {
    let span = (i128::from(i64::MAX) - i128::from(i64::MIN)) / i128::from(SCAN_RANGES);
    (0..SCAN_RANGES)
        .map(|k| {
            let lo = i128::from(i64::MIN) + span * i128::from(k);
            let hi = if k + 1 == SCAN_RANGES {
                i128::from(i64::MAX)
            } else {
                lo + span
            };
            // Both within i64 by construction.
            (
                i64::try_from(lo).unwrap_or(i64::MIN),
                i64::try_from(hi).unwrap_or(i64::MAX),
            )
        })
        .collect()
}

impl NodeStore for CassandraStore {
    fn location(&self) -> String {
        self.location.clone()
    }

    fn read_value(&self, hash: &Hash256) -> Result<Option<Vec<u8>>, StoreError> {
        self.runtime.block_on(self.read_node(hash))
    }

    /// Concurrently, at most `inflight` reads at once, results in order.
    fn read_values(&self, hashes: &[Hash256]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        self.runtime.block_on(
            stream::iter(hashes)
                .map(|hash| self.read_node(hash))
                .buffered(self.opts.inflight)
                .try_collect(),
        )
    }

    fn contains(&self, hash: &Hash256) -> Result<bool, StoreError> {
        self.runtime.block_on(self.has_node(hash))
    }

    /// Concurrently, at most `inflight` lookups at once, results in order.
    fn contains_many(&self, hashes: &[Hash256]) -> Result<Vec<bool>, StoreError> {
        self.runtime.block_on(
            stream::iter(hashes)
                .map(|hash| self.has_node(hash))
                .buffered(self.opts.inflight)
                .try_collect(),
        )
    }

    /// Not atomic (Cassandra has no multi-partition transactions); in the
    /// order that keeps readers safe instead: every node put, at most
    /// `inflight` at once, all acknowledged; then every node delete, the
    /// same way; then the metadata changes one by one, in batch order. The
    /// first failure stops it and is returned: the metadata changes are
    /// then not made, so no record names nodes that did not get written.
    fn write(&self, batch: Batch) -> Result<(), StoreError> {
        self.writable()?;
        let mut puts = Vec::new();
        let mut deletes = Vec::new();
        let mut metas = Vec::new();
        for op in batch.into_ops() {
            match op {
                Op::PutNode { hash, value } => puts.push((hash, value)),
                Op::DeleteNode(hash) => deletes.push(hash),
                meta_op => metas.push(meta_op),
            }
        }
        let session = &self.session;
        let st = &self.statements;
        let inflight = self.opts.inflight;
        self.runtime.block_on(async {
            stream::iter(puts)
                .map(|(hash, value)| async move {
                    session
                        .execute_unpaged(&st.put_node, (&hash.0[..], value))
                        .await
                        .map(|_| ())
                        .map_err(|e| self.fail(&format!("cannot write node {hash}"), e))
                })
                .buffer_unordered(inflight)
                .try_collect::<()>()
                .await?;
            stream::iter(deletes)
                .map(|hash| async move {
                    session
                        .execute_unpaged(&st.delete_node, (&hash.0[..],))
                        .await
                        .map(|_| ())
                        .map_err(|e| self.fail(&format!("cannot delete node {hash}"), e))
                })
                .buffer_unordered(inflight)
                .try_collect::<()>()
                .await?;
            for op in metas {
                let (name, result) = match op {
                    Op::PutMeta { name, value } => {
                        let r = session
                            .execute_unpaged(&st.put_meta, (name.as_str(), value))
                            .await;
                        (name, r)
                    }
                    Op::DeleteMeta(name) => {
                        let r = session
                            .execute_unpaged(&st.delete_meta, (name.as_str(),))
                            .await;
                        (name, r)
                    }
                    Op::PutNode { .. } | Op::DeleteNode(_) => continue,
                };
                result
                    .map_err(|e| self.fail(&format!("cannot write metadata record '{name}'"), e))?;
            }
            Ok(())
        })
    }

    /// In token order (not hash order), range by range, a page at a time;
    /// `f` runs between pages, outside the driver's runtime, so it may use
    /// this store. Nodes are immutable under their hash, so what a scan
    /// sees is consistent except for nodes written or deleted meanwhile
    /// (deleted only by gc).
    fn for_each_value(
        &self,
        f: &mut dyn FnMut(Hash256, &[u8]) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        for (lo, hi) in token_ranges() {
            let mut paging = PagingState::start();
            loop {
                let (rows, next) = self.scan_page(lo, hi, paging)?;
                for (k, v) in rows {
                    let hash = Hash256::from_slice(&k).ok_or_else(|| {
                        self.fail("cannot scan nodes", "a key is not a 32-byte node hash")
                    })?;
                    if f(hash, &v).is_break() {
                        return Ok(());
                    }
                }
                match next {
                    PagingStateResponse::HasMorePages { state } => paging = state,
                    PagingStateResponse::NoMorePages => break,
                }
            }
        }
        Ok(())
    }

    fn get_meta(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.runtime.block_on(async {
            let what = || format!("cannot read metadata record '{name}'");
            let rows = self
                .session
                .execute_unpaged(&self.statements.get_meta, (name,))
                .await
                .map_err(|e| self.fail(&what(), e))?
                .into_rows_result()
                .map_err(|e| self.fail(&what(), e))?;
            let row = rows
                .maybe_first_row::<(Option<Vec<u8>>,)>()
                .map_err(|e| self.fail(&what(), e))?;
            Ok(row.and_then(|(v,)| v))
        })
    }

    /// The keyspace's size on disk as the node answering reports it
    /// (`system_views.disk_usage`, whole MiB, one replica's share); 0 when
    /// the cluster does not offer that view.
    fn disk_bytes(&self) -> Result<u64, StoreError> {
        self.runtime.block_on(async {
            let result = self
                .session
                .query_unpaged(
                    "SELECT mebibytes FROM system_views.disk_usage WHERE keyspace_name = ?",
                    (self.opts.keyspace.as_str(),),
                )
                .await;
            let Ok(result) = result else {
                return Ok(0);
            };
            let rows = result
                .into_rows_result()
                .map_err(|e| self.fail("cannot read the disk usage", e))?;
            let mut total: u64 = 0;
            for row in rows
                .rows::<(Option<i64>,)>()
                .map_err(|e| self.fail("cannot read the disk usage", e))?
            {
                let (mib,) = row.map_err(|e| self.fail("cannot read the disk usage", e))?;
                total += u64::try_from(mib.unwrap_or(0)).unwrap_or(0) << 20;
            }
            Ok(total)
        })
    }

    /// Nothing to do: a write returns once the consistency level's
    /// replicas acknowledged it (each has it in its commit log; how soon
    /// that is fsynced is the cluster's `commitlog_sync` setting).
    fn sync(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_defaults_and_options() {
        let o = CassandraOptions::from_url("cassandra://127.0.0.1/ledgers").expect("parses");
        assert_eq!(o.hosts, ["127.0.0.1:9042"]);
        assert_eq!(o.keyspace, "ledgers");
        assert_eq!(o.consistency, Consistency::LocalQuorum);
        assert_eq!(o.replication, DEFAULT_REPLICATION);
        assert_eq!(o.inflight, DEFAULT_INFLIGHT);
        assert_eq!(o.location(), "cassandra://127.0.0.1:9042/ledgers");
        let o = CassandraOptions::from_url(
            "cassandra://127.0.0.1:9043,127.0.0.2,[::1]:9044/k_2?consistency=QUORUM&replication=3&inflight=7&timeout_ms=2500",
        )
        .expect("parses");
        assert_eq!(o.hosts, ["127.0.0.1:9043", "127.0.0.2:9042", "[::1]:9044"]);
        assert_eq!(o.consistency, Consistency::Quorum);
        assert_eq!(o.replication, 3);
        assert_eq!(o.inflight, 7);
        assert_eq!(o.request_timeout, Duration::from_millis(2500));
    }

    #[test]
    fn bad_urls_say_what_is_wrong() {
        let err = |u: &str| CassandraOptions::from_url(u).expect_err(u);
        assert!(err("cassandra://h").contains("no keyspace"));
        assert!(err("cassandra:///ks").contains("no host"));
        assert!(err("cassandra://h:0/ks").contains("port '0'"));
        assert!(err("cassandra://h:x/ks").contains("port 'x'"));
        assert!(err("cassandra://h/Ks").contains("keyspace 'Ks'"));
        assert!(err("cassandra://h/k-s").contains("keyspace 'k-s'"));
        assert!(err("cassandra://h/ks?consistency=most").contains("consistency 'most'"));
        assert!(err("cassandra://h/ks?replication=0").contains("replication '0'"));
        assert!(err("cassandra://h/ks?inflight=0").contains("inflight '0'"));
        assert!(err("cassandra://h/ks?color=red").contains("unknown option 'color'"));
        assert!(err("cassandra://h/ks?inflight").contains("has no value"));
    }

    #[test]
    fn token_ranges_cover_the_ring_without_overlap() {
        let r = token_ranges();
        assert_eq!(r.len(), SCAN_RANGES as usize);
        assert_eq!(r[0].0, i64::MIN);
        assert_eq!(r[r.len() - 1].1, i64::MAX);
        for w in r.windows(2) {
            assert_eq!(w[0].1, w[1].0);
            assert!(w[0].0 < w[0].1);
        }
    }

    #[test]
    fn consistency_names_round_trip() {
        for (c, name) in Consistency::ALL {
            assert_eq!(Consistency::parse(name), Some(c));
            assert_eq!(Consistency::parse(&c.name()), Some(c));
        }
        assert_eq!(Consistency::parse("lots"), None);
    }
}
