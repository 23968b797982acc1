//! XRPL specifics: VL encoding, transaction IDs, the ledger
//! header and its hash prefix, and the peer wire format. The node prefixes
//! and message layouts are in [`crate::node_hash`] ([`HashPrefix`] is its
//! type, re-exported), SHA512Half in [`crate::sha512half`] (its two items
//! re-exported here). Reading the JSON that rippled and Clio emit is the
//! `shamap-ledger` crate's work.

pub mod fields;
pub mod ledger;
pub mod prefix;
pub mod skip_list;
pub mod tx;
pub mod vl;
pub mod wire;

pub use crate::sha512half::{sha512_half, Sha512Half};
pub use ledger::{LedgerHeader, LedgerRoot, LedgerRoots, RootCheck, RootMismatch};
pub use prefix::HashPrefix;
pub use tx::{transaction_id, tx_with_meta_item};
