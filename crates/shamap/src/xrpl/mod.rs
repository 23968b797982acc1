//! XRPL specifics: SHA512Half, VL encoding, transaction IDs, the ledger
//! header and its hash prefix, the peer wire format, and readers for the
//! JSON that rippled and Clio emit. The node prefixes and message layouts
//! are in [`crate::node_hash`] ([`HashPrefix`] is its type, re-exported).

pub mod dump;
pub mod ledger;
pub mod prefix;
pub mod sha512half;
pub mod tx;
pub mod vl;
pub mod wire;

pub use ledger::LedgerHeader;
pub use prefix::HashPrefix;
pub use sha512half::{sha512_half, Sha512Half};
pub use tx::{transaction_id, tx_with_meta_item};
