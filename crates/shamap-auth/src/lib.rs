//! # shamap-auth
//!
//! Authenticating XRP Ledger ledgers: the trust chain from one key a user
//! trusts to the bytes of a ledger.
//!
//! - [`keys`]: node public keys (hex, `n…` base58) and rippled's signature
//!   rules for secp256k1 (canonical DER, low `s`) and ed25519.
//! - [`manifest`]: a master key delegating to a signing key (`MAN\0`).
//! - [`validator_list`]: a list publisher's signed list of validators.
//! - [`validation`]: validators' signed statements of a ledger hash
//!   (`VAL\0`), read from the files people have.
//! - [`proof`]: an XPOP's transaction-map proof, list and tree forms.
//! - [`xpop`]: XLS-41 proofs: verifying and making them.
//!
//! Above the ledger crate; nothing below depends on this one. The store's
//! audit takes a trusted ledger hash (an *anchor*) and authenticates every
//! ledger it can reach from it; this crate turns an XPOP or a set of
//! validations into such a hash ([`anchor`]).

pub mod anchor;
pub mod error;
pub mod keys;
pub mod manifest;
pub mod proof;
pub mod validation;
pub mod validator_list;
pub mod xpop;

pub use error::AuthError;
pub use keys::{KeyPair, PublicKey};
pub use validator_list::ValidatorList;
pub use xpop::{ProofForm, XpopReport};
