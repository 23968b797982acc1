//! The ledger header's hash prefix. The node prefixes (`MIN\0`, `MLN\0`,
//! `SND\0`, `TXN\0`, the last also the transaction-ID prefix) live with the
//! node message layouts in [`crate::node_hash`], which defines the
//! [`HashPrefix`] type; `LWR\0` names no node, so it is declared here, on
//! the same type, beside the XRPL objects it belongs to.

pub use crate::node_hash::HashPrefix;

impl HashPrefix {
    /// `LWR\0`: ledger header.
    pub const LEDGER_MASTER: HashPrefix = HashPrefix(*b"LWR\0");
}
