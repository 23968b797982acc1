//! `shamap`: command-line tool for the shamap engine.
//!
//! This file defines the command line and dispatches. Each subcommand lives
//! in a module of its own, and subcommand modules never import from each
//! other; what several share is in [`input`] (reading files, standard
//! input, ledger dumps, hex arguments and stores), [`output`] (printing, the
//! one failure type and the exit statuses), [`maps`] (a ledger's maps built
//! from a dump, and `--kind`), [`proof_file`] (the proof JSON of `prove` and
//! `check-proof`), [`memory_report`] (`scan` and `apply`'s memory
//! figures) and [`heap`] (the process's allocator and what it holds). Errors are printed as one line, `error: <file>: <what>`, on
//! stderr; the tool never prints a panic trace (a bug that panics is
//! reported as one `error: internal error` line).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod heap;
mod input;
mod maps;
mod memory_report;
mod nudb;
mod output;
mod proof_file;

mod anchor;
mod apply;
mod bench;
mod check_proof;
mod clio;
mod clio_anchor;
mod clio_load;
mod diff;
mod export;
mod gc;
mod get;
mod import;
mod info;
mod prove;
mod scan;
mod stats;
mod sync;
mod verify;
mod verify_db;
mod xpop;

/// Rebuild XRP Ledger SHAMaps from real ledger dumps and check their hashes.
#[derive(Debug, Parser)]
#[command(name = "shamap", version, about, long_about = None)]
struct Cli {
    /// What to do.
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    /// Recompute a ledger's account_hash, transaction_hash and ledger_hash
    /// from rippled/Clio JSON (`ledger` or `ledger_data`, binary or decoded)
    /// and compare them with the values the JSON claims; or, with --db,
    /// audit a node store.
    ///
    /// Each file that cannot be used (unreadable, malformed, a page of a
    /// ledger whose last page is missing) is one error line on stderr; the
    /// other files' results are still printed.
    ///
    /// Exit status, the worst over all files (2 over 1 over 0): 0 when at
    /// least one value was checked and all matched; 1 on any mismatch, or
    /// when nothing could be checked (no computed hash had an expected value
    /// in the input); 2 when some file could not be used.
    Verify(verify::VerifyArgs),
    /// Show where a map's memory and hashing time go: node counts, child
    /// and depth histograms, data by entry type, bytes by category, the
    /// same tree priced in rippled's layout, size-class advice, and the
    /// share of root-hash time inside the hash function.
    ///
    /// Reads a ledger dump (as verify does) or builds --random N entries.
    /// Exit status: 0, or 2 with one error line.
    Stats(stats::StatsArgs),
    /// Micro-benchmarks.
    Bench(bench::BenchArgs),
    /// Write the proof path of one key (JSON: kind, key, root, included,
    /// hex wire nodes leaf first) for a ledger dump's state or transaction
    /// map.
    ///
    /// Exit status: 0 when written, 1 when the key is absent (unless
    /// --absent-ok, which writes the proof of absence), 2 on bad input or
    /// when the proof would carry a leaf under 12 bytes (rippled's minimum:
    /// no valid proof can carry it).
    Prove(prove::ProveArgs),
    /// Verify a proof path against a trusted root; prints `included`,
    /// `absent` or `invalid: <reason>`.
    ///
    /// Exit status: 0 valid, 1 invalid, 2 unreadable input.
    CheckProof(check_proof::CheckProofArgs),
    /// List the keys added, removed and modified between two ledger dumps'
    /// maps.
    ///
    /// Exit status: 0, 1 past --max differences, 2 on bad input.
    Diff(diff::DiffArgs),
    /// Store ledgers' maps, headers and roots in a node store (a new store
    /// is a node log directory), crash-safely. Exit status: 0, 1 when a computed hash
    /// differs from the file's, 2 on bad input or a damaged store.
    Import(import::ImportArgs),
    /// Print items' data (hex) from a store, walking from a root through a
    /// node cache. Exit status: 0, 1 when a key is absent, 2 on error.
    Get(get::GetArgs),
    /// Read every item of a stored map within a memory budget; print the
    /// count, a contents digest, cache counters and peak RSS.
    /// Exit status: 0, or 2 on a damaged store.
    Scan(scan::ScanArgs),
    /// Apply a file of changes (`set KEY HEX` / `del KEY`) to a stored map
    /// within a memory budget and commit the new root atomically.
    /// Exit status: 0, or 2 (nothing committed, unless the error says the
    /// commit may have landed).
    Apply(apply::ApplyArgs),
    /// Show a store's roots, node counts and bytes on disk.
    Info(info::InfoArgs),
    /// Write a stored ledger as rippled's binary `ledger` response (header,
    /// state entries, transactions with metadata), streamed as its maps
    /// are walked, each node verified. Exit status: 0, or 2 (with --out, no
    /// file is left).
    Export(export::ExportArgs),
    /// Copy a ledger or map between stores through wire blobs, each node
    /// checked against its parent. Exit status: 0, or 2.
    Sync(sync::SyncArgs),
    /// Keep only the given roots in a store and delete unreachable nodes.
    /// Exit status: 0, or 2 (nothing deleted).
    Gc(gc::GcArgs),
    /// Clio databases: `clio verify --db cassandra://HOST/KEYSPACE` rebuilds
    /// each ledger's maps from Clio's tables and checks its header's hashes.
    /// Exit status: 0 all matched, 1 a mismatch, 2 unusable input.
    Clio(clio::ClioArgs),
    /// XPOPs (XLS-41): `xpop verify FILE... --vl-key KEY` checks proofs
    /// that a transaction was in a validated ledger; `xpop make` writes one
    /// from a ledger dump or a store, with validations and a validator list.
    Xpop(xpop::XpopArgs),
}

fn main() -> ExitCode {
    output::install_panic_hook();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return output::usage(&e),
    };
    output::finish(match cli.command {
        Command::Verify(args) => match &args.db {
            Some(db) => verify_db::run(
                db,
                args.root.as_deref(),
                args.ledger,
                args.ledger_db.as_deref(),
                args.memory_mb,
                &args.anchor,
                args.json,
            )
            .map_err(|f| f.about_store(db)),
            None => verify::run(&args),
        },
        Command::Stats(args) => stats::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Prove(args) => prove::run(&args),
        Command::CheckProof(args) => check_proof::run(&args),
        Command::Diff(args) => diff::run(&args),
        Command::Import(args) => import::run(&args).map_err(|f| f.about_store(&args.db)),
        Command::Get(args) => get::run(&args).map_err(|f| f.about_store(&args.map.db)),
        Command::Scan(args) => scan::run(&args).map_err(|f| f.about_store(&args.map.db)),
        Command::Apply(args) => apply::run(&args).map_err(|f| f.about_store(&args.map.db)),
        Command::Info(args) => info::run(&args).map_err(|f| f.about_store(&args.db)),
        Command::Export(args) => export::run(&args).map_err(|f| f.about_store(&args.db)),
        Command::Sync(args) => sync::run(&args).map_err(|f| f.about_sync(&args.from, &args.to)),
        Command::Gc(args) => gc::run(&args).map_err(|f| f.about_store(&args.db)),
        Command::Clio(args) => clio::run(&args),
        Command::Xpop(args) => xpop::run(&args),
    })
}
