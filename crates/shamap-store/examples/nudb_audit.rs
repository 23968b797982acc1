//! Times the NuDB audit against its yardsticks on one store:
//!
//! - `floor`: every record decoded (rippled's codec) and hashed on one
//!   thread, nothing else ([`decode_and_hash_floor`]);
//! - `scan`: the audit's scan alone (every record decoded and hashed on
//!   every core);
//! - `audit`: the whole audit (scan on every core, every ledger walked);
//! - `fetch walk`: each ledger's maps walked by fetching every node by key,
//!   verified ([`verify_all`], the plain walk of every store);
//! - `walk`: each ledger walked alone by the audit (`--ledger`).
//!
//! Usage: `cargo run --release -p shamap-store --example nudb_audit -- DIR
//! [floor|scan|audit|fetch|walk|all]`. Prints seconds and the peak RSS (VmHWM)
//! after each step; run one step per process to measure its own peak.

use std::time::Instant;

use shamap_store::backend::nudb::{audit, decode_and_hash_floor, AuditOptions, NudbStore};
use shamap_store::findings::Only;
use shamap_store::verify_all;

fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|k| k.parse::<f64>().ok())
            })
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Which yardstick to time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Step {
    /// Decode and hash every record on one thread.
    Floor,
    /// The audit's scan alone (every record decoded and hashed, both cores).
    Scan,
    /// The whole audit.
    Audit,
    /// Every ledger walked by fetching each node by key.
    Fetch,
    /// Every ledger walked alone by the audit.
    Walk,
    /// All of them, in that order.
    All,
}

/// Times the NuDB audit against its yardsticks on one store.
#[derive(Debug, clap::Parser)]
struct Args {
    /// The NuDB directory (or one holding rotated rippledb.* ones).
    dir: std::path::PathBuf,
    /// What to time.
    #[arg(value_enum, default_value = "all")]
    step: Step,
    /// The audit's memory budget in MiB (default: the library's).
    #[arg(long = "memory-mib")]
    memory_mib: Option<u64>,
}

/// Prints a pass's line: what it was, its time since `t`, the records it
/// read, what it found wrong, and the peak RSS.
fn print_pass(what: &str, t: Instant, records: impl std::fmt::Display, wrong: &str) {
    println!(
        "{what}: {:.3} s, {records} records, {wrong}, peak RSS {:.1} MiB",
        t.elapsed().as_secs_f64(),
        peak_rss_mib()
    );
}

fn main() {
    let args = <Args as clap::Parser>::parse();
    let dir = args.dir;
    let what = args.step;
    let store = match NudbStore::open(&dir) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let all = what == Step::All;
    let mut ledgers = Vec::new();
    if all || what == Step::Floor {
        let t = Instant::now();
        let r = decode_and_hash_floor(&store).expect("floor");
        let what = "floor (decode+hash, 1 thread)";
        print_pass(what, t, r.records, &format!("{} bad", r.bad));
    }
    if all || what == Step::Scan {
        let t = Instant::now();
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        let memory = shamap_store::backend::nudb::budget::MemoryBudget::of(
            args.memory_mib
                .map_or(shamap_store::backend::nudb::budget::DEFAULT_BUDGET, |m| {
                    m << 20
                }),
            threads,
        );
        let r = shamap_store::backend::nudb::scan::scan(&store, threads, &memory, &|_| {})
            .expect("scan");
        let what = format!("scan (decode+hash, {threads} threads)");
        print_pass(&what, t, r.records, &format!("{} damaged", r.damaged_count));
    }
    if all || what == Step::Audit {
        let t = Instant::now();
        let opts = AuditOptions {
            memory: args.memory_mib.map(|m| m << 20),
            ..AuditOptions::default()
        };
        let r = audit(&store, &opts, &|_| {}).expect("audit");
        println!(
            "audit (scan + every ledger walked): {:.3} s, {} records, {} ledgers, whole: {}, peak RSS {:.1} MiB",
            t.elapsed().as_secs_f64(),
            r.scan.as_ref().map_or(0, |s| s.records),
            r.ledgers.len(),
            r.is_whole(),
            peak_rss_mib()
        );
        let c = r.ledgers.iter().fold((0, 0, 0, 0), |a, l| {
            (
                a.0 + l.counts.inner,
                a.1 + l.counts.leaves,
                a.2 + l.counts.skipped,
                a.3 + l.counts.hashed,
            )
        });
        if let Some(s) = &r.scan {
            println!(
                "  walks: {} inner nodes, {} leaves, {} subtrees skipped, {} nodes hashed; record index: {} leaves, {} inner nodes, {} records left out",
                c.0, c.1, c.2, c.3, s.indexed.0, s.indexed.1, s.indexed.2
            );
        }
        ledgers = r.ledgers.iter().map(|l| l.hash).collect();
    }
    if ledgers.is_empty() {
        let mut found = Vec::new();
        shamap_store::backend::nudb::headers_in_data(&store, &mut |h| {
            found.push(h.hash);
            std::ops::ControlFlow::Continue(())
        })
        .expect("headers");
        ledgers = found;
    }
    if all || what == Step::Fetch {
        let t = Instant::now();
        let mut nodes = 0;
        for h in &ledgers {
            nodes += verify_all(&store, h).expect("fetch walk").nodes();
        }
        println!(
            "fetch walk (verify_all, every node by key): {:.3} s, {} nodes, peak RSS {:.1} MiB",
            t.elapsed().as_secs_f64(),
            nodes,
            peak_rss_mib()
        );
    }
    if all || what == Step::Walk {
        let t = Instant::now();
        for h in &ledgers {
            let r = audit(
                &store,
                &AuditOptions {
                    only: Some(Only::Hash(*h)),
                    threads: 0,
                    memory: None,
                },
                &|_| {},
            )
            .expect("walk");
            assert!(r.is_whole(), "ledger {h} not whole");
        }
        println!(
            "walk (the audit, one ledger at a time): {:.3} s, {} ledgers, peak RSS {:.1} MiB",
            t.elapsed().as_secs_f64(),
            ledgers.len(),
            peak_rss_mib()
        );
    }
}
