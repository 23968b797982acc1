//! Anchors: a ledger hash trusted because the network validated it.
//!
//! An anchor comes from an XPOP (its ledger, once the XPOP verifies against
//! the trusted list key) or from a directory of validations with the list
//! they are checked against (the ledger hash a quorum of listed validators
//! validated). The store's audit then authenticates ledgers backwards from
//! it through parent links and skip lists.

use std::path::Path;

use serde_json::Value;
use shamap::Hash256;

use crate::error::AuthError;
use crate::keys::PublicKey;
use crate::validation::read_validations;
use crate::validator_list::ValidatorList;
use crate::xpop::count_votes;

/// A trusted ledger: its hash, its sequence when known, and how it was trusted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Anchor {
    /// The ledger hash.
    pub hash: Hash256,
    /// Its sequence, when the source says.
    pub seq: Option<u32>,
    /// How it came to be trusted, for reports.
    pub source: String,
}

/// The ledger an XPOP proves validated, once it verifies against `vl_key`.
pub fn from_xpop(xpop: &Value, vl_key: &PublicKey, name: &str) -> Result<Anchor, AuthError> {
    let report = crate::xpop::verify(xpop, vl_key)?;
    Ok(Anchor {
        hash: report.ledger_hash,
        seq: Some(report.ledger_index),
        source: format!(
            "the XPOP {name} ({} of {} validators)",
            report.votes, report.validators
        ),
    })
}

/// The newest ledger that validations in `paths` validate with a quorum of
/// the list `vl` (checked against `vl_key`). A list found among the
/// validations is used when `vl` is `None`.
pub fn from_validations(
    paths: &[impl AsRef<Path>],
    vl: Option<&Value>,
    vl_key: &PublicKey,
) -> Result<Anchor, AuthError> {
    let set = read_validations(paths)?;
    let vl = vl.or(set.vl.as_ref()).ok_or_else(|| {
        AuthError::invalid("no validator list: give --vl FILE or put vl.json among the validations")
    })?;
    let list = ValidatorList::verify(vl, vl_key, None)?;
    // Every ledger hash some validation names, with its sequence.
    let mut candidates: Vec<(u32, Hash256)> = Vec::new();
    for f in &set.validations {
        if let Ok(v) = crate::validation::Validation::verify(&f.raw, &f.source) {
            if !candidates.contains(&(v.ledger_seq, v.ledger_hash)) {
                candidates.push((v.ledger_seq, v.ledger_hash));
            }
        }
    }
    candidates.sort();
    let mut best: Option<(u32, Hash256, usize)> = None;
    for (seq, hash) in candidates.iter().rev() {
        let tally = count_votes(&list, &set.validations, hash, *seq)?;
        if tally.votes.len() >= list.quorum() {
            best = Some((*seq, *hash, tally.votes.len()));
            break;
        }
    }
    let (seq, hash, votes) = best.ok_or_else(|| {
        AuthError::invalid(format!(
            "no ledger among {} validations reaches the quorum of {} of the list's {} validators",
            set.validations.len(),
            list.quorum(),
            list.validators.len()
        ))
    })?;
    Ok(Anchor {
        hash,
        seq: Some(seq),
        source: format!(
            "{votes} of {} listed validators' validations",
            list.validators.len()
        ),
    })
}
