//! The store subcommands that work through a backed map (nodes loaded
//! lazily and verified, held in a node cache of `--cache-mb`):
//!
//! - `shamap scan --db DIR [--root HEX] [--cache-mb N] [--json]`: reads
//!   every item of a stored map in key order and reports the count, data
//!   bytes, a digest of the contents, cache counters and peak RSS.
//! - `shamap apply --db DIR [--root HEX] [--cache-mb N] [--name NAME] FILE`:
//!   applies a file of changes (`set KEY HEX` / `del KEY`, one per line;
//!   `#` comments and blank lines ignored) to a stored map and commits the
//!   result as retained root NAME in one atomic batch; prints the new root.
//!
//! Memory: the node cache and the dirty nodes stay within `--cache-mb`;
//! fjall's block cache and write buffer are set to [`FJALL_CACHE_BYTES`] and
//! [`FJALL_MEMTABLE_BYTES`] for these commands,
//! so peak RSS is the budget plus a fixed overhead, however large the state.

use std::fmt::Write as _;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::json;
use shamap::xrpl::Sha512Half;
use shamap::{Hash256, Key, MapKind};
use shamap_store::{BackedMap, BackedOptions, BackedStats, FjallOptions, FjallStore};

use crate::store_common::{finish, map_root, open_backed, parse_root, Failure};

/// fjall's block cache for backed-map commands (outside `--cache-mb`).
pub const FJALL_CACHE_BYTES: u64 = 8 << 20;
/// fjall's write buffer for backed-map commands (outside `--cache-mb`).
pub const FJALL_MEMTABLE_BYTES: u64 = 4 << 20;

/// Arguments of `shamap scan`.
#[derive(Debug, clap::Args)]
pub struct ScanArgs {
    /// The store directory.
    #[arg(long, value_name = "DIR")]
    pub db: PathBuf,
    /// A ledger hash (reads its state map) or a map root; default: the
    /// newest imported state map.
    #[arg(long, value_name = "HEX")]
    pub root: Option<String>,
    /// Memory budget of the node cache, in MiB.
    #[arg(long, value_name = "MB", default_value_t = 64)]
    pub cache_mb: u64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `shamap apply`.
#[derive(Debug, clap::Args)]
pub struct ApplyArgs {
    /// The store directory.
    #[arg(long, value_name = "DIR")]
    pub db: PathBuf,
    /// The map to change: a ledger hash (its state map) or a map root;
    /// default: the newest imported state map. `0` (64 zeros) starts an
    /// empty state map.
    #[arg(long, value_name = "HEX")]
    pub root: Option<String>,
    /// Memory budget of the node cache and dirty nodes, in MiB.
    #[arg(long, value_name = "MB", default_value_t = 64)]
    pub cache_mb: u64,
    /// The name the new root is retained under (an entry of that name is
    /// replaced).
    #[arg(long, value_name = "NAME", default_value = "apply")]
    pub name: String,
    /// The changes: lines `set KEY HEX` or `del KEY`.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `shamap scan`.
pub fn run_scan(args: &ScanArgs) -> ExitCode {
    finish(scan(args))
}

/// Runs `shamap apply`.
pub fn run_apply(args: &ApplyArgs) -> ExitCode {
    finish(apply(args))
}

fn open_store(dir: &std::path::Path) -> Result<FjallStore, Failure> {
    if !dir.is_dir() {
        return Err(Failure::bad(format!(
            "{}: no store here (not a directory)",
            dir.display()
        )));
    }
    Ok(FjallStore::open_with(
        dir,
        &FjallOptions {
            cache_bytes: FJALL_CACHE_BYTES,
            memtable_bytes: FJALL_MEMTABLE_BYTES,
        },
    )?)
}

/// Peak resident set size of this process (Linux `VmHWM`), in bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    status_bytes("VmHWM:")
}

/// A byte count from `/proc/self/status` (reported in kB there).
fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Resident memory now, split as Linux reports it: anonymous (heap,
/// stacks) and file-backed pages (mapped files).
fn rss_json() -> serde_json::Value {
    json!({
        "peak_bytes": peak_rss_bytes(),
        "anon_bytes": status_bytes("RssAnon:"),
        "file_bytes": status_bytes("RssFile:"),
    })
}

fn stats_json(s: &BackedStats) -> serde_json::Value {
    json!({
        "budget_bytes": s.budget_bytes,
        "cache_bytes": s.cache_bytes,
        "cache_peak_bytes": s.cache_peak_bytes,
        "cache_entries": s.cache_entries,
        "dirty_peak_bytes": s.dirty_peak_bytes,
        "hits": s.hits,
        "loads": s.loads,
        "evictions": s.evictions,
        "spills": s.spills,
        "nodes_written": s.nodes_written,
    })
}

fn stats_text(s: &BackedStats) -> String {
    format!(
        "node cache: budget {} B, peak {} B, {} entries now; {} hits, {} loads, {} evictions; {} spills, {} nodes written",
        s.budget_bytes,
        s.cache_peak_bytes,
        s.cache_entries,
        s.hits,
        s.loads,
        s.evictions,
        s.spills,
        s.nodes_written
    )
}

fn scan(args: &ScanArgs) -> Result<(), Failure> {
    let store = open_store(&args.db)?;
    let map = open_backed(&store, args.root.as_deref(), args.cache_mb)?;
    let (root, kind) = (map.committed_root(), map.kind());
    let started = std::time::Instant::now();
    let (mut items, mut bytes) = (0u64, 0u64);
    // A digest of the contents: SHA512Half over key ‖ len ‖ data of every
    // item in key order (comparable across stores and runs).
    let mut digest = Sha512Half::new();
    map.for_each(&mut |k, v| {
        items += 1;
        bytes += v.len() as u64;
        digest.update(k.as_bytes());
        digest.update(&(v.len() as u64).to_be_bytes());
        digest.update(v);
        ControlFlow::Continue(())
    })?;
    let secs = started.elapsed().as_secs_f64();
    let digest = digest.finish();
    let s = map.stats();
    let rss = peak_rss_bytes();
    let out = if args.json {
        let mut v = json!({
            "root": root.to_string(),
            "kind": kind.name(),
            "items": items,
            "data_bytes": bytes,
            "contents_digest": digest.to_string(),
            "seconds": secs,
            "peak_rss_bytes": rss,
            "rss": rss_json(),
            "cache": stats_json(&s),
        });
        v["fjall_cache_bytes"] = json!(FJALL_CACHE_BYTES);
        format!("{v}\n")
    } else {
        let mut t = String::new();
        let _ = writeln!(
            t,
            "map {root} ({}): {items} items, {bytes} data bytes",
            kind.name()
        );
        let _ = writeln!(t, "contents digest {digest}");
        let _ = writeln!(t, "{}", stats_text(&s));
        if let Some(r) = rss {
            let _ = writeln!(t, "peak RSS {:.1} MiB, {:.2} s", r as f64 / 1048576.0, secs);
        }
        t
    };
    crate::prove::print_text(&out);
    Ok(())
}

/// One parsed change.
enum Change {
    Set(Key, Vec<u8>),
    Del(Key),
}

fn parse_changes(text: &str, file: &std::path::Path) -> Result<Vec<Change>, Failure> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |m: String| Failure::bad(format!("{}:{}: {m}", file.display(), i + 1));
        let mut words = line.split_whitespace();
        let op = words.next().unwrap_or_default();
        let key = words
            .next()
            .ok_or_else(|| at(format!("'{op}' needs a key")))?;
        let key = Key::from(Hash256::from_hex(key).map_err(|e| at(format!("key '{key}': {e}")))?);
        let change = match op {
            "set" => {
                let hex = words
                    .next()
                    .ok_or_else(|| at("'set' needs data (hex)".into()))?;
                let data = shamap::hash::decode_hex(hex).map_err(|e| at(format!("data: {e}")))?;
                Change::Set(key, data)
            }
            "del" => Change::Del(key),
            other => return Err(at(format!("unknown change '{other}' (set or del)"))),
        };
        if let Some(extra) = words.next() {
            return Err(at(format!("unexpected '{extra}' after the change")));
        }
        out.push(change);
    }
    Ok(out)
}

fn apply(args: &ApplyArgs) -> Result<(), Failure> {
    let root = parse_root(args.root.as_deref())?;
    let text = std::fs::read_to_string(&args.file)
        .map_err(|e| Failure::bad(format!("{}: {e}", args.file.display())))?;
    // Parse everything before touching the store: a bad line changes nothing.
    let changes = parse_changes(&text, &args.file)?;
    let store = open_store(&args.db)?;
    let (root, kind) = match root {
        Some(r) if r.is_zero() => (r, MapKind::AccountState),
        other => map_root(&store, other)?,
    };
    let mut map = BackedMap::open(
        &store,
        root,
        kind,
        BackedOptions::with_budget_mb(args.cache_mb),
    )?;
    let (mut set, mut added, mut deleted, mut absent) = (0u64, 0u64, 0u64, 0u64);
    for c in &changes {
        match c {
            Change::Set(k, d) => {
                set += 1;
                added += u64::from(map.upsert(*k, d)?);
            }
            Change::Del(k) => {
                if map.remove(k)? {
                    deleted += 1;
                } else {
                    absent += 1;
                }
            }
        }
    }
    let new_root = map.commit(&args.name)?;
    let s = map.stats();
    let out = if args.json {
        format!(
            "{}\n",
            json!({
                "old_root": root.to_string(),
                "root": new_root.to_string(),
                "name": args.name,
                "set": set,
                "added": added,
                "deleted": deleted,
                "absent_deletes": absent,
                "peak_rss_bytes": peak_rss_bytes(),
                "rss": rss_json(),
                "cache": stats_json(&s),
            })
        )
    } else {
        format!(
            "{set} set ({added} new), {deleted} deleted, {absent} deletes of absent keys\nroot {new_root} committed as '{}'\n{}\n",
            args.name,
            stats_text(&s)
        )
    };
    crate::prove::print_text(&out);
    Ok(())
}
