//! `shamap sync --from DB --to DB (--root HEX | --ledger SEQ)`: copy a
//! ledger (or one map) from one store to another the way a peer would get
//! it: wire blobs only, each checked against its parent before it is
//! stored. A ledger hash (or `--ledger`, the ledger the source lists with
//! that sequence) copies the header (checked against the hash) and both
//! maps; the root is then recorded in the target. The source needs no
//! metadata record for a ledger hash (rippled's node store has none). A
//! node the target holds in a damaged copy (one that does not hash to its
//! key) is copied again over it, and the line says how many were. A
//! target inside the source (the same directory, one under it, a link
//! into it) is refused before either store is opened
//! ([`crate::output::refuse_inside_store`]).

use std::path::PathBuf;

use shamap_store::{copy_root, map::ledger};

use crate::input::{open_or_create, open_to_read, LedgerArgs};
use crate::output::{node_progress, print_text_status_kept, refuse_inside_store, Exit, Failure};

/// Arguments of `shamap sync`.
#[derive(Debug, clap::Args)]
pub struct SyncArgs {
    #[arg(long, value_name = "DB", help = crate::input::db_help("The store to copy from"))]
    pub from: PathBuf,
    #[arg(long, value_name = "DB", help = crate::input::db_help("The store to copy into (created if absent)"))]
    pub to: PathBuf,
    /// A ledger hash or map root in the source, or a ledger it lists.
    #[command(flatten)]
    pub at: LedgerArgs,
}

/// Runs `shamap sync`. The root is checked in the source before the target
/// is opened, so a wrong root leaves no new, empty target behind.
pub fn run(args: &SyncArgs) -> Result<Exit, Failure> {
    args.at.check()?;
    // The target is written while the source is read: never inside it.
    refuse_inside_store(&args.to, &args.from, "the target store")?;
    let from = open_to_read(&args.from)?;
    let root = args.at.resolve(&from)?;
    ledger::resolve_root(&from, &root, None)?;
    let to = open_or_create(&args.to)?;
    let bar = node_progress(0, "nodes");
    let report = copy_root(
        &from,
        &to,
        root,
        &format!("synced {}", &root.to_hex()[..8]),
        &mut |n| {
            bar.set_length(n);
            bar.set_position(n);
        },
    )?;
    bar.finish_and_clear();
    let repaired = match report.repaired {
        0 => String::new(),
        n => format!(
            " ({n} of them replacing a damaged copy in the target that did not hash to its key)"
        ),
    };
    print_text_status_kept(&format!(
        "root {root} synced: {} nodes copied in {} rounds{repaired}\n",
        report.copied, report.rounds
    ));
    Ok(Exit::Done)
}
