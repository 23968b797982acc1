//! Transaction result codes: the `sfTransactionResult` byte of a
//! transaction's metadata and rippled's name for it (`tesSUCCESS`,
//! `tecUNFUNDED_PAYMENT`, …), from the field definitions of the XRPL codec.

/// rippled's name of the result code a metadata blob records (`0` is
/// `tesSUCCESS`, `100` and up the `tec` codes). `None` for a code the
/// definitions do not name.
pub fn result_name(code: u8) -> Option<String> {
    xrpl::core::binarycodec::definitions::get_transaction_result_name(&i16::from(code)).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_codes_have_rippleds_names() {
        assert_eq!(result_name(0).as_deref(), Some("tesSUCCESS"));
        assert_eq!(result_name(102).as_deref(), Some("tecUNFUNDED_ADD"));
        assert_eq!(result_name(104).as_deref(), Some("tecUNFUNDED_PAYMENT"));
        assert_eq!(result_name(255), None);
    }
}
