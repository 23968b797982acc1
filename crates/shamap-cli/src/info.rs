//! `shamap info --db DB [--json]`: format version, retained roots, node
//! counts by kind, value bytes, what the sparse inner encoding (rippled's
//! NuDB inner-node codec, sparse form) would save, and bytes on disk.
//! Scans every stored value (raw: `verify --db` is the check).

use std::fmt::Write as _;
use std::ops::ControlFlow;
use std::path::PathBuf;

use serde_json::json;
use shamap::MapKind;
use shamap_store::{inner_codec, meta, root_kind, NodeStore, Opened, RootKind, ValueKind};

use crate::input::open_to_read_backend;
use crate::output::{print_json_status_kept, print_text_status_kept, Exit, Failure};

/// Arguments of `shamap info`.
#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    #[arg(long, value_name = "DB", help = crate::input::db_help("The store"))]
    pub db: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// rippled's ledger.db (SQLite) of a NuDB store, which lists its
    /// ledgers (default: one in the store's directory or the one above).
    #[arg(long, value_name = "FILE")]
    pub ledger_db: Option<PathBuf>,
}

/// Counts over all stored values.
#[derive(Default)]
struct Counts {
    headers: u64,
    inner: u64,
    state_leaves: u64,
    tx_leaves: u64,
    other: u64,
    value_bytes: u64,
    inner_bytes: u64,
    inner_sparse_bytes: u64,
}

/// Runs `shamap info`: rippled's NuDB store has its own report
/// ([`crate::nudb::info`]), as the store's one opening decides.
pub fn run(args: &InfoArgs) -> Result<Exit, Failure> {
    match open_to_read_backend(&args.db)? {
        Opened::Nudb(store) => {
            crate::nudb::info(&args.db, store, args.ledger_db.as_deref(), args.json)
        }
        other => info(args, other.store()).map(|()| Exit::Done),
    }
}

fn info(args: &InfoArgs, store: &dyn NodeStore) -> Result<(), Failure> {
    let mut c = Counts::default();
    store.for_each_value(&mut |_, v| {
        c.value_bytes += v.len() as u64;
        match ValueKind::of_value(v) {
            ValueKind::Inner => {
                c.inner += 1;
                c.inner_bytes += v.len() as u64;
                c.inner_sparse_bytes += inner_codec::inner_len(v).unwrap_or(v.len()) as u64;
            }
            ValueKind::Leaf(MapKind::AccountState) => c.state_leaves += 1,
            ValueKind::Leaf(MapKind::TransactionWithMeta | MapKind::TransactionNoMeta) => {
                c.tx_leaves += 1;
            }
            ValueKind::Ledger => c.headers += 1,
            ValueKind::Unknown => c.other += 1,
        }
        ControlFlow::Continue(())
    })?;
    let disk = store.disk_bytes()?;
    let roots = meta::retained(store)?;
    let nodes = c.headers + c.inner + c.state_leaves + c.tx_leaves + c.other;
    let saving = c.inner_bytes.saturating_sub(c.inner_sparse_bytes);
    let describe = |h: &shamap::Hash256| match root_kind(store, h) {
        _ if h.is_zero() => "the empty map".to_owned(),
        Ok(RootKind::Ledger(hdr)) => format!(
            "ledger {} (account_hash {}, transaction_hash {})",
            hdr.seq, hdr.account_hash, hdr.transaction_hash
        ),
        Ok(RootKind::Map(k)) => format!("{} map root", k.name()),
        Err(e) => format!("unreadable: {e}"),
    };
    if args.json {
        let v = json!({
            "db": args.db.display().to_string(),
            "format_version": meta::FORMAT_VERSION_CURRENT,
            "roots": roots.iter().map(|r| json!({
                "name": r.name, "hash": r.hash.to_hex(), "what": describe(&r.hash)
            })).collect::<Vec<_>>(),
            "nodes": nodes,
            "ledger_headers": c.headers,
            "inner_nodes": c.inner,
            "state_leaves": c.state_leaves,
            "tx_leaves": c.tx_leaves,
            "unrecognized": c.other,
            "value_bytes": c.value_bytes,
            "inner_value_bytes": c.inner_bytes,
            "inner_sparse_bytes": c.inner_sparse_bytes,
            "disk_bytes": disk,
        });
        print_json_status_kept(&v);
        return Ok(());
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "store {} (format version {})",
        args.db.display(),
        meta::FORMAT_VERSION_CURRENT
    );
    let _ = writeln!(out, "retained roots: {}", roots.len());
    for r in &roots {
        let _ = writeln!(out, "  {} {}: {}", r.hash, r.name, describe(&r.hash));
    }
    let _ = writeln!(
        out,
        "nodes: {nodes} ({} inner, {} state leaves, {} tx leaves, {} ledger headers{})",
        c.inner,
        c.state_leaves,
        c.tx_leaves,
        c.headers,
        if c.other > 0 {
            format!(", {} unrecognized", c.other)
        } else {
            String::new()
        }
    );
    let _ = writeln!(out, "value bytes: {}", c.value_bytes);
    let pct = if c.value_bytes > 0 {
        100.0 * saving as f64 / c.value_bytes as f64
    } else {
        0.0
    };
    let _ = writeln!(
        out,
        "inner nodes in the sparse inner encoding: {} instead of {} bytes ({saving} fewer, {pct:.1}% of all value bytes)",
        c.inner_sparse_bytes, c.inner_bytes
    );
    let _ = writeln!(out, "bytes on disk: {disk}");
    print_text_status_kept(&out);
    Ok(())
}
