//! `shamap scan --db DB [--root HEX | --ledger SEQ] [--kind state|tx]
//! [--cache-mb N] [--json]`: reads every item of a stored map in key order, through a backed map (nodes
//! loaded lazily and verified, held in a node cache of `--cache-mb`), and
//! reports the count, data bytes, a digest of the contents, cache counters
//! and peak RSS.
//!
//! Memory: the node cache stays within `--cache-mb` (on the node log, the
//! budget also covers its index); on a fjall store, fjall's block cache and
//! write buffer are set by [`FjallOptions::beside_node_cache`]; so peak RSS
//! is the budget plus a fixed overhead, however large the state.

use std::fmt::Write as _;
use std::ops::ControlFlow;

use serde_json::json;
use shamap::xrpl::Sha512Half;

use shamap_store::FjallOptions;

use shamap_store::Access;

use crate::input::{open_backed, open_for_backed_map, MapArgs};
use crate::memory_report::{peak_rss_bytes, rss_json, stats_json, stats_text};
use crate::output::{print_text_status_kept, Exit, Failure};

/// Arguments of `shamap scan`.
#[derive(Debug, clap::Args)]
pub struct ScanArgs {
    /// The store, the map and the memory budget.
    #[command(flatten)]
    pub map: MapArgs,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `shamap scan`.
pub fn run(args: &ScanArgs) -> Result<Exit, Failure> {
    let store = open_for_backed_map(&args.map.db, Access::Read)?;
    let map = open_backed(&store, &args.map.at, args.map.cache_mb)?;
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
        v["fjall_cache_bytes"] = json!(FjallOptions::beside_node_cache().cache_bytes);
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
    print_text_status_kept(&out);
    Ok(Exit::Done)
}
