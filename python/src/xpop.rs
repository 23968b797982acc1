//! `verify_xpop`: an XLS-41 proof checked as `shamap xpop verify --json`
//! checks it ([`shamap_auth::xpop::verify`]), its result the same fields.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};
use serde_json::Value;
use shamap_auth::PublicKey;

use crate::args::{type_name, Obj};
use crate::convert::to_py;

/// Verifies an XPOP (a JSON str or bytes, or the dict json.loads gives)
/// against the list publisher's master key `vl_key` (66 hex digits or
/// `n…`). Returns the fields of `shamap xpop verify --json`: for a valid
/// XPOP `valid` True, `ledger_index`, `ledger_hash`, `transaction_hash`,
/// `result`, …; for an invalid one `valid` False and `reason`. ValueError
/// for text that is not JSON or a key that is not a key.
#[pyfunction]
pub(crate) fn verify_xpop<'py>(
    py: Python<'py>,
    xpop: &Obj<'py>,
    vl_key: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let key =
        PublicKey::parse(vl_key).map_err(|e| PyValueError::new_err(format!("vl_key: {e}")))?;
    let text: String = if let Ok(s) = xpop.cast::<PyString>() {
        s.extract::<String>()?
    } else if let Ok(b) = xpop.cast::<PyBytes>() {
        String::from_utf8(b.as_bytes().to_vec())
            .map_err(|_| PyValueError::new_err("the XPOP is not UTF-8"))?
    } else if xpop.cast::<PyDict>().is_ok() {
        let json = py.import("json")?;
        json.call_method1("dumps", (xpop,))?.extract()?
    } else {
        return Err(PyTypeError::new_err(format!(
            "xpop must be str, bytes or dict, not {}",
            type_name(xpop)
        )));
    };
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| PyValueError::new_err(format!("the XPOP is not JSON: {e}")))?;
    let out = py.detach(|| match shamap_auth::xpop::verify(&value, &key) {
        Ok(r) => r.to_json(),
        Err(e) => serde_json::json!({"valid": false, "reason": e.to_string()}),
    });
    to_py(py, &out)
}
