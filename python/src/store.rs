//! `open_store`, `Store`: a node store read from Python. A node log or
//! rippled's NuDB node store (read-only), opened through the store crate's
//! one opening ([`shamap_store::open_with`] with [`Access::Read`]); ledgers
//! listed by [`ledger::ledgers`], roots resolved by [`ledger::resolve_root`],
//! maps read through [`StoredMap`] (every node verified as it is read), and
//! the store audited as `shamap verify --db` audits it.

use std::path::PathBuf;

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use shamap::hash::encode_hex_upper;
use shamap::{Hash256, ProofPath};
use shamap_ledger::response::{write_ledger_response, ResponseError, ResponseOptions};
use shamap_store::map::audit::{audit, AuditOptions};
use shamap_store::map::ledger::StoredLedger;
use shamap_store::{
    map::ledger, open_with, Access, NodeStore, OpenOptions, Opened, StoreError, StoredMap,
};

use crate::args::{hash_arg, key_arg, kind_arg, Obj};
use crate::convert::to_py;

create_exception!(
    shamap,
    StoreFailure,
    PyException,
    "A store that cannot be opened or read, or a root it does not hold; the message is one line naming the store."
);

/// A store error as a Python exception with its one-line message.
fn store_error(e: StoreError) -> PyErr {
    StoreFailure::new_err(e.to_string())
}

/// A store opened for reading: a node log or rippled's NuDB node store.
#[pyclass(name = "Store", module = "shamap", frozen)]
pub struct PyStore {
    path: PathBuf,
    opened: Opened,
}

/// Opens the store at path for reading: a node log directory, rippled's
/// NuDB node store (a directory with nudb.dat and nudb.key, rotated
/// rippledb.* directories, or "nudb:DIR"; never written), or another store
/// the CLI's --db takes. Raises StoreFailure naming the path when there is
/// no store there or it cannot be opened.
#[pyfunction]
pub(crate) fn open_store(py: Python<'_>, path: PathBuf) -> PyResult<PyStore> {
    let opened = py
        .detach(|| open_with(&path, &OpenOptions::new(Access::Read)))
        .map_err(store_error)?;
    Ok(PyStore { path, opened })
}

/// The proof as the dict of `shamap prove`'s JSON, its fields in the
/// JSON's order: kind, key, root, included, nodes (upper-case hex, leaf
/// first).
fn proof_dict<'py>(py: Python<'py>, proof: &ProofPath) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("kind", proof.kind.name())?;
    d.set_item("key", proof.key.to_string())?;
    d.set_item("root", proof.root.to_string())?;
    d.set_item("included", proof.included)?;
    let nodes: Vec<String> = proof.nodes.iter().map(|n| encode_hex_upper(n)).collect();
    d.set_item("nodes", nodes)?;
    Ok(d)
}

impl PyStore {
    fn store(&self) -> &dyn NodeStore {
        self.opened.store()
    }

    /// The map `root` names (a ledger hash: its state map, or its
    /// transaction map with kind "tx"; or a map root the store knows).
    fn map_root(&self, root: Hash256, kind: Option<&str>) -> PyResult<(Hash256, shamap::MapKind)> {
        let kind = kind.map(kind_arg).transpose()?;
        let r = ledger::resolve_root(self.store(), &root, kind).map_err(store_error)?;
        Ok((r.root, r.kind))
    }
}

#[pymethods]
impl PyStore {
    /// The store's location, as its errors name it.
    #[getter]
    fn location(&self) -> String {
        self.store().location()
    }

    /// The ledgers the store holds, by sequence: a list of (seq, ledger
    /// hash as 64 upper-case hex digits). For NuDB, from rippled's
    /// ledger.db when there is one, else the ledger headers found; for a
    /// node log, the retained ledgers.
    fn ledgers(&self, py: Python<'_>) -> PyResult<Vec<(u32, String)>> {
        let list = py
            .detach(|| ledger::ledgers(self.store()))
            .map_err(store_error)?;
        Ok(list.ledgers.iter().map(|(s, h)| (*s, h.to_hex())).collect())
    }

    /// The data under key in the map root names (a ledger hash: its state
    /// map, or with kind="tx" its transaction map; or a map root), or None
    /// when absent. Every node on the way is verified against its hash.
    #[pyo3(signature = (root, key, kind=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        root: &Obj<'py>,
        key: &Obj<'py>,
        kind: Option<&str>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let root = hash_arg(root, "root")?;
        let key = key_arg(key)?;
        let (root, kind) = self.map_root(root, kind)?;
        let data = py
            .detach(|| StoredMap::open(self.store(), root, kind)?.get(&key))
            .map_err(store_error)?;
        Ok(data.map(|d| PyBytes::new(py, &d)))
    }

    /// The proof of key (inclusion or absence) in the map root names, as
    /// the dict of `shamap prove --db`'s JSON: kind, key, root (the map's
    /// root hash), included, nodes (hex, leaf first, root last).
    #[pyo3(signature = (root, key, kind=None))]
    fn prove<'py>(
        &self,
        py: Python<'py>,
        root: &Obj<'py>,
        key: &Obj<'py>,
        kind: Option<&str>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let root = hash_arg(root, "root")?;
        let key = key_arg(key)?;
        let (root, kind) = self.map_root(root, kind)?;
        let proof = py
            .detach(|| StoredMap::open(self.store(), root, kind)?.proof_path(&key))
            .map_err(store_error)?;
        proof_dict(py, &proof)
    }

    /// Audits the whole store as `shamap verify --db --json` does and
    /// returns its report as a dict whose "ok" is True when nothing is
    /// damaged. NuDB: every record decoded and hashed, every ledger walked,
    /// each damaged or missing node with its file, offset and the ledgers
    /// it breaks. Node log: the whole log read (damage by byte offset),
    /// every retained root walked. With `anchor` (a trusted ledger hash, as
    /// `--anchor`), each root also gets "authenticated" and "authentication",
    /// and the report "authenticated".
    #[pyo3(signature = (anchor=None))]
    fn verify<'py>(
        &self,
        py: Python<'py>,
        anchor: Option<&Obj<'py>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let anchor = anchor.map(|a| hash_arg(a, "anchor")).transpose()?;
        let opts = AuditOptions {
            anchor,
            ..AuditOptions::default()
        };
        let report = py
            .detach(|| audit(&self.path, &opts, &|_| {}).map(|r| r.to_json()))
            .map_err(store_error)?;
        to_py(py, &report)
    }

    /// The ledger `ledger` names (its hash) as rippled's `ledger`
    /// response with its state and transactions in binary, the bytes
    /// `shamap export --db --root` writes (api_version 1, or 2 for API v2's
    /// transactions); every node read is verified. Raises StoreFailure when
    /// no ledger header is stored under the hash or a node is damaged.
    #[pyo3(signature = (ledger, api_version=1))]
    fn export<'py>(
        &self,
        py: Python<'py>,
        ledger: &Obj<'py>,
        api_version: u8,
    ) -> PyResult<Bound<'py, PyBytes>> {
        if !(1..=2).contains(&api_version) {
            return Err(PyValueError::new_err("api_version is 1 or 2"));
        }
        let hash = hash_arg(ledger, "ledger")?;
        let store = self.store();
        let out = py
            .detach(|| -> Result<Vec<u8>, String> {
                let l = StoredLedger::open(store, hash)
                    .map_err(|e| e.to_string())?
                    .ok_or_else(|| {
                        format!(
                            "store {}: no ledger header is stored under {hash}",
                            store.location()
                        )
                    })?;
                let opts = ResponseOptions {
                    api_version,
                    validated: l.listed,
                };
                let mut out = Vec::new();
                write_ledger_response(&mut out, &l.hash, &l.header, l.state.iter(), l.tx.iter(), &opts)
                    .map_err(|e| match e {
                        ResponseError::Io(e) => e.to_string(),
                        ResponseError::Read(e) => e.to_string(),
                        ResponseError::TxLeaf { key, error } => format!(
                            "ledger {hash}: transaction {key}: its leaf's data is not VL(tx) followed by VL(meta): {error}"
                        ),
                    })?;
                Ok(out)
            })
            .map_err(StoreFailure::new_err)?;
        Ok(PyBytes::new(py, &out))
    }

    fn __repr__(&self) -> String {
        format!("<shamap.Store {}>", self.store().location())
    }
}
