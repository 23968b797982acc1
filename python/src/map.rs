//! `ShaMap` (mutable) and `Snapshot` (read-only) for Python.
//!
//! A `ShaMap` holds its engine map behind a mutex, so the object can be
//! shared between Python threads. No thread ever waits for that mutex while
//! attached to the interpreter: short operations take it with `try_lock`
//! and, only if another thread holds it (say, while hashing with the
//! interpreter detached), detach before waiting. Long operations (root
//! hashing, proofs, snapshots, statistics) always run detached. Nothing
//! runs Python code while holding the mutex.
//!
//! A `Snapshot` is the engine's O(1) immutable version (`Send + Sync`), read
//! without any lock.

use std::sync::{Mutex, MutexGuard, TryLockError};

use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use shamap::{Hash256, Key, ShaMap, Snapshot};

use crate::args::{data_arg, key_arg, kind_arg, map_error, poisoned, Obj};

/// Where a map's entries came from, for `stats()`'s `input` and timing
/// fields; dropped at the first write.
#[derive(Clone, Debug)]
pub(crate) struct Origin {
    /// The files read (as given).
    pub sources: Vec<String>,
    /// The ledger's sequence number, when the input has one.
    pub ledger_index: Option<u32>,
    /// Seconds taken to insert the entries.
    pub build_seconds: f64,
}

/// The engine map and its origin, behind one mutex.
pub(crate) struct Inner {
    pub map: ShaMap,
    pub origin: Option<Origin>,
}

/// A SHAMap: the XRP Ledger's Merkle radix-16 tree over 32-byte keys.
///
/// ShaMap(kind="state")
///
/// kind: "state" (account state, `account_hash`), "tx" (transactions with
/// metadata, `transaction_hash`) or "txset" (transactions without
/// metadata). Keys are 32 `bytes` or a `str` of 64 hex digits; data is
/// `bytes`. `insert` of a present key and `update`/`remove` of an absent
/// key raise `KeyError`; malformed arguments `ValueError` or `TypeError`.
#[pyclass(name = "ShaMap", module = "shamap", frozen)]
pub struct PyShaMap {
    inner: Mutex<Inner>,
}

/// A key as Python `bytes`.
fn key_bytes<'py>(py: Python<'py>, k: &Key) -> Bound<'py, PyBytes> {
    PyBytes::new(py, k.as_bytes())
}

impl PyShaMap {
    /// A Python map around an engine map.
    pub(crate) fn from_map(map: ShaMap, origin: Option<Origin>) -> PyShaMap {
        PyShaMap {
            inner: Mutex::new(Inner { map, origin }),
        }
    }

    fn lock_blocking(&self) -> PyResult<MutexGuard<'_, Inner>> {
        self.inner.lock().map_err(|_| poisoned())
    }

    /// Runs `f` on the map: at once if the mutex is free, else detached
    /// from the interpreter while waiting for it. `f` must not call Python.
    pub(crate) fn with<R: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Inner) -> R + Send,
    ) -> PyResult<R> {
        match self.inner.try_lock() {
            Ok(mut g) => Ok(f(&mut g)),
            Err(TryLockError::WouldBlock) => {
                py.detach(|| self.lock_blocking().map(|mut g| f(&mut g)))
            }
            Err(TryLockError::Poisoned(_)) => Err(poisoned()),
        }
    }

    /// Runs `f` on the map detached from the interpreter (for long work).
    pub(crate) fn with_detached<R: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Inner) -> R + Send,
    ) -> PyResult<R> {
        py.detach(|| self.lock_blocking().map(|mut g| f(&mut g)))
    }

    /// A write: once it succeeds, the map no longer is the file's, so the
    /// origin goes.
    fn write<R: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut ShaMap) -> Result<R, shamap::MapError> + Send,
    ) -> PyResult<R> {
        self.with(py, |inner| {
            let r = f(&mut inner.map);
            if r.is_ok() {
                inner.origin = None;
            }
            r
        })?
        .map_err(map_error)
    }

    /// A write of one item: `key` and `data` parsed, then `f`.
    fn write_item<R: Send>(
        &self,
        py: Python<'_>,
        key: &Obj<'_>,
        data: &Obj<'_>,
        f: impl FnOnce(&mut ShaMap, Key, &[u8]) -> Result<R, shamap::MapError> + Send,
    ) -> PyResult<R> {
        let key = key_arg(key)?;
        let data = data_arg(data)?;
        self.write(py, |m| f(m, key, &data))
    }

    /// The root hash, computed detached when not already current.
    pub(crate) fn root(&self, py: Python<'_>) -> PyResult<Hash256> {
        match self.with(py, |inner| inner.map.cached_root_hash())? {
            Some(h) => Ok(h),
            None => self.with_detached(py, |inner| inner.map.root_hash()),
        }
    }

    /// A snapshot of the map as it is now (hashes first, detached).
    pub(crate) fn take_snapshot(&self, py: Python<'_>) -> PyResult<(Snapshot, Option<Origin>)> {
        self.with_detached(py, |inner| (inner.map.snapshot(), inner.origin.clone()))
    }
}

/// `m[key]`: the data `get` found, or KeyError.
fn present<'py>(key: &Obj<'py>, got: Option<Bound<'py, PyBytes>>) -> PyResult<Bound<'py, PyBytes>> {
    let k = key_arg(key)?;
    got.ok_or_else(|| PyKeyError::new_err(format!("key {k} is not present")))
}

#[pymethods]
impl PyShaMap {
    #[new]
    #[pyo3(signature = (kind = "state"))]
    fn new(kind: &str) -> PyResult<Self> {
        Ok(PyShaMap::from_map(ShaMap::new(kind_arg(kind)?), None))
    }

    /// The map kind: "state", "tx" or "txset".
    #[getter]
    fn kind(&self, py: Python<'_>) -> PyResult<&'static str> {
        self.with(py, |inner| inner.map.kind().name())
    }

    /// Adds an item; KeyError if the key is present (rippled's addItem).
    fn insert(&self, py: Python<'_>, key: &Obj<'_>, data: &Obj<'_>) -> PyResult<()> {
        self.write_item(py, key, data, |m, k, d| m.insert(k, d))
    }

    /// Replaces the data of a present key; KeyError if absent
    /// (rippled's updateGiveItem).
    fn update(&self, py: Python<'_>, key: &Obj<'_>, data: &Obj<'_>) -> PyResult<()> {
        self.write_item(py, key, data, |m, k, d| m.update(k, d))
    }

    /// Inserts or replaces; returns True when the key was new.
    fn upsert(&self, py: Python<'_>, key: &Obj<'_>, data: &Obj<'_>) -> PyResult<bool> {
        self.write_item(py, key, data, |m, k, d| m.upsert(k, d))
    }

    /// Removes an item; KeyError if absent (rippled's delItem).
    fn remove(&self, py: Python<'_>, key: &Obj<'_>) -> PyResult<()> {
        let key = key_arg(key)?;
        self.write(py, |m| m.remove(&key))
    }

    /// The data stored under key, or None.
    fn get<'py>(&self, py: Python<'py>, key: &Obj<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let key = key_arg(key)?;
        let data = self.with(py, |inner| inner.map.get(&key).map(<[u8]>::to_vec))?;
        Ok(data.map(|d| PyBytes::new(py, &d)))
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: &Obj<'py>) -> PyResult<Bound<'py, PyBytes>> {
        present(key, self.get(py, key)?)
    }

    /// `m[key] = data` is `upsert`.
    fn __setitem__(&self, py: Python<'_>, key: &Obj<'_>, data: &Obj<'_>) -> PyResult<()> {
        self.upsert(py, key, data).map(|_| ())
    }

    /// `del m[key]` is `remove`.
    fn __delitem__(&self, py: Python<'_>, key: &Obj<'_>) -> PyResult<()> {
        self.remove(py, key)
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, |inner| inner.map.len())
    }

    fn __contains__(&self, py: Python<'_>, key: &Obj<'_>) -> PyResult<bool> {
        let key = key_arg(key)?;
        self.with(py, |inner| inner.map.contains(&key))
    }

    /// The root hash: 64 upper-case hex digits (all zeros for an empty map).
    /// Rehashes only what changed since the last call.
    fn root_hash(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.root(py)?.to_hex())
    }

    /// Every (key, data) pair in ascending key order, as a list (taken
    /// from a snapshot, so it hashes the map first).
    fn items<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let (snap, _) = self.take_snapshot(py)?;
        items_of(py, &snap)
    }

    /// Every key in ascending order, as a list.
    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let (snap, _) = self.take_snapshot(py)?;
        keys_of(py, &snap)
    }

    /// Iterates over the keys, ascending, of the map as it was when the
    /// iteration started.
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.keys(py)?.try_iter().map(Bound::into_any)
    }

    /// An immutable copy of the map as it is now, in O(1) (hashes first).
    fn snapshot(&self, py: Python<'_>) -> PyResult<PySnapshot> {
        let (snap, origin) = self.take_snapshot(py)?;
        Ok(PySnapshot { snap, origin })
    }

    /// The proof path of key: rippled's getProofPath wire nodes, leaf (or
    /// last node) first, root last. Proves inclusion when the map holds
    /// key, absence otherwise; check it with verify_proof.
    fn prove<'py>(&self, py: Python<'py>, key: &Obj<'py>) -> PyResult<Bound<'py, PyList>> {
        let key = key_arg(key)?;
        let nodes = self.with_detached(py, |inner| inner.map.proof_path(&key).nodes)?;
        nodes_list(py, &nodes)
    }

    /// Audits the whole map (shape, hashes, accounting); ValueError naming
    /// the first defect. For tests: a map built through this API is always
    /// sound.
    fn check(&self, py: Python<'_>) -> PyResult<()> {
        self.with_detached(py, |inner| {
            inner.map.root_hash();
            inner.map.check()
        })?
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |inner| {
            format!(
                "ShaMap(kind='{}', len={})",
                inner.map.kind().name(),
                inner.map.len()
            )
        })
    }
}

/// A read-only version of a ShaMap, taken in O(1) by ShaMap.snapshot():
/// later writes to the map do not change it.
#[pyclass(name = "Snapshot", module = "shamap", frozen)]
pub struct PySnapshot {
    pub(crate) snap: Snapshot,
    pub(crate) origin: Option<Origin>,
}

#[pymethods]
impl PySnapshot {
    /// The map kind: "state", "tx" or "txset".
    #[getter]
    fn kind(&self) -> &'static str {
        self.snap.kind().name()
    }

    /// The data stored under key, or None.
    fn get<'py>(&self, py: Python<'py>, key: &Obj<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let key = key_arg(key)?;
        Ok(self.snap.get(&key).map(|d| PyBytes::new(py, d)))
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: &Obj<'py>) -> PyResult<Bound<'py, PyBytes>> {
        present(key, self.get(py, key)?)
    }

    fn __len__(&self) -> usize {
        self.snap.len()
    }

    fn __contains__(&self, key: &Obj<'_>) -> PyResult<bool> {
        Ok(self.snap.contains(&key_arg(key)?))
    }

    /// The root hash: 64 upper-case hex digits.
    fn root_hash(&self) -> String {
        self.snap.root_hash().to_hex()
    }

    /// Every (key, data) pair in ascending key order, as a list.
    fn items<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        items_of(py, &self.snap)
    }

    /// Every key in ascending order, as a list.
    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        keys_of(py, &self.snap)
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.keys(py)?.try_iter().map(Bound::into_any)
    }

    /// The proof path of key (see ShaMap.prove).
    fn prove<'py>(&self, py: Python<'py>, key: &Obj<'py>) -> PyResult<Bound<'py, PyList>> {
        let key = key_arg(key)?;
        let snap = &self.snap;
        let nodes = py.detach(|| snap.proof_path(&key).nodes);
        nodes_list(py, &nodes)
    }

    /// A mutable ShaMap starting from this snapshot, in O(1).
    fn to_map(&self) -> PyShaMap {
        PyShaMap::from_map(self.snap.to_map(), self.origin.clone())
    }

    fn __repr__(&self) -> String {
        format!(
            "Snapshot(kind='{}', len={}, root_hash='{}')",
            self.snap.kind().name(),
            self.snap.len(),
            self.snap.root_hash().to_hex()
        )
    }
}

fn items_of<'py>(py: Python<'py>, snap: &Snapshot) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for (k, d) in snap.iter() {
        let pair = PyTuple::new(
            py,
            [key_bytes(py, k).into_any(), PyBytes::new(py, d).into_any()],
        )?;
        list.append(pair)?;
    }
    Ok(list)
}

fn keys_of<'py>(py: Python<'py>, snap: &Snapshot) -> PyResult<Bound<'py, PyList>> {
    let keys: Vec<Bound<'py, PyBytes>> = snap.iter().map(|(k, _)| key_bytes(py, k)).collect();
    PyList::new(py, keys)
}

fn nodes_list<'py>(py: Python<'py>, nodes: &[Vec<u8>]) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, nodes.iter().map(|n| PyBytes::new(py, n)))
}
