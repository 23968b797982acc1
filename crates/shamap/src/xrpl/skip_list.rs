//! Skip lists: the `LedgerHashes` entries of the state map, through which a
//! ledger names the hashes of the ledgers before it.
//!
//! rippled updates them as it builds each ledger N (`Ledger::updateSkipList`),
//! with P = N - 1 the parent's sequence and H its hash:
//! - the *short* list, at `keylet::skip()` = `SHA512Half(0x0073)`: H is
//!   appended (the oldest dropped past 256 entries), `sfLastLedgerSequence`
//!   set to P. Entry `i` of `n` is the hash of ledger `P - (n - 1 - i)`.
//! - when P is a multiple of 256, the *long* list of P's group of 65536, at
//!   `keylet::skip(P)` = `SHA512Half(0x0073 ‖ u32(P >> 16))`: H appended,
//!   `sfLastLedgerSequence` set to P. Entry `i` of `n` is the hash of ledger
//!   `P - 256 (n - 1 - i)`.
//!
//! A ledger's own state therefore vouches for its last 256 ancestors and
//! every 256th ancestor since the genesis ledger.

use crate::hash::{Hash256, Key};
use crate::sha512half::sha512_half;
use crate::xrpl::fields::{read_fields, type_code, u32_of, FieldError};

/// The `LedgerEntryType` of a `LedgerHashes` entry.
pub const LEDGER_HASHES_TYPE: u16 = 0x0068;

/// The key of the short skip list (`keylet::skip()`).
pub fn short_key() -> Key {
    Key(sha512_half(&[&[0x00, 0x73]]).0)
}

/// The key of the long skip list holding ledger `seq`'s group
/// (`keylet::skip(seq)`: only `seq >> 16` matters).
pub fn long_key(seq: u32) -> Key {
    Key(sha512_half(&[&[0x00, 0x73], &(seq >> 16).to_be_bytes()]).0)
}

/// A decoded skip list: the newest sequence it covers and its hashes, oldest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkipList {
    /// `sfLastLedgerSequence`: the sequence of the last hash.
    pub last_seq: u32,
    /// `sfHashes`.
    pub hashes: Vec<Hash256>,
}

impl SkipList {
    /// Decodes a `LedgerHashes` entry's bytes.
    pub fn decode(data: &[u8]) -> Result<SkipList, FieldError> {
        let what = "a LedgerHashes entry";
        let bad = |why: &str| FieldError {
            what: what.to_owned(),
            why: why.to_owned(),
        };
        let fields = read_fields(data, what)?;
        let entry_type = fields
            .iter()
            .find(|f| f.is(type_code::UINT16, 1))
            .map(|f| u16::from_be_bytes([f.value(data)[0], f.value(data)[1]]))
            .ok_or_else(|| bad("has no LedgerEntryType"))?;
        if entry_type != LEDGER_HASHES_TYPE {
            return Err(bad(&format!(
                "is of type {entry_type:#06x}, not LedgerHashes"
            )));
        }
        let last_seq = fields
            .iter()
            .find(|f| f.is(type_code::UINT32, 27))
            .map(|f| u32_of(f.value(data)))
            .ok_or_else(|| bad("has no LastLedgerSequence"))?;
        let raw = fields
            .iter()
            .find(|f| f.is(type_code::VECTOR256, 2))
            .map(|f| f.value(data))
            .ok_or_else(|| bad("has no Hashes"))?;
        if raw.len() % 32 != 0 {
            return Err(bad("Hashes is not a whole number of hashes"));
        }
        let hashes: Vec<Hash256> = raw
            .chunks_exact(32)
            .filter_map(Hash256::from_slice)
            .collect();
        Ok(SkipList { last_seq, hashes })
    }

    /// `(sequence, hash)` of each entry, when the list is a short list
    /// (`step` 1) or a long one (`step` 256). Entries whose sequence would
    /// fall below 1 are left out.
    pub fn entries(&self, step: u32) -> impl Iterator<Item = (u32, Hash256)> + '_ {
        let n = self.hashes.len() as u64;
        self.hashes.iter().enumerate().filter_map(move |(i, h)| {
            let back = (n - 1 - i as u64) * u64::from(step);
            u64::from(self.last_seq)
                .checked_sub(back)
                .filter(|&s| s >= 1)
                .map(|s| (s as u32, *h))
        })
    }

    /// Serializes a list (for tests and generated chains): `LedgerEntryType`,
    /// `Flags` 0, `LastLedgerSequence`, `Hashes`, in canonical order.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![0x11];
        out.extend_from_slice(&LEDGER_HASHES_TYPE.to_be_bytes());
        out.push(0x22);
        out.extend_from_slice(&0u32.to_be_bytes());
        out.extend_from_slice(&[0x20, 27]);
        out.extend_from_slice(&self.last_seq.to_be_bytes());
        out.extend_from_slice(&[0x02, 0x13]);
        let mut raw = Vec::with_capacity(self.hashes.len() * 32);
        for h in &self.hashes {
            raw.extend_from_slice(&h.0);
        }
        crate::xrpl::vl::append_vl(&raw, &mut out).expect("256 hashes fit a VL");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_rippleds() {
        // keylet::skip() of rippled: the short skip list's well-known index.
        assert_eq!(
            short_key().to_hex(),
            "B4979A36CDC7F3D3D5C31A4EAE2AC7D7209DDA877588B9AFC66799692AB0D66B"
        );
        assert_eq!(long_key(0), long_key(65535));
        assert_ne!(long_key(65535), long_key(65536));
    }

    #[test]
    fn round_trip_and_sequences() {
        let l = SkipList {
            last_seq: 1000,
            hashes: (0..3).map(|i| Hash256([i; 32])).collect(),
        };
        let d = SkipList::decode(&l.encode()).expect("decodes");
        assert_eq!(d, l);
        let short: Vec<u32> = d.entries(1).map(|(s, _)| s).collect();
        assert_eq!(short, vec![998, 999, 1000]);
        let long: Vec<u32> = d.entries(256).map(|(s, _)| s).collect();
        assert_eq!(long, vec![488, 744, 1000]);
        let mut bad = l.encode();
        bad[2] = 0x61;
        assert!(SkipList::decode(&bad).is_err());
    }
}
