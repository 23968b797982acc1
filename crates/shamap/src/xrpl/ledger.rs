//! The ledger header and its hash.

use crate::hash::Hash256;
use crate::xrpl::prefix::HashPrefix;
use crate::xrpl::sha512half::Sha512Half;

/// Length of a serialized ledger header (without hash prefix).
pub const LEDGER_HEADER_LEN: usize = 118;

/// The fields of a ledger header that its hash covers.
///
/// `ledger_hash = SHA512Half(LWR\0 ‖ seq ‖ total_coins ‖ parent_hash ‖
/// transaction_hash ‖ account_hash ‖ parent_close_time ‖ close_time ‖
/// close_time_resolution ‖ close_flags)`, integers big-endian.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LedgerHeader {
    /// Ledger sequence number (`ledger_index`).
    pub seq: u32,
    /// Drops of XRP in existence.
    pub total_coins: u64,
    /// Hash of the previous ledger.
    pub parent_hash: Hash256,
    /// Root of the transaction+metadata map (zero when there are none).
    pub transaction_hash: Hash256,
    /// Root of the account-state map.
    pub account_hash: Hash256,
    /// Close time of the parent, seconds since 2000-01-01.
    pub parent_close_time: u32,
    /// Close time, seconds since 2000-01-01.
    pub close_time: u32,
    /// Close-time rounding, seconds.
    pub close_time_resolution: u8,
    /// Close flags (bit 0: no consensus on close time).
    pub close_flags: u8,
}

impl LedgerHeader {
    /// The 118-byte serialization the hash covers (after the prefix).
    pub fn serialize(&self) -> [u8; LEDGER_HEADER_LEN] {
        let mut b = [0u8; LEDGER_HEADER_LEN];
        b[0..4].copy_from_slice(&self.seq.to_be_bytes());
        b[4..12].copy_from_slice(&self.total_coins.to_be_bytes());
        b[12..44].copy_from_slice(&self.parent_hash.0);
        b[44..76].copy_from_slice(&self.transaction_hash.0);
        b[76..108].copy_from_slice(&self.account_hash.0);
        b[108..112].copy_from_slice(&self.parent_close_time.to_be_bytes());
        b[112..116].copy_from_slice(&self.close_time.to_be_bytes());
        b[116] = self.close_time_resolution;
        b[117] = self.close_flags;
        b
    }

    /// Parses the 118-byte serialization (as in a binary `ledger_data`
    /// response's `ledger_data` field). Returns `None` for any other length.
    pub fn deserialize(b: &[u8]) -> Option<LedgerHeader> {
        if b.len() != LEDGER_HEADER_LEN {
            return None;
        }
        let u32_at = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let hash_at = |i: usize| Hash256::from_slice(&b[i..i + 32]);
        let mut coins = [0u8; 8];
        coins.copy_from_slice(&b[4..12]);
        Some(LedgerHeader {
            seq: u32_at(0),
            total_coins: u64::from_be_bytes(coins),
            parent_hash: hash_at(12)?,
            transaction_hash: hash_at(44)?,
            account_hash: hash_at(76)?,
            parent_close_time: u32_at(108),
            close_time: u32_at(112),
            close_time_resolution: b[116],
            close_flags: b[117],
        })
    }

    /// The ledger hash.
    pub fn hash(&self) -> Hash256 {
        let mut h = Sha512Half::new();
        h.update(HashPrefix::LEDGER_MASTER.bytes());
        h.update(&self.serialize());
        h.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_round_trips() {
        let h = LedgerHeader {
            seq: 7,
            total_coins: 99,
            parent_hash: Hash256([1; 32]),
            transaction_hash: Hash256([2; 32]),
            account_hash: Hash256([3; 32]),
            parent_close_time: 5,
            close_time: 6,
            close_time_resolution: 10,
            close_flags: 1,
        };
        assert_eq!(LedgerHeader::deserialize(&h.serialize()), Some(h));
        assert_eq!(LedgerHeader::deserialize(&[0; 117]), None);
    }
}
