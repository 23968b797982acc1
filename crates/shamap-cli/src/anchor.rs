//! The anchor options of `verify` (files and `--db`): one trusted ledger
//! hash, given directly or taken from what proves the network validated it.
//!
//! - `--anchor LEDGERHASH`: trusted as given.
//! - `--anchor-xpop FILE --vl-key KEY`: the ledger an XPOP proves validated,
//!   once it verifies against the list publisher's key.
//! - `--anchor-validations DIR|FILE... [--vl FILE] --vl-key KEY`: the newest
//!   ledger a quorum of the list's validators validated.
//!
//! [`shamap_auth::anchor`] decides; the walk from the anchor is the store's
//! ([`shamap_store::map::authenticate`]).

use std::path::PathBuf;

use serde_json::Value;
use shamap_auth::anchor::{from_validations, from_xpop, Anchor};
use shamap_auth::PublicKey;

use crate::input::{parse_hash, read_file};
use crate::output::Failure;

/// The anchor options.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AnchorArgs {
    /// Authenticate every ledger found from this trusted ledger hash, through
    /// parent links and skip lists: each is reported authenticated, forged,
    /// or not authenticated. Exit 0 only when every ledger is whole and
    /// authenticated; 1 when one is not; 2 on damage.
    #[arg(long, value_name = "LEDGERHASH", conflicts_with_all = ["anchor_xpop", "anchor_validations"])]
    pub anchor: Option<String>,
    /// The anchor is the ledger this XPOP proves validated (needs --vl-key).
    #[arg(
        long,
        value_name = "FILE",
        requires = "vl_key",
        conflicts_with = "anchor_validations"
    )]
    pub anchor_xpop: Option<PathBuf>,
    /// The anchor is the newest ledger these validations give a quorum of
    /// the list (--vl, or vl.json among them; needs --vl-key).
    #[arg(long, value_name = "DIR|FILE", num_args = 1.., requires = "vl_key")]
    pub anchor_validations: Vec<PathBuf>,
    /// The validator list for --anchor-validations.
    #[arg(long, value_name = "FILE")]
    pub vl: Option<PathBuf>,
    /// The list publisher's master key (hex or n…) that --anchor-xpop and
    /// --anchor-validations are checked against.
    #[arg(long, value_name = "KEY")]
    pub vl_key: Option<String>,
}

impl AnchorArgs {
    /// The anchor the options name, checked; `None` when none is given.
    pub fn resolve(&self) -> Result<Option<Anchor>, Failure> {
        let key = || -> Result<PublicKey, Failure> {
            let text = self
                .vl_key
                .as_deref()
                .ok_or_else(|| Failure::unusable("give --vl-key"))?;
            PublicKey::parse(text).map_err(|e| Failure::unusable(format!("--vl-key: {e}")))
        };
        if let Some(h) = &self.anchor {
            return Ok(Some(Anchor {
                hash: parse_hash("--anchor", h)?,
                seq: None,
                source: "--anchor".to_owned(),
            }));
        }
        if let Some(path) = &self.anchor_xpop {
            let (name, bytes) = read_file(path)?;
            let xpop: Value = serde_json::from_slice(&bytes)
                .map_err(|e| Failure::unusable(format!("{name}: not JSON: {e}")))?;
            return from_xpop(&xpop, &key()?, &name)
                .map(Some)
                .map_err(|e| Failure::unusable(format!("--anchor-xpop {name}: {e}")));
        }
        if !self.anchor_validations.is_empty() {
            let vl = match &self.vl {
                Some(p) => {
                    let (name, bytes) = read_file(p)?;
                    Some(
                        serde_json::from_slice::<Value>(&bytes)
                            .map_err(|e| Failure::unusable(format!("{name}: not JSON: {e}")))?,
                    )
                }
                None => None,
            };
            return from_validations(&self.anchor_validations, vl.as_ref(), &key()?)
                .map(Some)
                .map_err(|e| Failure::unusable(format!("--anchor-validations: {e}")));
        }
        if self.vl.is_some() || self.vl_key.is_some() {
            return Err(Failure::unusable(
                "--vl and --vl-key check an anchor: give --anchor-xpop or --anchor-validations",
            ));
        }
        Ok(None)
    }
}
