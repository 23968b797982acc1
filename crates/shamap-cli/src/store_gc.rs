//! `shamap gc --db DIR --keep HEX,...`: keep exactly these roots (ledger
//! hashes or map roots) and delete every node none of them reaches. Checks
//! the kept roots completely first; deletes nothing if one is incomplete
//! or damaged.

use std::path::PathBuf;
use std::process::ExitCode;

use shamap_store::gc;

use crate::store_common::{finish, open_existing, parse_hash, Failure};

/// Arguments of `shamap gc`.
#[derive(Debug, clap::Args)]
pub struct GcArgs {
    /// The store directory.
    #[arg(long, value_name = "DIR")]
    pub db: PathBuf,
    /// Roots to keep, comma-separated.
    #[arg(long, value_name = "HEX,...", value_delimiter = ',', required = true)]
    pub keep: Vec<String>,
}

/// Runs `shamap gc`.
pub fn run(args: &GcArgs) -> ExitCode {
    finish(run_gc(args))
}

fn run_gc(args: &GcArgs) -> Result<(), Failure> {
    let keep = args
        .keep
        .iter()
        .map(|k| parse_hash("--keep root", k))
        .collect::<Result<Vec<_>, _>>()?;
    let store = open_existing(&args.db)?;
    let r = gc(&store, &keep)
        .map_err(|e| Failure::bad(format!("{}: nothing deleted: {e}", args.db.display())))?;
    crate::prove::print_text(&format!(
        "kept {} roots reaching {} nodes; deleted {} of {} nodes\n",
        r.roots, r.reachable, r.deleted, r.scanned
    ));
    Ok(())
}
