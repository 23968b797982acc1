//! `shamap verify --db DB [--root HEX | --ledger SEQ]`: audit a store. A node log is read
//! whole (every batch's checksums and sequence number, every record), past
//! any damage, which is listed by byte offset; then every retained root
//! (or the one given) is rehashed from the root down, and each is reported
//! whole or damaged, with the first bad node by hash and nibble path: so
//! the report says which roots damage affects.
//!
//! Reached through `verify` (files) when `--db` is given, so that the
//! command keeps one name for both kinds of verification; its arguments
//! are [`crate::verify::VerifyArgs`]' `--db`, `--root`, `--ledger` and
//! `--json`. A ledger hash needs no metadata record (rippled's node store
//! keeps none); `--ledger SEQ` is the ledger the store lists with that
//! sequence ([`ledger::ledger_by_seq`]).

use std::fmt::Write as _;
use std::path::Path;

use serde_json::json;
use shamap_store::{ledger, meta, verify_all};

use crate::input::{given_root, open_to_audit, parse_root};
use crate::output::{print_json_status_kept, print_text_status_kept, Exit, Failure};

/// Runs `shamap verify --db`: exit 0 when the log (for a node log) is
/// whole and every root checked is complete and valid; 2, after the report
/// of every root, when any damage was found or the store is unreadable.
pub fn run(
    db: &Path,
    root: Option<&str>,
    seq: Option<u32>,
    as_json: bool,
) -> Result<Exit, Failure> {
    parse_root(root)?;
    let (store, audit) = open_to_audit(db)?;
    let roots = match given_root(&*store, root, seq)? {
        Some(hash) => {
            ledger::resolve_root(&*store, &hash, None)?;
            let name = seq.map_or_else(|| "given".to_owned(), |s| format!("ledger {s}"));
            vec![(name, hash)]
        }
        None => meta::retained(&*store)?
            .into_iter()
            .map(|r| (r.name, r.hash))
            .collect(),
    };
    let damage = audit.as_ref().map_or(&[][..], |a| &a.damage[..]);
    if roots.is_empty() && damage.is_empty() {
        return Err(Failure::unusable(format!(
            "{}: the store has no imported root",
            db.display()
        )));
    }
    let mut out = String::new();
    let mut log_json = serde_json::Value::Null;
    if let Some(a) = &audit {
        let _ = writeln!(
            out,
            "log: {} batches, {} bytes{}",
            a.batches,
            a.log_bytes,
            if a.damage.is_empty() { ", whole" } else { "" }
        );
        for d in &a.damage {
            let _ = writeln!(out, "log DAMAGED at byte {}: {}", d.at, d.what);
        }
        log_json = json!({
            "batches": a.batches,
            "bytes": a.log_bytes,
            "acknowledged_batch": a.acknowledged,
            "damage": a.damage.iter().map(|d| json!({"at": d.at, "what": d.what})).collect::<Vec<_>>(),
        });
    }
    let mut results = Vec::new();
    let mut bad_roots = 0;
    for (name, hash) in &roots {
        match verify_all(&*store, hash) {
            Ok(r) => {
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
            Err(e) => {
                bad_roots += 1;
                let _ = writeln!(out, "root {hash} ({name}) DAMAGED: {e}");
                results.push(
                    json!({"root": hash.to_hex(), "name": name, "ok": false, "error": e.to_string()}),
                );
            }
        }
    }
    let ok = damage.is_empty() && bad_roots == 0;
    if as_json {
        let mut doc = json!({"ok": ok, "roots": results});
        if audit.is_some() {
            doc["log"] = log_json;
        }
        print_json_status_kept(&doc);
    } else {
        print_text_status_kept(&out);
    }
    if ok {
        return Ok(Exit::Done);
    }
    let mut line = format!("{}: ", db.display());
    if let Some(d) = damage.first() {
        let _ = write!(
            line,
            "the node log is damaged in {} place{} (first at byte {}); ",
            damage.len(),
            if damage.len() == 1 { "" } else { "s" },
            d.at
        );
    }
    let _ = write!(
        line,
        "{bad_roots} of {} root{} damaged",
        roots.len(),
        if roots.len() == 1 { "" } else { "s" }
    );
    Err(Failure::unusable(line))
}
