//! Amounts: XRP drops, MPT amounts and issued-currency values, and issues.

use serde_json::Value;

use super::*;
use crate::error::FieldError;

/// STAmount: not XRP (an issued currency).
pub(super) const AMOUNT_ISSUED: u64 = 0x8000_0000_0000_0000;
/// STAmount: the value is positive (or zero).
pub(super) const AMOUNT_POSITIVE: u64 = 0x4000_0000_0000_0000;
/// rippled's largest XRP amount, in drops (`cMaxNativeN`).
pub(super) const MAX_DROPS: u128 = 100_000_000_000_000_000;
/// rippled's largest MPT amount (`maxMPTokenAmount`).
pub(super) const MAX_MPT: u128 = 0x7FFF_FFFF_FFFF_FFFF;
/// An issued-currency mantissa is normalized into `[MIN_MANTISSA, MAX_MANTISSA]`.
pub(super) const MIN_MANTISSA: u64 = 1_000_000_000_000_000;
pub(super) const MAX_MANTISSA: u64 = 9_999_999_999_999_999;
/// rippled's exponent range for a normalized issued-currency amount.
pub(super) const MIN_EXPONENT: i32 = -96;
pub(super) const MAX_EXPONENT: i32 = 80;
/// rippled refuses amount strings with more digits than this (`partsFromString`).
pub(super) const MAX_AMOUNT_DIGITS: usize = 32;

/// A decimal string as rippled's `partsFromString` reads it:
/// `[-+]?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?`, at most 32 digits
/// before the exponent. Returns (negative, digits as a number, exponent).
pub(super) fn decimal_parts(s: &str) -> Option<(bool, u128, i64)> {
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
pub(super) fn sign(b: &[u8], i: &mut usize) -> bool {
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
pub(super) fn digits<'b>(b: &'b [u8], i: &mut usize) -> &'b [u8] {
    let start = *i;
    while *i < b.len() && b[*i].is_ascii_digit() {
        *i += 1;
    }
    &b[start..*i]
}

/// True when `s` is an integer as rippled prints one: `-?(0|[1-9][0-9]*)`,
/// never `-0`, a `+`, a fraction or an exponent.
pub(super) fn printed_integer(s: &str) -> bool {
    let digits = s.strip_prefix('-').unwrap_or(s);
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && s != "-0"
}

/// An integral amount (XRP drops, MPT units): the magnitude, at most `max`.
/// Only as rippled prints it (`STAmount::getText`: the integer's digits,
/// `-` when negative): `+370000000`, `3.7e8` or `370000000.0` would read
/// as the same amount, but no rippled wrote them (`-0` is read as zero,
/// as ripple-binary-codec's vectors have it).
pub(super) fn integral(
    s: &str,
    max: u128,
    v: &Value,
    p: &str,
    what: &str,
) -> Result<(bool, u64), FieldError> {
    // `-0` stays: ripple-binary-codec's vectors carry it for an MPT amount
    // and rippled reads it as zero.
    if !printed_integer(s) && s != "-0" {
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
pub(super) fn iou_value(s: &str, v: &Value, p: &str) -> Result<u64, FieldError> {
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

/// An STAmount (`STAmount::add`): XRP drops (sign bit clear when
/// negative), an issued currency, or an MPT amount.
pub(super) fn write_amount(v: &Value, p: &str, out: &mut Vec<u8>) -> Result<(), FieldError> {
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
pub(super) fn write_issue(v: &Value, p: &str, out: &mut Vec<u8>) -> Result<(), FieldError> {
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
