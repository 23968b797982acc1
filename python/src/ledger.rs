//! `read_ledger`: a ledger dump read with [`shamap_ledger`], its state and
//! transaction maps built, and its hashes checked as `shamap verify`
//! checks them.
//!
//! The maps are built and checked by [`shamap_ledger::verify`], as the
//! CLI's `verify` does: the state map is built from the state entries (`account_hash`; not
//! computed when there are none), the transaction+metadata map from the
//! transactions (`transaction_hash`; an empty list gives the zero root),
//! and the header is hashed with the computed roots where there are some
//! and the dump's own values otherwise (`ledger_hash`). The `verify` dict
//! has the fields of one ledger of `shamap verify --json` plus its `ok`,
//! `checked` and `mismatches`, from the same report
//! ([`shamap_ledger::verify::LedgerReport`]).
//!
//! Several files are the pages of one ledger, merged as the CLI merges them
//! ([`shamap_ledger::pages`]): pages that all end with a `marker` are
//! refused (`ValueError`), since the ledger continues past them.

use std::path::PathBuf;
use std::time::Instant;

use pyo3::exceptions::{PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use serde_json::{json, Value};
use shamap::{Hash256, ShaMap};
use shamap_ledger::dump::HeaderFields;
use shamap_ledger::pages::{PagedLedger, PagesError};
use shamap_ledger::verify::{
    check_roots, state_map, tx_map, BuildError, LedgerReport, Outcome, Summary,
};

use crate::args::{type_name, Obj};
use crate::convert::to_py;
use crate::map::{Origin, PyShaMap};

/// Why a ledger could not be read.
enum LoadError {
    /// A file could not be read.
    Io { path: String, error: std::io::Error },
    /// The input is not a usable ledger: one line naming the file.
    Bad(String),
}

impl LoadError {
    fn into_py(self) -> PyErr {
        match self {
            LoadError::Io { path, error } => {
                let msg = format!("{path}: cannot read: {error}");
                match error.raw_os_error() {
                    // OSError(errno, strerror, filename) picks the subclass
                    // (FileNotFoundError, PermissionError, ...).
                    Some(code) => PyOSError::new_err((code, msg, path)),
                    None => PyOSError::new_err(msg),
                }
            }
            LoadError::Bad(msg) => PyValueError::new_err(msg),
        }
    }
}

/// A map built from the dump, with its build time.
struct Built {
    map: ShaMap,
    seconds: f64,
}

/// Everything read and computed, before the Python objects are made.
struct Loaded {
    report: LedgerReport,
    state: Option<Built>,
    transactions: Option<Built>,
}

/// Builds one map with [`shamap_ledger::verify`], timed; an entry that
/// cannot go in is an error naming its file in `ledger`.
fn build<E>(
    build: impl FnOnce() -> Result<ShaMap, (usize, E)>,
    error: impl FnOnce(usize, E) -> BuildError,
    ledger: &PagedLedger,
) -> Result<Built, LoadError> {
    let t = Instant::now();
    let map = build().map_err(|(i, e)| bad(error(i, e).located(ledger)))?;
    Ok(Built {
        map,
        seconds: t.elapsed().as_secs_f64(),
    })
}

/// A ledger that cannot be assembled or built, as the `ValueError` line.
fn bad(e: PagesError) -> LoadError {
    LoadError::Bad(e.to_string())
}

/// Reads the files, merges them as the pages of one ledger
/// ([`PagedLedger::from_pages`]: pages that all end with a marker are
/// refused, as by the CLI), builds the maps and checks them.
fn load(paths: &[PathBuf]) -> Result<Loaded, LoadError> {
    let mut pages = Vec::with_capacity(paths.len());
    for path in paths {
        let name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|error| LoadError::Io {
            path: name.clone(),
            error,
        })?;
        let dump =
            shamap_ledger::parse(&bytes).map_err(|e| LoadError::Bad(format!("{name}: {e}")))?;
        pages.push((name, dump));
    }
    let ledger = PagedLedger::from_pages(pages).map_err(bad)?;
    let dump = &ledger.dump;
    let mut state = dump
        .state
        .as_deref()
        .map(|entries| build(|| state_map(entries), BuildError::State, &ledger))
        .transpose()?;
    let mut transactions = dump
        .transactions
        .as_deref()
        .map(|txs| build(|| tx_map(txs), BuildError::Tx, &ledger))
        .transpose()?;
    let checks = check_roots(
        &dump.header,
        state.as_mut().map(|b| &mut b.map),
        transactions.as_mut().map(|b| &mut b.map),
    );
    Ok(Loaded {
        report: LedgerReport::new(&ledger, checks),
        state,
        transactions,
    })
}

fn header_json(h: &HeaderFields) -> Value {
    let hex = |x: Option<Hash256>| x.map(|h| h.to_hex());
    json!({
        "ledger_index": h.ledger_index,
        "total_coins": h.total_coins,
        "parent_hash": hex(h.parent_hash),
        "transaction_hash": hex(h.transaction_hash),
        "account_hash": hex(h.account_hash),
        "parent_close_time": h.parent_close_time,
        "close_time": h.close_time,
        "close_time_resolution": h.close_time_resolution,
        "close_flags": h.close_flags,
        "ledger_hash": hex(h.ledger_hash),
    })
}

/// One ledger of `shamap verify --json` ([`LedgerReport::to_json`]) with
/// its verdict: `ok`, `checked`, `mismatches` ([`Summary`]).
fn verify_json(report: &LedgerReport) -> Value {
    let summary = Summary::of(std::slice::from_ref(report));
    let mut v = report.to_json();
    if let Value::Object(o) = &mut v {
        o.insert("ok".to_owned(), json!(summary.outcome == Outcome::Verified));
        o.insert("checked".to_owned(), json!(summary.checked));
        o.insert("mismatches".to_owned(), json!(summary.mismatches));
    }
    v
}

/// A ledger read by read_ledger: its header fields, its maps and the
/// result of checking their roots and the ledger hash.
#[pyclass(name = "Ledger", module = "shamap", frozen)]
pub struct PyLedger {
    sources: Vec<String>,
    ledger_index: Option<u32>,
    ok: bool,
    header: Py<PyDict>,
    verify: Py<PyDict>,
    state: Option<Py<PyShaMap>>,
    transactions: Option<Py<PyShaMap>>,
}

#[pymethods]
impl PyLedger {
    /// The files read, as given.
    #[getter]
    fn sources(&self) -> Vec<String> {
        self.sources.clone()
    }

    /// The ledger's sequence number, or None when the input has none.
    #[getter]
    fn ledger_index(&self) -> Option<u32> {
        self.ledger_index
    }

    /// The header fields the dump carries (None when absent): ledger_index,
    /// total_coins, parent_hash, transaction_hash, account_hash,
    /// parent_close_time, close_time, close_time_resolution, close_flags,
    /// and the claimed ledger_hash; hashes as upper-case hex.
    #[getter]
    fn header(&self, py: Python<'_>) -> Py<PyDict> {
        self.header.clone_ref(py)
    }

    /// The checks of `shamap verify`: ok, checked, mismatches, sources,
    /// ledger_index, state_entries, transactions, incomplete, and for each
    /// of account_hash, transaction_hash and ledger_hash a dict with
    /// computed, expected, status ("match", "mismatch", "no_expected",
    /// "not_computed") and, when not computed, reason.
    #[getter]
    fn verify(&self, py: Python<'_>) -> Py<PyDict> {
        self.verify.clone_ref(py)
    }

    /// True when at least one value was checked and every checked value
    /// matched (the CLI's exit status 0).
    #[getter]
    fn ok(&self) -> bool {
        self.ok
    }

    /// The account-state map, or None when the dump has no state list.
    #[getter]
    fn state(&self, py: Python<'_>) -> Option<Py<PyShaMap>> {
        self.state.as_ref().map(|m| m.clone_ref(py))
    }

    /// The transaction+metadata map, or None when the dump has no
    /// transaction list.
    #[getter]
    fn transactions(&self, py: Python<'_>) -> Option<Py<PyShaMap>> {
        self.transactions.as_ref().map(|m| m.clone_ref(py))
    }

    fn __repr__(&self) -> String {
        let index = self
            .ledger_index
            .map_or_else(|| "None".to_owned(), |i| i.to_string());
        let sources: Vec<String> = self.sources.iter().map(|s| format!("'{s}'")).collect();
        let ok = if self.ok { "True" } else { "False" };
        format!(
            "Ledger(ledger_index={index}, sources=[{}], ok={ok})",
            sources.join(", ")
        )
    }
}

/// The paths argument: one path (str or os.PathLike) or a list/tuple of
/// them (pages of one ledger, merged in order).
fn paths_arg(obj: &Obj<'_>) -> PyResult<Vec<PathBuf>> {
    if let Ok(p) = obj.extract::<PathBuf>() {
        return Ok(vec![p]);
    }
    if !obj.is_instance_of::<PyString>() {
        if let Ok(ps) = obj.extract::<Vec<PathBuf>>() {
            if ps.is_empty() {
                return Err(PyValueError::new_err("no files given"));
            }
            return Ok(ps);
        }
    }
    Err(PyTypeError::new_err(format!(
        "path must be a str or os.PathLike, or a list of them, not {}",
        type_name(obj)
    )))
}

/// Reads a ledger dump (a rippled or Clio `ledger` response with
/// "binary": true, or `ledger_data` pages: give a list of paths for
/// several pages of one ledger), builds its state and transaction maps and
/// checks their roots and the ledger hash as `shamap verify` does.
///
/// Raises OSError (FileNotFoundError, ...) for a file that cannot be read
/// and ValueError naming the file for input that is not a usable ledger
/// (malformed JSON, bad hex, duplicate keys, pages of different ledgers,
/// pages that all end with a marker: the ledger's last page is missing).
/// The work runs detached from the interpreter.
#[pyfunction]
pub(crate) fn read_ledger(py: Python<'_>, path: &Obj<'_>) -> PyResult<PyLedger> {
    let paths = paths_arg(path)?;
    let loaded = py.detach(|| load(&paths)).map_err(LoadError::into_py)?;
    let report = &loaded.report;
    let header = to_py(py, &header_json(&report.header))?
        .cast_into::<PyDict>()?
        .unbind();
    let verify_value = verify_json(report);
    let ok = verify_value["ok"].as_bool().unwrap_or(false);
    let verify = to_py(py, &verify_value)?.cast_into::<PyDict>()?.unbind();
    let origin = |seconds: f64| Origin {
        sources: report.sources.clone(),
        ledger_index: report.header.ledger_index,
        build_seconds: seconds,
    };
    let wrap = |b: Option<Built>| -> PyResult<Option<Py<PyShaMap>>> {
        b.map(|b| Py::new(py, PyShaMap::from_map(b.map, Some(origin(b.seconds)))))
            .transpose()
    };
    let state = wrap(loaded.state)?;
    let transactions = wrap(loaded.transactions)?;
    Ok(PyLedger {
        sources: loaded.report.sources,
        ledger_index: loaded.report.header.ledger_index,
        ok,
        header,
        verify,
        state,
        transactions,
    })
}
