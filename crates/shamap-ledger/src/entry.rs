//! One entry of a dump's state or transaction list, read as
//! [`parse`](crate::parse) reads it: binary (hex `data`, `tx_blob`, `meta`)
//! or decoded (encoded by [`crate::decoded`]). Also the JSON member helpers
//! the document reader shares.

use serde_json::{Map, Value};

use shamap::hash::{decode_hex, Hash256, Key};
use shamap::xrpl::transaction_id;

use crate::decoded;
use crate::error::{EntryProblem, FieldError, FieldProblem};
use crate::ledger_dump::{StateEntry, TxEntry};

pub(crate) type Object = Map<String, Value>;

/// A member that is present and not `null`.
pub(crate) fn get<'a>(obj: &'a Object, name: &str) -> Option<&'a Value> {
    obj.get(name).filter(|v| !v.is_null())
}

/// The first of `names` that `obj` has, with its value.
pub(crate) fn first_of<'a>(
    obj: &'a Object,
    names: &[&'static str],
) -> Option<(&'static str, &'a Value)> {
    names.iter().find_map(|&n| get(obj, n).map(|v| (n, v)))
}

/// Hex bytes of a string member.
pub(crate) fn hex_member(field: &'static str, v: &Value) -> Result<Vec<u8>, EntryProblem> {
    match v {
        Value::String(s) => decode_hex(s).map_err(|error| EntryProblem::Hex { field, error }),
        Value::Object(_) | Value::Array(_) => Err(EntryProblem::NotBinary),
        _ => Err(EntryProblem::NotString(field)),
    }
}

/// A 32-byte key or ID.
pub(crate) fn key_member(field: &'static str, v: &Value) -> Result<Key, EntryProblem> {
    let bytes = hex_member(field, v)?;
    Key::from_slice(&bytes).ok_or(EntryProblem::KeyLength {
        field,
        len: bytes.len(),
    })
}

/// One entry of a state list (`accountState`, `state`), binary or decoded.
pub fn read_state_entry(v: &Value) -> Result<StateEntry, EntryProblem> {
    let obj = match v {
        Value::Object(o) => o,
        Value::String(_) => return Err(EntryProblem::HashOnly),
        _ => return Err(EntryProblem::NotObject),
    };
    let Some((data_name, data)) = first_of(obj, &["data", "tx_blob"]) else {
        if obj.contains_key("LedgerEntryType") {
            let key = match get(obj, "index") {
                Some(v) => key_member("index", v)?,
                None => return Err(EntryProblem::Missing("index")),
            };
            if key.is_zero() {
                return Err(EntryProblem::ZeroKey { field: "index" });
            }
            let data = decoded::state_entry(obj, key)?;
            return Ok(StateEntry { key, data });
        }
        return Err(EntryProblem::Missing("data"));
    };
    let (key_name, key) =
        first_of(obj, &["index", "hash"]).ok_or(EntryProblem::Missing("index"))?;
    let key = key_member(key_name, key)?;
    if key.is_zero() {
        return Err(EntryProblem::ZeroKey { field: key_name });
    }
    let data = hex_member(data_name, data)?;
    Ok(StateEntry { key, data })
}

/// Where a transaction entry's transaction is.
enum TxSource<'a> {
    /// `tx_blob`, hex.
    Blob(&'a Value),
    /// API v2 `tx_json`, decoded.
    TxJson(&'a Value),
    /// API v1: the entry's own fields, decoded.
    Fields,
}

/// One entry of a transaction list, binary or decoded.
pub fn read_tx_entry(v: &Value) -> Result<TxEntry, EntryProblem> {
    let obj = match v {
        Value::Object(o) => o,
        Value::String(_) => return Err(EntryProblem::HashOnly),
        _ => return Err(EntryProblem::NotObject),
    };
    let source = if let Some(tx) = get(obj, "tx_blob") {
        TxSource::Blob(tx)
    } else if let Some(tx) = get(obj, "tx_json") {
        TxSource::TxJson(tx)
    } else if obj.contains_key("TransactionType") {
        TxSource::Fields
    } else {
        return Err(EntryProblem::Missing("tx_blob"));
    };
    let metas = ["meta", "meta_blob", "metaData"];
    let (meta_name, meta) = first_of(obj, &metas).ok_or(EntryProblem::Missing("meta"))?;
    // How a decoded entry is named in errors: by its `hash` when readable.
    let claimed = get(obj, "hash")
        .and_then(Value::as_str)
        .and_then(|h| Hash256::from_hex(h).ok());
    let name = |id: Option<Hash256>| match id {
        Some(h) => format!("transaction {h}"),
        None => "transaction".to_owned(),
    };
    let tx = match source {
        TxSource::Blob(tx) => hex_member("tx_blob", tx)?,
        TxSource::TxJson(tx) => {
            decoded::check_wrapper(obj, &name(claimed))?;
            let Value::Object(fields) = tx else {
                return Err(EntryProblem::Field {
                    entry: name(claimed),
                    error: FieldError::new("tx_json", FieldProblem::Shape("an object")),
                });
            };
            decoded::transaction(fields, true, &name(claimed))?
        }
        TxSource::Fields => decoded::transaction(obj, false, &name(claimed))?,
    };
    let meta = match meta {
        Value::Object(fields) => {
            let entry = name(claimed.or_else(|| Some(transaction_id(&tx))));
            if metas.iter().filter(|&&m| get(obj, m).is_some()).count() > 1 {
                return Err(EntryProblem::Field {
                    entry,
                    error: FieldError::new(
                        meta_name,
                        FieldProblem::Inconsistent(
                            "is one of several metadata members (meta, meta_blob, metaData)"
                                .to_owned(),
                        ),
                    ),
                });
            }
            decoded::metadata(fields, meta_name, &entry)?
        }
        other => hex_member(meta_name, other)?,
    };
    let claimed = get(obj, "hash")
        .map(|h| key_member("hash", h).map(Hash256::from))
        .transpose()?;
    match source {
        TxSource::Blob(_) => {
            if let Some(claimed) = claimed {
                let computed = transaction_id(&tx);
                if claimed != computed {
                    return Err(EntryProblem::IdMismatch { computed });
                }
            }
        }
        TxSource::TxJson(_) | TxSource::Fields => decoded::check_id(claimed, &tx)?,
    }
    Ok(TxEntry { tx, meta })
}
