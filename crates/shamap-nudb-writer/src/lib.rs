//! # shamap-nudb-writer (tests only)
//!
//! Writes rippled node stores in NuDB 2.0.9's format, for testing readers
//! of them: byte for byte what NuDB's `basic_store` writes for the same
//! inserts, commits and options (see [`writer`]), values encoded by
//! rippled's codec ([`codec`]), except that LZ4 blocks come from
//! `lz4_flex` (the same format as liblz4's, other bytes).
//!
//! - [`NudbWriter`]: `create(dir, options)`, `insert(key, value)` (a
//!   NodeStore value, encoded by the options' [`CodecPolicy`]),
//!   `insert_as` (a chosen codec type), `insert_raw` (stored as given),
//!   `commit`, `reopen`, `finish` (or `finish_interrupted`: a crash
//!   mid-commit, with its `nudb.log`). [`Written`] lists every record and
//!   spill record written, with offsets.
//! - [`ledgers`]: objects of real ledgers from JSON dumps, histories of
//!   ledgers sharing nodes, databases of them, rotated `online_delete`
//!   layouts and their `state.db`, rippled's `ledger.db` (closed, or in WAL
//!   mode as a running or killed rippled leaves it: [`WalLedgerDb`]).
//! - [`faults`]: flipped bytes, removed records, truncation, contradicting
//!   or wrong headers, logs, bucket entries pointing past the file, spill
//!   chains that loop.
//! - [`random`]: a ledger of random state entries of realistic sizes, for
//!   benchmarks (`examples/nudb-gen.rs`).
//!
//! `tests/nudb_read.py` is a second, independent reader (Python standard
//! library only) that the tests run on what this crate writes.

pub mod codec;
pub mod faults;
pub mod format;
pub mod ledgers;
pub mod random;
pub mod writer;

pub use codec::{CodecPolicy, CodecType};
pub use ledgers::{
    history, skip_list_history, write_ledger, write_ledger_db, write_ledgers, write_rotated,
    write_state_db, Ledger, Rotated, WalLedgerDb, ROTATED_NAMES,
};
pub use writer::{Interrupt, NudbOptions, NudbWriter, RecordInfo, WriteError, Written};
