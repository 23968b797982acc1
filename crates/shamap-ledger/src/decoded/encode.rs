//! rippled's binary serialization of a decoded JSON object, field by field.
//!
//! The field table (names, type codes, field codes, which fields are
//! serialized and VL-encoded) and the names of transaction types, ledger
//! entry types, results and permissions come from the XRPL codec's
//! definitions ([`CODEC`](super::CODEC)); the bytes are written here,
//! following rippled's `Serializer`, `STObject::add`, `STAmount::add`,
//! `to_currency` and `STPathSet::add`. Every value is read in one linear
//! pass (no value is ever base58-decoded unless it has the length of an
//! address), and every value rippled would not have printed, or cannot
//! represent, is an error naming the field and saying why.

use serde_json::{Map, Value};
use xrpl::core::addresscodec::{decode_classic_address, is_valid_xaddress};
use xrpl::core::binarycodec::definitions::{
    get_delegatable_permission_code, get_field_instance, get_ledger_entry_type_code,
    get_transaction_result_code, get_transaction_type_code, FieldInstance,
};
use xrpl::core::binarycodec::types::Number;

use crate::error::{FieldError, FieldProblem};

type Object = Map<String, Value>;

/// Longest value quoted in an error, in characters.
const MAX_QUOTED_VALUE: usize = 80;

/// Longest classic address (base58 of 25 bytes), in characters.
const MAX_CLASSIC_ADDRESS: usize = 35;

/// Length of an X-address, in characters.
const XADDRESS_LEN: usize = 47;

/// Longest `Number` string read, in characters (rippled prints at most 19
/// significant digits and an exponent).
const MAX_NUMBER_TEXT: usize = 64;

/// The UInt64 fields rippled prints in base 10 (`SField::sMD_BaseTen`);
/// every other UInt64 is printed as hex.
const BASE10_UINT64_FIELDS: &[&str] = &[
    "MaximumAmount",
    "OutstandingAmount",
    "MPTAmount",
    "LockedAmount",
    "ConfidentialOutstandingAmount",
];

/// STAmount: not XRP (an issued currency).
const AMOUNT_ISSUED: u64 = 0x8000_0000_0000_0000;
/// STAmount: the value is positive (or zero).
const AMOUNT_POSITIVE: u64 = 0x4000_0000_0000_0000;
/// rippled's largest XRP amount, in drops (`cMaxNativeN`).
const MAX_DROPS: u128 = 100_000_000_000_000_000;
/// rippled's largest MPT amount (`maxMPTokenAmount`).
const MAX_MPT: u128 = 0x7FFF_FFFF_FFFF_FFFF;
/// An issued-currency mantissa is normalized into `[MIN_MANTISSA, MAX_MANTISSA]`.
const MIN_MANTISSA: u64 = 1_000_000_000_000_000;
const MAX_MANTISSA: u64 = 9_999_999_999_999_999;
/// rippled's exponent range for a normalized issued-currency amount.
const MIN_EXPONENT: i32 = -96;
const MAX_EXPONENT: i32 = 80;
/// rippled refuses amount strings with more digits than this (`partsFromString`).
const MAX_AMOUNT_DIGITS: usize = 32;

/// The characters rippled allows in a 3-character currency code
/// (`isoCharSet` in rippled's `UintTypes.cpp`).
const ISO_CHARS: &[u8] =
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789<>(){}[]|?!@#$%^&*";

/// The codec's definition of `name`, if it is a serialized field that can
/// appear in an object (not a marker).
pub(crate) fn serialized_field(name: &str) -> Option<FieldInstance> {
    get_field_instance(name).filter(|f| {
        f.is_serialized
            && f.associated_type != "Unknown"
            && name != "ObjectEndMarker"
            && name != "ArrayEndMarker"
    })
}

/// The serialization of `obj`'s fields (no end marker): every key checked,
/// recursively, every value encoded as rippled does.
pub(crate) fn object(obj: &Object) -> Result<Vec<u8>, FieldError> {
    let mut out = Vec::new();
    write_fields(obj, "", &mut out)?;
    Ok(out)
}

pub(crate) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn shape(path: &str, expected: &'static str) -> FieldError {
    FieldError::new(path, FieldProblem::Shape(expected))
}

/// A value rippled would not print or cannot represent, and why.
fn refused(path: &str, value: &Value, why: impl Into<String>) -> FieldError {
    FieldError::new(
        path,
        FieldProblem::Refused {
            value: quote(value),
            reason: why.into(),
        },
    )
}

/// `value` as compact JSON on one line, cut to [`MAX_QUOTED_VALUE`]
/// characters (a long string is not copied whole).
pub(crate) fn quote(value: &Value) -> String {
    let text = match value {
        Value::String(s) if s.len() > 4 * MAX_QUOTED_VALUE => {
            let cut: String = s.chars().take(MAX_QUOTED_VALUE).collect();
            Value::String(cut).to_string()
        }
        Value::Array(_) | Value::Object(_) => {
            // Nested values can be large: quote a prefix.
            let mut t = value.to_string();
            if t.len() > 4 * MAX_QUOTED_VALUE {
                let end = (0..=4 * MAX_QUOTED_VALUE)
                    .rev()
                    .find(|&i| t.is_char_boundary(i))
                    .unwrap_or(0);
                t.truncate(end);
            }
            t
        }
        _ => value.to_string(),
    };
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= MAX_QUOTED_VALUE {
        flat
    } else {
        let mut cut: String = flat.chars().take(MAX_QUOTED_VALUE).collect();
        cut.push('…');
        cut
    }
}

/// rippled's field ID (`Serializer::addFieldID`).
fn field_id(f: &FieldInstance, out: &mut Vec<u8>) {
    // Type and field codes are 1..=255 in every definitions file; the
    // casts keep the low byte as rippled's `add8` does.
    let t = f.header.type_code as u8;
    let n = f.nth as u8;
    match (t < 16, n < 16) {
        (true, true) => out.push((t << 4) | n),
        (true, false) => out.extend_from_slice(&[t << 4, n]),
        (false, true) => out.extend_from_slice(&[n, t]),
        (false, false) => out.extend_from_slice(&[0, t, n]),
    }
}

/// rippled's VL length prefix (`Serializer::addEncoded`).
fn vl(len: usize, path: &str, out: &mut Vec<u8>) -> Result<(), FieldError> {
    if len <= 192 {
        out.push(len as u8);
    } else if len <= 12_480 {
        let l = len - 193;
        out.extend_from_slice(&[193 + (l >> 8) as u8, (l & 0xFF) as u8]);
    } else if len <= 918_744 {
        let l = len - 12_481;
        out.extend_from_slice(&[
            241 + (l >> 16) as u8,
            ((l >> 8) & 0xFF) as u8,
            (l & 0xFF) as u8,
        ]);
    } else {
        return Err(FieldError::new(
            path,
            FieldProblem::Inconsistent(format!(
                "is {len} bytes long, more than the 918744 a serialized field can hold"
            )),
        ));
    }
    Ok(())
}

/// The fields of `obj`, sorted as rippled sorts them (by type code, then
/// field code), each with its field ID.
fn write_fields(obj: &Object, path: &str, out: &mut Vec<u8>) -> Result<(), FieldError> {
    let mut fields = Vec::with_capacity(obj.len());
    for (k, v) in obj {
        let p = join(path, k);
        let Some(f) = serialized_field(k) else {
            return Err(FieldError::new(p, FieldProblem::NotAField));
        };
        fields.push((f, v, p));
    }
    fields.sort_by_key(|(f, _, _)| (f.header.type_code, f.nth));
    for (f, v, p) in fields {
        field_id(&f, out);
        write_value(&f, v, &p, out)?;
    }
    Ok(())
}

/// One field's value, after its field ID.
fn write_value(f: &FieldInstance, v: &Value, p: &str, out: &mut Vec<u8>) -> Result<(), FieldError> {
    if v.is_null() {
        return Err(shape(p, "a value (it is null)"));
    }
    match f.associated_type.as_str() {
        "STObject" => {
            let o = v.as_object().ok_or_else(|| shape(p, "an object"))?;
            write_fields(o, p, out)?;
            out.push(0xE1);
        }
        "STArray" => write_array(v, p, out)?,
        "AccountID" => {
            let s = v
                .as_str()
                .ok_or_else(|| shape(p, "an account (a string)"))?;
            if s.is_empty() {
                // A default STAccount (UNLModify's Account): an empty VL.
                out.push(0);
            } else {
                let id = account(s, v, p)?;
                out.push(20);
                out.extend_from_slice(&id);
            }
        }
        "Amount" => write_amount(v, p, out)?,
        "Blob" => {
            let s = v.as_str().ok_or_else(|| shape(p, "a hex string"))?;
            let bytes =
                hex(s).ok_or_else(|| refused(p, v, "is not hex (an even number of hex digits)"))?;
            vl(bytes.len(), p, out)?;
            out.extend_from_slice(&bytes);
        }
        "Hash128" => fixed_hex(v, 16, p, out)?,
        "Hash160" => fixed_hex(v, 20, p, out)?,
        "Hash192" => fixed_hex(v, 24, p, out)?,
        "Hash256" => fixed_hex(v, 32, p, out)?,
        "Currency" => {
            let s = v
                .as_str()
                .ok_or_else(|| shape(p, "a currency code (a string)"))?;
            out.extend_from_slice(&currency(s, v, p)?);
        }
        "Issue" => write_issue(v, p, out)?,
        "Vector256" => {
            let items = v.as_array().ok_or_else(|| shape(p, "an array"))?;
            vl(items.len() * 32, p, out)?;
            for (i, item) in items.iter().enumerate() {
                fixed_hex(item, 32, &format!("{p}[{i}]"), out)?;
            }
        }
        "PathSet" => write_path_set(v, p, out)?,
        "XChainBridge" => write_bridge(v, p, out)?,
        "Number" => {
            let s = v.as_str().ok_or_else(|| shape(p, "a number as a string"))?;
            if s.len() > MAX_NUMBER_TEXT {
                return Err(refused(p, v, "is longer than any number rippled prints"));
            }
            let n = Number::try_from(s).map_err(|e| refused(p, v, e.to_string()))?;
            out.extend_from_slice(n.as_ref());
        }
        "UInt8" => {
            let n = if f.name == "TransactionResult" {
                named(v, p, |s| {
                    get_transaction_result_code(s).map(|&c| i64::from(c))
                })?
            } else {
                integer(v, p)?
            };
            let n = u8::try_from(n).map_err(|_| refused(p, v, "is not 0..=255 (UInt8)"))?;
            out.push(n);
        }
        "UInt16" => {
            let n = match f.name.as_str() {
                "TransactionType" => named(v, p, |s| {
                    get_transaction_type_code(s).map(|&c| i64::from(c))
                })?,
                "LedgerEntryType" => named(v, p, |s| {
                    get_ledger_entry_type_code(s).map(|&c| i64::from(c))
                })?,
                _ => integer(v, p)?,
            };
            let n = u16::try_from(n).map_err(|_| refused(p, v, "is not 0..=65535 (UInt16)"))?;
            out.extend_from_slice(&n.to_be_bytes());
        }
        "UInt32" => {
            let n = if f.name == "PermissionValue" {
                named(v, p, |s| {
                    get_delegatable_permission_code(s).map(|&c| i64::from(c))
                })?
            } else {
                integer(v, p)?
            };
            let n =
                u32::try_from(n).map_err(|_| refused(p, v, "is not 0..=4294967295 (UInt32)"))?;
            out.extend_from_slice(&n.to_be_bytes());
        }
        "Int32" => {
            let n = integer(v, p)?;
            let n =
                i32::try_from(n).map_err(|_| refused(p, v, "is not a 32-bit signed integer"))?;
            out.extend_from_slice(&n.to_be_bytes());
        }
        "UInt64" => {
            let n = match v {
                Value::Number(n) => n
                    .as_u64()
                    .ok_or_else(|| refused(p, v, "is not a 64-bit unsigned integer"))?,
                Value::String(s) if BASE10_UINT64_FIELDS.contains(&f.name.as_str()) => {
                    decimal_u64(s).ok_or_else(|| {
                        refused(
                        p,
                        v,
                        "is not a base-10 64-bit unsigned integer (as rippled prints this field)",
                    )
                    })?
                }
                Value::String(s) => {
                    if s.is_empty() || s.len() > 16 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
                        return Err(refused(p, v, "is not 1 to 16 hex digits (a UInt64)"));
                    }
                    u64::from_str_radix(s, 16)
                        .map_err(|_| refused(p, v, "is not 1 to 16 hex digits (a UInt64)"))?
                }
                _ => return Err(shape(p, "a string or a number")),
            };
            out.extend_from_slice(&n.to_be_bytes());
        }
        ty => {
            return Err(FieldError::new(
                p,
                FieldProblem::Refused {
                    value: quote(v),
                    reason: format!("its type, {ty}, is not one this encoder writes"),
                },
            ))
        }
    }
    Ok(())
}

/// An integer field's value: a JSON integer or a base-10 string.
fn integer(v: &Value, p: &str) -> Result<i64, FieldError> {
    match v {
        // `-0` is no integer rippled prints (whatever the JSON reader
        // makes of it: a float, or 0).
        Value::Number(n) if n.to_string().starts_with('-') && n.as_f64() == Some(0.0) => {
            Err(refused(p, v, "is -0, which rippled never prints"))
        }
        Value::Number(n) => n
            .as_i64()
            .ok_or_else(|| refused(p, v, "is not an integer in range")),
        Value::String(s) => {
            let digits = s.strip_prefix('-').unwrap_or(s);
            if digits.len() > 19 || !printed_integer(s) {
                return Err(refused(
                    p,
                    v,
                    "is not a base-10 integer as rippled prints one",
                ));
            }
            s.parse::<i64>()
                .map_err(|_| refused(p, v, "is not an integer in range"))
        }
        _ => Err(shape(p, "a string or a number")),
    }
}

/// A field whose value rippled prints by name (a transaction type, a
/// ledger entry type, a result, a permission); a number is taken as the code.
fn named(v: &Value, p: &str, code: impl Fn(&str) -> Option<i64>) -> Result<i64, FieldError> {
    match v {
        Value::String(s) => {
            code(s).ok_or_else(|| refused(p, v, "is not a name in the XRPL codec's definitions"))
        }
        Value::Number(_) => integer(v, p),
        _ => Err(shape(p, "a name (a string)")),
    }
}

fn decimal_u64(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 20 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Hex digits (either case, an even number of them) as bytes.
fn hex(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(2) {
        return None;
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    b.chunks_exact(2)
        .map(|pair| Some((nibble(pair[0])? << 4) | nibble(pair[1])?))
        .collect()
}

fn fixed_hex(v: &Value, len: usize, p: &str, out: &mut Vec<u8>) -> Result<(), FieldError> {
    let s = v.as_str().ok_or_else(|| shape(p, "a hex string"))?;
    match hex(s) {
        Some(bytes) if bytes.len() == len => {
            out.extend_from_slice(&bytes);
            Ok(())
        }
        _ => Err(refused(p, v, format!("is not {} hex digits", 2 * len))),
    }
}

/// A classic address's 20 bytes. Only a string of an address's length is
/// base58-decoded (so the work is bounded whatever the input).
fn account(s: &str, v: &Value, p: &str) -> Result<[u8; 20], FieldError> {
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

/// A decimal string as rippled's `partsFromString` reads it:
/// `[-+]?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?`, at most 32 digits
/// before the exponent. Returns (negative, digits as a number, exponent).
fn decimal_parts(s: &str) -> Option<(bool, u128, i64)> {
    let b = s.as_bytes();
    let mut i = 0;
    let negative = sign(b, &mut i);
    let int = digits(b, &mut i);
    if int.is_empty() || (int.len() > 1 && int[0] == b'0') {
        return None;
    }
    let mut frac: &[u8] = &[];
    if b.get(i) == Some(&b'.') {
        i += 1;
        frac = digits(b, &mut i);
        if frac.is_empty() {
            return None;
        }
    }
    let mut exponent: i64 = 0;
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        let exp_negative = sign(b, &mut i);
        let digits = digits(b, &mut i);
        // More than 9 digits is out of every range; refuse before parsing.
        if digits.is_empty() || digits.len() > 9 {
            return None;
        }
        exponent = digits
            .iter()
            .fold(0i64, |acc, d| acc * 10 + i64::from(d - b'0'));
        if exp_negative {
            exponent = -exponent;
        }
    }
    if i != b.len() || int.len() + frac.len() > MAX_AMOUNT_DIGITS {
        return None;
    }
    let mantissa = int
        .iter()
        .chain(frac)
        .fold(0u128, |acc, d| acc * 10 + u128::from(d - b'0'));
    // rippled reads the digits into a 64-bit unsigned integer.
    if mantissa > u128::from(u64::MAX) {
        return None;
    }
    Some((negative, mantissa, exponent - frac.len() as i64))
}

/// An optional sign at `b[*i]`, stepped over: true for `-`.
fn sign(b: &[u8], i: &mut usize) -> bool {
    match b.get(*i) {
        Some(b'-') => {
            *i += 1;
            true
        }
        Some(b'+') => {
            *i += 1;
            false
        }
        _ => false,
    }
}

/// The run of ASCII digits from `b[*i]`, stepped over (maybe empty).
fn digits<'b>(b: &'b [u8], i: &mut usize) -> &'b [u8] {
    let start = *i;
    while *i < b.len() && b[*i].is_ascii_digit() {
        *i += 1;
    }
    &b[start..*i]
}

/// True when `s` is an integer as rippled prints one: `-?(0|[1-9][0-9]*)`,
/// never `-0`, a `+`, a fraction or an exponent.
fn printed_integer(s: &str) -> bool {
    let digits = s.strip_prefix('-').unwrap_or(s);
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && s != "-0"
}

/// An integral amount (XRP drops, MPT units): the magnitude, at most `max`.
/// Only as rippled prints it (`STAmount::getText`: the integer's digits,
/// `-` when negative): `+370000000`, `3.7e8`, `370000000.0` or `-0` would
/// read as the same amount, but no rippled wrote them.
fn integral(s: &str, max: u128, v: &Value, p: &str, what: &str) -> Result<(bool, u64), FieldError> {
    if !printed_integer(s) {
        return Err(refused(
            p,
            v,
            format!("is not an {what} as rippled prints one (base-10 digits, `-` if negative, no `+`, fraction or exponent)"),
        ));
    }
    let (negative, mut m, e) = decimal_parts(s)
        .ok_or_else(|| refused(p, v, format!("is not an {what} (an integer as a string)")))?;
    if e < 0 {
        return Err(refused(
            p,
            v,
            format!("is not an {what}: it has a fraction"),
        ));
    }
    // Bounded: stops at zero or once past `max` (at most 19 steps).
    for _ in 0..e {
        if m == 0 || m > max {
            break;
        }
        m *= 10;
    }
    if m > max {
        return Err(refused(
            p,
            v,
            format!("is more than {max}, rippled's largest {what}"),
        ));
    }
    // m <= max < 2^63.
    Ok((negative && m != 0, m as u64))
}

/// An issued-currency value: rippled's 8 bytes (`STAmount::add`).
fn iou_value(s: &str, v: &Value, p: &str) -> Result<u64, FieldError> {
    if s.starts_with('+') {
        // rippled prints a sign only when negative.
        return Err(refused(p, v, "has a `+` sign, which rippled never prints"));
    }
    let (negative, mut m, mut e) = decimal_parts(s).ok_or_else(|| {
        refused(
            p,
            v,
            "is not a decimal number (digits, an optional fraction and exponent)",
        )
    })?;
    if m == 0 {
        return Ok(AMOUNT_ISSUED);
    }
    while m.is_multiple_of(10) {
        m /= 10;
        e += 1;
    }
    if m > u128::from(MAX_MANTISSA) {
        return Err(refused(
            p,
            v,
            "has more than 16 significant digits, more than an issued amount holds",
        ));
    }
    let mut m = m as u64;
    while m < MIN_MANTISSA {
        m *= 10;
        e -= 1;
    }
    if e < i64::from(MIN_EXPONENT) || e > i64::from(MAX_EXPONENT) {
        return Err(refused(
            p,
            v,
            "is outside rippled's range for an issued amount (a 16-digit mantissa with an exponent of -96 to 80)",
        ));
    }
    let exponent_bits = (e + 97) as u64; // 1..=177, 8 bits
    let mut bits = AMOUNT_ISSUED | (exponent_bits << 54) | m;
    if !negative {
        bits |= AMOUNT_POSITIVE;
    }
    Ok(bits)
}

fn sorted_keys(o: &Object) -> Vec<&str> {
    let mut keys: Vec<&str> = o.keys().map(String::as_str).collect();
    keys.sort_unstable();
    keys
}

fn member_str<'a>(o: &'a Object, key: &str, p: &str) -> Result<&'a str, FieldError> {
    o.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| shape(&join(p, key), "a string"))
}

/// An STAmount (`STAmount::add`): XRP drops (sign bit clear when
/// negative), an issued currency, or an MPT amount.
fn write_amount(v: &Value, p: &str, out: &mut Vec<u8>) -> Result<(), FieldError> {
    match v {
        Value::String(s) => {
            let (negative, drops) = integral(s, MAX_DROPS, v, p, "amount of XRP drops")?;
            let bits = if negative {
                drops
            } else {
                drops | AMOUNT_POSITIVE
            };
            out.extend_from_slice(&bits.to_be_bytes());
            Ok(())
        }
        Value::Object(o) => match sorted_keys(o).as_slice() {
            ["currency", "issuer", "value"] => {
                let value = o.get("value").unwrap_or(&Value::Null);
                let s = member_str(o, "value", p)?;
                let bits = iou_value(s, value, &join(p, "value"))?;
                let c_value = o.get("currency").unwrap_or(&Value::Null);
                let c = currency(member_str(o, "currency", p)?, c_value, &join(p, "currency"))?;
                if c == [0; 20] {
                    return Err(refused(
                        &join(p, "currency"),
                        c_value,
                        "is XRP, which is never an issued currency",
                    ));
                }
                let i_value = o.get("issuer").unwrap_or(&Value::Null);
                let issuer = account(member_str(o, "issuer", p)?, i_value, &join(p, "issuer"))?;
                if issuer == [0; 20] {
                    return Err(refused(
                        &join(p, "issuer"),
                        i_value,
                        "is the zero account, which rippled refuses as an issuer",
                    ));
                }
                out.extend_from_slice(&bits.to_be_bytes());
                out.extend_from_slice(&c);
                out.extend_from_slice(&issuer);
                Ok(())
            }
            ["mpt_issuance_id", "value"] => {
                let value = o.get("value").unwrap_or(&Value::Null);
                let s = member_str(o, "value", p)?;
                let (negative, units) =
                    integral(s, MAX_MPT, value, &join(p, "value"), "MPT amount")?;
                member_str(o, "mpt_issuance_id", p)?;
                out.push(if negative { 0x20 } else { 0x60 });
                out.extend_from_slice(&units.to_be_bytes());
                fixed_hex(
                    o.get("mpt_issuance_id").unwrap_or(&Value::Null),
                    24,
                    &join(p, "mpt_issuance_id"),
                    out,
                )
            }
            _ => Err(shape(
                p,
                "drops as a string, {currency, issuer, value} or {mpt_issuance_id, value}",
            )),
        },
        _ => Err(shape(p, "an amount (a string or an object)")),
    }
}

/// An STIssue: `{currency: "XRP"}` (20 zero bytes), `{currency, issuer}`
/// (40 bytes) or `{mpt_issuance_id}` (issuer, the "no account" 1, then the
/// sequence little-endian: 44 bytes).
fn write_issue(v: &Value, p: &str, out: &mut Vec<u8>) -> Result<(), FieldError> {
    let o = v.as_object().ok_or_else(|| shape(p, "an object"))?;
    let expected = "{currency: \"XRP\"}, {currency, issuer} or {mpt_issuance_id}";
    match sorted_keys(o).as_slice() {
        ["currency"] if o.get("currency").and_then(Value::as_str) == Some("XRP") => {
            out.extend_from_slice(&[0; 20]);
            Ok(())
        }
        ["currency", "issuer"] => {
            let c_value = o.get("currency").unwrap_or(&Value::Null);
            let c = currency(member_str(o, "currency", p)?, c_value, &join(p, "currency"))?;
            if c == [0; 20] {
                return Err(shape(p, expected));
            }
            let i_value = o.get("issuer").unwrap_or(&Value::Null);
            let issuer = account(member_str(o, "issuer", p)?, i_value, &join(p, "issuer"))?;
            out.extend_from_slice(&c);
            out.extend_from_slice(&issuer);
            Ok(())
        }
        ["mpt_issuance_id"] => {
            let mut id = Vec::with_capacity(24);
            fixed_hex(
                o.get("mpt_issuance_id").unwrap_or(&Value::Null),
                24,
                &join(p, "mpt_issuance_id"),
                &mut id,
            )?;
            out.extend_from_slice(&id[4..]);
            let mut no_account = [0u8; 20];
            no_account[19] = 1;
            out.extend_from_slice(&no_account);
            out.extend_from_slice(&[id[3], id[2], id[1], id[0]]);
            Ok(())
        }
        _ => Err(shape(p, expected)),
    }
}

/// An STArray: each element `{Name: {…}}` with `Name` an object field,
/// written as the field ID, the fields, the object end marker; then the
/// array end marker.
fn write_array(v: &Value, p: &str, out: &mut Vec<u8>) -> Result<(), FieldError> {
    let items = v.as_array().ok_or_else(|| shape(p, "an array"))?;
    for (i, item) in items.iter().enumerate() {
        let at = format!("{p}[{i}]");
        let obj = item
            .as_object()
            .filter(|o| o.len() == 1)
            .ok_or_else(|| shape(&at, "an object with one member"))?;
        for (name, inner) in obj {
            let ip = format!("{at}.{name}");
            let f = match serialized_field(name) {
                Some(f) if f.associated_type == "STObject" => f,
                Some(_) => return Err(shape(&ip, "an object field")),
                None => return Err(FieldError::new(ip, FieldProblem::NotAField)),
            };
            let inner = inner.as_object().ok_or_else(|| shape(&ip, "an object"))?;
            field_id(&f, out);
            write_fields(inner, &ip, out)?;
            out.push(0xE1);
        }
    }
    out.push(0xF1);
    Ok(())
}

/// A PathSet (`STPathSet::add`): steps of a type byte and their account,
/// currency, issuer; 0xFF between paths, 0x00 at the end. `type` and
/// `type_hex`, which rippled prints, must agree with the step.
fn write_path_set(v: &Value, p: &str, out: &mut Vec<u8>) -> Result<(), FieldError> {
    let paths = v.as_array().ok_or_else(|| shape(p, "an array of paths"))?;
    for (i, path) in paths.iter().enumerate() {
        let at = format!("{p}[{i}]");
        let steps = path
            .as_array()
            .ok_or_else(|| shape(&at, "an array of steps"))?;
        if i > 0 {
            out.push(0xFF);
        }
        for (j, step) in steps.iter().enumerate() {
            write_path_step(step, &format!("{at}[{j}]"), out)?;
        }
    }
    out.push(0x00);
    Ok(())
}

fn write_path_step(step: &Value, p: &str, out: &mut Vec<u8>) -> Result<(), FieldError> {
    let o = step.as_object().ok_or_else(|| shape(p, "an object"))?;
    let mut kind = 0u64;
    for (k, v) in o {
        let bit = match k.as_str() {
            "account" => 0x01,
            "currency" => 0x10,
            "issuer" => 0x20,
            _ if super::non_serialized(super::Place::PathStep, k).is_some() => continue,
            _ => return Err(FieldError::new(join(p, k), FieldProblem::NotAField)),
        };
        if v.as_str().is_none_or(str::is_empty) {
            return Err(shape(&join(p, k), "a non-empty string"));
        }
        kind |= bit;
    }
    if kind == 0 {
        return Err(shape(p, "a step with an account, a currency or an issuer"));
    }
    if let Some(t) = o.get("type") {
        if t.as_u64() != Some(kind) {
            return Err(FieldError::new(
                join(p, "type"),
                FieldProblem::Inconsistent(format!("is not {kind}, the kind of this step")),
            ));
        }
    }
    if let Some(t) = o.get("type_hex") {
        let expected = format!("{kind:016X}");
        if !t
            .as_str()
            .is_some_and(|s| s.eq_ignore_ascii_case(&expected))
        {
            return Err(FieldError::new(
                join(p, "type_hex"),
                FieldProblem::Inconsistent(format!("is not {expected}, the kind of this step")),
            ));
        }
    }
    out.push(kind as u8);
    // In rippled's order: account (0x01), currency (0x10), issuer (0x20).
    for (bit, field) in [(0x01, "account"), (0x10, "currency"), (0x20, "issuer")] {
        if kind & bit == 0 {
            continue;
        }
        let v = o.get(field).unwrap_or(&Value::Null);
        let text = v.as_str().unwrap_or_default();
        let at = join(p, field);
        if bit == 0x10 {
            out.extend_from_slice(&currency(text, v, &at)?);
        } else {
            out.extend_from_slice(&account(text, v, &at)?);
        }
    }
    Ok(())
}

/// An XChainBridge: the locking door (VL-encoded account), its issue, the
/// issuing door, its issue.
fn write_bridge(v: &Value, p: &str, out: &mut Vec<u8>) -> Result<(), FieldError> {
    let o = v.as_object().ok_or_else(|| shape(p, "an object"))?;
    if sorted_keys(o)
        != [
            "IssuingChainDoor",
            "IssuingChainIssue",
            "LockingChainDoor",
            "LockingChainIssue",
        ]
    {
        return Err(shape(
            p,
            "{LockingChainDoor, LockingChainIssue, IssuingChainDoor, IssuingChainIssue}",
        ));
    }
    for (door, issue) in [
        ("LockingChainDoor", "LockingChainIssue"),
        ("IssuingChainDoor", "IssuingChainIssue"),
    ] {
        let dp = join(p, door);
        let dv = o.get(door).unwrap_or(&Value::Null);
        let s = dv
            .as_str()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| shape(&dp, "an account"))?;
        out.push(20);
        out.extend_from_slice(&account(s, dv, &dp)?);
        write_issue(o.get(issue).unwrap_or(&Value::Null), &join(p, issue), out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn iou(s: &str) -> Result<String, String> {
        iou_value(s, &json!(s), "v")
            .map(|b| format!("{b:016X}"))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn vl_lengths_at_every_boundary() {
        let enc = |n| {
            let mut out = Vec::new();
            vl(n, "f", &mut out).map(|()| out)
        };
        assert_eq!(enc(0).ok(), Some(vec![0]));
        assert_eq!(enc(192).ok(), Some(vec![192]));
        assert_eq!(enc(193).ok(), Some(vec![193, 0]));
        assert_eq!(enc(12_480).ok(), Some(vec![240, 255]));
        assert_eq!(enc(12_481).ok(), Some(vec![241, 0, 0]));
        assert_eq!(enc(918_744).ok(), Some(vec![254, 212, 23]));
        assert!(enc(918_745).is_err());
    }

    #[test]
    fn issued_values_over_rippleds_whole_range() {
        // The largest and smallest positive values rippled represents.
        assert_eq!(
            iou("9999999999999999e80").as_deref(),
            Ok("EC6386F26FC0FFFF")
        );
        assert_eq!(
            iou("1000000000000000e-96").as_deref(),
            Ok("C0438D7EA4C68000")
        );
        assert_eq!(iou("1e-81").as_deref(), Ok("C0438D7EA4C68000"));
        assert_eq!(iou("-1e-81").as_deref(), Ok("80438D7EA4C68000"));
        // One past either end.
        assert!(iou("1e97").is_err());
        assert!(iou("9999999999999999e81").is_err());
        assert!(iou("1e-82").is_err());
        // Zero in every spelling.
        for z in ["0", "-0", "0.0", "0e5", "+0"] {
            assert_eq!(iou(z).as_deref(), Ok("8000000000000000"), "{z}");
        }
        // 16 digits in decimal form, far from exponent 0; past 32 digits
        // rippled calls the string overlong.
        assert_eq!(
            iou("0.00000000000001234567890123456").as_deref(),
            iou("1234567890123456e-29").as_deref()
        );
        assert!(iou("0.000000000000000000000001234567890123456").is_err());
        // 17 significant digits are refused, trailing zeros are not digits.
        assert!(iou("12345678901234567").is_err());
        assert!(iou("12345678901234560000").is_ok());
        // rippled reads the digits into 64 bits: past that it refuses.
        assert!(iou("123456789012345600000").is_err());
        assert!(iou("1234567890123456e5").is_ok());
        // Forms rippled refuses.
        for bad in [
            "",
            "-",
            "01",
            ".5",
            "5.",
            "1e",
            "1e+",
            "0x10",
            "1 ",
            "NaN",
            "1e1234567890",
        ] {
            assert!(iou(bad).is_err(), "{bad:?}");
        }
    }

    /// Every value of rippled's range, mantissa by mantissa at the edges
    /// and exponent by exponent: the bits decode back to the value.
    #[test]
    fn every_exponent_round_trips() {
        for e in MIN_EXPONENT..=MAX_EXPONENT {
            for m in [MIN_MANTISSA, 1_234_567_890_123_456, MAX_MANTISSA] {
                for negative in [false, true] {
                    let s = format!("{}{m}e{e}", if negative { "-" } else { "" });
                    let bits = iou_value(&s, &json!(s), "v").expect("in range");
                    assert_eq!(bits & AMOUNT_ISSUED, AMOUNT_ISSUED);
                    assert_eq!(bits & AMOUNT_POSITIVE == 0, negative, "{s}");
                    assert_eq!(((bits >> 54) & 0xFF) as i32 - 97, e, "{s}");
                    assert_eq!(bits & ((1 << 54) - 1), m, "{s}");
                }
            }
        }
    }

    #[test]
    fn currencies_as_rippled_reads_them() {
        let c = |s: &str| currency(s, &json!(s), "c").map_err(|e| e.to_string());
        assert_eq!(c("XRP"), Ok([0; 20]));
        let star = c("*G*").expect("rippled's ISO set has *");
        assert_eq!(&star[12..15], b"*G*");
        assert!(star[..12].iter().chain(&star[15..]).all(|&b| b == 0));
        for ok in ["USD", "usd", "<>(", "{}|", "?!@", "#$%", "^&*", "[]0"] {
            assert!(c(ok).is_ok(), "{ok}");
        }
        for bad in ["US", "USDT", "U D", "U.D", "U-D", "U_D", "U~D", "é1", ""] {
            assert!(c(bad).is_err(), "{bad:?}");
        }
        let hex40 = "0158415500000000C1F76FF6ECB0BAC600000000";
        assert_eq!(c(hex40).map(|b| b.to_vec()), Ok(hex(hex40).expect("hex")));
        assert_eq!(c(&hex40.to_lowercase()), c(hex40));
        assert!(c(&hex40[..38]).is_err());
    }

    #[test]
    fn xrp_and_mpt_amounts_including_negative() {
        let amount = |v: Value| {
            let mut out = Vec::new();
            write_amount(&v, "a", &mut out).map(|()| shamap::hash::encode_hex_upper(&out))
        };
        // Exponents in integral amounts, as rippled's grammar has them; a
        // huge one on zero is zero at once.
        for (drops, hex) in [
            ("0", "4000000000000000"),
            ("1", "4000000000000001"),
            ("-1", "0000000000000001"),
            ("-0", "4000000000000000"),
            ("100000000000000000", "416345785D8A0000"),
            ("-100000000000000000", "016345785D8A0000"),
            ("1e3", "40000000000003E8"),
            ("0e999999999", "4000000000000000"),
        ] {
            assert_eq!(amount(json!(drops)).ok().as_deref(), Some(hex), "{drops}");
        }
        assert!(amount(json!("100000000000000001")).is_err());
        assert!(amount(json!("1.5")).is_err());
        assert!(amount(json!("1.0")).is_err());
        assert!(amount(json!(10)).is_err());
        assert!(amount(json!("1e999999999")).is_err());
        let id = "00000001B5F762798A53D543A014CAF8B297CFF8F2F937E8";
        assert_eq!(
            amount(json!({"mpt_issuance_id": id, "value": "100"}))
                .ok()
                .as_deref(),
            Some(format!("600000000000000064{id}").as_str())
        );
        assert_eq!(
            amount(json!({"mpt_issuance_id": id, "value": "9223372036854775807"}))
                .ok()
                .as_deref(),
            Some(format!("607FFFFFFFFFFFFFFF{id}").as_str())
        );
        assert!(amount(json!({"mpt_issuance_id": id, "value": "9223372036854775808"})).is_err());
    }

    /// Seeded random objects inside the range where the XRPL codec's own
    /// encoder is right (normalized issued exponents −15..0, upper-case currencies,
    /// non-negative XRP, non-empty accounts), encoded by both: the same
    /// bytes. The seed is in the failure message.
    #[test]
    fn random_objects_agree_with_the_codec_where_it_is_right() {
        use rand::{rngs::SmallRng, Rng, SeedableRng};
        let seed = 0x5eed_c0de_u64;
        let mut rng = SmallRng::seed_from_u64(seed);
        let accounts = [
            "rBKPS4oLSaV2KVVuHH8EpQqMGgGefGFQs7",
            "r3kmLJN5D28dHuH8vZNUZpMC43pEHpaocV",
            "rLQBHVhFnaC5gLEkgr6HgBJJ3bgeZHg9cj",
            "rrrrrrrrrrrrrrrrrrrrBZbvji",
        ];
        // The codec refuses lower-case codes (rippled reads them).
        let alnum = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        let hex_of = |rng: &mut SmallRng, n: usize| -> String {
            (0..n).map(|_| format!("{:02X}", rng.gen::<u8>())).collect()
        };
        for round in 0..2000 {
            let mut rng2 = SmallRng::seed_from_u64(rng.gen());
            let r = &mut rng2;
            let digits = r.gen_range(1..=16);
            let mantissa: u64 = r.gen_range(10u64.pow(digits - 1)..10u64.pow(digits));
            let exponent: i32 = r.gen_range(-15 + 16 - digits as i32..=16 - digits as i32);
            let value = match r.gen_range(0..3) {
                0 => format!("{mantissa}e{exponent}"),
                1 => format!("-{mantissa}e{exponent}"),
                _ => "0".to_owned(),
            };
            let currency: String = if r.gen_bool(0.8) {
                let c: String = (0..3)
                    .map(|_| alnum[r.gen_range(0..alnum.len())] as char)
                    .collect();
                if c == "XRP" {
                    "USD".to_owned()
                } else {
                    c
                }
            } else {
                format!("01{}", hex_of(r, 19))
            };
            let account = accounts[r.gen_range(0..3)];
            let obj = json!({
                "LedgerEntryType": "RippleState",
                "Flags": r.gen::<u32>(),
                "Balance": {"currency": currency, "issuer": accounts[3], "value": value},
                "HighLimit": {"currency": currency, "issuer": account, "value": value},
                "LowNode": format!("{:X}", r.gen::<u64>()),
                "PreviousTxnID": hex_of(r, 32),
                "PreviousTxnLgrSeq": r.gen::<u32>(),
            });
            let (data_len, type_len) = (r.gen_range(0..300), r.gen_range(0..20));
            let tx = json!({
                "TransactionType": "Payment",
                "Account": account,
                "Destination": accounts[r.gen_range(0..3)],
                "Amount": r.gen_range(0..=100_000_000_000_000_000u64).to_string(),
                "Fee": r.gen_range(0..1_000_000u64).to_string(),
                "Sequence": r.gen::<u32>(),
                "SigningPubKey": hex_of(r, 33),
                "Memos": [{"Memo": {"MemoData": hex_of(r, data_len),
                                    "MemoType": hex_of(r, type_len)}}],
                "Paths": [[{"currency": currency, "issuer": account}], [{"account": account}]],
                "SendMax": {"currency": currency, "issuer": account, "value": value},
            });
            for v in [obj, tx] {
                let ours = object(v.as_object().expect("an object"))
                    .unwrap_or_else(|e| panic!("seed {seed:#x} round {round}: {e}: {v}"));
                let theirs = xrpl::core::binarycodec::encode(&v)
                    .unwrap_or_else(|e| panic!("seed {seed:#x} round {round}: codec: {e}: {v}"));
                assert_eq!(
                    shamap::hash::encode_hex_upper(&ours),
                    theirs.to_ascii_uppercase(),
                    "seed {seed:#x} round {round}: {v}"
                );
            }
        }
    }
}
