//! Readers for the ledger JSON that rippled and Clio emit, so that a real
//! ledger can be rebuilt and its hashes checked.
//!
//! [`parse`] takes the bytes of one file and returns a [`LedgerDump`]: the
//! header fields found, the state entries and the transactions, as bytes:
//! decoded from hex, or, for decoded-JSON entries (a response without
//! `"binary": true`), encoded with the XRPL codec behind the field guard of
//! [`crate::decoded`]. Binary and decoded entries may be mixed.
//!
//! Shapes understood (the ledger object may sit under `result.ledger`, under
//! `ledger`, or be the top-level object itself; `result` may wrap any shape):
//!
//! | shape | header | state | transactions |
//! |---|---|---|---|
//! | `ledger` response, binary | `ledger.ledger_data` (118-byte header, hex) or header fields; `ledger_hash`/`ledger_index` beside `ledger` | `accountState: [{index\|hash, data\|tx_blob}]` | `transactions: [{tx_blob, meta\|meta_blob, hash?}]` |
//! | `ledger` response, JSON header | header fields in `ledger` | as above | as above |
//! | `ledger` response, decoded (`expand` without `binary`) | as above | `accountState: [{LedgerEntryType, …, index}]` | `transactions: [{TransactionType, …, hash?, metaData}]` (API v1) or `[{tx_json, meta, hash?}]` (API v2) |
//! | `{header, transactions}` (test fixtures) | header fields in `header` | `accountState` | `transactions` |
//! | `ledger_data` page, binary | `ledger_index`/`ledger_hash` on the page; `ledger.ledger_data` or fields when present | `state: [{index, data}]` | — |
//!
//! Header fields: `ledger_index` (alias `seqNum`; string or number),
//! `total_coins` (alias `totalCoins`; string or number), `parent_hash`,
//! `transaction_hash`, `account_hash`, `parent_close_time`, `close_time`,
//! `close_time_resolution`, `close_flags`, and the expected `ledger_hash`
//! (alias `hash`). Every place a field is found must agree.
//!
//! A `ledger_data` response comes in pages; [`merge`] joins the pages of one
//! ledger. The reader never panics, whatever the input: it is fuzzed
//! (`fuzz/fuzz_targets/dump_reader.rs`).

use serde_json::Value;

mod fast;
mod unique_keys;

use shamap::hash::{decode_hex, Hash256};
use shamap::xrpl::ledger::LedgerHeader;

use crate::entry::{get, read_state_entry, read_tx_entry, Object};
use crate::error::cut_to;
pub use crate::error::{DumpError, EntryProblem, FieldError, FieldProblem};
use crate::ledger_dump::agree;
pub use crate::ledger_dump::{merge, DumpKind, HeaderFields, LedgerDump, StateEntry, TxEntry};

/// Longest server-error text quoted in [`DumpError::Server`], in characters.
const MAX_QUOTED_CHARS: usize = 200;

impl LedgerDump {
    /// Parses one file; see [`parse`].
    pub fn parse(input: &[u8]) -> Result<LedgerDump, DumpError> {
        parse(input)
    }
}

/// Reads one file's bytes: a rippled or Clio `ledger` response, a
/// `ledger_data` page, or a bare ledger object (see the module docs).
pub fn parse(input: &[u8]) -> Result<LedgerDump, DumpError> {
    let input = document(input)?;
    match fast::parse(input) {
        Some(dump) => Ok(dump),
        None => read_dom(input),
    }
}

/// [`parse`] through a full `serde_json::Value` of the document: the
/// reference the fast path must agree with, and the path for every input
/// the fast path declines (all errors among them). Public for the fuzz
/// target that compares the two.
#[doc(hidden)]
pub fn parse_dom(input: &[u8]) -> Result<LedgerDump, DumpError> {
    read_dom(document(input)?)
}

/// The first key that appears twice in one object of the JSON document
/// `input` (any JSON, not only a dump), as [`DumpError::DuplicateKey`];
/// `None` when every object's keys are distinct, or `input` is not JSON
/// (the caller's reader reports that). `serde_json` keeps the last of two
/// equal keys, so a reader of other JSON files (a proof file) refuses them
/// with this first.
pub fn duplicate_key(input: &[u8]) -> Option<DumpError> {
    unique_keys::first_duplicate(input).map(|d| DumpError::DuplicateKey {
        key: d.key,
        path: d.path,
        entry: d.entry,
    })
}

/// The input past one byte-order mark; blank input is an error.
fn document(input: &[u8]) -> Result<&[u8], DumpError> {
    let input = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
    if input.iter().all(u8::is_ascii_whitespace) {
        return Err(DumpError::EmptyInput);
    }
    if let Some(d) = unique_keys::first_duplicate(input) {
        return Err(DumpError::DuplicateKey {
            key: d.key,
            path: d.path,
            entry: d.entry,
        });
    }
    Ok(input)
}

/// [`parse_dom`] after [`document`].
fn read_dom(input: &[u8]) -> Result<LedgerDump, DumpError> {
    let root: Value = serde_json::from_slice(input).map_err(json_error)?;
    let Value::Object(root) = root else {
        return Err(DumpError::TopLevelNotObject);
    };
    read_document(&root)
}

/// Everything [`parse`] reads from a document's top-level object.
fn read_document(root: &Object) -> Result<LedgerDump, DumpError> {
    check_server_error(root)?;
    let body = match root.get("result") {
        Some(Value::Object(result)) => {
            check_server_error(result)?;
            result
        }
        _ => root,
    };

    let ledger = object_field(body, "ledger")?;
    let header_obj = object_field(body, "header")?;
    let mut header = HeaderFields::default();
    for obj in [header_obj, ledger, Some(body)].into_iter().flatten() {
        read_header(obj, &mut header)?;
    }

    let state = one_list(
        "state",
        [
            (ledger, "accountState", "ledger.accountState"),
            (Some(body), "accountState", "accountState"),
            (Some(body), "state", "state"),
        ],
        read_state_entry,
    )?;
    let transactions = one_list(
        "transaction",
        [
            (ledger, "transactions", "ledger.transactions"),
            (Some(body), "transactions", "transactions"),
        ],
        read_tx_entry,
    )?;

    if header.is_empty() && state.is_none() && transactions.is_none() {
        return Err(DumpError::NothingFound);
    }
    let kind = if get(body, "state").is_some() {
        DumpKind::LedgerDataPage
    } else {
        DumpKind::Ledger
    };
    let marker = get(body, "marker").map(|m| match m {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    Ok(LedgerDump {
        kind,
        header,
        state,
        transactions,
        marker,
    })
}

/// A one-line description of a JSON syntax error.
fn json_error(e: serde_json::Error) -> DumpError {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = full.strip_suffix(&suffix).unwrap_or(&full).to_owned();
    DumpError::Json {
        line: e.line(),
        column: e.column(),
        message,
    }
}

/// Fails when `obj` is a server's error response (`status: "error"` or an
/// `error` member).
fn check_server_error(obj: &Object) -> Result<(), DumpError> {
    let status_error = obj.get("status").and_then(Value::as_str) == Some("error");
    let error = get(obj, "error");
    if !status_error && error.is_none() {
        return Ok(());
    }
    let mut detail = match error {
        Some(e) => quote(e),
        None => "status \"error\"".to_owned(),
    };
    if let Some(msg) = get(obj, "error_message").or_else(|| get(obj, "error_exception")) {
        detail.push_str(": ");
        detail.push_str(&quote(msg));
    }
    Err(DumpError::Server { detail })
}

/// JSON text of `v` on one line, cut to [`MAX_QUOTED_CHARS`] characters.
fn quote(v: &Value) -> String {
    cut_to(v.to_string(), MAX_QUOTED_CHARS)
}

/// A member that must be an object when present.
fn object_field<'a>(obj: &'a Object, name: &'static str) -> Result<Option<&'a Object>, DumpError> {
    match get(obj, name) {
        None => Ok(None),
        Some(Value::Object(o)) => Ok(Some(o)),
        Some(_) => Err(DumpError::FieldType {
            field: name,
            expected: "a JSON object",
        }),
    }
}

/// Reads every header field `obj` has into `fields`, checking agreement.
fn read_header(obj: &Object, fields: &mut HeaderFields) -> Result<(), DumpError> {
    const U64: &str = "an unsigned 64-bit integer";
    const U32: &str = "an unsigned 32-bit integer";
    const U8: &str = "an unsigned 8-bit integer";
    let mut found = HeaderFields::default();
    for name in ["ledger_index", "seqNum"] {
        agree(
            "ledger_index",
            &mut found.ledger_index,
            uint(obj, name, U32)?,
        )?;
    }
    for name in ["total_coins", "totalCoins"] {
        agree("total_coins", &mut found.total_coins, uint(obj, name, U64)?)?;
    }
    found.parent_hash = hash(obj, "parent_hash")?;
    found.transaction_hash = hash(obj, "transaction_hash")?;
    found.account_hash = hash(obj, "account_hash")?;
    found.parent_close_time = uint(obj, "parent_close_time", U32)?;
    found.close_time = uint(obj, "close_time", U32)?;
    found.close_time_resolution = uint(obj, "close_time_resolution", U8)?;
    found.close_flags = uint(obj, "close_flags", U8)?;
    for name in ["ledger_hash", "hash"] {
        agree("ledger_hash", &mut found.ledger_hash, hash(obj, name)?)?;
    }
    if let Some(v) = get(obj, "ledger_data") {
        let Value::String(s) = v else {
            return Err(DumpError::FieldType {
                field: "ledger_data",
                expected: "a hex string",
            });
        };
        let bytes = decode_hex(s).map_err(|error| DumpError::FieldHex {
            field: "ledger_data",
            error,
        })?;
        let h = LedgerHeader::deserialize(&bytes)
            .ok_or(DumpError::HeaderLength { len: bytes.len() })?;
        found.merge_from(&HeaderFields::from_header(&h))?;
    }
    fields.merge_from(&found)
}

/// Applies `read` to member `name` when it is present.
fn opt<T>(
    obj: &Object,
    name: &str,
    read: impl FnOnce(&Value) -> Result<T, DumpError>,
) -> Result<Option<T>, DumpError> {
    get(obj, name).map(read).transpose()
}

/// The unsigned integer ([`uint_field`]) under `name`, if present.
fn uint<T: TryFrom<u64>>(
    obj: &Object,
    name: &'static str,
    expected: &'static str,
) -> Result<Option<T>, DumpError> {
    opt(obj, name, |v| uint_field(name, v, expected))
}

/// The hash ([`hash_field`]) under `name`, if present.
fn hash(obj: &Object, name: &'static str) -> Result<Option<Hash256>, DumpError> {
    opt(obj, name, |v| hash_field(name, v))
}

/// An unsigned integer given as a JSON number or a string of decimal digits,
/// converted to `T`; `expected` names `T` in the error.
fn uint_field<T: TryFrom<u64>>(
    field: &'static str,
    v: &Value,
    expected: &'static str,
) -> Result<T, DumpError> {
    let n = match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            s.parse().ok()
        }
        _ => None,
    };
    n.and_then(|n| T::try_from(n).ok())
        .ok_or(DumpError::FieldType { field, expected })
}

/// A 64-digit hex hash.
fn hash_field(field: &'static str, v: &Value) -> Result<Hash256, DumpError> {
    let Value::String(s) = v else {
        return Err(DumpError::FieldType {
            field,
            expected: "a hex string",
        });
    };
    Hash256::from_hex(s).map_err(|error| DumpError::FieldHex { field, error })
}

/// Reads the single list of `what` found among `places` (object, member
/// name, path for messages), or `None` when there is none.
fn one_list<T, const N: usize>(
    what: &'static str,
    places: [(Option<&Object>, &'static str, &'static str); N],
    read_entry: fn(&Value) -> Result<T, EntryProblem>,
) -> Result<Option<Vec<T>>, DumpError> {
    let mut found: Option<(&'static str, &'static str, &Value)> = None;
    for (obj, name, path) in places {
        let Some(v) = obj.and_then(|o| get(o, name)) else {
            continue;
        };
        if let Some((_, first, _)) = found {
            return Err(DumpError::DuplicateList {
                what,
                first,
                second: path,
            });
        }
        found = Some((name, path, v));
    }
    let Some((list, _, v)) = found else {
        return Ok(None);
    };
    let Value::Array(items) = v else {
        return Err(DumpError::FieldType {
            field: list,
            expected: "an array",
        });
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            read_entry(item).map_err(|problem| DumpError::Entry {
                list,
                index,
                problem,
            })
        })
        .collect::<Result<Vec<T>, DumpError>>()
        .map(Some)
}

#[cfg(test)]
pub(crate) mod tests;
