//! `shamap import FILE... --db DB`: rebuild each ledger's maps from JSON
//! (as `verify` reads it), check them against the file's claims, and store
//! their nodes, header and root crash-safely.
//!
//! Output, per ledger: a heading, then `account_hash <HEX> stored`,
//! `transaction_hash <HEX> stored`, `ledger_hash <HEX> stored` (or
//! `… not stored (reason)`).

use std::fmt::Write as _;
use std::path::PathBuf;

use shamap::xrpl::LedgerRoots;
use shamap::Snapshot;
use shamap_store::map::import::{import_ledger_with, HeaderMaps, ImportOptions, LedgerParts};
use shamap_store::NodeStore;

use crate::input::{open_or_create, read_ledgers, Group};
use crate::maps::{state_map, tx_map};
use crate::output::{node_progress, print_text_status_kept, Exit, Failure};

/// Arguments of `shamap import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// Ledger JSON files (`ledger` responses or `ledger_data` pages, binary
    /// or decoded JSON); `-` reads standard input.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    #[arg(long, value_name = "DB", help = crate::input::db_help("The store (created if absent; a new directory store is a node log)"))]
    pub db: PathBuf,
}

/// Runs `shamap import`.
pub fn run(args: &ImportArgs) -> Result<Exit, Failure> {
    let groups = read_ledgers(&args.files)?;
    let store = open_or_create(&args.db)?;
    for g in &groups {
        let text = import_group(&store, g)?;
        print_text_status_kept(&text);
    }
    Ok(Exit::Done)
}

/// Builds, checks and stores one ledger; returns its report lines.
fn import_group(store: &dyn NodeStore, g: &Group) -> Result<String, Failure> {
    let d = &g.dump;
    let h = &d.header;
    let src = g.source_names();
    let mut state = None;
    if let Some(entries) = d.state.as_deref().filter(|e| !e.is_empty()) {
        let mut m = state_map(entries)
            .map_err(|(i, err)| Failure::unusable(format!("{src}: state entry {i}: {err}")))?;
        state = Some(m.snapshot());
    }
    let mut tx = None;
    if let Some(txs) = d.transactions.as_deref() {
        let mut m = tx_map(txs).map_err(|(i, err)| {
            Failure::unusable(format!("{src}: transactions entry {i}: {err}"))
        })?;
        tx = Some(m.snapshot());
    }
    let roots = LedgerRoots {
        account_hash: state.as_ref().map(Snapshot::root_hash),
        transaction_hash: tx.as_ref().map(Snapshot::root_hash),
    };
    roots.check_against(&h.roots()).map_err(|m| {
        Failure::negative(format!(
            "{src}: computed {} {} differs from the file's {}; nothing stored for this ledger",
            m.root.field(),
            m.computed,
            m.claimed
        ))
    })?;
    if state.is_none() && tx.is_none() {
        return Err(Failure::unusable(format!(
            "{src}: no state entries and no transaction list to import"
        )));
    }

    // The header, when the dump has all its fields and they hash to the
    // ledger_hash it claims; the store keeps it only when every map it
    // names is in the input or the store (HeaderMaps::IfPresent).
    let mut header_note = None;
    let header = match h.header_with_roots(roots.account_hash, roots.transaction_hash) {
        Ok(hdr) => match h.ledger_hash {
            Some(e) if e != hdr.hash() => {
                return Err(Failure::negative(format!(
                    "{src}: computed ledger_hash {} differs from the file's {e}; nothing stored for this ledger",
                    hdr.hash()
                )))
            }
            _ => Some(hdr),
        },
        Err(missing) => {
            header_note = Some(format!(
                "not stored (missing header fields: {})",
                missing.join(", ")
            ));
            None
        }
    };
    let name = h.ledger_name();
    let entries =
        d.state.as_ref().map_or(0, Vec::len) + d.transactions.as_ref().map_or(0, Vec::len);
    let bar = node_progress((entries as u64 * 14) / 10 + 1, &name);
    let opts = ImportOptions {
        header_maps: HeaderMaps::IfPresent,
    };
    let parts = LedgerParts {
        state: state.as_ref(),
        tx: tx.as_ref(),
        header: header.as_ref(),
    };
    let r = import_ledger_with(store, &name, parts, &opts, &mut |n| {
        if n % 1024 == 0 {
            bar.set_position(n);
        }
    })?;
    bar.finish_and_clear();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{name} from {src}: {} nodes written, {} already stored",
        r.stats.written,
        r.stats.visited - r.stats.written
    );
    if r.stats.repaired > 0 {
        let _ = writeln!(
            out,
            "{} of the nodes written replaced damaged copies (repaired)",
            r.stats.repaired
        );
    }
    if state.is_some() {
        let _ = writeln!(out, "account_hash {} stored", r.account_hash);
    }
    if tx.is_some() {
        let _ = writeln!(out, "transaction_hash {} stored", r.transaction_hash);
    }
    if r.header_left_out {
        header_note =
            Some("not stored (a map it names is not in the input nor the store)".to_owned());
    }
    match (r.ledger_hash, header_note) {
        (Some(lh), _) => {
            let _ = writeln!(out, "ledger_hash {lh} stored");
        }
        (None, Some(note)) => {
            let _ = writeln!(out, "ledger_hash {note}");
        }
        (None, None) => {}
    }
    Ok(out)
}
