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
use scylla::statement::prepared::PreparedStatement;
use shamap::xrpl::ledger::{LedgerHeader, LEDGER_HEADER_LEN};
use shamap::{Hash256, Key};

use shamap_store::CassandraOptions;
use shamap_store::StoreError;

mod build;
#[cfg(feature = "test-chain")]
mod chain;
mod floor;
mod loader;
mod reader;
pub mod report;
mod run;
mod verify;

#[cfg(feature = "test-chain")]
pub use chain::{random_chain, ChainShape};
pub use floor::{read_floor, ReadFloor};
pub use loader::{ClioLedger, ClioLoader};
pub use reader::{Background, ClioReader, LedgerRows, Prefetch, StateRow, TxRow, SCAN_RANGES};
pub use run::{ledgers_wanted, ClioRun, StatePolicy, Stop};
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

/// A session on a cluster and the runtime it runs on.
struct Conn {
    opts: CassandraOptions,
    location: String,
    runtime: tokio::runtime::Runtime,
    session: Arc<Session>,
}

impl Conn {
    /// Connects to the cluster a `cassandra://` URL names (the keyspace
    /// is not checked here).
    fn connect(url: &str) -> Result<Conn, ClioError> {
        let opts = CassandraOptions::from_url(url).map_err(|e| ClioError::Database {
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
            runtime,
            session: Arc::new(session),
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
        let what = "cannot read the schema";
        let rows = self
            .runtime
            .block_on(self.session.query_unpaged(
                "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?",
                (self.keyspace(),),
            ))
            .map_err(|e| self.fail(what, e))?
            .into_rows_result()
            .map_err(|e| self.fail(what, e))?;
        Ok(rows.rows_num() > 0)
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

    /// Runs one CQL statement without values.
    fn execute(&self, cql: &str) -> Result<(), ClioError> {
        self.runtime
            .block_on(self.session.query_unpaged(cql, ()))
            .map(|_| ())
            .map_err(|e| self.fail(&format!("cannot run '{cql}'"), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_blob_round_trips_and_refuses_other_lengths() {
        let h = LedgerHeader {
            seq: 9,
            total_coins: 1,
            parent_hash: Hash256([1; 32]),
            transaction_hash: Hash256([2; 32]),
            account_hash: Hash256([3; 32]),
            parent_close_time: 4,
            close_time: 5,
            close_time_resolution: 10,
            close_flags: 0,
        };
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
}
