//! `shamap export --db DB (--root HASH | --ledger SEQ) [--out FILE]
//! [--api-version 1|2]`: writes one stored ledger as rippled's `ledger`
//! response with `binary`, `expand`, `accounts` and `transactions` true,
//! which `shamap verify`, `import` and other tools read.
//!
//! The response is written by [`shamap_ledger::response`] (rippled's
//! shapes and key order: its module docs), whose reader
//! ([`shamap_ledger::parse`]) reads it back; with `--api-version 2` the
//! transactions are `{"hash", "meta_blob", "tx_blob"}`.
//!
//! - `validated` is true only when the store's own ledger list (rippled's
//!   `ledger.db`, whose ledgers rippled saved as validated) names the
//!   ledger; a node store alone cannot say that a ledger was validated.
//! - One entry per line; hex in upper case, as rippled writes it.
//!
//! The ledger is streamed: entries are written as the maps are walked (one
//! verified node per step, as every read), so a ledger of any size takes
//! the memory of a path from the root, not of the ledger. With `--out`,
//! the file appears whole or not at all (a temporary file beside it,
//! renamed once complete); a damaged or missing node stops the export with
//! one line and status 2, and no file. An `--out` inside the store being
//! read (its `nudb.dat`, its `ledger.db`, a file of a rotated directory,
//! a link into it) is refused before anything is written
//! ([`crate::output::refuse_inside_store`]). Without `--out` the response goes
//! to standard output, where what was written before such an error stays
//! written.

use std::io::{self, Write};
use std::path::PathBuf;

use shamap::{Hash256, Key};
use shamap_ledger::response::{write_ledger_response, ResponseError, ResponseOptions};
use shamap_store::map::ledger::{self, StoredLedger};
use shamap_store::NodeStore;

use crate::input::{open_to_read, LedgerArgs};
use crate::output::{write_file_streamed, Exit, Failure};

/// Arguments of `shamap export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    #[arg(long, value_name = "DB", help = crate::input::db_help("The store"))]
    pub db: PathBuf,
    #[command(flatten)]
    pub at: LedgerArgs,
    /// Write to FILE (whole or not at all) instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// rippled's API version to write the transactions in: 1 (`tx_blob`,
    /// `meta`) or 2 (`hash`, `meta_blob`, `tx_blob`).
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u8).range(1..=2))]
    pub api_version: u8,
}

/// Why writing stopped: the output, or the store.
enum Stop {
    /// Writing the output failed.
    Io(io::Error),
    /// Reading the ledger failed (one line, status 2).
    Failed(Failure),
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Stop {
        Stop::Io(e)
    }
}

impl From<Failure> for Stop {
    fn from(f: Failure) -> Stop {
        Stop::Failed(f)
    }
}

impl From<shamap_store::StoreError> for Stop {
    fn from(e: shamap_store::StoreError) -> Stop {
        Stop::Failed(e.into())
    }
}

/// Runs `shamap export`.
pub fn run(args: &ExportArgs) -> Result<Exit, Failure> {
    args.at.check()?;
    let store = open_to_read(&args.db)?;
    let hash = args.at.resolve(&*store)?;
    let ledger = open_ledger(&*store, hash)?;
    let v2 = args.api_version == 2;
    match &args.out {
        Some(out) if out.as_os_str() != "-" => {
            let cannot =
                |e: io::Error| Failure::unusable(format!("{}: cannot write: {e}", out.display()));
            write_file_streamed(out, Some(&args.db), &mut |w| {
                write_response(w, &ledger, v2).map_err(|stop| match stop {
                    Stop::Io(e) => cannot(e),
                    Stop::Failed(f) => f,
                })
            })?;
        }
        _ => {
            let stdout = io::stdout();
            let mut w = io::BufWriter::with_capacity(1 << 20, stdout.lock());
            match write_response(&mut w, &ledger, v2).and_then(|()| Ok(w.flush()?)) {
                Ok(()) => {}
                // A reader that stopped early (`| head`) is not a failure.
                Err(Stop::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => {}
                Err(Stop::Io(e)) => {
                    return Err(Failure::unusable(format!("cannot write output: {e}")))
                }
                Err(Stop::Failed(f)) => return Err(f),
            }
        }
    }
    Ok(Exit::Done)
}

/// The ledger `hash` names in `store`, with both maps opened; one line
/// when `hash` is not a stored ledger header (a map root included: an
/// export is of a whole ledger) or a map's root cannot be read.
fn open_ledger(store: &dyn NodeStore, hash: Hash256) -> Result<StoredLedger<'_>, Failure> {
    match StoredLedger::open(store, hash)? {
        Some(l) => Ok(l),
        None => {
            // Nothing there, or not a root: the one rule's own error.
            let r = ledger::resolve_root(store, &hash, None)?;
            Err(Failure::unusable(format!(
                "{}: {hash} is the root of a {} map, not a ledger hash: export writes a whole ledger (give its ledger hash or --ledger)",
                store.location(),
                r.kind.name()
            )))
        }
    }
}

/// Writes the whole response (see the module docs), through the ledger
/// crate's one writer of it.
fn write_response(w: &mut dyn Write, l: &StoredLedger<'_>, v2: bool) -> Result<(), Stop> {
    let opts = ResponseOptions {
        api_version: if v2 { 2 } else { 1 },
        validated: l.listed,
    };
    write_ledger_response(w, &l.hash, &l.header, l.state.iter(), l.tx.iter(), &opts).map_err(|e| {
        match e {
            ResponseError::Io(e) => Stop::Io(e),
            ResponseError::Read(e) => Stop::Failed(e.into()),
            ResponseError::TxLeaf { key, error } => Stop::Failed(bad_leaf(l, &key, error)),
        }
    })
}

/// A transaction leaf whose data is not `VL(tx) ‖ VL(meta)`.
fn bad_leaf(l: &StoredLedger<'_>, key: &Key, e: impl std::fmt::Display) -> Failure {
    Failure::unusable(format!(
        "ledger {}: transaction {key} (map {}): its leaf's data is not VL(tx) followed by VL(meta): {e}",
        l.hash,
        l.tx.root_hash()
    ))
}
