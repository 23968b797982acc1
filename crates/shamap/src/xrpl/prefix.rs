//! The 4-byte hash prefixes, in one place. Each is three ASCII letters and a
//! zero byte, prepended to a node's contents before hashing so that hashes of
//! different kinds of object can never collide.

/// A 4-byte hash prefix.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct HashPrefix(pub [u8; 4]);

impl HashPrefix {
    /// `MIN\0`: inner node.
    pub const INNER_NODE: HashPrefix = HashPrefix(*b"MIN\0");
    /// `MLN\0`: account-state leaf.
    pub const LEAF_NODE: HashPrefix = HashPrefix(*b"MLN\0");
    /// `SND\0`: transaction-with-metadata leaf.
    pub const TX_NODE: HashPrefix = HashPrefix(*b"SND\0");
    /// `TXN\0`: transaction ID and transaction-without-metadata leaf.
    pub const TRANSACTION_ID: HashPrefix = HashPrefix(*b"TXN\0");
    /// `LWR\0`: ledger header.
    pub const LEDGER_MASTER: HashPrefix = HashPrefix(*b"LWR\0");

    /// The prefix bytes.
    pub const fn bytes(&self) -> &[u8; 4] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_match_the_documented_hex() {
        assert_eq!(u32::from_be_bytes(HashPrefix::INNER_NODE.0), 0x4D49_4E00);
        assert_eq!(u32::from_be_bytes(HashPrefix::LEAF_NODE.0), 0x4D4C_4E00);
        assert_eq!(u32::from_be_bytes(HashPrefix::TX_NODE.0), 0x534E_4400);
        assert_eq!(
            u32::from_be_bytes(HashPrefix::TRANSACTION_ID.0),
            0x5458_4E00
        );
        assert_eq!(u32::from_be_bytes(HashPrefix::LEDGER_MASTER.0), 0x4C57_5200);
    }
}
