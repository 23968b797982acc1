//! Arguments from Python: keys, data, hashes and map kinds, each checked
//! with an error that names the argument and what was wrong; and the
//! engine's errors as Python exceptions.
//!
//! | argument | accepted | refused with |
//! |---|---|---|
//! | key, root | `bytes`/`bytearray` of 32, or `str` of 64 hex digits (either case) | `ValueError` (length, digit), `TypeError` (other types) |
//! | data | `bytes`/`bytearray` | `TypeError` (`str` and other types) |
//! | kind | `"state"`, `"tx"`, `"txset"` | `ValueError`, `TypeError` |
//!
//! Engine errors: a key already present (`insert`) or absent (`update`,
//! `remove`) is a `KeyError`; anything else the engine refuses (data over
//! 4 GiB) a `ValueError`.

use std::borrow::Cow;

use pyo3::exceptions::{PyKeyError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyString};
use shamap::{Hash256, Key, MapError, MapKind};

/// The Python type name of `obj`, for messages.
pub(crate) fn type_name(obj: &Obj<'_>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".to_owned())
}

/// 32 bytes given as `bytes`/`bytearray` of 32 or a `str` of 64 hex
/// digits; `what` names the argument in messages.
fn bytes32(obj: &Obj<'_>, what: &str) -> PyResult<[u8; 32]> {
    let from_slice = |b: &[u8]| {
        <[u8; 32]>::try_from(b)
            .map_err(|_| PyValueError::new_err(format!("{what} must be 32 bytes, got {}", b.len())))
    };
    if let Ok(b) = obj.cast::<PyBytes>() {
        return from_slice(b.as_bytes());
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return from_slice(&b.to_vec());
    }
    if let Ok(s) = obj.cast::<PyString>() {
        let s = s.to_cow()?;
        return Hash256::from_hex(&s)
            .map(|h| h.0)
            .map_err(|e| PyValueError::new_err(format!("{what} as hex: {e}")));
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be bytes (32) or str (64 hex digits), not {}",
        type_name(obj)
    )))
}

/// A Python object as an argument.
pub(crate) type Obj<'py> = Bound<'py, PyAny>;

/// A key argument.
pub(crate) fn key_arg(obj: &Obj<'_>) -> PyResult<Key> {
    bytes32(obj, "key").map(Key)
}

/// A root-hash argument.
pub(crate) fn hash_arg(obj: &Obj<'_>, what: &str) -> PyResult<Hash256> {
    bytes32(obj, what).map(Hash256)
}

/// A data argument: `bytes` (borrowed) or `bytearray` (copied).
pub(crate) fn data_arg<'a>(obj: &'a Bound<'_, PyAny>) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Cow::Borrowed(b.as_bytes()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(Cow::Owned(b.to_vec()));
    }
    let hint = if obj.is_instance_of::<PyString>() {
        " (encode it, or bytes.fromhex for hex)"
    } else {
        ""
    };
    Err(PyTypeError::new_err(format!(
        "data must be bytes, not {}{hint}",
        type_name(obj)
    )))
}

/// The map kind named `name`.
pub(crate) fn kind_arg(name: &str) -> PyResult<MapKind> {
    match name {
        "state" => Ok(MapKind::AccountState),
        "tx" => Ok(MapKind::TransactionWithMeta),
        "txset" => Ok(MapKind::TransactionNoMeta),
        other => Err(PyValueError::new_err(format!(
            "kind must be 'state', 'tx' or 'txset', not {other:?}"
        ))),
    }
}

/// An engine error as a Python exception: `KeyError` for a key present or
/// absent against the operation's rule, `ValueError` otherwise.
pub(crate) fn map_error(e: MapError) -> PyErr {
    match e {
        MapError::KeyExists(_) | MapError::KeyMissing(_) => PyKeyError::new_err(e.to_string()),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// The error of a map whose lock was poisoned by a panic inside the engine.
pub(crate) fn poisoned() -> PyErr {
    PyRuntimeError::new_err(
        "this map is unusable: an earlier operation on it failed inside the engine (please report this bug)",
    )
}
