//! The top-level fields of a serialized XRP Ledger object (an `STObject`), as
//! far as manifests, validations, transaction metadata and `LedgerHashes`
//! entries (the skip lists) need them: each field's type and code, and its
//! bytes. (Decoding whole transactions and entries is the XRPL codec's job,
//! in `shamap-ledger`; this reader only finds fields and their bytes.)
//!
//! A field starts with its id: one byte `type << 4 | code` when both are
//! below 16, else `type << 4` then the code, or the code's nibble with the
//! type in the next byte, or `00` then both bytes. Its value is fixed-size
//! by type, or a length-prefixed run (`VL`: one to three bytes), or for
//! objects and arrays runs until their end marker (`E1`, `F1`).
//!
//! The reader requires the canonical order rippled writes (by type, then
//! code, each field once), so that the signing serialization of an object is
//! its bytes with the non-signing fields cut out.

/// Bytes that are not a serialized object: what was read, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// What was being read ("the metadata", "a validation").
    pub what: String,
    /// What is wrong, and at which byte.
    pub why: String,
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.what, self.why)
    }
}

impl std::error::Error for FieldError {}

fn malformed(what: &str, why: &str) -> FieldError {
    FieldError {
        what: what.to_owned(),
        why: why.to_owned(),
    }
}

/// Type codes of the field types these objects use.
pub mod type_code {
    /// 16-bit unsigned.
    pub const UINT16: u8 = 1;
    /// 32-bit unsigned.
    pub const UINT32: u8 = 2;
    /// 64-bit unsigned.
    pub const UINT64: u8 = 3;
    /// 128-bit hash.
    pub const HASH128: u8 = 4;
    /// 256-bit hash.
    pub const HASH256: u8 = 5;
    /// An amount: 8 bytes for XRP, 48 for an issued currency, 33 for an MPT.
    pub const AMOUNT: u8 = 6;
    /// Length-prefixed bytes.
    pub const BLOB: u8 = 7;
    /// A length-prefixed 20-byte account.
    pub const ACCOUNT: u8 = 8;
    /// An inner object, ended by `E1`.
    pub const OBJECT: u8 = 14;
    /// An array of objects, ended by `F1`.
    pub const ARRAY: u8 = 15;
    /// 8-bit unsigned.
    pub const UINT8: u8 = 16;
    /// 160-bit hash.
    pub const HASH160: u8 = 17;
    /// A payment path set, ended by `00`.
    pub const PATHSET: u8 = 18;
    /// Length-prefixed 256-bit hashes.
    pub const VECTOR256: u8 = 19;
    /// 96-bit unsigned.
    pub const UINT96: u8 = 20;
    /// 192-bit unsigned.
    pub const UINT192: u8 = 21;
    /// 384-bit unsigned.
    pub const UINT384: u8 = 22;
    /// 512-bit unsigned.
    pub const UINT512: u8 = 23;
    /// A cross-chain issue (XRP: 20 bytes; else 40).
    pub const ISSUE: u8 = 24;
    /// A cross-chain bridge: two accounts and two issues.
    pub const XCHAIN_BRIDGE: u8 = 25;
    /// A currency code (20 bytes).
    pub const CURRENCY: u8 = 26;
}

/// One field: its id and where its value lies in the object's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// The type code.
    pub type_code: u8,
    /// The field code within its type.
    pub field_code: u8,
    /// The byte range of the whole field (id included) in the object.
    pub start: usize,
    /// Where the value (after the id and any length prefix) starts.
    pub value_start: usize,
    /// One past the field's last byte.
    pub end: usize,
}

impl Field {
    /// The value's bytes (for a VL field: without its length prefix).
    pub fn value<'a>(&self, object: &'a [u8]) -> &'a [u8] {
        &object[self.value_start..self.end]
    }

    /// Whether this is the field `(type_code, field_code)`.
    pub fn is(&self, type_code: u8, field_code: u8) -> bool {
        self.type_code == type_code && self.field_code == field_code
    }
}

/// Reads the top-level fields of `object`, in canonical order (see the
/// module documentation); `what` names the object in errors.
pub fn read_fields(object: &[u8], what: &str) -> Result<Vec<Field>, FieldError> {
    let mut fields: Vec<Field> = Vec::new();
    let mut at = 0usize;
    while at < object.len() {
        let field = read_field(object, at, what)?;
        if let Some(prev) = fields.last() {
            if (prev.type_code, prev.field_code) >= (field.type_code, field.field_code) {
                return Err(malformed(
                    what,
                    &format!(
                        "field ({}, {}) at byte {} is out of canonical order or repeated",
                        field.type_code, field.field_code, at
                    ),
                ));
            }
        }
        at = field.end;
        fields.push(field);
    }
    Ok(fields)
}

fn read_field(b: &[u8], start: usize, what: &str) -> Result<Field, FieldError> {
    let short = || malformed(what, &format!("ends inside the field at byte {start}"));
    let byte = |i: usize| b.get(i).copied().ok_or_else(short);
    let first = byte(start)?;
    let (mut type_code, mut field_code) = (first >> 4, first & 0x0F);
    let mut at = start + 1;
    if type_code == 0 {
        type_code = byte(at)?;
        at += 1;
        if type_code < 16 {
            return Err(malformed(
                what,
                &format!("non-canonical field id at byte {start}"),
            ));
        }
    }
    if field_code == 0 {
        field_code = byte(at)?;
        at += 1;
        if field_code < 16 {
            return Err(malformed(
                what,
                &format!("non-canonical field id at byte {start}"),
            ));
        }
    }
    if (type_code == type_code::OBJECT || type_code == type_code::ARRAY) && field_code == 1 {
        return Err(malformed(
            what,
            &format!("an end marker where a field starts, at byte {start}"),
        ));
    }
    let value_start;
    let end;
    use type_code::*;
    let fixed = match type_code {
        UINT16 => Some(2),
        UINT32 => Some(4),
        UINT64 => Some(8),
        HASH128 => Some(16),
        HASH256 => Some(32),
        UINT8 => Some(1),
        HASH160 | CURRENCY => Some(20),
        UINT96 => Some(12),
        UINT192 => Some(24),
        UINT384 => Some(48),
        UINT512 => Some(64),
        AMOUNT => {
            let lead = byte(at)?;
            Some(if lead & 0x80 != 0 {
                48
            } else if lead & 0x20 != 0 {
                33
            } else {
                8
            })
        }
        _ => None,
    };
    if let Some(n) = fixed {
        value_start = at;
        end = at + n;
    } else {
        match type_code {
            BLOB | ACCOUNT | VECTOR256 => {
                let (len, prefix) = vl_length(b, at).ok_or_else(short)?;
                value_start = at + prefix;
                end = value_start + len;
            }
            OBJECT | ARRAY => {
                value_start = at;
                end = skip_nested(b, at, type_code == ARRAY, what)?;
            }
            PATHSET => {
                value_start = at;
                end = skip_pathset(b, at).ok_or_else(short)?;
            }
            ISSUE => {
                value_start = at;
                let currency = b.get(at..at + 20).ok_or_else(short)?;
                end = if currency.iter().all(|&x| x == 0) {
                    at + 20
                } else {
                    at + 40
                };
            }
            XCHAIN_BRIDGE => {
                return Err(malformed(
                    what,
                    "holds a cross-chain bridge field, which no object read here has",
                ))
            }
            _ => {
                return Err(malformed(
                    what,
                    &format!("unknown field type {type_code} at byte {start}"),
                ))
            }
        }
    }
    if end > b.len() {
        return Err(short());
    }
    Ok(Field {
        type_code,
        field_code,
        start,
        value_start,
        end,
    })
}

/// A VL length prefix at `at`: `(length, prefix bytes)`.
pub fn vl_length(b: &[u8], at: usize) -> Option<(usize, usize)> {
    let b0 = *b.get(at)? as usize;
    if b0 <= 192 {
        Some((b0, 1))
    } else if b0 <= 240 {
        let b1 = *b.get(at + 1)? as usize;
        Some((193 + (b0 - 193) * 256 + b1, 2))
    } else if b0 <= 254 {
        let b1 = *b.get(at + 1)? as usize;
        let b2 = *b.get(at + 2)? as usize;
        Some((12481 + (b0 - 241) * 65536 + b1 * 256 + b2, 3))
    } else {
        None
    }
}

/// Skips an inner object or array starting at `at`; returns one past its end marker.
fn skip_nested(b: &[u8], mut at: usize, array: bool, what: &str) -> Result<usize, FieldError> {
    let end_marker = if array { 0xF1 } else { 0xE1 };
    let mut depth_guard = 0usize;
    loop {
        match b.get(at) {
            None => {
                return Err(malformed(
                    what,
                    "an inner object or array has no end marker",
                ))
            }
            Some(&m) if m == end_marker => return Ok(at + 1),
            Some(_) => {
                let f = read_field(b, at, what)?;
                at = f.end;
            }
        }
        depth_guard += 1;
        if depth_guard > b.len() {
            return Err(malformed(what, "an inner object does not end"));
        }
    }
}

fn skip_pathset(b: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let t = *b.get(at)?;
        at += 1;
        match t {
            0x00 => return Some(at),
            0xFF => continue,
            _ => {
                let mut n = 0;
                if t & 0x01 != 0 {
                    n += 20;
                }
                if t & 0x10 != 0 {
                    n += 20;
                }
                if t & 0x20 != 0 {
                    n += 20;
                }
                if n == 0 || t & !0x31 != 0 {
                    return None;
                }
                at += n;
                if at > b.len() {
                    return None;
                }
            }
        }
    }
}

/// A big-endian `u32` value.
pub fn u32_of(v: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&v[..4]);
    u32::from_be_bytes(a)
}

/// The bytes of `object` with the fields in `cut` removed: the signing
/// serialization when `cut` are its non-signing fields.
pub fn without(object: &[u8], cut: &[Field]) -> Vec<u8> {
    let mut out = Vec::with_capacity(object.len());
    let mut at = 0;
    for f in cut {
        out.extend_from_slice(&object[at..f.start]);
        at = f.end;
    }
    out.extend_from_slice(&object[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vl_lengths_at_the_boundaries() {
        assert_eq!(vl_length(&[192], 0), Some((192, 1)));
        assert_eq!(vl_length(&[193, 0], 0), Some((193, 2)));
        assert_eq!(vl_length(&[240, 255], 0), Some((12480, 2)));
        assert_eq!(vl_length(&[241, 0, 0], 0), Some((12481, 3)));
        assert_eq!(vl_length(&[255, 0, 0], 0), None);
    }

    #[test]
    fn order_is_enforced() {
        // sfSequence (2,4) then sfFlags (2,2): out of order.
        let b = [0x24, 0, 0, 0, 1, 0x22, 0, 0, 0, 0];
        assert!(read_fields(&b, "x").is_err());
        let b = [0x22, 0, 0, 0, 0, 0x24, 0, 0, 0, 1];
        assert_eq!(read_fields(&b, "x").expect("canonical").len(), 2);
        assert!(read_fields(&b[..9], "x").is_err());
    }
}
