//! The one error type of the store layer. Every message is one line and
//! names the node (by hash), the metadata record or the store it is about.
//! A message states what is wrong; what a user may do next is a
//! [`NextStep`] ([`StoreError::next_step`]), which a command line words
//! with its own commands and flags.

use shamap::Hash256;

/// A next step the caller may take about an error, named by the store and
/// worded by whoever knows how the user gets there (the CLI: its commands
/// and flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NextStep {
    /// List the roots and ledgers the store holds.
    ListRoots,
    /// Name the ledger by its hash: more than one has the sequence given.
    NameLedgerByHash,
    /// Give rippled's `ledger.db` of the NuDB store, which lists its
    /// ledgers.
    GiveLedgerDb,
    /// Copy what is wanted out of a read-only store into a writable one.
    CopyOut,
    /// Audit the store: it lists the damage and the roots it breaks.
    Audit,
}

/// The facts whose next step [`StoreError::next_step`] knows, written by
/// the code that finds them and read back here.
pub(crate) mod facts {
    /// A hash with nothing stored under it (`map::ledger::resolve_root`).
    pub(crate) const NEITHER_LEDGER_NOR_ROOT: &str =
        "it is neither a ledger hash nor a map root of this store";
    /// More than one listed ledger has a sequence (`map::ledger`).
    pub(crate) const SEQUENCE_SHARED: &str = "ledgers have sequence";
    /// A NuDB store without `ledger.db` whose data files hold no header of
    /// a sequence (`backend::nudb::audit`).
    pub(crate) const NO_HEADER_NO_LEDGER_DB: &str = "in the data files (and no ledger.db)";
    /// A write to a NuDB store (`backend::nudb::store::READ_ONLY`).
    pub(crate) const READ_ONLY_NUDB: &str = "read-only: a rippled NuDB store";
    /// A node log found damaged below its checkpoint (`backend::log_store`).
    pub(crate) const DAMAGED_LOG: &str = "nothing is written on a damaged log";
}

/// A store operation that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A stored value that does not decode, or whose prefix-format bytes do
    /// not hash to its key. Never returned as data.
    #[error("node {hash} is corrupt: {reason}")]
    Corrupt {
        /// The key the value was stored under.
        hash: Hash256,
        /// What is wrong with it.
        reason: String,
    },
    /// A node that a walk needed and the store does not have.
    #[error("node {hash} is missing from the store")]
    Missing {
        /// The hash a parent (or the caller) named.
        hash: Hash256,
    },
    /// A node found by a walk from a root that is bad where it sits: missing,
    /// corrupt, or of the wrong kind for its place in the tree.
    #[error("node {hash} at nibble path '{path}': {reason}")]
    BadNode {
        /// The hash the parent names.
        hash: Hash256,
        /// The nibbles from the root to the node, in hex (empty for the root).
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A node of another type than the caller asked for (e.g. a leaf given
    /// as a map root).
    #[error("node {hash} is {found}, expected {expected}")]
    WrongType {
        /// The node.
        hash: Hash256,
        /// What it is.
        found: &'static str,
        /// What was wanted.
        expected: &'static str,
    },
    /// A map whose nodes are not hashed with SHA512Half: a store names every
    /// node by its SHA512Half, so such a map cannot be written to one.
    #[error("a map hashed with {found} cannot be stored: node stores name nodes by their SHA512Half (root {root})")]
    NotSha512Half {
        /// The map's hash function.
        found: shamap::HashFunction,
        /// The map's root hash.
        root: Hash256,
    },
    /// The store was written by a format this build does not read.
    #[error("store {location}: format version {found} is not supported (this build reads version {supported})")]
    UnknownVersion {
        /// The store (directory or `<memory N>`).
        location: String,
        /// The version recorded in the store (as text, since it may not
        /// even be a number).
        found: String,
        /// The version this build writes and reads.
        supported: u32,
    },
    /// A metadata record that does not decode.
    #[error("store {location}: metadata record '{name}' is malformed: {reason}")]
    BadMeta {
        /// The store.
        location: String,
        /// The record's name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A hash given as a root that the store does not know as one: not a
    /// retained ledger or map, nor a map of a retained ledger, nor a stored
    /// ledger header. Refused before anything is read, written or deleted
    /// under it (an inner node's hash would otherwise pass for a map).
    #[error("store {location}: {hash} is not a root of this store (not a retained ledger or map, nor a map of one)")]
    NotARoot {
        /// The store.
        location: String,
        /// The hash given.
        hash: Hash256,
    },
    /// A root or ledger asked for that the store cannot give as asked: a
    /// hash with nothing stored under it, a sequence no listed ledger has
    /// (or more than one has), a transaction map of a ledger without
    /// transactions, a map of another kind than asked
    /// ([`crate::map::ledger::resolve_root`], [`crate::map::ledger::ledger_by_seq`]).
    #[error("store {location}: {message}")]
    Unresolved {
        /// The store.
        location: String,
        /// What was asked and why it cannot be given, on one line.
        message: String,
    },
    /// Another process writes the store: one writer at a time. A reader
    /// may still open it read-only.
    #[error("store {location}: the store is locked by another process (one writer at a time)")]
    Locked {
        /// The store.
        location: String,
    },
    /// The store's directory cannot be written (a read-only file system,
    /// no write permission): the case for a read-only opening.
    #[error("store {location}: {message} (the directory cannot be written)")]
    Unwritable {
        /// The store.
        location: String,
        /// What could not be done, and the system's error.
        message: String,
    },
    /// Nothing at the location is a store of a kind this build reads, or
    /// nothing is there at all (when a store must exist).
    #[error("store {location}: {reason}")]
    NoStore {
        /// The location given.
        location: String,
        /// What is there instead.
        reason: String,
    },
    /// Any other failure of the backend (an I/O error, a refused opening,
    /// damage found reading the store's files, ...).
    #[error("store {location}: {message}")]
    Backend {
        /// The store.
        location: String,
        /// The backend's message, on one line.
        message: String,
    },
}

impl StoreError {
    /// The next step a user may take about this error, when there is one
    /// the store can name (see [`NextStep`]).
    pub fn next_step(&self) -> Option<NextStep> {
        let message = match self {
            StoreError::NotARoot { .. } => return Some(NextStep::ListRoots),
            StoreError::Unresolved { message, .. }
            | StoreError::Backend { message, .. }
            | StoreError::NoStore {
                reason: message, ..
            } => message,
            _ => return None,
        };
        [
            (facts::NEITHER_LEDGER_NOR_ROOT, NextStep::ListRoots),
            (facts::SEQUENCE_SHARED, NextStep::NameLedgerByHash),
            (facts::NO_HEADER_NO_LEDGER_DB, NextStep::GiveLedgerDb),
            (facts::READ_ONLY_NUDB, NextStep::CopyOut),
            (facts::DAMAGED_LOG, NextStep::Audit),
        ]
        .into_iter()
        .find(|(fact, _)| message.contains(fact))
        .map(|(_, step)| step)
    }

    /// A backend error with its message flattened to one line.
    pub fn backend(location: impl Into<String>, message: impl std::fmt::Display) -> StoreError {
        StoreError::Backend {
            location: location.into(),
            message: message.to_string().replace('\n', " "),
        }
    }

    /// Places an error met while walking at the node it concerns: missing,
    /// corrupt and wrong-type errors become [`StoreError::BadNode`] with the
    /// nibble path; others pass through.
    pub fn at(self, hash: Hash256, path: &str) -> StoreError {
        let reason = match self {
            StoreError::Missing { .. } => "missing from the store".to_owned(),
            StoreError::Corrupt { reason, .. } => format!("corrupt: {reason}"),
            StoreError::WrongType {
                found, expected, ..
            } => format!("is {found}, expected {expected}"),
            other => return other,
        };
        StoreError::BadNode {
            hash,
            path: path.to_owned(),
            reason,
        }
    }
}
