//! `shamap apply --db DB [--root HEX | --ledger SEQ] [--kind state|tx]
//! [--cache-mb N] [--name NAME] FILE`: applies a file of changes (`set KEY HEX` / `del KEY`, one per line; `#`
//! comments and blank lines ignored; data of at least rippled's 12 bytes) to a stored map, through a backed map
//! (nodes loaded lazily and verified, held in a node cache of
//! `--cache-mb`), and commits the result as retained root NAME in one
//! atomic batch; prints the new root.
//!
//! Memory: the node cache and the dirty nodes stay within `--cache-mb`; on
//! a fjall store, fjall's block cache and write buffer are set as for
//! `scan` ([`open_for_backed_map`]); so peak RSS is the budget plus a fixed
//! overhead, however large the state.

use std::path::PathBuf;

use serde_json::json;
use shamap::xrpl::wire::MIN_LEAF_DATA;
use shamap::{Hash256, Key};
use shamap_store::{meta, BackedMap, BackedOptions};

use shamap_store::Access;

use crate::input::{open_for_backed_map, read_file, MapArgs};
use crate::memory_report::{peak_rss_bytes, rss_json, stats_json, stats_text};
use crate::output::{print_text_status_kept, Exit, Failure};

/// Arguments of `shamap apply`.
#[derive(Debug, clap::Args)]
pub struct ApplyArgs {
    /// The store, the map and the memory budget.
    #[command(flatten)]
    pub map: MapArgs,
    /// The name the new root is retained under (an entry of that name is
    /// replaced).
    #[arg(long, value_name = "NAME", default_value = "apply")]
    pub name: String,
    /// The changes: lines `set KEY HEX` or `del KEY`; `-` reads standard
    /// input.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `shamap apply`.
pub fn run(args: &ApplyArgs) -> Result<Exit, Failure> {
    let (name, bytes) = read_file(&args.file)?;
    let text = String::from_utf8(bytes)
        .map_err(|e| Failure::unusable(format!("{name}: not UTF-8 text: {e}")))?;
    // Parse everything before touching the store: a bad line changes nothing.
    let changes = parse_changes(&text, &name)?;
    let store = open_for_backed_map(&args.map.db, Access::Write)?;
    meta::check_name(&store, &args.name)?;
    let (root, kind) = args.map.at.resolve(&store)?;
    let mut map = BackedMap::open(
        &store,
        root,
        kind,
        BackedOptions::with_budget_mb(args.map.cache_mb),
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
    print_text_status_kept(&out);
    Ok(Exit::Done)
}

/// One parsed change.
enum Change {
    Set(Key, Vec<u8>),
    Del(Key),
}

fn parse_changes(text: &str, file: &str) -> Result<Vec<Change>, Failure> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |m: String| Failure::unusable(format!("{file}:{}: {m}", i + 1));
        let mut words = line.split_whitespace();
        let op = words.next().unwrap_or_default();
        let key = words
            .next()
            .ok_or_else(|| at(format!("'{op}' needs a key")))?;
        let key = Key::from(Hash256::from_hex(key).map_err(|e| at(format!("key '{key}': {e}")))?);
        if key.is_zero() {
            // As the ledger readers: rippled keeps no entry there.
            return Err(at("the all-zero key is not a ledger entry's key".to_owned()));
        }
        let change = match op {
            "set" => {
                let hex = words
                    .next()
                    .ok_or_else(|| at("'set' needs data (hex)".into()))?;
                let data = shamap::hash::decode_hex(hex).map_err(|e| at(format!("data: {e}")))?;
                if data.len() < MIN_LEAF_DATA {
                    // rippled decodes no shorter leaf: the map could not
                    // be synced to a peer or proved.
                    return Err(at(format!(
                        "data of {} bytes: rippled's leaves hold at least {MIN_LEAF_DATA}",
                        data.len()
                    )));
                }
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
