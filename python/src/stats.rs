//! `stats(map)`: the fields of `shamap stats --json` for a map or snapshot.
//!
//! The report is gathered and rendered by [`shamap_ledger::map_stats`], the
//! code `shamap stats` uses; this module adds only `input` and `timing`,
//! which differ from the CLI's object:
//!
//! - `input` is `{"type": "dump", "sources": [...], "ledger_index": N}` for
//!   a map read by `read_ledger` and not written since, else
//!   `{"type": "python"}`;
//! - `timing.build_seconds` is the time `read_ledger` took to insert the
//!   entries (`null` for other maps), and `timing.hashing` is always `null`
//!   (as with the CLI's `--no-timing`): the hash-floor measurement lives
//!   only in the CLI.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use serde_json::json;
use shamap_ledger::map_stats::{dump_input, MapStats};

use crate::args::{type_name, Obj};
use crate::convert::to_py;
use crate::map::{PyShaMap, PySnapshot};

/// The statistics of `shamap stats --json` for a ShaMap or Snapshot, as a
/// dict with the same field names (see docs/stats.md): entries, nodes,
/// histograms, data sizes (per ledger-entry type for state maps), counted
/// bytes by category, the rippled and dense layout models, the size-class
/// advisor. `timing.hashing` is None (the CLI's hash-floor measurement is
/// not available here); `input` is {"type": "python"} unless the map came
/// from read_ledger unchanged. Hashes the map first; runs detached from
/// the interpreter.
#[pyfunction]
pub(crate) fn stats<'py>(py: Python<'py>, map: &Obj<'py>) -> PyResult<Bound<'py, PyAny>> {
    let (stats, origin) = if let Ok(m) = map.cast::<PyShaMap>() {
        m.get().with_detached(py, |inner| {
            (MapStats::of_map(&mut inner.map), inner.origin.clone())
        })?
    } else if let Ok(s) = map.cast::<PySnapshot>() {
        let s = s.get();
        (
            py.detach(|| MapStats::of_snapshot(&s.snap)),
            s.origin.clone(),
        )
    } else {
        return Err(PyTypeError::new_err(format!(
            "stats() takes a ShaMap or Snapshot, not {}",
            type_name(map)
        )));
    };
    let input = match &origin {
        Some(o) => dump_input(&o.sources, o.ledger_index),
        None => json!({"type": "python"}),
    };
    let build_seconds = origin.as_ref().map(|o| o.build_seconds);
    to_py(py, &stats.to_json(input, build_seconds, None))
}
