//! `verify --db` and `info --db` on rippled's NuDB node store.
//!
//! `verify --db DIR [--root HASH | --ledger SEQ] [--ledger-db FILE]`: the
//! audit of `shamap_store::backend::nudb::audit` (every record decoded and
//! hashed, every ledger walked; or one ledger walked). Text: a line for the
//! scan, one per damaged record, one per ledger (`whole` or `DAMAGED`), one
//! per damaged or missing node with its record's file and byte offset and
//! the ledgers it breaks. `--json`: the same as one object. Exit 0 whole, 2
//! on any damage (after the report), with a last line on stderr.
//!
//! `info --db DIR`: the store's kind, files, records and bytes, and the
//! ledgers found (from `ledger.db`, else from the headers in the data
//! files).

use std::fmt::Write as _;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use serde_json::json;
use shamap::Hash256;
use shamap_store::backend::nudb::{
    audit, headers_in_data, read_ledgers, AuditOptions, AuditReport, NudbStore, Only,
};

use crate::input::parse_hash;
use crate::output::{node_progress, print_json_status_kept, print_text_status_kept, Exit, Failure};

/// True when `db` names a NuDB store (`nudb:DIR`, a NuDB directory, or
/// rotated `rippledb.*` ones).
pub fn is_nudb(db: &Path) -> bool {
    db.to_str().is_some_and(|s| s.starts_with("nudb:"))
        || shamap_store::backend::nudb::is_nudb_store(db)
}

/// Opens the NuDB store `db` names, with `ledger_db` when given.
pub fn open(db: &Path, ledger_db: Option<&Path>) -> Result<NudbStore, Failure> {
    let dir = db
        .to_str()
        .and_then(|s| s.strip_prefix("nudb:"))
        .map_or_else(|| db.to_owned(), PathBuf::from);
    let mut store = NudbStore::open(&dir)?;
    if let Some(l) = ledger_db {
        if !l.is_file() {
            return Err(Failure::unusable(format!(
                "{}: no such file (--ledger-db)",
                l.display()
            )));
        }
        store.set_ledger_db(Some(l.to_owned()));
    }
    Ok(store)
}

fn seq_name(seq: Option<u32>) -> String {
    seq.map_or_else(|| "?".to_owned(), |s| s.to_string())
}

/// Runs `verify --db` on a NuDB store.
pub fn verify(
    db: &Path,
    root: Option<&str>,
    ledger: Option<u32>,
    ledger_db: Option<&Path>,
    as_json: bool,
) -> Result<Exit, Failure> {
    let store = open(db, ledger_db)?;
    let only = match (root, ledger) {
        (Some(r), _) => Some(Only::Hash(parse_hash("root", r)?)),
        (None, Some(s)) => Some(Only::Seq(s)),
        (None, None) => None,
    };
    let bar = node_progress(store.data_bytes(), "scanning");
    let progress = |n: u64| bar.set_position(n);
    let report = audit(&store, &AuditOptions { only, threads: 0 }, &progress)?;
    bar.finish_and_clear();
    if as_json {
        print_json_status_kept(&report.to_json(db));
    } else {
        print_text_status_kept(&to_text(&report));
    }
    if report.is_whole() {
        return Ok(Exit::Done);
    }
    let broken = report.ledgers.iter().filter(|l| !l.is_whole()).count();
    let mut line = format!("{}: ", db.display());
    if let Some(s) = &report.scan {
        if s.damaged_count > 0 {
            let first = &s.damaged[0];
            let _ = write!(
                line,
                "{} damaged record{} (first: {} at byte {}{}); ",
                s.damaged_count,
                if s.damaged_count == 1 { "" } else { "s" },
                first.file.display(),
                first.offset,
                first.key.map(|k| format!(", node {k}")).unwrap_or_default()
            );
        }
    }
    let _ = write!(
        line,
        "{broken} of {} ledger{} damaged",
        report.ledgers.len(),
        if report.ledgers.len() == 1 { "" } else { "s" }
    );
    if let Some(n) = report.nodes.first() {
        let _ = write!(line, "; first bad node {}: {}", n.key, n.what);
    }
    Err(Failure::unusable(line))
}

fn at_text(at: &Option<(PathBuf, u64)>) -> String {
    at.as_ref().map_or_else(
        || "no record".to_owned(),
        |(f, o)| format!("{} at byte {o}", f.display()),
    )
}

fn to_text(r: &AuditReport) -> String {
    let mut out = String::new();
    if let Some(s) = &r.scan {
        let _ = writeln!(
            out,
            "scan: {} records ({} spill records), {} bytes of data files, {} decoded bytes{}",
            s.records,
            s.spills,
            s.bytes,
            s.decoded_bytes,
            if s.damaged_count == 0 {
                ", every record whole".to_owned()
            } else {
                format!(", {} DAMAGED", s.damaged_count)
            }
        );
        for d in &s.damaged {
            let _ = writeln!(
                out,
                "record DAMAGED: {} at byte {}{}: {}",
                d.file.display(),
                d.offset,
                d.key.map(|k| format!(" (node {k})")).unwrap_or_default(),
                d.what
            );
        }
    }
    let _ = writeln!(out, "ledgers from {}: {}", r.ledgers_from, r.ledgers.len());
    for l in &r.ledgers {
        let c = l.counts;
        if l.is_whole() {
            let _ = writeln!(
                out,
                "ledger {} {} whole: {} inner nodes, {} leaves read ({} subtrees shared with the ledger before)",
                seq_name(l.seq),
                l.hash,
                c.inner,
                c.leaves,
                c.skipped
            );
        } else {
            let _ = writeln!(
                out,
                "ledger {} {} DAMAGED: {} problem{}",
                seq_name(l.seq),
                l.hash,
                l.problem_count,
                if l.problem_count == 1 { "" } else { "s" }
            );
        }
    }
    for n in &r.nodes {
        let ledgers: Vec<String> = n
            .ledgers
            .iter()
            .map(|(s, h)| format!("{} ({h})", seq_name(*s)))
            .collect();
        let _ = writeln!(
            out,
            "node {} ({}): {}; breaks ledger{} {}",
            n.key,
            at_text(&n.at),
            n.what,
            if n.ledgers.len() == 1 { "" } else { "s" },
            ledgers.join(", ")
        );
    }
    out
}

/// Runs `info --db` on a NuDB store.
pub fn info(db: &Path, ledger_db: Option<&Path>, as_json: bool) -> Result<Exit, Failure> {
    let store = open(db, ledger_db)?;
    let mut found: Vec<(u32, Hash256)> = Vec::new();
    let counts = headers_in_data(&store, &mut |h| {
        found.push((h.header.seq, h.hash));
        ControlFlow::Continue(())
    })?;
    let (ledgers, from) = match store.ledger_db() {
        Some(p) => (
            read_ledgers(p, None)
                .map_err(Failure::unusable)?
                .into_iter()
                .map(|r| (r.seq, r.hash))
                .collect::<Vec<_>>(),
            p.display().to_string(),
        ),
        None => {
            found.sort();
            found.dedup();
            (found, "ledger headers in the data files".to_owned())
        }
    };
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
