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
//! `checked` and `mismatches`.

use std::path::PathBuf;
use std::time::Instant;

use pyo3::exceptions::{PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use serde_json::{json, Value};
use shamap::{Hash256, ShaMap};
use shamap_ledger::dump::{DumpKind, HeaderFields, LedgerDump};
use shamap_ledger::verify::{check_roots, state_map, tx_map, BuildError, Checks, Status};

use crate::args::type_name;
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
    sources: Vec<String>,
    header: HeaderFields,
    state: Option<Built>,
    transactions: Option<Built>,
    state_entries: Option<usize>,
    transaction_count: Option<usize>,
    incomplete: bool,
    checks: Checks,
}

/// The file and index within it of entry `index` of the merged list.
fn locate(sources: &[(String, usize)], mut index: usize) -> (&str, usize) {
    for (name, n) in sources {
        if index < *n {
            return (name, index);
        }
        index -= n;
    }
    (sources.first().map_or("", |s| s.0.as_str()), index)
}

/// Builds one map with [`shamap_ledger::verify`], timed; an entry that
/// cannot go in is an error naming its file (found in `counts`).
fn build<E>(
    build: impl FnOnce() -> Result<ShaMap, (usize, E)>,
    error: impl FnOnce(usize, E) -> BuildError,
    counts: &[(String, usize)],
) -> Result<Built, LoadError> {
    let t = Instant::now();
    let map = build().map_err(|(i, e)| {
        let err = error(i, e);
        let (file, at) = locate(counts, i);
        LoadError::Bad(format!("{file}: {}", err.message(at)))
    })?;
    Ok(Built {
        map,
        seconds: t.elapsed().as_secs_f64(),
    })
}

/// Reads, merges (several pages of one ledger), builds and checks.
fn load(paths: &[PathBuf]) -> Result<Loaded, LoadError> {
    let mut dumps: Vec<LedgerDump> = Vec::with_capacity(paths.len());
    let mut sources = Vec::with_capacity(paths.len());
    let mut state_counts = Vec::new();
    let mut tx_counts = Vec::new();
    for path in paths {
        let name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|error| LoadError::Io {
            path: name.clone(),
            error,
        })?;
        let dump =
            shamap_ledger::parse(&bytes).map_err(|e| LoadError::Bad(format!("{name}: {e}")))?;
        state_counts.push((name.clone(), dump.state.as_ref().map_or(0, Vec::len)));
        tx_counts.push((name.clone(), dump.transactions.as_ref().map_or(0, Vec::len)));
        sources.push(name);
        dumps.push(dump);
    }
    let last = sources.last().cloned().unwrap_or_default();
    let dump = shamap_ledger::merge(dumps).map_err(|e| LoadError::Bad(format!("{last}: {e}")))?;
    let h = dump.header;
    let incomplete = dump.kind == DumpKind::LedgerDataPage && dump.marker.is_some();
    let state_entries = dump.state.as_ref().map(Vec::len);
    let transaction_count = dump.transactions.as_ref().map(Vec::len);

    let mut state = dump
        .state
        .as_deref()
        .map(|entries| build(|| state_map(entries), BuildError::State, &state_counts))
        .transpose()?;
    let mut transactions = dump
        .transactions
        .as_deref()
        .map(|txs| build(|| tx_map(txs), BuildError::Tx, &tx_counts))
        .transpose()?;
    let checks = check_roots(
        &h,
        state.as_mut().map(|b| &mut b.map),
        transactions.as_mut().map(|b| &mut b.map),
    );
    Ok(Loaded {
        sources,
        header: h,
        state,
        transactions,
        state_entries,
        transaction_count,
        incomplete,
        checks,
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

fn verify_json(l: &Loaded) -> Value {
    let values = l.checks.values();
    let statuses: Vec<Status> = values.iter().map(|(_, c)| c.status()).collect();
    let checked = statuses
        .iter()
        .filter(|s| matches!(s, Status::Match | Status::Mismatch))
        .count();
    let mismatches = statuses.iter().filter(|s| **s == Status::Mismatch).count();
    let ok = mismatches == 0 && statuses.contains(&Status::Match);
    let mut v = json!({
        "ok": ok,
        "checked": checked,
        "mismatches": mismatches,
        "sources": l.sources,
        "ledger_index": l.header.ledger_index,
        "state_entries": l.state_entries,
        "transactions": l.transaction_count,
        "incomplete": l.incomplete,
    });
    if let Value::Object(o) = &mut v {
        for (name, c) in values {
            o.insert(name.to_owned(), c.to_json());
        }
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
fn paths_arg(obj: &Bound<'_, PyAny>) -> PyResult<Vec<PathBuf>> {
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
/// (malformed JSON, bad hex, duplicate keys, pages of different ledgers).
/// The work runs detached from the interpreter.
#[pyfunction]
pub(crate) fn read_ledger(py: Python<'_>, path: &Bound<'_, PyAny>) -> PyResult<PyLedger> {
    let paths = paths_arg(path)?;
    let loaded = py.detach(|| load(&paths)).map_err(LoadError::into_py)?;
    let header = to_py(py, &header_json(&loaded.header))?
        .cast_into::<PyDict>()?
        .unbind();
    let verify_value = verify_json(&loaded);
    let ok = verify_value["ok"].as_bool().unwrap_or(false);
    let verify = to_py(py, &verify_value)?.cast_into::<PyDict>()?.unbind();
    let origin = |seconds: f64| Origin {
        sources: loaded.sources.clone(),
        ledger_index: loaded.header.ledger_index,
        build_seconds: seconds,
    };
    let wrap = |b: Option<Built>| -> PyResult<Option<Py<PyShaMap>>> {
        b.map(|b| Py::new(py, PyShaMap::from_map(b.map, Some(origin(b.seconds)))))
            .transpose()
    };
    let state = wrap(loaded.state)?;
    let transactions = wrap(loaded.transactions)?;
    Ok(PyLedger {
        sources: loaded.sources,
        ledger_index: loaded.header.ledger_index,
        ok,
        header,
        verify,
        state,
        transactions,
    })
}
