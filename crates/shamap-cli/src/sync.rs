//! `shamap sync --from DB --to DB --root HEX`: copy a ledger (or one map)
//! from one store to another the way a peer would get it: wire blobs only,
//! each checked against its parent before it is stored. A ledger hash
//! copies the header (checked against the hash) and both maps; the root is
//! then recorded in the target. A node the target holds in a damaged copy
//! (one that does not hash to its key) is copied again over it, and the
//! line says how many were.

use std::path::PathBuf;

use shamap_store::{copy_root, meta};

use crate::input::{open_or_create, open_to_read, parse_hash};
use crate::output::{node_progress, print_text_status_kept, Exit, Failure};

/// Arguments of `shamap sync`.
#[derive(Debug, clap::Args)]
pub struct SyncArgs {
    /// The store to copy from: a directory (a node log; fjall stores
    /// still open) or cassandra://HOST[:PORT]/KEYSPACE.
    #[arg(long, value_name = "DB")]
    pub from: PathBuf,
    /// The store to copy into (created if absent): a directory (a node
    /// log; fjall stores still open) or cassandra://HOST[:PORT]/KEYSPACE.
    #[arg(long, value_name = "DB")]
    pub to: PathBuf,
    /// A ledger hash or map root in the source.
    #[arg(long, value_name = "HEX")]
    pub root: String,
}

/// Runs `shamap sync`. The root is checked in the source before the target
/// is opened, so a wrong root leaves no new, empty target behind.
pub fn run(args: &SyncArgs) -> Result<Exit, Failure> {
    let root = parse_hash("root", &args.root)?;
    let from = open_to_read(&args.from)?;
    meta::known_root(&from, &root)?;
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
