//! Ledger-entry types: the `LedgerEntryType` of serialized account-state
//! data, and rippled's name for each type code.
//!
//! A serialized ledger entry starts with the field `LedgerEntryType`
//! (field code byte `0x11`: type UInt16, field 1) followed by the type as a
//! big-endian UInt16. Names are those of rippled's
//! `include/xrpl/protocol/detail/ledger_entries.macro`; codes not listed
//! there have none. Used by `shamap stats` and the Python module's `stats`.

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

#[cfg(test)]
mod tests {
    use super::*;

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
