//! `info --db` on rippled's NuDB node store (its audit, `verify --db`, is
//! the store's one audit: [`crate::verify_db`]).
//!
//! `info --db DIR`: the store's kind, the directories read (the same
//! `read: …` line), files, records and bytes, and the ledgers found (from
//! `ledger.db`, else from the headers in the data files).

use std::fmt::Write as _;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use serde_json::json;
use shamap::Hash256;
use shamap_store::backend::nudb::{headers_in_data, layout::Source, ledgers, NudbStore};

use crate::output::{print_json_status_kept, print_text_status_kept, Exit, Failure};

/// The line naming the directories read (and those not read, stale).
fn read_line(store: &NudbStore) -> String {
    format!("read: {}\n", store.layout().describe())
}

/// The directories read and not read, as JSON.
fn layout_json(store: &NudbStore) -> serde_json::Value {
    let l = store.layout();
    let paths = |ds: &[PathBuf]| {
        ds.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
    };
    json!({
        "dirs": paths(&l.dirs),
        "not_read": paths(&l.ignored),
        "state_db": match &l.source {
            Source::StateDb(p) => Some(p.display().to_string()),
            _ => None,
        },
        "description": l.describe(),
    })
}

/// Runs `info --db` on the NuDB store `db` named, with `ledger_db`
/// (`--ledger-db`) when given.
pub fn info(
    db: &Path,
    mut store: NudbStore,
    ledger_db: Option<&Path>,
    as_json: bool,
) -> Result<Exit, Failure> {
    if let Some(l) = ledger_db {
        if !l.is_file() {
            return Err(Failure::unusable(format!(
                "{}: no such file (--ledger-db)",
                l.display()
            )));
        }
        store.set_ledger_db(Some(l.to_owned()));
    }
    // One pass over the data files for the counts, whose headers list the
    // ledgers when there is no ledger.db (the store crate's one rule).
    let mut found: Vec<(u32, Hash256)> = Vec::new();
    let counts = headers_in_data(&store, &mut |h| {
        found.push((h.header.seq, h.hash));
        ControlFlow::Continue(())
    })?;
    found.sort();
    found.dedup();
    let ledgers = ledgers::ledgers(&store, Some(found))?;
    let from = ledgers::listed_in(&store).describe();
    let files: Vec<serde_json::Value> = store
        .parts()
        .iter()
        .map(|p| {
            json!({
                "dir": p.dir.display().to_string(),
                "dat_bytes": p.dat.len,
                "key_bytes": p.key_len,
                "uid": p.key_header.uid,
                "block_size": p.key_header.block_size,
                "buckets": p.key_header.buckets,
                "load_factor": p.key_header.load_factor,
            })
        })
        .collect();
    if as_json {
        print_json_status_kept(&json!({
            "db": db.display().to_string(),
            "store": "rippled NuDB (read-only)",
            "read": layout_json(&store),
            "files": files,
            "records": counts.records,
            "value_bytes": counts.value_bytes,
            "codec_types": counts.codec_types,
            "ledgers_from": from,
            "ledgers": ledgers.iter().map(|(s, h)| json!({"seq": s, "hash": h.to_hex()})).collect::<Vec<_>>(),
        }));
        return Ok(Exit::Done);
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "store {}: rippled's NuDB node store (read-only)",
        db.display()
    );
    out.push_str(&read_line(&store));
    for p in store.parts() {
        let _ = writeln!(
            out,
            "  {}: nudb.dat {} bytes, nudb.key {} bytes ({} buckets of {} bytes, load factor {}/65536, uid {:#x})",
            p.dir.display(),
            p.dat.len,
            p.key_len,
            p.key_header.buckets,
            p.key_header.block_size,
            p.key_header.load_factor,
            p.key_header.uid
        );
    }
    let t = counts.codec_types;
    let _ = writeln!(
        out,
        "records: {}{} ({} bytes stored; codec: {} LZ4, {} compressed inner, {} full inner, {} raw{})",
        counts.records,
        if store.parts().len() > 1 {
            " (over the rotated directories: an object in both counts twice)"
        } else {
            ""
        },
        counts.value_bytes,
        t[1],
        t[2],
        t[3],
        t[0],
        if t[4] > 0 { format!(", {} unknown", t[4]) } else { String::new() }
    );
    let _ = writeln!(out, "ledgers from {from}: {}", ledgers.len());
    for (s, h) in &ledgers {
        let _ = writeln!(out, "  ledger {s} {h}");
    }
    print_text_status_kept(&out);
    Ok(Exit::Done)
}
