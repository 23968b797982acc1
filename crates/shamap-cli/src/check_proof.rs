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

use std::io::{self, Read};
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::{json, Value};
use shamap::hash::{decode_hex, encode_hex_upper};
use shamap::verify::{verify_path, ProofOutcome};
use shamap::{Hash256, Key};

use crate::prove::{fail, print_json, print_text};

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

/// A proof as read, before verification: the blobs and the claims the
/// file makes about them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProofFile {
    /// Wire blobs, leaf first, root last.
    pub nodes: Vec<Vec<u8>>,
    /// The `kind` the file names, if any.
    pub kind: Option<String>,
    /// The `key` the file names, if any.
    pub key: Option<Key>,
    /// The `root` the file names, if any.
    pub root: Option<Hash256>,
    /// The `included` flag, if any.
    pub included: Option<bool>,
}

/// Parses a proof file (see the module docs). The error is one line.
pub fn parse_proof(bytes: &[u8]) -> Result<ProofFile, String> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| {
        format!(
            "invalid JSON at line {} column {}: {}",
            e.line(),
            e.column(),
            e.to_string().lines().next().unwrap_or_default()
        )
    })?;
    let (nodes, obj) = match &v {
        Value::Array(_) => (&v, None),
        Value::Object(o) => (
            o.get("nodes")
                .ok_or_else(|| "missing \"nodes\"".to_owned())?,
            Some(o),
        ),
        _ => return Err("the proof is neither an object nor an array".to_owned()),
    };
    let nodes = nodes
        .as_array()
        .ok_or_else(|| "\"nodes\" is not an array".to_owned())?
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let s = n
                .as_str()
                .ok_or_else(|| format!("node {i} is not a hex string"))?;
            decode_hex(s).map_err(|e| format!("node {i}: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = ProofFile {
        nodes,
        ..ProofFile::default()
    };
    if let Some(o) = obj {
        let hex_field = |name: &str| -> Result<Option<[u8; 32]>, String> {
            match o.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Hash256::from_hex(s)
                    .map(|h| Some(h.0))
                    .map_err(|e| format!("\"{name}\": {e}")),
                Some(_) => Err(format!("\"{name}\" is not a hex string")),
            }
        };
        out.key = hex_field("key")?.map(Key);
        out.root = hex_field("root")?.map(Hash256);
        out.kind = match o.get("kind") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err("\"kind\" is not a string".to_owned()),
        };
        out.included = match o.get("included") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => return Err("\"included\" is not true or false".to_owned()),
        };
    }
    Ok(out)
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

/// Runs `shamap check-proof` and returns its exit status.
pub fn run(args: &CheckProofArgs) -> ExitCode {
    let stdin = args.proof.as_os_str() == "-";
    let name = if stdin {
        "<stdin>".to_owned()
    } else {
        args.proof.display().to_string()
    };
    let bytes = if stdin {
        let mut buf = Vec::new();
        io::stdin().lock().read_to_end(&mut buf).map(|_| buf)
    } else {
        std::fs::read(&args.proof)
    };
    let bytes = match bytes {
        Ok(b) => b,
        Err(e) => return fail(2, &format!("{name}: cannot read: {e}")),
    };
    let proof = match parse_proof(&bytes) {
        Ok(p) => p,
        Err(e) => return fail(2, &format!("{name}: {e}")),
    };
    let verdict = check(&args.root, &args.key, &proof);
    let status = if args.json {
        print_json(&match &verdict {
            Ok(ProofOutcome::Included { data, kind }) => json!({
                "valid": true,
                "result": "included",
                "kind": kind.name(),
                "data": encode_hex_upper(data),
            }),
            Ok(_) => json!({"valid": true, "result": "absent"}),
            Err(reason) => json!({"valid": false, "reason": reason}),
        })
    } else {
        print_text(&match &verdict {
            Ok(ProofOutcome::Included { .. }) => "included\n".to_owned(),
            Ok(_) => "absent\n".to_owned(),
            Err(reason) => format!("invalid: {reason}\n"),
        })
    };
    match verdict {
        Err(_) if status == ExitCode::SUCCESS => ExitCode::from(1),
        _ => status,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shamap::{MapKind, ShaMap};

    fn proof() -> (Hash256, Key, ProofFile) {
        let mut m = ShaMap::new(MapKind::AccountState);
        let key = Key([0x42; 32]);
        m.insert(key, &[1; 20]).expect("new");
        m.insert(Key([0x43; 32]), &[2; 20]).expect("new");
        let p = m.proof_path(&key);
        let text = crate::prove::render_proof(&p);
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

    #[test]
    fn unreadable_proofs_are_one_line_errors() {
        for (input, want) in [
            ("{", "invalid JSON at line 1 column 1: "),
            ("5", "the proof is neither an object nor an array"),
            ("{}", "missing \"nodes\""),
            (r#"{"nodes": 1}"#, "\"nodes\" is not an array"),
            (r#"{"nodes": [1]}"#, "node 0 is not a hex string"),
            (r#"["0g"]"#, "node 0: bad hex digit at position 1"),
            (r#"["abc"]"#, "node 0: odd number of hex digits (3)"),
            (
                r#"{"nodes": [], "key": "00"}"#,
                "\"key\": expected 64 hex digits, found 2",
            ),
            (
                r#"{"nodes": [], "included": "yes"}"#,
                "\"included\" is not true or false",
            ),
        ] {
            let e = parse_proof(input.as_bytes()).expect_err(input);
            assert!(e.starts_with(want), "{input}: {e}");
            assert!(!e.contains('\n'));
        }
    }
}
