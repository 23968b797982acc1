//! The ledger header and its hash.

use crate::hash::Hash256;
use crate::sha512half::Sha512Half;
use crate::xrpl::prefix::HashPrefix;

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

/// One of the two map roots a ledger header names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LedgerRoot {
    /// The account-state map's root: the header's `account_hash`.
    Account,
    /// The transaction+metadata map's root: the header's `transaction_hash`.
    Transaction,
}

impl LedgerRoot {
    /// The header field that names this root: `account_hash` or
    /// `transaction_hash`.
    pub fn field(self) -> &'static str {
        match self {
            LedgerRoot::Account => "account_hash",
            LedgerRoot::Transaction => "transaction_hash",
        }
    }
}

/// A ledger's two map roots, each where known: as computed from its maps,
/// or as its header (or a file) claims them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LedgerRoots {
    /// The account-state map's root.
    pub account_hash: Option<Hash256>,
    /// The transaction+metadata map's root.
    pub transaction_hash: Option<Hash256>,
}

/// One root of a ledger, computed and claimed, side by side (see
/// [`LedgerRoots::compare`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RootCheck {
    /// Which root.
    pub root: LedgerRoot,
    /// The root of the map at hand, if any.
    pub computed: Option<Hash256>,
    /// The root the header names, if it names one.
    pub claimed: Option<Hash256>,
}

/// A map root that differs from the one its ledger's header names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RootMismatch {
    /// Which root.
    pub root: LedgerRoot,
    /// The root of the map.
    pub computed: Hash256,
    /// The root the header names.
    pub claimed: Hash256,
}

impl RootCheck {
    /// The mismatch, when both roots are known and differ.
    pub fn mismatch(&self) -> Option<RootMismatch> {
        match (self.computed, self.claimed) {
            (Some(computed), Some(claimed)) if computed != claimed => Some(RootMismatch {
                root: self.root,
                computed,
                claimed,
            }),
            _ => None,
        }
    }
}

impl LedgerRoots {
    /// The rule that ties a ledger's maps to its header: the state map's
    /// root must equal the header's `account_hash`, and the transaction
    /// map's root its `transaction_hash`. `self` holds the roots of the maps
    /// at hand, `header` the roots the header claims; each root, state
    /// first, paired with its claim (a root is checked only where both are
    /// known: [`RootCheck::mismatch`]).
    pub fn compare(&self, header: &LedgerRoots) -> [RootCheck; 2] {
        [
            RootCheck {
                root: LedgerRoot::Account,
                computed: self.account_hash,
                claimed: header.account_hash,
            },
            RootCheck {
                root: LedgerRoot::Transaction,
                computed: self.transaction_hash,
                claimed: header.transaction_hash,
            },
        ]
    }

    /// [`LedgerRoots::compare`] as a check: the first root (state first)
    /// that differs from the header's claim is the error.
    pub fn check_against(&self, header: &LedgerRoots) -> Result<(), RootMismatch> {
        match self.compare(header).iter().find_map(RootCheck::mismatch) {
            Some(m) => Err(m),
            None => Ok(()),
        }
    }
}

impl LedgerHeader {
    /// The two map roots the header names.
    pub fn roots(&self) -> LedgerRoots {
        LedgerRoots {
            account_hash: Some(self.account_hash),
            transaction_hash: Some(self.transaction_hash),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_round_trips() {
        // Every byte distinct, so that a field read from the wrong offset
        // or swapped with another shows.
        let bytes: Vec<u8> = (0..LEDGER_HEADER_LEN as u8).collect();
        let h = LedgerHeader::deserialize(&bytes).expect("118 bytes");
        assert_eq!(h.seq, 0x0001_0203);
        assert_eq!(h.parent_hash.0[0], 12);
        assert_eq!(h.close_flags, 117);
        assert_eq!(&h.serialize()[..], &bytes[..]);
        assert_eq!(LedgerHeader::deserialize(&h.serialize()), Some(h));
        assert_eq!(LedgerHeader::deserialize(&[0; 117]), None);
    }

    #[test]
    fn roots_are_checked_against_the_header_where_both_are_known() {
        let (a, b) = (Some(Hash256([1; 32])), Some(Hash256([2; 32])));
        let roots = |account_hash, transaction_hash| LedgerRoots {
            account_hash,
            transaction_hash,
        };
        assert_eq!(roots(a, b).check_against(&roots(a, b)), Ok(()));
        assert_eq!(roots(None, b).check_against(&roots(b, b)), Ok(()));
        assert_eq!(roots(a, None).check_against(&roots(a, a)), Ok(()));
        assert_eq!(roots(a, b).check_against(&roots(None, None)), Ok(()));
        // The state root first.
        assert_eq!(
            roots(a, a).check_against(&roots(b, b)),
            Err(RootMismatch {
                root: LedgerRoot::Account,
                computed: Hash256([1; 32]),
                claimed: Hash256([2; 32]),
            })
        );
        let m = roots(a, a)
            .check_against(&roots(a, b))
            .expect_err("tx root");
        assert_eq!(
            (m.root.field(), m.claimed),
            ("transaction_hash", Hash256([2; 32]))
        );
    }
}
