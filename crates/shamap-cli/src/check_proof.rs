//! `shamap check-proof`: verify a proof path against a trusted root.
//!
//! The proof is the JSON `shamap prove` writes, or a bare JSON array of hex
//! wire blobs (leaf first, root last, as rippled's `getProofPath`). Only the
//! command line is trusted: `--root` and `--key`. The proof's own `root` and
//! `key`, when present, must name the same values, and its `kind` and
//! `included`, when present, must agree with what the nodes show.
//!
//! Output on stdout, one line: `included` or `absent` when the proof is
//! valid, `invalid: <reason>` when not. `--json` prints one object instead:
//! `{"valid": true, "result": "included", "kind": "state", "data": HEX}`,
//! `{"valid": true, "result": "absent"}` or
//! `{"valid": false, "reason": "…"}`.
//!
//! Exit status: 0 valid, 1 invalid, 2 unreadable input (a file that cannot
//! be read, bad JSON, a field of the wrong type, bad hex); the status-2
//! error is one line on stderr.

use std::path::PathBuf;

use serde_json::json;
use shamap::hash::encode_hex_upper;
use shamap::verify::{verify_path, ProofOutcome};
use shamap::{Hash256, Key};

use crate::input::read_file;
use crate::output::{print_json, print_text, Exit, Failure};
use crate::proof_file::{parse_proof, ProofFile};

/// Arguments of `shamap check-proof`.
#[derive(Debug, clap::Args)]
pub struct CheckProofArgs {
    /// The trusted root hash, 64 hex digits.
    #[arg(long, value_name = "HEX")]
    pub root: Hash256,
    /// The key the proof is about, 64 hex digits.
    #[arg(long, value_name = "HEX")]
    pub key: Key,
    /// The proof: a file, or `-` for standard input.
    #[arg(value_name = "PROOF")]
    pub proof: PathBuf,
    /// Print one JSON object instead of a line of text.
    #[arg(long)]
    pub json: bool,
}

/// Verifies `proof` for `key` against the trusted `root`; the error is the
/// reason the proof is invalid.
pub fn check(root: &Hash256, key: &Key, proof: &ProofFile) -> Result<ProofOutcome, String> {
    if let Some(k) = proof.key.filter(|k| k != key) {
        return Err(format!("the proof is for key {k}, not {key}"));
    }
    if let Some(r) = proof.root.filter(|r| r != root) {
        return Err(format!("the proof is for root {r}, not {root}"));
    }
    let outcome = verify_path(root, key, &proof.nodes).map_err(|e| e.to_string())?;
    if let (Some(claimed), ProofOutcome::Included { kind, .. }) = (&proof.kind, &outcome) {
        if claimed != kind.name() {
            return Err(format!(
                "the proof claims a {claimed} map but its leaf is a {} leaf",
                kind.name()
            ));
        }
    }
    match (proof.included, outcome.is_included()) {
        (Some(true), false) => Err(format!(
            "the proof claims inclusion but shows that {key} is absent"
        )),
        (Some(false), true) => Err(format!(
            "the proof claims absence but shows that {key} is included"
        )),
        _ => Ok(outcome),
    }
}

/// Runs `shamap check-proof`.
pub fn run(args: &CheckProofArgs) -> Result<Exit, Failure> {
    let (name, bytes) = read_file(&args.proof)?;
    let proof = parse_proof(&bytes).map_err(|e| Failure::unusable(format!("{name}: {e}")))?;
    let verdict = check(&args.root, &args.key, &proof);
    if args.json {
        print_json(&match &verdict {
            Ok(ProofOutcome::Included { data, kind }) => json!({
                "valid": true,
                "result": "included",
                "kind": kind.name(),
                "data": encode_hex_upper(data),
            }),
            Ok(_) => json!({"valid": true, "result": "absent"}),
            Err(reason) => json!({"valid": false, "reason": reason}),
        })?;
    } else {
        print_text(&match &verdict {
            Ok(ProofOutcome::Included { .. }) => "included\n".to_owned(),
            Ok(_) => "absent\n".to_owned(),
            Err(reason) => format!("invalid: {reason}\n"),
        })?;
    }
    Ok(if verdict.is_ok() {
        Exit::Done
    } else {
        Exit::Negative
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proof_file::render_proof;
    use shamap::{MapKind, ShaMap};

    fn proof() -> (Hash256, Key, ProofFile) {
        let mut m = ShaMap::new(MapKind::AccountState);
        let key = Key([0x42; 32]);
        m.insert(key, &[1; 20]).expect("new");
        m.insert(Key([0x43; 32]), &[2; 20]).expect("new");
        let p = m.proof_path(&key);
        let text = render_proof(&p);
        let file = parse_proof(text.as_bytes()).expect("own output parses");
        (p.root, key, file)
    }

    #[test]
    fn own_output_round_trips_and_claims_are_checked() {
        let (root, key, file) = proof();
        assert_eq!(file.kind.as_deref(), Some("state"));
        assert!(check(&root, &key, &file).expect("valid").is_included());
        let mut f = file.clone();
        f.included = Some(false);
        assert!(check(&root, &key, &f)
            .expect_err("contradiction")
            .starts_with("the proof claims absence"));
        let mut f = file.clone();
        f.kind = Some("tx".to_owned());
        assert_eq!(
            check(&root, &key, &f).expect_err("wrong kind"),
            "the proof claims a tx map but its leaf is a state leaf"
        );
        // A key whose path ends at the same leaf.
        let mut other = key;
        other.0[31] = 0x41;
        assert!(check(&root, &other, &file)
            .expect_err("other key")
            .starts_with("the proof is for key "));
        let mut f = file;
        f.key = None;
        f.included = None;
        assert_eq!(check(&root, &other, &f), Ok(ProofOutcome::Absent));
    }

    #[test]
    fn a_bare_array_is_a_proof() {
        let (root, key, file) = proof();
        let arr: Vec<String> = file.nodes.iter().map(|n| encode_hex_upper(n)).collect();
        let text = serde_json::to_string(&arr).expect("serializes");
        let bare = parse_proof(text.as_bytes()).expect("parses");
        assert_eq!(bare.nodes, file.nodes);
        assert!(check(&root, &key, &bare).expect("valid").is_included());
    }
}
