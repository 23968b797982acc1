//! What a map holds, fixed at creation: it decides how leaves are hashed.
//!
//! Its leaf prefix and leaf hash ([`MapKind::leaf_prefix`],
//! [`MapKind::leaf_hash`]) are defined with the node hash format, in
//! [`crate::node_hash`], so that this module depends on nothing.

/// The kind of a map, which fixes its leaf hashing.
///
/// | kind                  | leaf hash                               | used for                      |
/// |-----------------------|-----------------------------------------|-------------------------------|
/// | `AccountState`        | `SHA512Half(MLN\0 ‖ data ‖ key)`        | ledger state (`account_hash`) |
/// | `TransactionWithMeta` | `SHA512Half(SND\0 ‖ data ‖ key)`        | closed ledger's transactions  |
/// | `TransactionNoMeta`   | `SHA512Half(TXN\0 ‖ data)` (key unused) | consensus transaction sets    |
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MapKind {
    /// Account-state map: keys are ledger-entry indexes, data the serialized entry.
    AccountState,
    /// Transaction+metadata map: keys are transaction IDs, data `VL(tx) ‖ VL(meta)`.
    TransactionWithMeta,
    /// Transaction-only map (consensus transaction sets): data is the tx blob.
    ///
    /// The key must be the transaction's ID, `SHA512Half(TXN\0 ‖ data)`, as
    /// in rippled. The map does not check it: the leaf hash leaves the key
    /// out, so a map with other keys hashes like one with the right keys,
    /// `diff` cannot tell such maps apart, and a proof of such a leaf fails
    /// verification (`LeafOutOfPlace`), since a verifier derives the key
    /// from the data.
    TransactionNoMeta,
}

impl MapKind {
    /// Short lower-case name used by the CLI and JSON output.
    pub const fn name(self) -> &'static str {
        match self {
            MapKind::AccountState => "state",
            MapKind::TransactionWithMeta => "tx",
            MapKind::TransactionNoMeta => "txset",
        }
    }
}
