//! What checking a ledger found: the result and its disagreements.

use shamap::{Hash256, Key};

/// A disagreement inside Clio's data, at one key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The key (or transaction hash) it is about.
    pub key: Key,
    /// What is wrong, one line.
    pub what: String,
}

/// A row the final audit ([`ClioVerifier::audit`](crate::ClioVerifier::audit)) found at odds with the
/// verified state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditFinding {
    /// The ledger of the stray row (as stored).
    pub seq: i64,
    /// The key.
    pub key: Key,
    /// What is wrong, one line.
    pub what: String,
}

/// A computed value and the one the data claims.
pub type Pair = (Hash256, Hash256);

/// The result of checking one ledger.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerCheck {
    /// The ledger.
    pub seq: u32,
    /// True when the state was built whole from the successor list.
    pub full_build: bool,
    /// Live state entries after the ledger.
    pub state_entries: u64,
    /// The ledger's `diff` keys, sorted (empty after a full build).
    pub diff_keys: Vec<Key>,
    /// Transactions in the ledger.
    pub transactions: usize,
    /// Computed state root, header's `account_hash`.
    pub account_hash: Pair,
    /// Computed transaction root, header's `transaction_hash`.
    pub transaction_hash: Pair,
    /// Hash of the header's fields, the hash stored after them.
    pub ledger_hash: Pair,
    /// The header's `parent_hash`, and the previous ledger's hash (when
    /// the previous ledger was verified in this run or recorded).
    pub parent_hash: Option<Pair>,
    /// Disagreements inside Clio's data, by key.
    pub problems: Vec<Problem>,
}

impl LedgerCheck {
    /// True when every value matched and there is no problem.
    pub fn is_match(&self) -> bool {
        let same = |p: &Pair| p.0 == p.1;
        same(&self.account_hash)
            && same(&self.transaction_hash)
            && same(&self.ledger_hash)
            && self.parent_hash.as_ref().is_none_or(same)
            && self.problems.is_empty()
    }
}
