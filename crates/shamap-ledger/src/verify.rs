//! A ledger's maps built from its dump, and its hashes checked against the
//! values the dump claims: what `shamap verify` and the Python module's
//! `read_ledger` both do.
//!
//! [`state_map`] builds the AccountState map from the state entries and
//! [`tx_map`] the TransactionWithMeta map from the transactions; each
//! returns the position of the first entry that cannot go in. [`check`]
//! builds both and compares their roots, and the header's hash, with the
//! dump's claims; [`check_roots`] does the comparison for maps the caller
//! built itself. Each value is a [`Checked`]:
//!
//! - `account_hash`: the state map's root; not computed when the dump has
//!   no state entries (an empty list included);
//! - `transaction_hash`: the transaction map's root; not computed when the
//!   dump has no transaction list (an empty list gives the zero root);
//! - `ledger_hash`: the header hashed with the computed roots where there
//!   are some and the dump's own values otherwise; not computed when a
//!   header field is missing.
//!
//! ```
//! use shamap_ledger::verify::{check, Status};
//!
//! let dump = shamap_ledger::parse(br#"{"ledger_index": 9, "transactions": []}"#)?;
//! let checks = check(&dump).map_err(|e| e.message(e.index()))?;
//! assert_eq!(checks.account_hash.status(), Status::NotComputed);
//! assert_eq!(checks.account_hash.reason.as_deref(), Some("no state entries"));
//! assert_eq!(checks.transaction_hash.status(), Status::NoExpected);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;

use serde_json::{json, Value};
use shamap::xrpl::vl::VlError;
use shamap::xrpl::{tx_with_meta_item, LedgerRoot, LedgerRoots};
use shamap::{Hash256, MapError, MapKind, ShaMap};

use crate::ledger_dump::{HeaderFields, LedgerDump, StateEntry, TxEntry};
use crate::pages::{PagedLedger, PagesError, Source};

/// How one computed value compares with the dump's claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Computed and equal to the expected value.
    Match,
    /// Computed and different from the expected value.
    Mismatch,
    /// Computed, but the input claims no value.
    NoExpected,
    /// Not computed: the input lacks what it needs.
    NotComputed,
}

impl Status {
    /// The name used in JSON output: `match`, `mismatch`, `no_expected` or
    /// `not_computed`.
    pub fn name(self) -> &'static str {
        match self {
            Status::Match => "match",
            Status::Mismatch => "mismatch",
            Status::NoExpected => "no_expected",
            Status::NotComputed => "not_computed",
        }
    }
}

/// One checked value: `account_hash`, `transaction_hash` or `ledger_hash`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked {
    /// What the input's entries hash to, when they could be hashed.
    pub computed: Option<Hash256>,
    /// What the input claims.
    pub expected: Option<Hash256>,
    /// Why nothing was computed (set exactly when `computed` is `None`).
    pub reason: Option<String>,
}

impl Checked {
    /// A computed value, to compare with `expected`.
    pub fn computed(computed: Hash256, expected: Option<Hash256>) -> Checked {
        Checked {
            computed: Some(computed),
            expected,
            reason: None,
        }
    }

    /// A value that could not be computed, and why.
    pub fn not_computed(reason: impl Into<String>, expected: Option<Hash256>) -> Checked {
        Checked {
            computed: None,
            expected,
            reason: Some(reason.into()),
        }
    }

    /// How the computed value compares with the expected one.
    pub fn status(&self) -> Status {
        match (self.computed, self.expected) {
            (None, _) => Status::NotComputed,
            (Some(_), None) => Status::NoExpected,
            (Some(c), Some(e)) if c == e => Status::Match,
            (Some(_), Some(_)) => Status::Mismatch,
        }
    }

    /// The value as JSON: `computed` and `expected` (upper-case hex or
    /// `null`), `status` ([`Status::name`]) and, only when not computed,
    /// `reason`.
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "computed": self.computed.map(|h| h.to_hex()),
            "expected": self.expected.map(|h| h.to_hex()),
            "status": self.status().name(),
        });
        if let (Some(reason), Value::Object(o)) = (&self.reason, &mut v) {
            o.insert("reason".to_owned(), Value::String(reason.clone()));
        }
        v
    }
}

/// The three checked values of one ledger.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checks {
    /// The state map's root.
    pub account_hash: Checked,
    /// The transaction map's root.
    pub transaction_hash: Checked,
    /// The header's hash.
    pub ledger_hash: Checked,
}

impl Checks {
    /// The three values with their names, in output order.
    pub fn values(&self) -> [(&'static str, &Checked); 3] {
        [
            ("account_hash", &self.account_hash),
            ("transaction_hash", &self.transaction_hash),
            ("ledger_hash", &self.ledger_hash),
        ]
    }
}

/// Why a transaction could not go into the transaction map.
#[derive(Debug)]
pub enum TxItemError {
    /// Its blobs do not fit VL encoding.
    Vl(VlError),
    /// The map refused the item (a duplicate ID, data too long).
    Map(MapError),
}

impl fmt::Display for TxItemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TxItemError::Vl(e) => e.fmt(f),
            TxItemError::Map(e) => e.fmt(f),
        }
    }
}

/// The account-state map of `entries`, or the index of the first entry the
/// map refuses, with why.
pub fn state_map(entries: &[StateEntry]) -> Result<ShaMap, (usize, MapError)> {
    let mut map = ShaMap::new(MapKind::AccountState);
    for (i, e) in entries.iter().enumerate() {
        map.insert(e.key, &e.data).map_err(|err| (i, err))?;
    }
    Ok(map)
}

/// The transaction+metadata map of `txs`, or the index of the first
/// transaction that cannot go in, with why.
pub fn tx_map(txs: &[TxEntry]) -> Result<ShaMap, (usize, TxItemError)> {
    let mut map = ShaMap::new(MapKind::TransactionWithMeta);
    for (i, t) in txs.iter().enumerate() {
        let (key, data) =
            tx_with_meta_item(&t.tx, &t.meta).map_err(|err| (i, TxItemError::Vl(err)))?;
        map.insert(key, &data)
            .map_err(|err| (i, TxItemError::Map(err)))?;
    }
    Ok(map)
}

/// An entry of a dump that cannot go into its map.
#[derive(Debug)]
pub enum BuildError {
    /// State entry `.0` of the dump, refused by the state map.
    State(usize, MapError),
    /// Transaction `.0` of the dump, refused by the transaction map.
    Tx(usize, TxItemError),
}

impl BuildError {
    /// The entry's index in the dump's state or transaction list.
    pub fn index(&self) -> usize {
        match self {
            BuildError::State(i, _) | BuildError::Tx(i, _) => *i,
        }
    }

    /// Whether the entry is a state entry (else a transaction).
    pub fn is_state(&self) -> bool {
        matches!(self, BuildError::State(..))
    }

    /// The problem in words, naming the entry as number `at` (its index
    /// in the file it came from, for a dump merged from pages):
    /// `duplicate state key <key> at entry <at>`, `state entry <at>: …`,
    /// `duplicate transaction <id> at entry <at>` or
    /// `transactions entry <at>: …`.
    pub fn message(&self, at: usize) -> String {
        match self {
            BuildError::State(_, MapError::KeyExists(k)) => {
                format!("duplicate state key {k} at entry {at}")
            }
            BuildError::State(_, other) => format!("state entry {at}: {other}"),
            BuildError::Tx(_, TxItemError::Map(MapError::KeyExists(k))) => {
                format!("duplicate transaction {k} at entry {at}")
            }
            BuildError::Tx(_, other) => format!("transactions entry {at}: {other}"),
        }
    }
}

impl BuildError {
    /// The error located in the file its entry came from, for a dump
    /// assembled from `ledger`'s files: `<file>: <message>`, the entry
    /// numbered within that file.
    pub fn located(&self, ledger: &PagedLedger) -> PagesError {
        let count: fn(&Source) -> usize = if self.is_state() {
            |s| s.state_entries
        } else {
            |s| s.transactions
        };
        ledger.error_at(self.index(), count, |at| self.message(at))
    }
}

/// Compares the roots of maps already built from `header`'s dump (`state`
/// from its state entries, `None` when it has no state list;
/// `transactions` likewise), and the header's hash, with the header's
/// claims: the roots by the rule of [`LedgerRoots::compare`].
pub fn check_roots(
    header: &HeaderFields,
    state: Option<&mut ShaMap>,
    transactions: Option<&mut ShaMap>,
) -> Checks {
    let h = header;
    let computed = LedgerRoots {
        account_hash: state.filter(|m| !m.is_empty()).map(|m| m.root_hash()),
        transaction_hash: transactions.map(|m| m.root_hash()),
    };
    let [account_hash, transaction_hash] = computed.compare(&h.roots()).map(|r| match r.computed {
        Some(root) => Checked::computed(root, r.claimed),
        None => Checked::not_computed(
            match r.root {
                LedgerRoot::Account => "no state entries",
                LedgerRoot::Transaction => "no transaction list",
            },
            r.claimed,
        ),
    });
    let ledger_hash = match h.header_with_roots(computed.account_hash, computed.transaction_hash) {
        Ok(header) => Checked::computed(header.hash(), h.ledger_hash),
        Err(missing) => Checked::not_computed(
            format!("missing header fields: {}", missing.join(", ")),
            h.ledger_hash,
        ),
    };
    Checks {
        account_hash,
        transaction_hash,
        ledger_hash,
    }
}

/// Builds the maps of `dump` and compares their roots, and the ledger
/// hash, with the values it claims; the first entry that cannot go into
/// its map (state entries first) is an error.
pub fn check(dump: &LedgerDump) -> Result<Checks, BuildError> {
    let mut state = match dump.state.as_deref() {
        Some(entries) if !entries.is_empty() => {
            Some(state_map(entries).map_err(|(i, e)| BuildError::State(i, e))?)
        }
        _ => None,
    };
    let mut transactions = dump
        .transactions
        .as_deref()
        .map(|txs| tx_map(txs).map_err(|(i, e)| BuildError::Tx(i, e)))
        .transpose()?;
    Ok(check_roots(
        &dump.header,
        state.as_mut(),
        transactions.as_mut(),
    ))
}

/// The report of one ledger read from files: what `shamap verify` prints
/// for it, and what the Python module's `Ledger.verify` holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerReport {
    /// The files merged into this ledger.
    pub sources: Vec<String>,
    /// Header fields as read (for the ledger's name and index).
    pub header: HeaderFields,
    /// State entries read, if the input had a state list.
    pub state_entries: Option<usize>,
    /// Transactions read, if the input had a transaction list.
    pub transactions: Option<usize>,
    /// The state map's root.
    pub account_hash: Checked,
    /// The transaction map's root.
    pub transaction_hash: Checked,
    /// The header's hash.
    pub ledger_hash: Checked,
}

impl LedgerReport {
    /// The report of `ledger` with `checks` made on its maps (for a caller
    /// that builds the maps itself, as the Python module does, to keep
    /// them).
    pub fn new(ledger: &PagedLedger, checks: Checks) -> LedgerReport {
        let d = &ledger.dump;
        LedgerReport {
            sources: ledger.sources.iter().map(|s| s.name.clone()).collect(),
            header: d.header,
            state_entries: d.state.as_ref().map(Vec::len),
            transactions: d.transactions.as_ref().map(Vec::len),
            account_hash: checks.account_hash,
            transaction_hash: checks.transaction_hash,
            ledger_hash: checks.ledger_hash,
        }
    }

    /// Builds the maps of `ledger` and checks them ([`check`]); an entry
    /// that cannot go into its map is an error naming its file.
    pub fn check(ledger: &PagedLedger) -> Result<LedgerReport, PagesError> {
        let checks = check(&ledger.dump).map_err(|e| e.located(ledger))?;
        Ok(LedgerReport::new(ledger, checks))
    }

    /// The three values with their names, in output order.
    pub fn values(&self) -> [(&'static str, &Checked); 3] {
        [
            ("account_hash", &self.account_hash),
            ("transaction_hash", &self.transaction_hash),
            ("ledger_hash", &self.ledger_hash),
        ]
    }

    /// One ledger of `shamap verify --json`: `sources`, `ledger_index`,
    /// `state_entries`, `transactions`, `incomplete` (always `false`: a
    /// ledger whose last page is missing is refused, see
    /// [`PagedLedger::require_whole`]) and the three values
    /// ([`Checked::to_json`]).
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "sources": self.sources,
            "ledger_index": self.header.ledger_index,
            "state_entries": self.state_entries,
            "transactions": self.transactions,
            "incomplete": false,
        });
        if let Value::Object(o) = &mut v {
            for (name, c) in self.values() {
                o.insert(name.to_owned(), c.to_json());
            }
        }
        v
    }
}

/// The verdict over some reports, which decides `shamap verify`'s exit
/// status and the Python module's `Ledger.ok`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// At least one value checked, and every checked value matched.
    Verified,
    /// Some value differs from its expected value.
    Mismatch,
    /// No computed value had an expected value to compare with.
    NothingChecked,
}

/// The counts and verdict over some reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Values that had both a computed and an expected hash.
    pub checked: usize,
    /// Of those, how many differ.
    pub mismatches: usize,
    /// The verdict.
    pub outcome: Outcome,
}

impl Summary {
    /// The summary of `reports`.
    pub fn of(reports: &[LedgerReport]) -> Summary {
        let statuses: Vec<Status> = reports
            .iter()
            .flat_map(|r| r.values())
            .map(|(_, c)| c.status())
            .collect();
        let matches = statuses.iter().filter(|s| **s == Status::Match).count();
        let mismatches = statuses.iter().filter(|s| **s == Status::Mismatch).count();
        let outcome = if mismatches > 0 {
            Outcome::Mismatch
        } else if matches > 0 {
            Outcome::Verified
        } else {
            Outcome::NothingChecked
        };
        Summary {
            checked: matches + mismatches,
            mismatches,
            outcome,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_follow_computed_and_expected() {
        let (a, b) = (Hash256([1; 32]), Hash256([2; 32]));
        assert_eq!(Checked::computed(a, Some(a)).status(), Status::Match);
        assert_eq!(Checked::computed(a, Some(b)).status(), Status::Mismatch);
        assert_eq!(Checked::computed(a, None).status(), Status::NoExpected);
        let c = Checked::not_computed("why", Some(a));
        assert_eq!(c.status(), Status::NotComputed);
        assert_eq!(c.to_json()["reason"], "why");
        assert!(Checked::computed(a, None).to_json().get("reason").is_none());
    }

    #[test]
    fn duplicate_state_keys_name_the_entry() {
        let key = "02CE52E3E46AD340B1C7900F86AFB959AE0C246916E3463905EDD61DE26FFFDD";
        let json = format!(
            r#"{{"ledger_index": 5, "accountState": [
                {{"index": "{key}", "data": "1100612200000000"}},
                {{"index": "{key}", "data": "1100612200000000"}}]}}"#
        );
        let dump = crate::parse(json.as_bytes()).expect("parses");
        let e = check(&dump).expect_err("duplicate");
        assert!(e.is_state());
        assert_eq!(e.index(), 1);
        assert_eq!(
            e.message(7),
            format!("duplicate state key {key} at entry 7")
        );
    }
}
