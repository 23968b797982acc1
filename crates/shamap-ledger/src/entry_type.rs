//! Ledger-entry types: the `LedgerEntryType` of serialized account-state
//! data, and rippled's name for each type code.
//!
//! A serialized ledger entry starts with the field `LedgerEntryType`
//! (field code byte `0x11`: type UInt16, field 1) followed by the type as a
//! big-endian UInt16. Names are those of rippled's
//! `include/xrpl/protocol/detail/ledger_entries.macro`; codes not listed
//! there have none. [`TypeTally`] counts a map's entries and data bytes per
//! type, for [`crate::map_stats`] (the report of `shamap stats` and the
//! Python module's `stats`).

use std::collections::BTreeMap;

/// Every type rippled defines, by code.
const NAMES: &[(u16, &str)] = &[
    (0x0037, "NFTokenOffer"),
    (0x0043, "Check"),
    (0x0049, "DID"),
    (0x004E, "NegativeUNL"),
    (0x0050, "NFTokenPage"),
    (0x0053, "SignerList"),
    (0x0054, "Ticket"),
    (0x0061, "AccountRoot"),
    (0x0064, "DirectoryNode"),
    (0x0066, "Amendments"),
    (0x0068, "LedgerHashes"),
    (0x0069, "Bridge"),
    (0x006F, "Offer"),
    (0x0070, "DepositPreauth"),
    (0x0071, "XChainOwnedClaimID"),
    (0x0072, "RippleState"),
    (0x0073, "FeeSettings"),
    (0x0074, "XChainOwnedCreateAccountClaimID"),
    (0x0075, "Escrow"),
    (0x0078, "PayChannel"),
    (0x0079, "AMM"),
    (0x007E, "MPTokenIssuance"),
    (0x007F, "MPToken"),
    (0x0080, "Oracle"),
    (0x0081, "Credential"),
    (0x0082, "PermissionedDomain"),
    (0x0083, "Delegate"),
    (0x0084, "Vault"),
    (0x0088, "LoanBroker"),
    (0x0089, "Loan"),
];

/// The entry type of serialized ledger-entry `data`: the UInt16 after a
/// leading `0x11`, or `None` when the data does not start that way.
pub fn entry_type(data: &[u8]) -> Option<u16> {
    match data {
        [0x11, hi, lo, ..] => Some(u16::from_be_bytes([*hi, *lo])),
        _ => None,
    }
}

/// rippled's name for a type code, if it has one.
pub fn name(code: u16) -> Option<&'static str> {
    NAMES
        .binary_search_by_key(&code, |(c, _)| *c)
        .ok()
        .map(|i| NAMES[i].1)
}

/// The code as printed: `0x0061`.
pub fn hex(code: u16) -> String {
    format!("0x{code:04X}")
}

/// Entries and data bytes of one type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeStats {
    /// The type code; `None` for data without the `0x11` type field.
    pub code: Option<u16>,
    /// Entries of this type.
    pub entries: u64,
    /// Their data bytes.
    pub bytes: u64,
}

impl TypeStats {
    /// The type's name: rippled's, else the hex code, else `(no type field)`.
    pub fn label(&self) -> String {
        match self.code {
            Some(c) => name(c).map_or_else(|| hex(c), str::to_owned),
            None => "(no type field)".to_owned(),
        }
    }

    /// Mean data bytes per entry.
    pub fn mean(&self) -> f64 {
        self.bytes as f64 / self.entries.max(1) as f64
    }
}

/// Accumulates per-type counts.
#[derive(Clone, Debug, Default)]
pub struct TypeTally(BTreeMap<Option<u16>, (u64, u64)>);

impl TypeTally {
    /// Counts one entry's data.
    pub fn add(&mut self, data: &[u8]) {
        let e = self.0.entry(entry_type(data)).or_default();
        e.0 += 1;
        e.1 += data.len() as u64;
    }

    /// The counts, most bytes first (then by code).
    pub fn finish(self) -> Vec<TypeStats> {
        let mut v: Vec<TypeStats> = self
            .0
            .into_iter()
            .map(|(code, (entries, bytes))| TypeStats {
                code,
                entries,
                bytes,
            })
            .collect();
        v.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.code.cmp(&b.code)));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tally_orders_by_bytes() {
        let mut t = TypeTally::default();
        t.add(&[0x11, 0x00, 0x61, 0, 0]);
        t.add(&[0x11, 0x00, 0x72, 0, 0, 0, 0, 0]);
        t.add(&[0x11, 0x12, 0x34]);
        t.add(&[1]);
        let v = t.finish();
        let labels: Vec<String> = v.iter().map(TypeStats::label).collect();
        assert_eq!(
            labels,
            ["RippleState", "AccountRoot", "0x1234", "(no type field)"]
        );
        assert_eq!(v[0].entries, 1);
        assert_eq!(v[0].bytes, 8);
    }

    #[test]
    fn names_are_sorted_for_binary_search() {
        assert!(NAMES.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn type_follows_the_field_code() {
        assert_eq!(entry_type(&[0x11, 0x00, 0x61, 0x22]), Some(0x0061));
        assert_eq!(entry_type(&[0x12, 0x00, 0x61]), None);
        assert_eq!(entry_type(&[0x11, 0x00]), None);
        assert_eq!(name(0x0072), Some("RippleState"));
        assert_eq!(name(0x0068), Some("LedgerHashes"));
        assert_eq!(name(0x1234), None);
    }
}
