//! [`CassandraStore`]: the session, the prepared statements, and the
//! [`NodeStore`] over them (see the module documentation of
//! [`crate::backend::cassandra`] for the layout and the order of writes).

use std::ops::ControlFlow;
use std::sync::Arc;

use futures::stream::{self, StreamExt, TryStreamExt};
use scylla::client::session::Session;
use scylla::response::query_result::QueryResult;
use scylla::response::{PagingState, PagingStateResponse};
use scylla::serialize::row::SerializeRow;
use scylla::statement::prepared::PreparedStatement;
use shamap::Hash256;

use crate::error::StoreError;
use crate::meta;
use crate::store::{Access, Batch, NodeStore, Op};

use super::options::CassandraOptions;

/// Token ranges a full scan ([`NodeStore::for_each_value`]) is split into.
const SCAN_RANGES: u32 = 16;
/// Rows per page of a scan.
const SCAN_PAGE_ROWS: i32 = 2000;

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

/// One line from a driver error: some span lines, and some nest an error
/// whose text repeats their own (`X: X: Y`), said once here.
fn one_line(e: impl std::fmt::Display) -> String {
    let flat = e
        .to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let mut parts: Vec<&str> = Vec::new();
    for part in flat.split(": ") {
        if parts.last() != Some(&part) {
            parts.push(part);
        }
    }
    parts.join(": ")
}

impl CassandraStore {
    /// Opens the store the URL names ([`CassandraOptions::from_url`]).
    pub fn open_url(url: &str, opening: Access) -> Result<CassandraStore, StoreError> {
        let opts = CassandraOptions::from_url(url).map_err(|e| StoreError::backend(url, e))?;
        CassandraStore::open(opts, opening)
    }

    /// Connects, creates the keyspace and tables if `opening` says so,
    /// prepares the statements and checks (or records) the format version.
    pub fn open(opts: CassandraOptions, opening: Access) -> Result<CassandraStore, StoreError> {
        let location = opts.location();
        let fail = |what: &str, e: &dyn std::fmt::Display| {
            StoreError::backend(location.clone(), one_line(format!("{what}: {e}")))
        };
        let (runtime, session) = opts
            .connect("shamap-cassandra")
            .map_err(|e| StoreError::backend(location.clone(), one_line(e)))?;
        let session = Arc::new(session);
        let ks = opts.keyspace.clone();
        let statements = runtime.block_on(async {
            let exists = keyspace_exists(&session, &ks)
                .await
                .map_err(|e| fail("cannot read the schema", &e))?;
            match (exists, opening) {
                (false, Access::Create) => {
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
            if opening != Access::Read {
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
            read_only: opening == Access::Read,
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
        let what = || format!("cannot write node {hash}");
        self.runtime
            .block_on(self.run(&self.statements.put_node, (&hash.0[..], value), what))
            .map(drop)
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
        StoreError::backend(self.location.clone(), one_line(format!("{what}: {e}")))
    }

    /// Runs `st` with `values`; an error says `what()` failed.
    async fn run(
        &self,
        st: &PreparedStatement,
        values: impl SerializeRow,
        what: impl Fn() -> String,
    ) -> Result<QueryResult, StoreError> {
        self.session
            .execute_unpaged(st, values)
            .await
            .map_err(|e| self.fail(&what(), e))
    }

    /// The value of the first row of `result` (none without a row, or
    /// when its value is null), the answer to what `what()` names.
    fn first_value(
        &self,
        result: QueryResult,
        what: impl Fn() -> String,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let row = result
            .into_rows_result()
            .map_err(|e| self.fail(&what(), e))?
            .maybe_first_row::<(Option<Vec<u8>>,)>()
            .map_err(|e| self.fail(&what(), e))?;
        Ok(row.and_then(|(v,)| v))
    }

    /// True when a row is stored under `hash`.
    async fn has_node(&self, hash: &Hash256) -> Result<bool, StoreError> {
        let what = || format!("cannot look up node {hash}");
        let rows = self
            .run(&self.statements.has_node, (&hash.0[..],), what)
            .await?
            .into_rows_result()
            .map_err(|e| self.fail(&what(), e))?;
        Ok(rows.rows_num() > 0)
    }

    /// The value under `hash` (a row whose value is null is no value).
    async fn read_node(&self, hash: &Hash256) -> Result<Option<Vec<u8>>, StoreError> {
        let what = || format!("cannot read node {hash}");
        let result = self
            .run(&self.statements.get_node, (&hash.0[..],), what)
            .await?;
        self.first_value(result, what)
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
        let st = &self.statements;
        let inflight = self.opts.inflight;
        self.runtime.block_on(async {
            stream::iter(puts)
                .map(|(hash, value)| async move {
                    let what = || format!("cannot write node {hash}");
                    self.run(&st.put_node, (&hash.0[..], value), what)
                        .await
                        .map(drop)
                })
                .buffer_unordered(inflight)
                .try_collect::<()>()
                .await?;
            stream::iter(deletes)
                .map(|hash| async move {
                    let what = || format!("cannot delete node {hash}");
                    self.run(&st.delete_node, (&hash.0[..],), what)
                        .await
                        .map(drop)
                })
                .buffer_unordered(inflight)
                .try_collect::<()>()
                .await?;
            let what = |name: &str| format!("cannot write metadata record '{name}'");
            for op in metas {
                match op {
                    Op::PutMeta { name, value } => {
                        let values = (name.as_str(), value);
                        self.run(&st.put_meta, values, || what(&name)).await?;
                    }
                    Op::DeleteMeta(name) => {
                        self.run(&st.delete_meta, (name.as_str(),), || what(&name))
                            .await?;
                    }
                    Op::PutNode { .. } | Op::DeleteNode(_) => {}
                }
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
        let what = || format!("cannot read metadata record '{name}'");
        self.runtime.block_on(async {
            let result = self.run(&self.statements.get_meta, (name,), what).await?;
            self.first_value(result, what)
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
    /// Writes: a write returns once the replicas acknowledged it; an
    /// empty batch does nothing.
    fn write_durably(&self, batch: Batch) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        self.write(batch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_driver_error_is_one_line_with_no_part_said_twice() {
        let nested = "cannot look up node AB: Request timeout: Request timeout:\n  after 12000 ms";
        assert_eq!(
            one_line(nested),
            "cannot look up node AB: Request timeout: after 12000 ms"
        );
        assert_eq!(one_line("a: b: a"), "a: b: a");
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
}
