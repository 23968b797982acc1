//! # shamap-python
//!
//! The `shamap` Python module (its compiled part, `shamap._shamap`): the
//! XRP Ledger's SHAMap from the [`shamap`] engine, ledger dumps read with
//! [`shamap_ledger`] and checked as `shamap verify` checks them, and the
//! statistics of `shamap stats --json`.
//!
//! | Python | module (src/) |
//! |---|---|
//! | `ShaMap`, `Snapshot` | `map` |
//! | `verify_proof` | `proof` |
//! | `read_ledger`, `Ledger` | `ledger` |
//! | `stats` | `stats` |
//! | `open_store`, `Store`, `StoreFailure` | `store` |
//! | `verify_xpop` | `xpop` |
//! | key, data and hash arguments, errors | `args` |
//!
//! Built with maturin (`pip install ./python`), abi3 for CPython >= 3.9.
//! Long work (building a ledger's maps, hashing, proofs, statistics) runs
//! with the interpreter detached (`Python::detach`, formerly
//! `allow_threads`), so other Python threads go on meanwhile.

use pyo3::prelude::*;

mod args;
mod convert;
mod ledger;
mod map;
mod proof;
mod stats;
mod store;
mod xpop;

/// The extension module `shamap._shamap`; `shamap/__init__.py` re-exports it.
#[pymodule]
fn _shamap(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<map::PyShaMap>()?;
    m.add_class::<map::PySnapshot>()?;
    m.add_class::<ledger::PyLedger>()?;
    m.add_function(wrap_pyfunction!(proof::verify_proof, m)?)?;
    m.add_function(wrap_pyfunction!(ledger::read_ledger, m)?)?;
    m.add_function(wrap_pyfunction!(stats::stats, m)?)?;
    m.add_class::<store::PyStore>()?;
    m.add_function(wrap_pyfunction!(store::open_store, m)?)?;
    m.add_function(wrap_pyfunction!(xpop::verify_xpop, m)?)?;
    m.add("StoreFailure", m.py().get_type::<store::StoreFailure>())?;
    Ok(())
}
