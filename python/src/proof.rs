//! `verify_proof`: an untrusted proof path checked against a trusted root
//! with [`shamap::verify::verify_path`].

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyString};
use shamap::hash::decode_hex;
use shamap::verify::{verify_path, ProofError, ProofOutcome, MAX_PATH_NODES};

use crate::args::{hash_arg, key_arg, type_name, Obj};

/// One proof node: `bytes`/`bytearray`, or a `str` of hex digits (as the
/// CLI's `prove` prints them).
fn node_arg(obj: &Obj<'_>, index: usize) -> PyResult<Vec<u8>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(b.to_vec());
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return decode_hex(&s.to_cow()?)
            .map_err(|e| PyValueError::new_err(format!("proof node {index} as hex: {e}")));
    }
    Err(PyTypeError::new_err(format!(
        "proof node {index} must be bytes or a hex str, not {}",
        type_name(obj)
    )))
}

/// Checks a proof path (nodes leaf first, root last, as ShaMap.prove and
/// rippled's getProofPath give them) for key against the trusted root.
///
/// Returns "included" or "absent". Raises ValueError("invalid proof: ...")
/// naming the reason when the proof does not lead from root to key (a node
/// that does not decode, does not hash to what its parent names, a path cut
/// short or running past its end, more than 65 nodes), ValueError or
/// TypeError for malformed arguments. root and key: 32 bytes or 64 hex
/// digits; proof: a sequence of bytes (or hex str) nodes.
#[pyfunction]
pub(crate) fn verify_proof(
    py: Python<'_>,
    root: &Obj<'_>,
    key: &Obj<'_>,
    proof: &Obj<'_>,
) -> PyResult<&'static str> {
    let root = hash_arg(root, "root")?;
    let key = key_arg(key)?;
    if proof.is_instance_of::<PyBytes>() || proof.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(
            "proof must be a sequence of nodes (list of bytes), not a single bytes or str",
        ));
    }
    let count = proof.len().map_err(|_| {
        PyTypeError::new_err(format!(
            "proof must be a sequence of nodes (list of bytes), not {}",
            type_name(proof)
        ))
    })?;
    if count > MAX_PATH_NODES {
        // Refused before reading any node, as the engine does.
        let e = ProofError::TooManyNodes {
            count,
            max: MAX_PATH_NODES,
        };
        return Err(PyValueError::new_err(format!("invalid proof: {e}")));
    }
    let mut nodes = Vec::with_capacity(count);
    for (i, item) in proof.try_iter()?.enumerate() {
        nodes.push(node_arg(&item?, i)?);
    }
    match py.detach(|| verify_path(&root, &key, &nodes)) {
        Ok(ProofOutcome::Included { .. }) => Ok("included"),
        Ok(ProofOutcome::Absent) => Ok("absent"),
        Err(e) => Err(PyValueError::new_err(format!("invalid proof: {e}"))),
    }
}
