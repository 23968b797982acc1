//! Writes a rippled node store in NuDB's format (tests and benchmarks).
//!
//! ```text
//! nudb-gen --random 1000000 --seed 7 OUT_DIR        # one ledger of random state
//! nudb-gen --dump data/ledger-full-38129.json OUT   # real ledgers, one commit each
//! nudb-gen --dump data/ledger-38129.json --history 20 OUT
//! ```
//!
//! `--ledger-db` also writes `OUT_DIR/ledger.db` (rippled's `Ledgers`
//! table); `--rotated AT` writes two `rippledb.*` directories split at
//! ledger AT of the list instead of one database.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use shamap_nudb_writer::ledgers::{for_each_map_object, header_object};
use shamap_nudb_writer::{
    random, write_ledger_db, write_ledgers, write_rotated, CodecPolicy, Ledger, NudbOptions,
    NudbWriter, Written,
};

#[derive(Parser)]
#[command(about = "Writes a rippled node store in NuDB's format")]
struct Args {
    /// One ledger of this many random state entries.
    #[arg(long)]
    random: Option<usize>,
    /// Seed of --random and --history.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Ledger dumps (JSON) to store, in order.
    #[arg(long)]
    dump: Vec<PathBuf>,
    /// Successors of the last ledger to add, each with a few changes.
    #[arg(long, default_value_t = 0)]
    history: usize,
    /// Two rotated `rippledb.*` directories, split at this ledger.
    #[arg(long)]
    rotated: Option<usize>,
    /// Key-file block size.
    #[arg(long, default_value_t = 4096)]
    block_size: u16,
    /// Inserts per commit for --random (rippled commits about once a second).
    #[arg(long, default_value_t = 65536)]
    commit_every: usize,
    /// Codec policy: rippled, raw, lz4, inner-compressed, mixed.
    #[arg(long, default_value = "rippled")]
    codec: String,
    /// Also write OUT_DIR/ledger.db.
    #[arg(long)]
    ledger_db: bool,
    /// The directory to write (its NuDB files must not exist).
    out: PathBuf,
}

fn policy(name: &str) -> Result<CodecPolicy, String> {
    Ok(match name {
        "rippled" => CodecPolicy::Rippled,
        "raw" => CodecPolicy::Raw,
        "lz4" => CodecPolicy::Lz4,
        "inner-compressed" => CodecPolicy::InnerCompressed,
        "mixed" => CodecPolicy::Mixed,
        other => return Err(format!("unknown codec policy {other}")),
    })
}

fn report(what: &str, w: &Written) {
    println!(
        "{what}: {} records, {} spill records, {} buckets, nudb.dat {} bytes, nudb.key {} bytes, {} commits",
        w.records.len(),
        w.spills.len(),
        w.buckets,
        w.dat_len,
        w.key_len,
        w.commits
    );
}

fn main() -> Result<(), String> {
    let args = Args::parse();
    let opts = NudbOptions {
        block_size: args.block_size,
        codec: policy(&args.codec)?,
        ..NudbOptions::default()
    };
    let start = Instant::now();
    let mut ledgers: Vec<Ledger> = Vec::new();
    if let Some(n) = args.random {
        let l = random::ledger(n, args.seed, 1_000_000);
        println!(
            "built {n} random entries in {:.1?}: account_hash {}",
            start.elapsed(),
            l.header.account_hash
        );
        if args.history == 0 && args.rotated.is_none() {
            // Streamed: no object list in memory.
            let w = write_one(&args, opts, &l)?;
            report("nudb", &w);
            finish(&args, &[l], start)?;
            return Ok(());
        }
        ledgers.push(l);
    }
    for d in &args.dump {
        ledgers.push(Ledger::from_dump(d)?);
    }
    if ledgers.is_empty() {
        return Err("nothing to write: give --random N or --dump FILE".into());
    }
    for i in 0..args.history {
        let next = ledgers[ledgers.len() - 1].successor(8, 3, args.seed.wrapping_add(i as u64));
        ledgers.push(next);
    }
    if let Some(at) = args.rotated {
        let r = write_rotated(&args.out, opts, &ledgers, at).map_err(|e| e.to_string())?;
        report("archive", &r.archive);
        report("writable", &r.writable);
    } else {
        let w = write_ledgers(&args.out, opts, &ledgers).map_err(|e| e.to_string())?;
        report("nudb", &w);
    }
    finish(&args, &ledgers, start)
}

fn write_one(args: &Args, opts: NudbOptions, l: &Ledger) -> Result<Written, String> {
    let mut w = NudbWriter::create(
        &args.out,
        NudbOptions {
            commit_every: args.commit_every,
            ..opts
        },
    )
    .map_err(|e| e.to_string())?;
    let mut res = Ok(());
    let mut seen = HashSet::new();
    for snap in [&l.state, &l.tx] {
        for_each_map_object(snap, |h, v| {
            if res.is_ok() && seen.insert(h) {
                res = w.insert(&h.0, &v).map(|_| ());
            }
        });
    }
    res.map_err(|e| e.to_string())?;
    let (h, v) = header_object(&l.header);
    w.insert(&h.0, &v).map_err(|e| e.to_string())?;
    w.finish().map_err(|e| e.to_string())
}

fn finish(args: &Args, ledgers: &[Ledger], start: Instant) -> Result<(), String> {
    if args.ledger_db {
        let headers: Vec<_> = ledgers.iter().map(|l| l.header).collect();
        write_ledger_db(&args.out.join("ledger.db"), &headers)?;
    }
    for l in ledgers {
        println!("ledger {} {}", l.header.seq, l.hash());
    }
    println!("done in {:.1?}", start.elapsed());
    Ok(())
}
