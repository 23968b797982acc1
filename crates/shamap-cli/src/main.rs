//! `shamap`: command-line tool for the shamap engine.
//!
//! Subcommands live in modules of their own; this file parses arguments,
//! dispatches, and turns outcomes into exit codes. Errors are printed as one
//! line, `error: <file>: <what>`, on stderr; the tool never prints a panic
//! trace (a bug that panics is reported as one `error: internal error` line).

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
}

fn main() -> ExitCode {
    install_panic_hook();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout with status 0; usage errors to
            // stderr with status 2. A closed stdout is not worth reporting.
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match cli.command {
        Command::Verify(args) => verify::run(&args),
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
