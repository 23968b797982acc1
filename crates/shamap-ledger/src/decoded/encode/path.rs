//! Path sets and cross-chain bridges.

use serde_json::Value;

use super::*;
use crate::error::{FieldError, FieldProblem};

/// A PathSet (`STPathSet::add`): steps of a type byte and their account,
/// currency, issuer; 0xFF between paths, 0x00 at the end. `type` and
/// `type_hex`, which rippled prints, must agree with the step.
pub(super) fn write_path_set(v: &Value, p: &str, out: &mut Vec<u8>) -> Result<(), FieldError> {
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

pub(super) fn write_path_step(step: &Value, p: &str, out: &mut Vec<u8>) -> Result<(), FieldError> {
    let o = step.as_object().ok_or_else(|| shape(p, "an object"))?;
    let mut kind = 0u64;
    for (k, v) in o {
        let bit = match k.as_str() {
            "account" => 0x01,
            "currency" => 0x10,
            "issuer" => 0x20,
            _ if crate::decoded::non_serialized(crate::decoded::Place::PathStep, k).is_some() => {
                continue
            }
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
pub(super) fn write_bridge(v: &Value, p: &str, out: &mut Vec<u8>) -> Result<(), FieldError> {
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
