//! The trust chain on real and made XPOPs: every real XPOP verifies; every
//! tampered part of one is refused; XPOPs made over real ledgers with
//! generated validator lists (both key types, both proof forms) verify, and
//! their tampered variants, short quorums, doubled and unlisted validators
//! are refused.

mod made;
mod real;

use std::path::PathBuf;

/// A file of the repository.
pub fn repo_file(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}
