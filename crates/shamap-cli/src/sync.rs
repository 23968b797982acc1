//! `shamap sync --from DIR --to DIR --root HEX`: copy a ledger (or one map)
//! from one store to another the way a peer would get it: wire blobs only,
//! each checked against its parent before it is stored. A ledger hash
//! copies the header (checked against the hash) and both maps; the root is
//! then recorded in the target.

use std::path::PathBuf;

use shamap::{Hash256, MapKind};
use shamap_store::{
    record_root, root_kind, wire_blob, AddOutcome, Batch, NodeId, NodeStore, RootKind, SyncSession,
};

use crate::input::{open_existing, open_or_create, parse_hash};
use crate::output::{node_progress, print_text_status_kept, Exit, Failure};

/// Node requests per round.
const PER_ROUND: usize = 4096;

/// Arguments of `shamap sync`.
#[derive(Debug, clap::Args)]
pub struct SyncArgs {
    /// The store to copy from.
    #[arg(long, value_name = "DIR")]
    pub from: PathBuf,
    /// The store to copy into (created if absent).
    #[arg(long, value_name = "DIR")]
    pub to: PathBuf,
    /// A ledger hash or map root in the source.
    #[arg(long, value_name = "HEX")]
    pub root: String,
}

/// Runs `shamap sync`.
pub fn run(args: &SyncArgs) -> Result<Exit, Failure> {
    let root = parse_hash("root", &args.root)?;
    let from = open_existing(&args.from)?;
    let to = open_or_create(&args.to)?;
    let (maps, header) = match root_kind(&from, &root)? {
        RootKind::Ledger(h) => (
            vec![
                (h.account_hash, MapKind::AccountState),
                (h.transaction_hash, MapKind::TransactionWithMeta),
            ],
            Some(from.load(&root)?),
        ),
        RootKind::Map(kind) => (vec![(root, kind)], None),
    };
    let mut copied = 0u64;
    let mut rounds = 0u64;
    for (map_root, kind) in maps {
        if map_root.is_zero() {
            continue;
        }
        let (n, r) = sync_map(&from, &to, map_root, kind)?;
        copied += n;
        rounds += r;
    }
    let mut last = Batch::new();
    if let Some(h) = header {
        last.put_node(h);
    }
    record_root(&to, &format!("synced {}", &root.to_hex()[..8]), root, last)?;
    print_text_status_kept(&format!(
        "root {root} synced: {copied} nodes copied in {rounds} rounds\n"
    ));
    Ok(Exit::Done)
}

/// Fills `to` with the map under `root`; returns (nodes stored, rounds).
fn sync_map(
    from: &dyn NodeStore,
    to: &dyn NodeStore,
    root: Hash256,
    kind: MapKind,
) -> Result<(u64, u64), Failure> {
    let fetch = |h: &Hash256| -> Result<Vec<u8>, Failure> {
        wire_blob(from, h)?.ok_or_else(|| {
            Failure::unusable(format!(
                "{}: node {h} is missing from the source",
                from.location()
            ))
        })
    };
    let mut s = SyncSession::new(to, root, kind);
    let bar = node_progress(0, kind.name());
    let (mut stored, mut rounds) = (0u64, 0u64);
    if !to.contains(&root)? {
        match s.add_root_node(&fetch(&root)?)? {
            AddOutcome::Useful => stored += 1,
            AddOutcome::Duplicate => {}
            AddOutcome::Invalid(why) => {
                return Err(Failure::unusable(format!(
                    "root node {root} from the source: {why}"
                )))
            }
        }
    }
    loop {
        let missing = s.missing_nodes(PER_ROUND)?;
        if missing.is_empty() {
            break;
        }
        rounds += 1;
        let blobs = missing
            .iter()
            .map(|(id, h)| Ok((*id, fetch(h)?)))
            .collect::<Result<Vec<(NodeId, Vec<u8>)>, Failure>>()?;
        let offered: Vec<(NodeId, &[u8])> =
            blobs.iter().map(|(id, b)| (*id, b.as_slice())).collect();
        for (o, (id, h)) in s.add_known_nodes(&offered)?.into_iter().zip(&missing) {
            match o {
                AddOutcome::Useful => stored += 1,
                AddOutcome::Duplicate => {}
                AddOutcome::Invalid(why) => {
                    return Err(Failure::unusable(format!(
                        "node {h} (depth {}) from the source: {why}",
                        id.depth()
                    )))
                }
            }
        }
        bar.inc_length(missing.len() as u64);
        bar.set_position(stored);
    }
    bar.finish_and_clear();
    Ok((stored, rounds))
}
