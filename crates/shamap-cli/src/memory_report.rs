//! What the backed-map subcommands (`scan`, `apply`) report about memory:
//! the process's resident set, as Linux reports it, and the node cache's
//! counters.

use serde_json::json;
use shamap_store::BackedStats;

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
pub fn rss_json() -> serde_json::Value {
    json!({
        "peak_bytes": peak_rss_bytes(),
        "anon_bytes": status_bytes("RssAnon:"),
        "file_bytes": status_bytes("RssFile:"),
    })
}

/// The node cache's counters, as JSON.
pub fn stats_json(s: &BackedStats) -> serde_json::Value {
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

/// The node cache's counters, as one line of text.
pub fn stats_text(s: &BackedStats) -> String {
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
