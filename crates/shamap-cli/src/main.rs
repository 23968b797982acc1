//! `shamap`: command-line tool for the shamap engine.
//!
//! Subcommands live in modules of their own; this file parses arguments,
//! dispatches, and turns outcomes into exit codes. Errors are printed as one
//! line, `error: <file>: <what>`, on stderr; the tool never prints a panic
//! trace (a bug that panics is reported as one `error: internal error` line).

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench;
mod check_proof;
mod diff;
mod plot;
mod prove;
mod stats;
mod store_backed;
mod store_common;
mod store_gc;
mod store_get;
mod store_import;
mod store_info;
mod store_sync;
mod store_verify;
mod verify;

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
    /// from rippled/Clio JSON (`ledger` or `ledger_data`, binary: true) and
    /// compare them with the values the JSON claims.
    ///
    /// Exit status: 0 when at least one value was checked and all matched,
    /// 1 on any mismatch (or when nothing could be checked), 2 on unreadable
    /// or malformed input.
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
    /// --absent-ok, which writes the proof of absence), 2 on bad input.
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
    /// Store ledgers' maps, headers and roots in a node store (fjall
    /// directory), crash-safely. Exit status: 0, 1 when a computed hash
    /// differs from the file's, 2 on bad input or a damaged store.
    Import(store_import::ImportArgs),
    /// Print items' data (hex) from a store, walking from a root through a
    /// node cache. Exit status: 0, 1 when a key is absent, 2 on error.
    Get(store_get::GetArgs),
    /// Read every item of a stored map within a memory budget; print the
    /// count, a contents digest, cache counters and peak RSS.
    /// Exit status: 0, or 2 on a damaged store.
    Scan(store_backed::ScanArgs),
    /// Apply a file of changes (`set KEY HEX` / `del KEY`) to a stored map
    /// within a memory budget and commit the new root atomically.
    /// Exit status: 0, or 2 (nothing committed).
    Apply(store_backed::ApplyArgs),
    /// Show a store's roots, node counts and bytes on disk.
    Info(store_info::InfoArgs),
    /// Copy a ledger or map between stores through wire blobs, each node
    /// checked against its parent. Exit status: 0, or 2.
    Sync(store_sync::SyncArgs),
    /// Keep only the given roots in a store and delete unreachable nodes.
    /// Exit status: 0, or 2 (nothing deleted).
    Gc(store_gc::GcArgs),
}

fn main() -> ExitCode {
    install_panic_hook();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout with status 0; usage errors to
            // stderr with status 2, as one line. A closed stdout is not
            // worth reporting.
            if e.use_stderr() {
                let _ = writeln!(std::io::stderr(), "{}", one_line(&e));
                return ExitCode::from(2);
            }
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
    };
    match cli.command {
        Command::Verify(args) => verify::run(&args),
        Command::Stats(args) => stats::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Prove(args) => prove::run(&args),
        Command::CheckProof(args) => check_proof::run(&args),
        Command::Diff(args) => diff::run(&args),
        Command::Import(args) => store_import::run(&args),
        Command::Get(args) => store_get::run(&args),
        Command::Scan(args) => store_backed::run_scan(&args),
        Command::Apply(args) => store_backed::run_apply(&args),
        Command::Info(args) => store_info::run(&args),
        Command::Sync(args) => store_sync::run(&args),
        Command::Gc(args) => store_gc::run(&args),
    }
}

/// A clap usage error as one line: its message lines joined, without the
/// usage block and the `--help` hint.
fn one_line(e: &clap::Error) -> String {
    if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        return "error: a subcommand is required (see --help)".to_owned();
    }
    let rendered = e.render().to_string();
    let parts: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
        .collect();
    let line = parts.join(" ");
    if line.starts_with("error:") {
        line
    } else {
        format!("error: {line}")
    }
}

/// Replaces the default panic report (several lines, with "panicked" and a
/// backtrace hint) by one `error:` line. A panic is a bug in this tool.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown cause".to_owned());
        let place = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let what = what.replace('\n', " ");
        // Ignore a closed stderr: there is nowhere left to report to.
        let _ = writeln!(
            std::io::stderr(),
            "error: internal error{place}: {what} (please report this bug)"
        );
    }));
}
