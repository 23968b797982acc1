//! What an audit is asked about and what it finds, in words shared by the
//! audit of a rippled NuDB store (`crate::backend::nudb`) and the audit of
//! any store (`crate::map::audit`, which reports them): which ledger to
//! audit ([`Only`]) and a damaged or missing node with the ledgers it
//! breaks ([`DamagedNode`]).

use std::path::PathBuf;

use shamap::Hash256;

/// Which ledger an audit walks (none: every ledger the store lists).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Only {
    /// The ledger with this hash.
    Hash(Hash256),
    /// The ledger with this sequence, as the store lists it (a NuDB
    /// store: its `ledger.db`, else a search of its data files for the
    /// header).
    Seq(u32),
}

/// A damaged or missing node and the ledgers it breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DamagedNode {
    /// The node's key.
    pub key: Hash256,
    /// Its record: data file and byte offset, when it has one.
    pub at: Option<(PathBuf, u64)>,
    /// What is wrong.
    pub what: String,
    /// The ledgers it breaks (sequence when known, and hash).
    pub ledgers: Vec<(Option<u32>, Hash256)>,
}
