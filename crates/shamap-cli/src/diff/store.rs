//! `shamap diff --db DB A B`: the two sides from a store (see the parent
//! module's docs), compared in the store.

use std::ops::ControlFlow;
use std::path::Path;

use shamap::{Difference, Hash256, MapKind};
use shamap_store::{diff_stored, map::ledger, NodeStore, StoredDifference, StoredMap};

use super::{render_json, render_text, DiffArgs, Side};
use crate::input::KindArg;
use crate::input::{map_root, open_to_read, parse_hash};
use crate::output::{print_json, print_text, Exit, Failure};

/// The hash one side names: a ledger sequence number (digits only, fewer
/// than 64 of them) or a 64-digit hash.
fn side_hash(store: &dyn NodeStore, what: &str, arg: &Path) -> Result<Hash256, Failure> {
    let text = arg.to_string_lossy();
    let text = text.trim();
    if !text.is_empty() && text.len() < 64 && text.bytes().all(|b| b.is_ascii_digit()) {
        let seq: u32 = text.parse().map_err(|_| {
            Failure::unusable(format!(
                "{what} '{text}': not a ledger sequence number (at most 4294967295)"
            ))
        })?;
        return Ok(ledger::ledger_by_seq(store, seq)?);
    }
    parse_hash(what, text)
}

/// Runs `shamap diff --db`.
pub fn run(args: &DiffArgs, db: &Path) -> Result<Exit, Failure> {
    let store = open_to_read(db)?;
    let kind = args.kind.map(KindArg::kind);
    let mut sides = Vec::with_capacity(2);
    for (what, arg) in [("FILE_A", &args.file_a), ("FILE_B", &args.file_b)] {
        let hash = side_hash(&*store, what, arg)?;
        let (root, kind) = map_root(&*store, Some(hash), kind)?;
        sides.push((arg.to_string_lossy().into_owned(), root, kind));
    }
    let (left, right) = (&sides[0], &sides[1]);
    let a = StoredMap::open(&*store, left.1, left.2)?;
    let b = StoredMap::open(&*store, right.1, right.2)?;
    let max = args.max.unwrap_or(usize::MAX);
    let mut found: Vec<StoredDifference> = Vec::new();
    let mut too_many = false;
    diff_stored(&a, &b, &mut |d| {
        if found.len() == max {
            too_many = true;
            return ControlFlow::Break(());
        }
        found.push(d);
        ControlFlow::Continue(())
    })?;
    if too_many {
        return Err(Failure::negative(format!(
            "more than {max} differences (raise --max to see them)"
        )));
    }
    let diffs: Vec<Difference<'_>> = found
        .iter()
        .map(|d| Difference {
            key: d.key,
            left: d.left.as_deref(),
            right: d.right.as_deref(),
        })
        .collect();
    if args.json {
        let side = |(source, root, _): &(String, Hash256, MapKind)| Side {
            source: format!("{} {source}", db.display()),
            root: *root,
            entries: None,
        };
        print_json(&render_json(left.2, &side(left), &side(right), &diffs))?;
    } else {
        print_text(&render_text(&diffs))?;
    }
    Ok(Exit::Done)
}
