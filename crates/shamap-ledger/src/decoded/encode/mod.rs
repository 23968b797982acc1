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
use shamap::xrpl::vl::{encode_vl_len, MAX_VL_LEN};
use xrpl::core::addresscodec::{decode_classic_address, is_valid_xaddress};
use xrpl::core::binarycodec::definitions::{
    get_delegatable_permission_code, get_field_instance, get_ledger_entry_type_code,
    get_transaction_result_code, get_transaction_type_code, FieldInstance,
};
use xrpl::core::binarycodec::types::Number;

use crate::error::{cut_to, FieldError, FieldProblem};

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

mod account;
mod amount;
mod path;
#[cfg(test)]
mod tests;

use account::account;
pub(crate) use account::currency;
use amount::{printed_integer, write_amount, write_issue};
use path::{write_bridge, write_path_set};

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
    cut_to(flat, MAX_QUOTED_VALUE)
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
    encode_vl_len(len, out).map_err(|_| {
        FieldError::new(
            path,
            FieldProblem::Inconsistent(format!(
                "is {len} bytes long, more than the {MAX_VL_LEN} a serialized field can hold"
            )),
        )
    })
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
            let n = unsigned(f, v, p)?;
            let n = u8::try_from(n).map_err(|_| refused(p, v, "is not 0..=255 (UInt8)"))?;
            out.push(n);
        }
        "UInt16" => {
            let n = unsigned(f, v, p)?;
            let n = u16::try_from(n).map_err(|_| refused(p, v, "is not 0..=65535 (UInt16)"))?;
            out.extend_from_slice(&n.to_be_bytes());
        }
        "UInt32" => {
            let n = unsigned(f, v, p)?;
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

/// The value of a UInt8, UInt16 or UInt32 field `f`: an integer
/// ([`integer`]), or for the fields rippled prints by name (the UInt8
/// `TransactionResult`, the UInt16 `TransactionType` and
/// `LedgerEntryType`, the UInt32 `PermissionValue`) also a name ([`named`]).
fn unsigned(f: &FieldInstance, v: &Value, p: &str) -> Result<i64, FieldError> {
    let code: fn(&str) -> Option<i64> = match f.name.as_str() {
        "TransactionResult" => |s| get_transaction_result_code(s).map(|&c| i64::from(c)),
        "TransactionType" => |s| get_transaction_type_code(s).map(|&c| i64::from(c)),
        "LedgerEntryType" => |s| get_ledger_entry_type_code(s).map(|&c| i64::from(c)),
        "PermissionValue" => |s| get_delegatable_permission_code(s).map(|&c| i64::from(c)),
        _ => return integer(v, p),
    };
    named(v, p, code)
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
