//! The proof file: what `shamap prove` writes and `shamap check-proof`
//! reads.
//!
//! ```json
//! {"kind": "state", "key": "02CE…", "root": "2C23…", "included": true,
//!  "nodes": ["…leaf…", "…", "…root…"]}
//! ```
//!
//! | field | meaning |
//! |---|---|
//! | `kind` | `state` (account-state map) or `tx` (transaction+metadata map) |
//! | `key` | the key proven, upper-case hex (a transaction ID for `tx`) |
//! | `root` | the map's root hash the proof leads to (`account_hash` / `transaction_hash`) |
//! | `included` | whether the map holds the key |
//! | `nodes` | wire blobs in hex, leaf (or last node) first, root last |
//!
//! [`parse_proof`] also takes a bare JSON array of hex wire blobs (as
//! rippled's `getProofPath` gives them); every field but `nodes` is
//! optional when reading, and none may appear twice.

use serde_json::Value;
use shamap::hash::{decode_hex, encode_hex_upper};
use shamap::{Hash256, Key, ProofPath};

/// The proof JSON `shamap prove` writes (fields in the module docs, in that
/// order; serde_json's map would sort them).
pub fn render_proof(proof: &ProofPath) -> String {
    let nodes: Vec<String> = proof
        .nodes
        .iter()
        .map(|n| format!("    \"{}\"", encode_hex_upper(n)))
        .collect();
    let nodes = if nodes.is_empty() {
        "[]".to_owned()
    } else {
        format!("[\n{}\n  ]", nodes.join(",\n"))
    };
    format!(
        "{{\n  \"kind\": \"{}\",\n  \"key\": \"{}\",\n  \"root\": \"{}\",\n  \"included\": {},\n  \"nodes\": {nodes}\n}}\n",
        proof.kind.name(),
        proof.key,
        proof.root,
        proof.included,
    )
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

/// Parses a proof file (see the module docs). The error is one line. An
/// object with a key twice (`"root"` twice, say) is refused: a reader
/// would keep one of the two, and the file says two things.
pub fn parse_proof(bytes: &[u8]) -> Result<ProofFile, String> {
    if let Some(e) = shamap_ledger::dump::duplicate_key(bytes) {
        return Err(e.to_string());
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::fixtures::ledger_38129;
    use crate::input::KindArg;
    use crate::maps::build_map;
    use shamap::{MapKind, ShaMap};

    #[test]
    fn proof_json_has_the_documented_fields_in_order() {
        let mut b = build_map(&ledger_38129("l.json"), KindArg::State).expect("builds");
        let key = *b.map.first().expect("non-empty").0;
        let text = render_proof(&b.map.proof_path(&key));
        let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(v["kind"], "state");
        assert_eq!(v["key"], key.to_hex());
        assert_eq!(v["root"], b.map.root_hash().to_hex());
        assert_eq!(v["included"], true);
        assert!(v["nodes"].as_array().expect("array").len() >= 2);
        let at = |f: &str| text.find(f).expect("field present");
        assert!(at("\"kind\"") < at("\"key\"") && at("\"key\"") < at("\"root\""));
        assert!(at("\"root\"") < at("\"included\"") && at("\"included\"") < at("\"nodes\""));
        // An empty map's proof has no nodes.
        let mut empty = ShaMap::new(MapKind::AccountState);
        let v: serde_json::Value =
            serde_json::from_str(&render_proof(&empty.proof_path(&key))).expect("valid JSON");
        assert_eq!(v["nodes"], serde_json::json!([]));
        assert_eq!(v["included"], false);
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
