//! Accounts and currency codes.

use serde_json::Value;

use super::*;
use crate::error::FieldError;

/// The characters rippled allows in a 3-character currency code
/// (`isoCharSet` in rippled's `UintTypes.cpp`).
pub(super) const ISO_CHARS: &[u8] =
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789<>(){}[]|?!@#$%^&*";

/// A classic address's 20 bytes. Only a string of an address's length is
/// base58-decoded (so the work is bounded whatever the input).
pub(super) fn account(s: &str, v: &Value, p: &str) -> Result<[u8; 20], FieldError> {
    if s.len() == XADDRESS_LEN && is_valid_xaddress(s) {
        return Err(shape(
            p,
            "a classic address (ledger JSON has no X-addresses)",
        ));
    }
    if !(25..=MAX_CLASSIC_ADDRESS).contains(&s.len()) {
        return Err(refused(p, v, "is not a classic address"));
    }
    let bytes = decode_classic_address(s).map_err(|_| refused(p, v, "is not a classic address"))?;
    <[u8; 20]>::try_from(bytes.as_slice()).map_err(|_| refused(p, v, "is not a classic address"))
}

/// A currency code as rippled reads one (`to_currency`): `XRP` (all
/// zeros), 3 characters of rippled's ISO set (bytes 12..15), or 40 hex
/// digits; and `1`, which rippled prints for its "no currency" (1).
pub(crate) fn currency(s: &str, v: &Value, p: &str) -> Result<[u8; 20], FieldError> {
    let mut c = [0u8; 20];
    if s == "XRP" {
        return Ok(c);
    }
    if s == "1" {
        c[19] = 1;
        return Ok(c);
    }
    if s.len() == 3 {
        if !s.bytes().all(|b| ISO_CHARS.contains(&b)) {
            return Err(refused(
                p,
                v,
                "is not a currency code: a 3-character code takes letters, digits and <>(){}[]|?!@#$%^&* only",
            ));
        }
        c[12..15].copy_from_slice(s.as_bytes());
        return Ok(c);
    }
    match hex(s) {
        Some(bytes) if bytes.len() == 20 => {
            c.copy_from_slice(&bytes);
            Ok(c)
        }
        _ => Err(refused(
            p,
            v,
            "is not a currency code (XRP, 3 characters or 40 hex digits)",
        )),
    }
}
