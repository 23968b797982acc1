//! `shamap verify --db DB [--root HEX]`: rehash everything reachable from a
//! root (default: every retained root) and report the first bad node by
//! hash and nibble path.
//!
//! Reached through `verify` (files) when `--db` is given, so that the
//! command keeps one name for both kinds of verification; its arguments
//! are [`crate::verify::VerifyArgs`]' `--db`, `--root` and `--json`.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::json;
use shamap_store::{meta, verify_all};

use crate::input::{open_to_read, parse_hash};
use crate::output::{print_json_status_kept, print_text_status_kept, Exit, Failure};

/// Runs `shamap verify --db`: exit 0 when every root checked is complete
/// and valid, 2 on the first bad node or an unreadable store.
pub fn run(db: &Path, root: Option<&str>, as_json: bool) -> Result<Exit, Failure> {
    let store = open_to_read(db)?;
    let roots = match root {
        Some(r) => vec![(String::from("given"), parse_hash("root", r)?)],
        None => meta::retained(&store)?
            .into_iter()
            .map(|r| (r.name, r.hash))
            .collect(),
    };
    if roots.is_empty() {
        return Err(Failure::unusable(format!(
            "{}: the store has no imported root",
            db.display()
        )));
    }
    let mut out = String::new();
    let mut results = Vec::new();
    for (name, hash) in &roots {
        let r = verify_all(&store, hash).map_err(|e| {
            Failure::unusable(format!("{}: root {hash} ({name}): {e}", db.display()))
        })?;
        let _ = writeln!(
            out,
            "root {hash} ({name}) ok: {} nodes ({} inner, {} leaves, {} headers), {} bytes",
            r.nodes(),
            r.inner,
            r.leaves,
            r.headers,
            r.bytes
        );
        results.push(json!({"root": hash.to_hex(), "name": name, "ok": true,
            "nodes": r.nodes(), "inner": r.inner, "leaves": r.leaves, "headers": r.headers, "bytes": r.bytes}));
    }
    if as_json {
        print_json_status_kept(&json!({"ok": true, "roots": results}));
    } else {
        print_text_status_kept(&out);
    }
    Ok(Exit::Done)
}
