//! rippled's node store, read-only: the NuDB files (`nudb.dat`,
//! `nudb.key`, `nudb.log`) of rippled's `[node_db] type=NuDB`, with values
//! in rippled's codec, as a [`NudbStore`] every read command takes, and
//! the whole-store audit of `verify --db` ([`audit()`]).
//!
//! - [`key_file`], [`dat_file`]: NuDB's two files (headers, buckets,
//!   spills, records).
//! - `header`: the start every NuDB file shares (read, magic checked).
//! - [`codec`]: rippled's value codec.
//! - [`dir`]: one NuDB directory (headers checked, lookups).
//! - [`layout`]: which directories a path holds (one directory, or
//!   rippled's two rotated `rippledb.*` ones as its `state.db` names them).
//! - [`store`]: the store over those directories, read-only.
//! - [`sqlite`]: rippled's SQLite databases read as a running or killed
//!   rippled leaves them (WAL included), creating nothing.
//! - [`ledger_db`]: rippled's `ledger.db` (sequences to hashes).
//! - [`ledgers`]: the store's ledgers, by one rule (`ledger.db`, else the
//!   ledger headers in the data files).
//! - [`scan`], [`inner_cache`], [`walk`], [`audit`](mod@audit): the audit.
//!
//! Nothing here writes, creates, locks or truncates a file in a NuDB
//! directory: files are opened read-only, `ledger.db` and `state.db` with
//! no file created beside them ([`sqlite`]). A non-empty `nudb.log` (a
//! commit under way in a running rippled, or one a crash stopped) is read
//! in memory: the store is read as it was before that commit
//! ([`log_file`]), never rolled back.

pub mod audit;
pub mod budget;
pub mod codec;
pub mod dat_file;
pub mod dir;
mod header;
pub mod inner_cache;
pub mod key_check;
pub mod key_file;
pub mod layout;
pub mod ledger_db;
pub mod ledgers;
pub mod log_file;
pub mod record_index;
pub mod scan;
pub mod sqlite;
pub mod store;
pub mod walk;

pub use audit::{audit, AuditOptions, AuditReport, LedgerAudit};
pub use dir::NudbDir;
pub use layout::{is_nudb_store, Layout};
pub use ledger_db::{read_ledgers, LedgerRow};
pub use ledgers::{headers_in_data, FoundHeader, RecordCounts};
pub use scan::{decode_and_hash_floor, DamagedRecord, FloorReport, ScanReport};
pub use store::NudbStore;
