//! `shamap gc --db DB --keep HEX,...`: keep exactly these roots (ledger
//! hashes or map roots) and delete every node none of them reaches. Checks
//! the kept roots completely first; deletes nothing if one is incomplete
//! or damaged.

use std::path::PathBuf;

use shamap_store::{gc_counting, GcReport};

use crate::input::{open_existing, parse_hash};
use crate::output::{print_text_status_kept, Exit, Failure};

/// Arguments of `shamap gc`.
#[derive(Debug, clap::Args)]
pub struct GcArgs {
    #[arg(long, value_name = "DB", help = crate::input::db_help("The store"))]
    pub db: PathBuf,
    /// Roots to keep, comma-separated.
    #[arg(long, value_name = "HEX,...", value_delimiter = ',', required = true)]
    pub keep: Vec<String>,
}

/// Runs `shamap gc`.
pub fn run(args: &GcArgs) -> Result<Exit, Failure> {
    let keep = args
        .keep
        .iter()
        .map(|k| parse_hash("--keep root", k))
        .collect::<Result<Vec<_>, _>>()?;
    let store = open_existing(&args.db)?;
    let mut r = GcReport::default();
    gc_counting(&store, &keep, &mut r).map_err(|e| {
        let done = match r.deleted {
            0 => "nothing deleted".to_owned(),
            n => format!(
                "stopped after deleting {n} unreachable nodes (the kept roots are whole; run gc again once the cause is fixed)"
            ),
        };
        Failure::unusable(format!("{}: {done}: {e}", args.db.display()))
    })?;
    print_text_status_kept(&format!(
        "kept {} roots reaching {} nodes; deleted {} of {} nodes\n",
        r.roots, r.reachable, r.deleted, r.scanned
    ));
    Ok(Exit::Done)
}
